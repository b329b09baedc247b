#include "cli/guarded.hpp"

#include <exception>
#include <iostream>

#include "common/input_error.hpp"
#include "strategies/strategy.hpp"

namespace tandem::cli {

int run_guarded(const std::function<int()>& command) {
  try {
    return command();
  } catch (const InputError& e) {
    std::cerr << "tandem: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const StrategyError& e) {
    std::cerr << "tandem: impossible strategy: " << e.field() << ": " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "tandem: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tandem::cli

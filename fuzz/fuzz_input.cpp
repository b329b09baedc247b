#include "fuzz/fuzz_input.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/input_error.hpp"
#include "strategies/strategy.hpp"

namespace tandem::fuzz {

namespace {

std::string input_path(const char* extension) {
  static const std::filesystem::path dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("tandem-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return (dir / (std::string("input.") + extension)).string();
}

}  // namespace

int run_reader(const std::uint8_t* data, std::size_t size, const char* extension,
               const std::function<void(const std::string& path)>& read) {
  const std::string path = input_path(extension);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) throw std::runtime_error("fuzz harness: cannot write " + path);
  }
  try {
    read(path);
  } catch (const InputError&) {
  } catch (const StrategyError&) {
  }
  return 0;
}

}  // namespace tandem::fuzz

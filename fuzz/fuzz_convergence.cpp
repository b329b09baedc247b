// libFuzzer harness: the convergence-file reader (fuzz/readers.hpp says what it reads, fuzz/README.md how to run).
#include "fuzz/fuzz_input.hpp"
#include "fuzz/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return tandem::fuzz::run_reader(data, size, "json", tandem::fuzz::read_convergence);
}

// What every harness does with one input: write it to a file of its own (the readers take paths,
// as the command line gives them), run the reader on it, and accept a clean refusal: an
// InputError (file, line, field; exit 2) or a StrategyError (an impossible strategy, exit 2).
// Anything else escapes and stops the fuzzer: a crash, a sanitizer report, or another exception,
// which the command line would print as a raw "error:" with exit 1 where the house promises an
// input error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace tandem::fuzz {

// Reads the input as the file `input.<extension>` in a folder of this process's own.
int run_reader(const std::uint8_t* data, std::size_t size, const char* extension,
               const std::function<void(const std::string& path)>& read);

}  // namespace tandem::fuzz

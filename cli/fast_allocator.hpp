// The allocator a command runs with. Large simulations allocate millions of small objects, and
// tcmalloc takes 40% off their time (tests/bench/scale_bench.cpp); but loading it costs ~10 ms at
// start (it zeroes 8 MB of page maps), more than a light command (--help, fields, check, explain)
// takes in all. So `tandem` is linked with the system allocator, and every other command executes
// itself again once with tcmalloc preloaded.
#pragma once

namespace tandem::cli {

// Call first in main. For a command that profits, re-executes the binary with LD_PRELOAD naming
// tcmalloc (when the build found it, the file is there, and TANDEM_ALLOCATOR is not "system")
// and does not return; in the re-executed process it restores LD_PRELOAD, so that programs this
// one starts do not inherit it, and returns. A light command, or a failed exec, returns at once.
void use_fast_allocator(int argc, char** argv);

}  // namespace tandem::cli

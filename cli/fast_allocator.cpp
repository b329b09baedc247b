#include "cli/fast_allocator.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/interrupts.hpp"

namespace tandem::cli {

namespace {

// Where the re-executed process finds LD_PRELOAD's value before (kUnset: there was none).
constexpr const char* kSavedPreload = "TANDEM_SAVED_LD_PRELOAD";
constexpr const char* kUnset = "\x01";

void restore_preload(const char* saved) {
  if (std::strcmp(saved, kUnset) == 0) unsetenv("LD_PRELOAD");
  else setenv("LD_PRELOAD", saved, 1);
  unsetenv(kSavedPreload);
}

// Commands that neither simulate nor read large files: help, and the input checks.
bool light(int argc, char** argv) {
  if (argc < 2) return true;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  for (const char* command : {"fields", "check", "explain"})
    if (std::strcmp(argv[1], command) == 0) return true;
  return false;
}

}  // namespace

void use_fast_allocator(int argc, char** argv) {
  if (const char* saved = std::getenv(kSavedPreload)) {
    restore_preload(saved);  // the re-executed process: tcmalloc is in
    return;
  }
#ifdef TANDEM_TCMALLOC_SO
  if (light(argc, argv)) return;
  const char* choice = std::getenv("TANDEM_ALLOCATOR");
  if (choice != nullptr && std::strcmp(choice, "system") == 0) return;
  if (::access(TANDEM_TCMALLOC_SO, R_OK) != 0) return;
  const char* before = std::getenv("LD_PRELOAD");
  std::string preload = TANDEM_TCMALLOC_SO;
  if (before != nullptr && *before != '\0') preload += std::string(":") + before;
  setenv(kSavedPreload, before != nullptr ? before : kUnset, 1);
  setenv("LD_PRELOAD", preload.c_str(), 1);
  // The next image starts with the stop signals blocked: one taken during its start waits,
  // pending, for its watcher (interrupts.hpp) instead of killing it by the default action.
  interrupts::block_stop_signals();
  ::execv("/proc/self/exe", argv);
  interrupts::unblock_stop_signals();
  restore_preload(std::getenv(kSavedPreload));  // no exec: on with the system allocator
#else
  (void)argc;
  (void)argv;
#endif
}

}  // namespace tandem::cli

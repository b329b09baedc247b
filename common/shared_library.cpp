#include "common/shared_library.hpp"

#include <dlfcn.h>

#include <filesystem>

namespace tandem {

SharedLibrary SharedLibrary::open(const std::vector<std::string>& names, int flags) {
  if (flags == 0) flags = RTLD_NOW | RTLD_LOCAL;
  std::string errors;
  for (const std::string& name : names) {
    if (void* handle = dlopen(name.c_str(), flags)) return SharedLibrary(handle, name);
    const char* error = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(error ? error : name + ": not found");
  }
  throw LibraryError("cannot load " + (names.empty() ? std::string("(no library named)") : names.front()) + ": " + errors);
}

void* SharedLibrary::symbol(const char* name) const {
  dlerror();  // clear, so a null symbol is told from a missing one
  void* address = dlsym(handle_, name);
  if (const char* error = dlerror()) throw LibraryError("cannot load " + name_ + ": " + error);
  return address;
}

std::string executable_dir() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string(".") : self.parent_path().string();
}

}  // namespace tandem

// A shared library opened at run time (dlopen), for the libraries a command needs only when it
// really uses them: OpenBLAS when the CPU backend runs kernels, MPI for `search --mpi`, the CUDA
// backend for `--backend cuda`. Linking them into `tandem` would load them (and run their
// initialisers: OpenBLAS starts its thread pool) in every command, `--help` included.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace tandem {

// A library or symbol that cannot be loaded; what() is one line naming it and dlerror's text.
class LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SharedLibrary {
 public:
  // Opens the first of `names` that loads (a soname searched as the dynamic linker does, or a
  // path). `flags` are dlopen's (RTLD_NOW | RTLD_LOCAL unless said). The library stays loaded
  // for the life of the process (libraries with thread pools do not survive dlclose).
  static SharedLibrary open(const std::vector<std::string>& names, int flags = 0);

  // The address of `name`; throws LibraryError when the library does not define it.
  void* symbol(const char* name) const;
  template <class F>
  F function(const char* name) const {
    return reinterpret_cast<F>(symbol(name));
  }

  const std::string& name() const { return name_; }

 private:
  SharedLibrary(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_;
  std::string name_;
};

// The folder of the running executable (/proc/self/exe), where `tandem`'s own modules lie.
std::string executable_dir();

}  // namespace tandem

#include "runtime/toolkit_library.hpp"

#include <cujit/error.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

namespace cujit::detail {
namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::vector<std::string> toolkit_library_candidates(const char* env_var,
                                                    const std::string& soname) {
  if (const char* chosen = std::getenv(env_var); chosen != nullptr) {
    const std::string path = chosen;
    return {is_directory(path) ? path + "/" + soname : path};
  }
  std::vector<std::string> out;
#ifdef CUJIT_TOOLKIT_LIBRARY_DIR
  out.push_back(std::string(CUJIT_TOOLKIT_LIBRARY_DIR) + "/" + soname);
#endif
  for (const char* root : {std::getenv("CUDA_PATH"), std::getenv("CUDA_HOME")}) {
    if (root == nullptr || *root == '\0') continue;
    for (const char* lib : {"/lib64/", "/lib/"}) out.push_back(root + std::string(lib) + soname);
  }
  out.push_back(soname);  // LD_LIBRARY_PATH, the loader's cache, the system paths
  return out;
}

OpenedLibrary open_toolkit_library(const std::vector<std::string>& candidates,
                                   const std::function<std::string(void*)>& resolve,
                                   const std::string& what) {
  std::string tried;
  for (const std::string& candidate : candidates) {
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why;
    if (library == nullptr) {
      const char* reason = dlerror();
      why = reason ? reason : "cannot be opened";
      if (why.rfind(candidate + ": ", 0) == 0) why.erase(0, candidate.size() + 2);
    } else {
      why = resolve(library);
      if (why.empty()) return {library, candidate};
      dlclose(library);
    }
    tried += "\n  " + candidate + ": " + why;
  }
  throw CompilerUnavailableError("cujit: " + what + " cannot be loaded; tried:" + tried);
}

}  // namespace cujit::detail

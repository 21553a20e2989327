// CacheConfig from the environment, and the default cache directory.

#include <cujit/cache.hpp>

#include "cache/units.hpp"
#include "cache/warning.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace cujit {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string default_cache_directory() {
  std::string dir = env("CUJIT_CACHE_DIR");
  if (!dir.empty()) return dir;
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg.front() == '/') return xdg + "/cujit";
  std::string home = env("HOME");
  if (home.empty()) {
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir != nullptr) {
      home = pw->pw_dir;
    }
  }
  if (home.empty()) home = "/tmp";
  return home + "/.cache/cujit";
}

CacheConfig CacheConfig::from_environment() {
  CacheConfig config;
  std::string mode = lower(env("CUJIT_CACHE"));
  bool deployments = true;
  if (mode.empty() || mode == "on" || mode == "1" || mode == "true" || mode == "yes") {
    config.writable = true;
  } else if (mode == "off" || mode == "0" || mode == "false" || mode == "no") {
    config.writable = false;
    deployments = false;
  } else if (mode == "readonly" || mode == "read-only" || mode == "ro") {
    config.writable = false;
  } else {
    detail::warn("CUJIT_CACHE='" + env("CUJIT_CACHE") +
                 "' is not one of on, off, readonly; using on");
  }
  config.directory = env("CUJIT_CACHE_DIR");
  if (deployments) {
    std::string paths = env("CUJIT_CACHE_PATH");
    std::size_t start = 0;
    while (start <= paths.size()) {
      std::size_t colon = paths.find(':', start);
      if (colon == std::string::npos) colon = paths.size();
      if (colon > start) config.deployment_databases.push_back(paths.substr(start, colon - start));
      start = colon + 1;
    }
  }
  config.record_path = env("CUJIT_RECORD");
  std::string size = env("CUJIT_CACHE_MAX_SIZE");
  if (auto parsed = detail::parse_byte_size(size)) {
    config.max_size = *parsed;
  } else if (!size.empty()) {
    detail::warn("CUJIT_CACHE_MAX_SIZE='" + size +
                 "' is not a size (bytes, or a number with K, M, G or T); using 1G");
    config.max_size = kDefaultCacheMaxSize;
  }
  std::string preload = env("CUJIT_CACHE_PRELOAD");
  if (!preload.empty()) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(preload.c_str(), &end, 10);
    if (errno == 0 && end != preload.c_str() && *end == '\0' && preload[0] != '-' && n <= 100000) {
      config.preload_records = static_cast<std::size_t>(n);
    } else {
      detail::warn("CUJIT_CACHE_PRELOAD='" + preload +
                   "' is not a number of kernels (0 to 100000); using 64");
    }
  }
  std::string foreign = lower(env("CUJIT_CACHE_ALLOW_FOREIGN"));
  config.allow_foreign_owner = foreign == "1" || foreign == "true" || foreign == "yes";
  return config;
}

}  // namespace cujit

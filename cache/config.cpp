// CacheConfig from the environment, and the default cache directory.

#include <cujit/cache.hpp>

#include "cache/units.hpp"
#include "support/warning.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
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

bool flag(const char* name) {
  const std::string v = lower(env(name));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

// "connect,operation" in milliseconds, each 1 to 60000.
void read_remote_timeouts(CacheConfig& config) {
  const std::string text = env("CUJIT_CACHE_REMOTE_TIMEOUT_MS");
  if (text.empty()) return;
  int connect = 0;
  int operation = 0;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%d,%d%c", &connect, &operation, &extra) == 2 && connect > 0 &&
      operation > 0 && connect <= 60000 && operation <= 60000) {
    config.remote_connect_timeout_ms = connect;
    config.remote_timeout_ms = operation;
  } else {
    detail::warn("CUJIT_CACHE_REMOTE_TIMEOUT_MS='" + text +
                 "' is not 'connect,operation' in milliseconds (1 to 60000); using 50,100");
  }
}

void read_remote(CacheConfig& config) {
  config.remote_url = env("CUJIT_CACHE_REMOTE");
  read_remote_timeouts(config);
  config.signing_key_path = env("CUJIT_CACHE_SIGNING_KEY");
  config.trusted_keys_path = env("CUJIT_CACHE_TRUSTED_KEYS");
  config.trust_any_writer = flag("CUJIT_CACHE_TRUST_ANY_WRITER");
  config.require_signed_deployments = flag("CUJIT_CACHE_REQUIRE_SIGNED");
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
  config.allow_foreign_owner = flag("CUJIT_CACHE_ALLOW_FOREIGN");
  read_remote(config);
  if (!deployments) config.remote_url.clear();  // CUJIT_CACHE=off: process memory only
  return config;
}

}  // namespace cujit

// CacheConfig from the environment, and the default cache directory.

#include <cujit/cache.hpp>

#include "cache/warning.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
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

// "1073741824", "512M", "1G", "1GiB", "64k": bytes with an optional binary suffix.
bool parse_size(const std::string& text, std::uint64_t& out) {
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  std::string suffix = lower(text.substr(i));
  int shift = 0;
  if (suffix.empty() || suffix == "b") {
    shift = 0;
  } else if (suffix == "k" || suffix == "kb" || suffix == "kib") {
    shift = 10;
  } else if (suffix == "m" || suffix == "mb" || suffix == "mib") {
    shift = 20;
  } else if (suffix == "g" || suffix == "gb" || suffix == "gib") {
    shift = 30;
  } else if (suffix == "t" || suffix == "tb" || suffix == "tib") {
    shift = 40;
  } else {
    return false;
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return false;
  out = value << shift;
  return true;
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
  if (!size.empty() && !parse_size(size, config.max_size)) {
    detail::warn("CUJIT_CACHE_MAX_SIZE='" + size +
                 "' is not a size (bytes, or a number with K, M, G or T); using 1G");
    config.max_size = kDefaultCacheMaxSize;
  }
  std::string foreign = lower(env("CUJIT_CACHE_ALLOW_FOREIGN"));
  config.allow_foreign_owner = foreign == "1" || foreign == "true" || foreign == "yes";
  return config;
}

}  // namespace cujit

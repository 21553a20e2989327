#include "cache/remote_endpoint.hpp"

#include <cctype>
#include <cstdlib>

namespace cujit::detail {
namespace {

std::optional<int> parse_number(const std::string& text, int low, int high) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  const int n = std::atoi(text.c_str());
  if (n < low || n > high) return std::nullopt;
  return n;
}

std::optional<std::string> percent_decode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      return std::nullopt;
    }
    out += static_cast<char>(std::strtol(text.substr(i + 1, 2).c_str(), nullptr, 16));
    i += 2;
  }
  return out;
}

bool fail(std::string* why, const std::string& text) {
  if (why != nullptr) *why = text;
  return false;
}

// "user:password@" before the host; a lone "password@" is the default user's password.
bool parse_credentials(const std::string& text, RemoteEndpoint& e, std::string* why) {
  const std::size_t colon = text.find(':');
  auto user = percent_decode(text.substr(0, colon));
  auto password = percent_decode(colon == std::string::npos ? "" : text.substr(colon + 1));
  if (!user || !password) return fail(why, "a malformed %-escape in the user or password");
  e.user = *user;
  e.password = *password;
  if (colon == std::string::npos) std::swap(e.user, e.password);
  return true;
}

bool parse_tcp(std::string rest, RemoteEndpoint& e, std::string* why) {
  const std::size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    auto db = parse_number(rest.substr(slash + 1), 0, 65535);
    if (!db) return fail(why, "the database after '/' is not a number");
    e.db = *db;
    rest.resize(slash);
  }
  const std::size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    if (!parse_credentials(rest.substr(0, at), e, why)) return false;
    rest.erase(0, at + 1);
  }
  std::size_t colon = rest.rfind(':');
  if (!rest.empty() && rest.front() == '[') {  // [::1]:6379
    const std::size_t close = rest.find(']');
    if (close == std::string::npos) return fail(why, "an unclosed '[' in the host");
    e.host = rest.substr(1, close - 1);
    colon = rest.size() > close + 1 && rest[close + 1] == ':' ? close + 1 : std::string::npos;
  } else {
    e.host = rest.substr(0, colon);
  }
  if (colon != std::string::npos) {
    auto port = parse_number(rest.substr(colon + 1), 1, 65535);
    if (!port) return fail(why, "the port is not a number from 1 to 65535");
    e.port = *port;
  }
  if (e.host.empty()) return fail(why, "no host");
  return true;
}

bool parse_unix(std::string rest, RemoteEndpoint& e, std::string* why) {
  const std::size_t query = rest.find('?');
  if (query != std::string::npos) {
    const std::string q = rest.substr(query + 1);
    auto db = q.compare(0, 3, "db=") == 0 ? parse_number(q.substr(3), 0, 65535) : std::nullopt;
    if (!db) return fail(why, "the only query a unix URL takes is ?db=N");
    e.db = *db;
    rest.resize(query);
  }
  if (rest.empty() || rest.front() != '/') return fail(why, "the socket path is not absolute");
  e.socket_path = rest;
  return true;
}

}  // namespace

std::string RemoteEndpoint::display() const {
  std::string login;
  if (!user.empty() || !password.empty()) {
    login = user + (password.empty() ? "" : (user.empty() ? "***" : ":***")) + "@";
  }
  if (!socket_path.empty()) {
    return "unix://" + socket_path + (db != 0 ? "?db=" + std::to_string(db) : "");
  }
  const bool v6 = host.find(':') != std::string::npos;
  return "redis://" + login + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) +
         (db != 0 ? "/" + std::to_string(db) : "");
}

std::string redacted_remote_url(const std::string& url) {
  std::string out = url;
  const std::size_t scheme = out.find("://");
  const std::size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  // The last '@', as parse_tcp takes it: a password may itself hold '@', ':' or '/'.
  const std::size_t at = out.rfind('@');
  if (at != std::string::npos && at >= start) {
    const std::size_t colon = out.find(':', start);
    const std::size_t secret = colon < at ? colon + 1 : start;  // "password@": all of it
    out.replace(secret, at - secret, "***");
  }
  // Not a form cujit reads, but one other clients do: a malformed URL may well use it.
  for (std::size_t p = out.find("password="); p != std::string::npos;
       p = out.find("password=", p + 1)) {
    const std::size_t value = p + 9;
    const std::size_t end = out.find('&', value);
    out.replace(value, end == std::string::npos ? end : end - value, "***");
  }
  return out;
}

std::optional<RemoteEndpoint> parse_remote_url(const std::string& url, std::string* why) {
  RemoteEndpoint e;
  bool ok = false;
  if (url.compare(0, 8, "redis://") == 0) {
    ok = parse_tcp(url.substr(8), e, why);
  } else if (url.compare(0, 7, "unix://") == 0) {
    ok = parse_unix(url.substr(7), e, why);
  } else {
    ok = fail(why,
              "it starts with neither redis:// nor unix:// (TLS, rediss://, is not "
              "supported: see docs/fleet.md)");
  }
  if (!ok) return std::nullopt;
  return e;
}

}  // namespace cujit::detail

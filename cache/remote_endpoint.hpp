#pragma once
// Where the fleet tier's Redis server is: parsed from CacheConfig::remote_url
// (`redis://[user:password@]host[:port][/db]`, `unix:///path/redis.sock[?db=N]`).

#include <optional>
#include <string>

namespace cujit::detail {

/// A Redis server and how to log in to it.
struct RemoteEndpoint {
  std::string host;         ///< empty for a unix socket
  int port = 6379;          ///< TCP port
  std::string socket_path;  ///< unix socket, empty for TCP
  std::string user;         ///< ACL user; empty: the default user
  std::string password;     ///< empty: no AUTH
  int db = 0;               ///< SELECTed database number

  /// The endpoint for messages, with the password elided ("redis://fleet:***@h:6379/2").
  std::string display() const;
};

/// Parses a remote URL; nullopt (with `*why` set when not null) when it is malformed. A
/// percent-encoded user or password (%XX) is decoded.
std::optional<RemoteEndpoint> parse_remote_url(const std::string& url, std::string* why);

/// `url` fit to print whether it parses or not: the password before the last '@'
/// ("redis://user:***@host", "rediss://***@host") and any "password=" query value replaced
/// by "***". For the messages about a URL that parse_remote_url refused (a well-formed one
/// prints as RemoteEndpoint::display()).
std::string redacted_remote_url(const std::string& url);

}  // namespace cujit::detail

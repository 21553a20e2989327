#pragma once
// A blocking connection to a Redis server (hiredis), with connect and operation timeouts, for
// the fleet tier and `cujit-cache push/pull`. Whoever runs the server is not trusted: every
// operation is bounded in time as a whole (not per read), every reply in bytes and array
// elements, and values are read with a size limit, never whole. The commands and their reply checks
// live here; the bounded reads and deadlines in RedisSocket (redis_socket.hpp).

#include "cache/redis_socket.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// A string value read with a size limit.
struct BoundedValue {
  enum class Status { Missing, TooLarge, Found };
  Status status = Status::Missing;
  std::uint64_t size = 0;  ///< the value's size on the server
  std::string value;       ///< when Found
};

/// One connection. Not thread-safe: one user at a time. Each public call is one operation: it
/// ends within `operation_timeout` of its start (plus the time the values it reads or writes
/// take at kMinRedisBytesPerMs), or throws RedisError (Io, "timed out after N ms"), however
/// slowly the server answers; a reply over kMaxRedisReplyBytes (or an array over
/// kMaxRedisReplyElements) throws RedisError (Io) too. After a RedisFailure::Io the connection
/// is unusable; connect a new one. Messages never quote a value or a password, and show the
/// server's bytes escaped (server_text()).
class RedisConnection {
 public:
  /// Connects, logs in (AUTH [user] password) and selects the database (one operation after
  /// the connect timeout). Throws RedisError.
  RedisConnection(const RemoteEndpoint& endpoint, std::chrono::milliseconds connect_timeout,
                  std::chrono::milliseconds operation_timeout);
  ~RedisConnection();
  RedisConnection(RedisConnection&&) noexcept;
  RedisConnection& operator=(RedisConnection&&) noexcept;

  /// The string at `key` when it is at most `max_size` bytes (STRLEN, then GETRANGE bounded by
  /// `max_size`, so a huge or growing value is never transferred). Throws RedisError (Reply:
  /// not a string).
  BoundedValue get_bounded(const std::string& key, std::uint64_t max_size);
  /// SET key value [PX ttl_ms] [NX]; false when NX found the key present. Any reply but +OK (or
  /// NX's nil) throws RedisError (Reply).
  bool set(const std::string& key, const std::string& value, std::int64_t ttl_ms = 0,
           bool only_if_absent = false);
  /// SET of every (key, value) pair in one pipeline: all commands are sent, then every reply
  /// is read, so a batch costs about one round trip (one operation: the timeout bounds the
  /// batch). Throws RedisError: Io when the connection failed (then some pairs may be stored),
  /// else the first failure among the replies (Denied: no permission, out of memory; Reply: an
  /// error or any reply but +OK) after reading them all, the connection still usable.
  void set_many(const std::vector<std::pair<std::string, std::string>>& entries);
  /// STRLEN of each key in one pipeline: 0 for a missing key, -1 for a key that holds no
  /// string. Throws RedisError (Io; Denied when STRLEN is not permitted).
  std::vector<std::int64_t> strlen_many(const std::vector<std::string>& keys);
  /// DEL key.
  void del(const std::string& key);
  /// EXISTS key.
  bool exists(const std::string& key);
  /// One SCAN step over keys matching `pattern`: returns the next cursor (0: done).
  std::uint64_t scan(std::uint64_t cursor, const std::string& pattern, int count,
                     std::vector<std::string>& keys);
  /// INFO `section` as text.
  std::string info(const std::string& section);
  /// DBSIZE.
  std::int64_t dbsize();
  /// Runs any command, discarding its reply (tests, operator tools). Throws RedisError.
  void execute(const std::vector<std::string>& args);
  /// The endpoint, for messages.
  const RemoteEndpoint& endpoint() const noexcept { return socket_.endpoint(); }

 private:
  // Sends `args` as one command and reads its reply; an error reply throws RedisError (Denied
  // or Reply). Within the operation already started.
  RedisReply command(const std::vector<std::string>& args,
                     std::size_t max_bytes = kMaxRedisReplyBytes);

  RedisSocket socket_;
};

}  // namespace cujit::detail

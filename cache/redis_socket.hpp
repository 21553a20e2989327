#pragma once
// The transport under RedisConnection: one hiredis connection to a Redis server whose every
// operation is bounded in time as a whole (not per read) and whose every reply is bounded in
// bytes and array elements. It knows nothing of the commands; redis_client.hpp types them.

#include "cache/remote_endpoint.hpp"

#include <cujit/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace cujit::detail {

/// The most bytes one reply may take (a value read by get_bounded: its limit plus a small
/// header allowance instead); a server sending more fails the operation (RedisFailure::Io).
inline constexpr std::size_t kMaxRedisReplyBytes = std::size_t{1} << 20;
/// The most array elements one reply may hold, nested arrays included.
inline constexpr std::size_t kMaxRedisReplyElements = std::size_t{1} << 16;
/// The slowest transfer an operation allows for a value's bytes (8 MiB/s, in bytes per ms),
/// on top of its timeout: a 64 MiB entry gets 8 s more, a 16 KiB one 2 ms.
inline constexpr std::uint64_t kMinRedisBytesPerMs = 8 * 1024 * 1024 / 1000;

/// What the reply being read may still hold (private to RedisSocket and its reader).
struct RedisReplyBudget;

/// What went wrong talking to Redis, for the caller's fallback.
enum class RedisFailure : unsigned char {
  Io,      ///< connect, read or write failed or timed out: the connection is gone
  Denied,  ///< the server refused (wrong password, no permission, read-only replica, full)
  Reply,   ///< an unexpected reply for this key (a wrong type): the key is bad, not the server
};

/// A failed Redis operation; the message names the endpoint (password elided).
class RedisError : public CacheError {
 public:
  RedisError(RedisFailure failure, const std::string& message)
      : CacheError(message), failure_(failure) {}
  RedisFailure failure() const noexcept { return failure_; }

 private:
  RedisFailure failure_;
};

/// Frees a hiredis reply (a `redisReply*`, kept opaque so that no caller includes hiredis).
struct RedisReplyDeleter {
  void operator()(void* reply) const noexcept;
};
/// One reply read by RedisSocket::next_reply: a `redisReply*` the caller owns.
using RedisReply = std::unique_ptr<void, RedisReplyDeleter>;

/// One connected socket, with the deadline of the operation under way. Not thread-safe: one
/// user at a time. An operation starts with start_operation(); every write and read after it
/// ends by its deadline or throws RedisError (Io, "timed out after N ms"). After a
/// RedisFailure::Io the socket is closed and every later call throws RedisError (Io).
class RedisSocket {
 public:
  /// Connects (TCP or a Unix socket, per `endpoint`) within `connect_timeout`; sends nothing.
  /// `operation_timeout` is the time each operation then gets. Throws RedisError (Io).
  RedisSocket(const RemoteEndpoint& endpoint, std::chrono::milliseconds connect_timeout,
              std::chrono::milliseconds operation_timeout);
  ~RedisSocket();
  RedisSocket(RedisSocket&&) noexcept;
  RedisSocket& operator=(RedisSocket&&) noexcept;

  /// Starts an operation: everything until the next call must end within the operation timeout
  /// plus the time `payload_bytes` take at kMinRedisBytesPerMs (a large value on a slow link is
  /// not a dead server; a server trickling bytes is still stopped).
  void start_operation(std::uint64_t payload_bytes = 0);
  /// Queues one command (`args`: the name, then its arguments) in the output buffer; sends
  /// nothing. Throws RedisError (Io) when the socket is closed or out of memory.
  void append(const std::vector<std::string_view>& args);
  /// The next reply, in the order the commands were appended (the first call writes the queued
  /// commands), within the operation's deadline, at most `max_bytes` received and
  /// kMaxRedisReplyElements array elements. An error reply is returned, not thrown. `what`
  /// names the command for messages. Throws RedisError (Io, closing the socket).
  RedisReply next_reply(const std::string& what, std::size_t max_bytes = kMaxRedisReplyBytes);
  /// Throws RedisError(failure) naming the endpoint, with `what` escaped (server_text()): it
  /// may quote an error reply or a key the server chose. The socket stays open.
  [[noreturn]] void fail(RedisFailure failure, const std::string& what) const;
  /// The endpoint, for messages.
  const RemoteEndpoint& endpoint() const noexcept { return endpoint_; }

 private:
  void flush_output(const std::string& what);
  void arm_timeout(const std::string& what);
  [[noreturn]] void io_failure(const std::string& what);
  [[noreturn]] void fail_io(const std::string& what, const std::string& cause);

  RemoteEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;  // of the operation under way
  std::unique_ptr<RedisReplyBudget> budget_;        // the reader's private data
  struct ContextDeleter {
    void operator()(redisContext* c) const noexcept;
  };
  std::unique_ptr<redisContext, ContextDeleter> context_;
};

}  // namespace cujit::detail

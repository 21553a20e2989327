#include "cache/redis_client.hpp"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cujit::detail {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

const redisReply& as_reply(const void* r) { return *static_cast<const redisReply*>(r); }

// Error replies that mean "the server will not do this for us", not "this key is odd".
bool is_denial(const std::string& text) {
  for (const char* prefix : {"NOAUTH", "WRONGPASS", "NOPERM", "READONLY", "OOM", "MISCONF",
                             "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH"}) {
    if (text.compare(0, std::strlen(prefix), prefix) == 0) return true;
  }
  return false;
}

std::string describe_args(const std::vector<std::string>& args) {
  // The command name and a key, never a value or a password.
  if (args.empty()) return "";
  if (args[0] == "AUTH") return "AUTH";
  return args.size() > 1 ? args[0] + " " + args[1].substr(0, 80) : args[0];
}

}  // namespace

void RedisConnection::ContextDeleter::operator()(redisContext* c) const noexcept { redisFree(c); }

void RedisConnection::ReplyDeleter::operator()(void* reply) const noexcept {
  freeReplyObject(reply);
}

RedisConnection::RedisConnection(const RemoteEndpoint& endpoint,
                                 std::chrono::milliseconds connect_timeout,
                                 std::chrono::milliseconds operation_timeout)
    : endpoint_(endpoint) {
  const timeval connect_tv = to_timeval(connect_timeout);
  context_.reset(endpoint.socket_path.empty()
                     ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, connect_tv)
                     : redisConnectUnixWithTimeout(endpoint.socket_path.c_str(), connect_tv));
  if (!context_) fail(RedisFailure::Io, "cannot allocate a connection");
  if (context_->err != 0)
    fail(RedisFailure::Io, std::string("cannot connect: ") + context_->errstr);
  if (redisSetTimeout(context_.get(), to_timeval(operation_timeout)) != REDIS_OK) {
    fail(RedisFailure::Io, "cannot set the operation timeout");
  }
  if (!endpoint.password.empty()) {
    if (endpoint.user.empty()) {
      command({"AUTH", endpoint.password});
    } else {
      command({"AUTH", endpoint.user, endpoint.password});
    }
  }
  if (endpoint.db != 0) command({"SELECT", std::to_string(endpoint.db)});
}

RedisConnection::~RedisConnection() = default;
RedisConnection::RedisConnection(RedisConnection&&) noexcept = default;
RedisConnection& RedisConnection::operator=(RedisConnection&&) noexcept = default;

void RedisConnection::fail(RedisFailure failure, const std::string& what) const {
  throw RedisError(failure, "cujit: fleet cache " + endpoint_.display() + ": " + what);
}

void RedisConnection::io_failure(const std::string& what) const {
  const bool timed_out = context_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
  fail(RedisFailure::Io,
       what + (timed_out ? ": timed out" : ": ") + (timed_out ? "" : context_->errstr));
}

RedisConnection::Reply RedisConnection::command(const std::vector<std::string>& args) {
  if (!context_ || context_->err != 0) fail(RedisFailure::Io, "the connection was lost earlier");
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  Reply reply(
      redisCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (!reply) io_failure(describe_args(args));
  const redisReply& r = as_reply(reply.get());
  if (r.type == REDIS_REPLY_ERROR) {
    const std::string text(r.str, r.len);
    fail(is_denial(text) ? RedisFailure::Denied : RedisFailure::Reply,
         describe_args(args) + ": " + text.substr(0, 200));
  }
  return reply;
}

BoundedValue RedisConnection::get_bounded(const std::string& key, std::uint64_t max_size) {
  BoundedValue out;
  Reply length = command({"STRLEN", key});
  if (as_reply(length.get()).type != REDIS_REPLY_INTEGER)
    fail(RedisFailure::Reply, "STRLEN: not a number");
  out.size = static_cast<std::uint64_t>(as_reply(length.get()).integer);
  if (out.size == 0) return out;  // missing (or empty, which no entry is)
  if (out.size > max_size) {
    out.status = BoundedValue::Status::TooLarge;
    return out;
  }
  // Bounded again: the value may have grown since STRLEN.
  Reply value = command({"GETRANGE", key, "0", std::to_string(max_size)});
  const redisReply& r = as_reply(value.get());
  if (r.type != REDIS_REPLY_STRING) fail(RedisFailure::Reply, "GETRANGE " + key + ": not a string");
  out.size = r.len;
  if (r.len == 0) return out;
  if (r.len > max_size) {
    out.status = BoundedValue::Status::TooLarge;
    return out;
  }
  out.status = BoundedValue::Status::Found;
  out.value.assign(r.str, r.len);
  return out;
}

bool RedisConnection::set(const std::string& key, const std::string& value, std::int64_t ttl_ms,
                          bool only_if_absent) {
  std::vector<std::string> args{"SET", key, value};
  if (ttl_ms > 0) {
    args.emplace_back("PX");
    args.push_back(std::to_string(ttl_ms));
  }
  if (only_if_absent) args.emplace_back("NX");
  Reply reply = command(args);
  return as_reply(reply.get()).type == REDIS_REPLY_STATUS;  // NX not met: a nil reply
}

void RedisConnection::append(const std::vector<std::string_view>& args) {
  if (!context_ || context_->err != 0) fail(RedisFailure::Io, "the connection was lost earlier");
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  // Only buffers the command (it fails only when out of memory, which marks the context).
  if (redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(),
                             lengths.data()) != REDIS_OK) {
    io_failure(args.size() > 1 ? std::string(args[0]) + " " + std::string(args[1].substr(0, 80))
                               : std::string(args[0]));
  }
}

// The next reply of a pipeline; the first call writes the buffered commands.
RedisConnection::Reply RedisConnection::next_reply(const std::string& what) {
  void* raw = nullptr;
  if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
    freeReplyObject(raw);
    io_failure(what);
  }
  return Reply(raw);
}

void RedisConnection::set_many(const std::vector<std::pair<std::string, std::string>>& entries) {
  for (const auto& [key, value] : entries) append({"SET", key, value});
  // Every reply is read, even after an error reply, so that the connection stays in step.
  std::string first_error;
  for (const auto& entry : entries) {
    Reply reply = next_reply("SET " + entry.first.substr(0, 80));
    const redisReply& r = as_reply(reply.get());
    if (r.type == REDIS_REPLY_ERROR && first_error.empty()) {
      first_error = std::string(r.str, r.len);
      if (first_error.empty()) first_error = "ERR";
    }
  }
  if (!first_error.empty()) {
    fail(is_denial(first_error) ? RedisFailure::Denied : RedisFailure::Reply,
         "SET (pipelined): " + first_error.substr(0, 200));
  }
}

std::vector<std::int64_t> RedisConnection::strlen_many(const std::vector<std::string>& keys) {
  for (const auto& key : keys) append({"STRLEN", key});
  std::vector<std::int64_t> out;
  std::string denial;
  for (const auto& key : keys) {
    Reply reply = next_reply("STRLEN " + key.substr(0, 80));
    const redisReply& r = as_reply(reply.get());
    if (r.type == REDIS_REPLY_ERROR && is_denial(std::string(r.str, r.len)) && denial.empty())
      denial = std::string(r.str, r.len);
    out.push_back(r.type == REDIS_REPLY_INTEGER ? r.integer : -1);  // WRONGTYPE: -1
  }
  if (!denial.empty()) fail(RedisFailure::Denied, "STRLEN (pipelined): " + denial.substr(0, 200));
  return out;
}

void RedisConnection::del(const std::string& key) { command({"DEL", key}); }

bool RedisConnection::exists(const std::string& key) {
  Reply reply = command({"EXISTS", key});
  return as_reply(reply.get()).type == REDIS_REPLY_INTEGER && as_reply(reply.get()).integer > 0;
}

std::uint64_t RedisConnection::scan(std::uint64_t cursor, const std::string& pattern, int count,
                                    std::vector<std::string>& keys) {
  Reply reply =
      command({"SCAN", std::to_string(cursor), "MATCH", pattern, "COUNT", std::to_string(count)});
  const redisReply& r = as_reply(reply.get());
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 || r.element[0]->type != REDIS_REPLY_STRING ||
      r.element[1]->type != REDIS_REPLY_ARRAY) {
    fail(RedisFailure::Reply, "SCAN: unexpected reply");
  }
  const redisReply& list = *r.element[1];
  for (std::size_t i = 0; i < list.elements; ++i) {
    if (list.element[i]->type == REDIS_REPLY_STRING) {
      keys.emplace_back(list.element[i]->str, list.element[i]->len);
    }
  }
  return std::strtoull(std::string(r.element[0]->str, r.element[0]->len).c_str(), nullptr, 10);
}

std::string RedisConnection::info(const std::string& section) {
  Reply reply = command({"INFO", section});
  const redisReply& r = as_reply(reply.get());
  return r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS ? std::string(r.str, r.len)
                                                                      : std::string();
}

void RedisConnection::execute(const std::vector<std::string>& args) { command(args); }

std::int64_t RedisConnection::dbsize() {
  Reply reply = command({"DBSIZE"});
  return as_reply(reply.get()).type == REDIS_REPLY_INTEGER ? as_reply(reply.get()).integer : 0;
}

}  // namespace cujit::detail

#include "cache/redis_client.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace cujit::detail {

namespace {

// Room for a bulk reply's "$<length>\r\n" and "\r\n" around a value read with a size limit.
constexpr std::size_t kReplyHeaderBytes = 64;

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

// What a reply is, for a message that must not quote it.
const char* reply_kind(const redisReply& r) {
  switch (r.type) {
    case REDIS_REPLY_STRING:
      return "a string";
    case REDIS_REPLY_ARRAY:
      return "an array";
    case REDIS_REPLY_INTEGER:
      return "an integer";
    case REDIS_REPLY_NIL:
      return "a nil";
    case REDIS_REPLY_STATUS:
      return "a status other than OK";
    default:
      return "an error";
  }
}

bool is_ok(const redisReply& r) {
  return r.type == REDIS_REPLY_STATUS && std::string_view(r.str, r.len) == "OK";
}

}  // namespace

RedisConnection::RedisConnection(const RemoteEndpoint& endpoint,
                                 std::chrono::milliseconds connect_timeout,
                                 std::chrono::milliseconds operation_timeout)
    : socket_(endpoint, connect_timeout, operation_timeout) {
  socket_.start_operation();
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

RedisReply RedisConnection::command(const std::vector<std::string>& args, std::size_t max_bytes) {
  socket_.append(std::vector<std::string_view>(args.begin(), args.end()));
  RedisReply reply = socket_.next_reply(describe_args(args), max_bytes);
  const redisReply& r = as_reply(reply.get());
  if (r.type == REDIS_REPLY_ERROR) {
    const std::string text(r.str, r.len);
    socket_.fail(is_denial(text) ? RedisFailure::Denied : RedisFailure::Reply,
                 describe_args(args) + ": " + text.substr(0, 200));
  }
  return reply;
}

BoundedValue RedisConnection::get_bounded(const std::string& key, std::uint64_t max_size) {
  socket_.start_operation();
  BoundedValue out;
  RedisReply length = command({"STRLEN", key});
  if (as_reply(length.get()).type != REDIS_REPLY_INTEGER)
    socket_.fail(RedisFailure::Reply, "STRLEN: not a number");
  out.size = static_cast<std::uint64_t>(as_reply(length.get()).integer);
  if (out.size == 0) return out;  // missing (or empty, which no entry is)
  if (out.size > max_size) {
    out.status = BoundedValue::Status::TooLarge;
    return out;
  }
  // The transfer's time on top of the timeout, for the size the server declared (bounded).
  socket_.start_operation(out.size);
  // Bounded again: the value may have grown since STRLEN, and a hostile server may answer
  // GETRANGE with far more than it asked for; the reply's bytes are bounded as they arrive.
  const std::size_t reply_limit =
      static_cast<std::size_t>(std::min<std::uint64_t>(max_size, SIZE_MAX / 2)) + kReplyHeaderBytes;
  RedisReply value = command({"GETRANGE", key, "0", std::to_string(max_size)}, reply_limit);
  const redisReply& r = as_reply(value.get());
  if (r.type != REDIS_REPLY_STRING)
    socket_.fail(RedisFailure::Reply, "GETRANGE " + key + ": not a string");
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
  socket_.start_operation(key.size() + value.size());
  std::vector<std::string> args{"SET", key, value};
  if (ttl_ms > 0) {
    args.emplace_back("PX");
    args.push_back(std::to_string(ttl_ms));
  }
  if (only_if_absent) args.emplace_back("NX");
  RedisReply reply = command(args);
  const redisReply& r = as_reply(reply.get());
  if (only_if_absent && r.type == REDIS_REPLY_NIL) return false;  // NX: the key is there
  if (!is_ok(r)) {
    socket_.fail(RedisFailure::Reply,
                 describe_args(args) + ": the server answered with " + reply_kind(r) + ", not +OK");
  }
  return true;
}

void RedisConnection::set_many(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::uint64_t payload = 0;
  for (const auto& [key, value] : entries) payload += key.size() + value.size();
  socket_.start_operation(payload);
  for (const auto& [key, value] : entries) socket_.append({"SET", key, value});
  // Every reply is read, even after an error reply, so that the connection stays in step.
  std::string first_error;
  bool denied = false;
  for (const auto& entry : entries) {
    RedisReply reply = socket_.next_reply("SET " + entry.first.substr(0, 80));
    const redisReply& r = as_reply(reply.get());
    if (is_ok(r) || !first_error.empty()) continue;
    if (r.type == REDIS_REPLY_ERROR) {
      first_error = r.len > 0 ? std::string(r.str, r.len).substr(0, 200) : "ERR";
      denied = is_denial(first_error);
    } else {
      first_error = std::string("the server answered with ") + reply_kind(r) + ", not +OK";
    }
  }
  if (!first_error.empty()) {
    socket_.fail(denied ? RedisFailure::Denied : RedisFailure::Reply,
                 "SET (pipelined): " + first_error);
  }
}

std::vector<std::int64_t> RedisConnection::strlen_many(const std::vector<std::string>& keys) {
  socket_.start_operation();
  for (const auto& key : keys) socket_.append({"STRLEN", key});
  std::vector<std::int64_t> out;
  std::string denial;
  for (const auto& key : keys) {
    RedisReply reply = socket_.next_reply("STRLEN " + key.substr(0, 80));
    const redisReply& r = as_reply(reply.get());
    if (r.type == REDIS_REPLY_ERROR && is_denial(std::string(r.str, r.len)) && denial.empty())
      denial = std::string(r.str, r.len);
    out.push_back(r.type == REDIS_REPLY_INTEGER ? r.integer : -1);  // WRONGTYPE: -1
  }
  if (!denial.empty())
    socket_.fail(RedisFailure::Denied, "STRLEN (pipelined): " + denial.substr(0, 200));
  return out;
}

void RedisConnection::del(const std::string& key) {
  socket_.start_operation();
  command({"DEL", key});
}

bool RedisConnection::exists(const std::string& key) {
  socket_.start_operation();
  RedisReply reply = command({"EXISTS", key});
  return as_reply(reply.get()).type == REDIS_REPLY_INTEGER && as_reply(reply.get()).integer > 0;
}

std::uint64_t RedisConnection::scan(std::uint64_t cursor, const std::string& pattern, int count,
                                    std::vector<std::string>& keys) {
  socket_.start_operation();
  RedisReply reply =
      command({"SCAN", std::to_string(cursor), "MATCH", pattern, "COUNT", std::to_string(count)});
  const redisReply& r = as_reply(reply.get());
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 || r.element[0]->type != REDIS_REPLY_STRING ||
      r.element[1]->type != REDIS_REPLY_ARRAY) {
    socket_.fail(RedisFailure::Reply, "SCAN: unexpected reply");
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
  socket_.start_operation();
  RedisReply reply = command({"INFO", section});
  const redisReply& r = as_reply(reply.get());
  return r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS ? std::string(r.str, r.len)
                                                                      : std::string();
}

void RedisConnection::execute(const std::vector<std::string>& args) {
  socket_.start_operation();
  command(args);
}

std::int64_t RedisConnection::dbsize() {
  socket_.start_operation();
  RedisReply reply = command({"DBSIZE"});
  return as_reply(reply.get()).type == REDIS_REPLY_INTEGER ? as_reply(reply.get()).integer : 0;
}

}  // namespace cujit::detail

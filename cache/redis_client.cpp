#include "cache/redis_client.hpp"

#include "cache/server_text.hpp"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace cujit::detail {

struct RedisReplyBudget {
  std::size_t elements_left = 0;
  bool exceeded = false;  // an array's count was refused
};

namespace {

using Clock = std::chrono::steady_clock;

// Room for a bulk reply's "$<length>\r\n" and "\r\n" around a value read with a size limit.
constexpr std::size_t kReplyHeaderBytes = 64;

timeval to_timeval(std::chrono::microseconds us) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(us.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us.count() % 1000000);
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

// hiredis allocates an array's element pointers as soon as it reads the count (a reply of
// "*2000000000" asks for 16 GB at once): the reader gets a copy of hiredis's default reply
// functions whose createArray refuses a count over what the reply may still hold (a null object
// fails the reader, which then frees what it built).
void* (*default_create_array)(const redisReadTask*, int) = nullptr;

void* create_bounded_array(const redisReadTask* task, int elements) {
  auto* budget = static_cast<RedisReplyBudget*>(task->privdata);
  if (elements < 0 || static_cast<std::size_t>(elements) > budget->elements_left) {
    budget->exceeded = true;
    return nullptr;
  }
  budget->elements_left -= static_cast<std::size_t>(elements);
  return default_create_array(task, elements);
}

redisReplyObjectFunctions* bounded_functions(const redisReplyObjectFunctions& defaults) {
  static redisReplyObjectFunctions functions = [&] {
    default_create_array = defaults.createArray;
    redisReplyObjectFunctions f = defaults;
    f.createArray = create_bounded_array;
    return f;
  }();
  return &functions;
}

}  // namespace

void RedisConnection::ContextDeleter::operator()(redisContext* c) const noexcept { redisFree(c); }

void RedisConnection::ReplyDeleter::operator()(void* reply) const noexcept {
  freeReplyObject(reply);
}

RedisConnection::RedisConnection(const RemoteEndpoint& endpoint,
                                 std::chrono::milliseconds connect_timeout,
                                 std::chrono::milliseconds operation_timeout)
    : endpoint_(endpoint),
      timeout_(operation_timeout),
      budget_(std::make_unique<RedisReplyBudget>()) {
  const timeval connect_tv = to_timeval(connect_timeout);
  context_.reset(endpoint.socket_path.empty()
                     ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, connect_tv)
                     : redisConnectUnixWithTimeout(endpoint.socket_path.c_str(), connect_tv));
  if (!context_) fail(RedisFailure::Io, "cannot allocate a connection");
  if (context_->err != 0)
    fail(RedisFailure::Io, std::string("cannot connect: ") + context_->errstr);
  context_->reader->fn = bounded_functions(*context_->reader->fn);
  context_->reader->privdata = budget_.get();
  start_operation();
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
  // `what` may quote an error reply or a key the server chose: escaped, never printed raw.
  throw RedisError(failure, "cujit: fleet cache " + server_text(endpoint_.display() + ": " + what));
}

void RedisConnection::fail_io(const std::string& what, const std::string& cause) {
  // Whatever the server sends next is out of step with the commands: the connection is done
  // (and a huge reply buffered so far is freed now).
  context_.reset();
  fail(RedisFailure::Io, what + ": " + cause);
}

void RedisConnection::io_failure(const std::string& what) {
  const bool timed_out = Clock::now() >= deadline_ || (context_->err == REDIS_ERR_IO &&
                                                       (errno == EAGAIN || errno == EWOULDBLOCK));
  fail_io(what, timed_out ? "timed out after " + std::to_string(timeout_.count()) + " ms"
                          : std::string(context_->errstr));
}

// The operation timeout bounds everything from here to the end of the public call, plus the
// time `payload_bytes` take at kMinRedisBytesPerMs: a multi-megabyte entry on a slow link is
// not a dead server, while a server trickling bytes is still stopped (a 64 MiB entry gets 8 s).
void RedisConnection::start_operation(std::uint64_t payload_bytes) {
  deadline_ =
      Clock::now() + timeout_ + std::chrono::milliseconds(payload_bytes / kMinRedisBytesPerMs);
}

// Gives the next read or write the operation's remaining time: SO_RCVTIMEO and SO_SNDTIMEO
// bound one system call each, so a server trickling a byte at a time would never trip them.
void RedisConnection::arm_timeout(const std::string& what) {
  const auto left = std::chrono::ceil<std::chrono::microseconds>(deadline_ - Clock::now());
  if (left.count() <= 0)
    fail_io(what, "timed out after " + std::to_string(timeout_.count()) + " ms");
  if (redisSetTimeout(context_.get(), to_timeval(left)) != REDIS_OK) io_failure(what);
}

RedisConnection::Reply RedisConnection::command(const std::vector<std::string>& args,
                                                std::size_t max_bytes) {
  append(std::vector<std::string_view>(args.begin(), args.end()));
  Reply reply = next_reply(describe_args(args), max_bytes);
  const redisReply& r = as_reply(reply.get());
  if (r.type == REDIS_REPLY_ERROR) {
    const std::string text(r.str, r.len);
    fail(is_denial(text) ? RedisFailure::Denied : RedisFailure::Reply,
         describe_args(args) + ": " + text.substr(0, 200));
  }
  return reply;
}

BoundedValue RedisConnection::get_bounded(const std::string& key, std::uint64_t max_size) {
  start_operation();
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
  // The transfer's time on top of the timeout, for the size the server declared (bounded).
  start_operation(out.size);
  // Bounded again: the value may have grown since STRLEN, and a hostile server may answer
  // GETRANGE with far more than it asked for; the reply's bytes are bounded as they arrive.
  const std::size_t reply_limit =
      static_cast<std::size_t>(std::min<std::uint64_t>(max_size, SIZE_MAX / 2)) + kReplyHeaderBytes;
  Reply value = command({"GETRANGE", key, "0", std::to_string(max_size)}, reply_limit);
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
  start_operation(key.size() + value.size());
  std::vector<std::string> args{"SET", key, value};
  if (ttl_ms > 0) {
    args.emplace_back("PX");
    args.push_back(std::to_string(ttl_ms));
  }
  if (only_if_absent) args.emplace_back("NX");
  Reply reply = command(args);
  const redisReply& r = as_reply(reply.get());
  if (only_if_absent && r.type == REDIS_REPLY_NIL) return false;  // NX: the key is there
  if (!is_ok(r)) {
    fail(RedisFailure::Reply,
         describe_args(args) + ": the server answered with " + reply_kind(r) + ", not +OK");
  }
  return true;
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

// Writes the buffered commands, each write within the operation's deadline.
void RedisConnection::flush_output(const std::string& what) {
  int done = 0;
  while (done == 0) {
    arm_timeout(what);
    if (redisBufferWrite(context_.get(), &done) != REDIS_OK) io_failure(what);
  }
}

// The next reply (the first call of a pipeline writes the buffered commands). hiredis's own
// redisGetReply reads until a reply is whole, however long that takes and however large it
// grows; this loop stops at the operation's deadline and at `max_bytes` received.
RedisConnection::Reply RedisConnection::next_reply(const std::string& what, std::size_t max_bytes) {
  if (!context_ || context_->err != 0) fail(RedisFailure::Io, "the connection was lost earlier");
  flush_output(what);
  *budget_ = RedisReplyBudget{kMaxRedisReplyElements, false};
  const redisReader& reader = *context_->reader;
  std::size_t received = reader.len - reader.pos;  // already here (pipelined replies)
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context_.get(), &raw) != REDIS_OK) {
      fail_io(what,
              budget_->exceeded
                  ? "an array reply of over " + std::to_string(kMaxRedisReplyElements) + " elements"
                  : "a malformed reply (" + std::string(context_->errstr) + ")");
    }
    if (raw != nullptr) return Reply(raw);
    if (received > max_bytes) fail_io(what, "a reply over " + std::to_string(max_bytes) + " bytes");
    arm_timeout(what);
    const std::size_t before = reader.len;  // a read only appends to the reader's buffer
    if (redisBufferRead(context_.get()) != REDIS_OK) io_failure(what);
    received += reader.len - before;
  }
}

void RedisConnection::set_many(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::uint64_t payload = 0;
  for (const auto& [key, value] : entries) payload += key.size() + value.size();
  start_operation(payload);
  for (const auto& [key, value] : entries) append({"SET", key, value});
  // Every reply is read, even after an error reply, so that the connection stays in step.
  std::string first_error;
  bool denied = false;
  for (const auto& entry : entries) {
    Reply reply = next_reply("SET " + entry.first.substr(0, 80));
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
    fail(denied ? RedisFailure::Denied : RedisFailure::Reply, "SET (pipelined): " + first_error);
  }
}

std::vector<std::int64_t> RedisConnection::strlen_many(const std::vector<std::string>& keys) {
  start_operation();
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

void RedisConnection::del(const std::string& key) {
  start_operation();
  command({"DEL", key});
}

bool RedisConnection::exists(const std::string& key) {
  start_operation();
  Reply reply = command({"EXISTS", key});
  return as_reply(reply.get()).type == REDIS_REPLY_INTEGER && as_reply(reply.get()).integer > 0;
}

std::uint64_t RedisConnection::scan(std::uint64_t cursor, const std::string& pattern, int count,
                                    std::vector<std::string>& keys) {
  start_operation();
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
  start_operation();
  Reply reply = command({"INFO", section});
  const redisReply& r = as_reply(reply.get());
  return r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS ? std::string(r.str, r.len)
                                                                      : std::string();
}

void RedisConnection::execute(const std::vector<std::string>& args) {
  start_operation();
  command(args);
}

std::int64_t RedisConnection::dbsize() {
  start_operation();
  Reply reply = command({"DBSIZE"});
  return as_reply(reply.get()).type == REDIS_REPLY_INTEGER ? as_reply(reply.get()).integer : 0;
}

}  // namespace cujit::detail

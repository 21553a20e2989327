#include "cache/redis_socket.hpp"

#include "cache/server_text.hpp"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>

namespace cujit::detail {

struct RedisReplyBudget {
  std::size_t elements_left = 0;
  bool exceeded = false;  // an array's count was refused
};

namespace {

using Clock = std::chrono::steady_clock;

timeval to_timeval(std::chrono::microseconds us) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(us.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us.count() % 1000000);
  return tv;
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

void RedisReplyDeleter::operator()(void* reply) const noexcept { freeReplyObject(reply); }

void RedisSocket::ContextDeleter::operator()(redisContext* c) const noexcept { redisFree(c); }

RedisSocket::RedisSocket(const RemoteEndpoint& endpoint, std::chrono::milliseconds connect_timeout,
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
}

RedisSocket::~RedisSocket() = default;
RedisSocket::RedisSocket(RedisSocket&&) noexcept = default;
RedisSocket& RedisSocket::operator=(RedisSocket&&) noexcept = default;

void RedisSocket::fail(RedisFailure failure, const std::string& what) const {
  // `what` may quote an error reply or a key the server chose: escaped, never printed raw.
  throw RedisError(failure, "cujit: fleet cache " + server_text(endpoint_.display() + ": " + what));
}

void RedisSocket::fail_io(const std::string& what, const std::string& cause) {
  // Whatever the server sends next is out of step with the commands: the connection is done
  // (and a huge reply buffered so far is freed now).
  context_.reset();
  fail(RedisFailure::Io, what + ": " + cause);
}

void RedisSocket::io_failure(const std::string& what) {
  const bool timed_out = Clock::now() >= deadline_ || (context_->err == REDIS_ERR_IO &&
                                                       (errno == EAGAIN || errno == EWOULDBLOCK));
  fail_io(what, timed_out ? "timed out after " + std::to_string(timeout_.count()) + " ms"
                          : std::string(context_->errstr));
}

// The operation timeout bounds everything from here to the end of the public call, plus the
// time `payload_bytes` take at kMinRedisBytesPerMs: a multi-megabyte entry on a slow link is
// not a dead server, while a server trickling bytes is still stopped (a 64 MiB entry gets 8 s).
void RedisSocket::start_operation(std::uint64_t payload_bytes) {
  deadline_ =
      Clock::now() + timeout_ + std::chrono::milliseconds(payload_bytes / kMinRedisBytesPerMs);
}

// Gives the next read or write the operation's remaining time: SO_RCVTIMEO and SO_SNDTIMEO
// bound one system call each, so a server trickling a byte at a time would never trip them.
void RedisSocket::arm_timeout(const std::string& what) {
  const auto left = std::chrono::ceil<std::chrono::microseconds>(deadline_ - Clock::now());
  if (left.count() <= 0)
    fail_io(what, "timed out after " + std::to_string(timeout_.count()) + " ms");
  if (redisSetTimeout(context_.get(), to_timeval(left)) != REDIS_OK) io_failure(what);
}

void RedisSocket::append(const std::vector<std::string_view>& args) {
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
void RedisSocket::flush_output(const std::string& what) {
  int done = 0;
  while (done == 0) {
    arm_timeout(what);
    if (redisBufferWrite(context_.get(), &done) != REDIS_OK) io_failure(what);
  }
}

// hiredis's own redisGetReply reads until a reply is whole, however long that takes and however
// large it grows; this loop stops at the operation's deadline and at `max_bytes` received.
RedisReply RedisSocket::next_reply(const std::string& what, std::size_t max_bytes) {
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
    if (raw != nullptr) return RedisReply(raw);
    if (received > max_bytes) fail_io(what, "a reply over " + std::to_string(max_bytes) + " bytes");
    arm_timeout(what);
    const std::size_t before = reader.len;  // a read only appends to the reader's buffer
    if (redisBufferRead(context_.get()) != REDIS_OK) io_failure(what);
    received += reader.len - before;
  }
}

}  // namespace cujit::detail

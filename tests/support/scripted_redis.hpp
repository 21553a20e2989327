#pragma once
// A misbehaving "Redis server" for the fleet tier's hostile-server tests: a loopback listener
// whose threads read the clients' commands (RESP arrays) and answer each with whatever a test
// scripts: bytes trickled slowly, a huge bulk reply streamed, a SCAN that never ends, replies of
// the wrong type, escape sequences. Everything stops, and every thread is joined, with the
// object.

#include "support/redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace cujit::test {

/// One client's connection, as a script sees it.
class ScriptedSession {
 public:
  ScriptedSession(int fd, const std::atomic<bool>& stopping, std::atomic<std::size_t>& sent)
      : fd_(fd), stopping_(stopping), sent_(sent) {}

  /// Sends `bytes`; false once the client is gone or the server stops.
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      if (stopping_) return false;
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
      sent_ += static_cast<std::size_t>(n);
    }
    return true;
  }
  /// Sends `bytes` one byte every `pause`; false once the client is gone or the server stops.
  bool trickle(std::string_view bytes, std::chrono::milliseconds pause) {
    for (const char c : bytes) {
      if (!send(std::string_view(&c, 1))) return false;
      std::this_thread::sleep_for(pause);
    }
    return true;
  }
  /// The next command (its arguments), or nullopt when the client closed the connection.
  std::optional<std::vector<std::string>> read_command() {
    const auto header = line();
    if (!header || header->empty() || (*header)[0] != '*') return std::nullopt;
    std::vector<std::string> args(std::strtoul(header->c_str() + 1, nullptr, 10));
    for (auto& arg : args) {
      const auto length = line();
      if (!length || length->empty() || (*length)[0] != '$') return std::nullopt;
      const auto data = exactly(std::strtoul(length->c_str() + 1, nullptr, 10) + 2);
      if (!data) return std::nullopt;
      arg = data->substr(0, data->size() - 2);
    }
    return args;
  }

 private:
  bool fill() {
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) == 0) continue;  // wakes up to notice the server stopping
      char buffer[65536];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return false;
      in_.append(buffer, static_cast<std::size_t>(n));
      return true;
    }
    return false;
  }
  std::optional<std::string> line() {
    std::size_t end;
    while ((end = in_.find("\r\n")) == std::string::npos) {
      if (!fill()) return std::nullopt;
    }
    std::string out = in_.substr(0, end);
    in_.erase(0, end + 2);
    return out;
  }
  std::optional<std::string> exactly(std::size_t n) {
    while (in_.size() < n) {
      if (!fill()) return std::nullopt;
    }
    std::string out = in_.substr(0, n);
    in_.erase(0, n);
    return out;
  }

  int fd_;
  const std::atomic<bool>& stopping_;
  std::string in_;
  std::atomic<std::size_t>& sent_;
};

/// The listener. `script` answers one command; returning false closes that connection.
class ScriptedRedis {
 public:
  using Script = std::function<bool(ScriptedSession&, const std::vector<std::string>&)>;

  explicit ScriptedRedis(Script script) : script_(std::move(script)) {
    fd_ = listen_on_loopback(port_);
    if (port_ != 0) acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~ScriptedRedis() {
    stopping_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::lock_guard lock(mutex_);
    for (auto& t : sessions_) t.join();
    ::close(fd_);
  }
  ScriptedRedis(const ScriptedRedis&) = delete;
  ScriptedRedis& operator=(const ScriptedRedis&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  /// Bytes sent to all clients so far (counted as they go).
  std::size_t bytes_sent() const { return sent_; }
  /// Commands received so far.
  std::size_t commands() const { return commands_; }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) continue;
      std::lock_guard lock(mutex_);
      sessions_.emplace_back([this, client] { serve(client); });
    }
  }
  void serve(int client) {
    ScriptedSession session(client, stopping_, sent_);
    while (auto command = session.read_command()) {
      ++commands_;
      if (!script_(session, *command)) break;
    }
    ::close(client);
  }

  Script script_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> sent_{0};
  std::atomic<std::size_t> commands_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> sessions_;
};

/// RESP encodings for scripts.
inline std::string resp_bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
inline std::string resp_array(const std::vector<std::string>& items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (const auto& item : items) out += resp_bulk(item);
  return out;
}

}  // namespace cujit::test

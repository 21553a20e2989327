#pragma once
// A real redis-server (Debian's package, installed by scripts/install_deps.sh) for the fleet
// tier's tests: started on a free loopback port and a unix socket in a temporary directory,
// killed and restarted on the same port, stopped with the test. And a "silent server" that
// accepts connections and never answers.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace cujit::test {

/// The redis-server to run: $CUJIT_REDIS_SERVER, else redis-server on PATH, else
/// /usr/bin/redis-server; empty when none exists.
inline std::string redis_server_binary() {
  if (const char* e = std::getenv("CUJIT_REDIS_SERVER"); e != nullptr && *e != '\0') return e;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (std::size_t start = 0; start <= p.size();) {
      std::size_t colon = p.find(':', start);
      if (colon == std::string::npos) colon = p.size();
      const std::string candidate = p.substr(start, colon - start) + "/redis-server";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      start = colon + 1;
    }
  }
  return ::access("/usr/bin/redis-server", X_OK) == 0 ? "/usr/bin/redis-server" : "";
}

/// A loopback TCP port nobody listens on now.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

/// A socket listening on a free loopback TCP port; sets `port` (0 when it failed).
inline int listen_on_loopback(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 64) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0) {
    port = ntohs(a.sin_port);
  }
  return fd;
}

inline bool port_answers(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

/// A redis-server child process. `extra` arguments are appended (e.g. "--requirepass", "pw").
class RedisServer {
 public:
  explicit RedisServer(std::vector<std::string> extra = {}) : extra_(std::move(extra)) {
    std::string pattern = (std::filesystem::temp_directory_path() / "cujit-redis-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
    port_ = free_port();
    start();
  }
  ~RedisServer() {
    stop(SIGTERM);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  /// True when the server runs and answers.
  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string socket_path() const { return dir_ + "/redis.sock"; }
  /// redis://127.0.0.1:port (with `login` as "user:password@" when given).
  std::string url(const std::string& login = "") const {
    return "redis://" + login + "127.0.0.1:" + std::to_string(port_);
  }
  std::string unix_url() const { return "unix://" + socket_path(); }

  /// Starts the server (again, on the same port and socket); waits until it answers.
  bool start() {
    const std::string binary = redis_server_binary();
    if (binary.empty() || dir_.empty() || port_ == 0) return false;
    std::vector<std::string> args = {binary,
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--unixsocket",
                                     socket_path(),
                                     "--unixsocketperm",
                                     "700",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--dir",
                                     dir_,
                                     "--daemonize",
                                     "no",
                                     "--loglevel",
                                     "warning",
                                     "--logfile",
                                     dir_ + "/redis.log"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
    for (int i = 0; i < 500 && pid_ > 0; ++i) {
      if (port_answers(port_) && std::filesystem::exists(socket_path())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop(SIGKILL);
    return false;
  }
  /// Ends the server with `signal` (SIGKILL: as if it crashed) and waits for it.
  void stop(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::vector<std::string> extra_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

/// A TCP listener that accepts connections (the kernel completes them) and never answers.
class SilentServer {
 public:
  SilentServer() { fd_ = listen_on_loopback(port_); }
  ~SilentServer() { ::close(fd_); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace cujit::test

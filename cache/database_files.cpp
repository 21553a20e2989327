#include "cache/database_files.hpp"

#include "cache/sqlite.hpp"

#include <cujit/error.hpp>

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace cujit::detail {
namespace {

std::string time_suffix() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

constexpr const char* kForeignRemedy =
    "; not used (set CUJIT_CACHE_ALLOW_FOREIGN=1 or CacheConfig::allow_foreign_owner to use it "
    "anyway)";

// Throws CacheError unless `st` (of `path`; `what`: "cache database", "cache directory") is
// owned by this user (or by root when `root_ok`) and not writable by group or others;
// `refused` ends the message.
void check_owner_and_mode(const std::string& what, const std::string& path, const struct stat& st,
                          bool root_ok, const std::string& refused = kForeignRemedy) {
  if (st.st_uid != ::geteuid() && !(root_ok && st.st_uid == 0)) {
    throw CacheError("cujit: " + what + " " + path + " is owned by uid " +
                     std::to_string(st.st_uid) + ", not by this user (uid " +
                     std::to_string(::geteuid()) + ")" + refused);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw CacheError("cujit: " + what + " " + path +
                     " is writable by group or others (chmod go-w it)" + refused);
  }
}

// check_owner_and_mode of what `path` names now (following links).
void check_owner_and_mode(const std::string& what, const std::string& path, bool root_ok) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw CacheError("cujit: " + what + " " + path + ": cannot stat: " + std::strerror(errno));
  }
  check_owner_and_mode(what, path, st, root_ok);
}

// The /proc/self/fd path this thread is opening through checked_descriptor_vfs, if any.
thread_local const char* t_descriptor_path = nullptr;
sqlite3_syscall_ptr g_sqlite_open = nullptr;

// SQLite's unix VFS opens every file with O_NOFOLLOW, and /proc/self/fd/N is a (magic) link:
// the one path this thread opens through checked_descriptor_vfs goes through without it;
// every other open is SQLite's own.
int open_checked_descriptor(const char* path, int flags, int mode) {
  if (t_descriptor_path != nullptr && std::strcmp(path, t_descriptor_path) == 0) {
    flags &= ~O_NOFOLLOW;
  }
  return reinterpret_cast<int (*)(const char*, int, int)>(g_sqlite_open)(path, flags, mode);
}

// SQLite's unix VFS, except that a file name is taken as given: its xFullPathname resolves
// symbolic links, which would turn /proc/self/fd/N back into the name that descriptor was
// opened by, and SQLite would open that name again, whatever it names by then. Null when
// SQLite has no unix VFS.
const char* checked_descriptor_vfs() {
  static const char* name = []() -> const char* {
    sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == nullptr || unix_vfs->iVersion < 3) return nullptr;
    g_sqlite_open = unix_vfs->xGetSystemCall(unix_vfs, "open");
    if (g_sqlite_open == nullptr ||
        unix_vfs->xSetSystemCall(unix_vfs, "open",
                                 reinterpret_cast<sqlite3_syscall_ptr>(open_checked_descriptor)) !=
            SQLITE_OK) {
      return nullptr;
    }
    static sqlite3_vfs vfs = *unix_vfs;
    vfs.zName = "cujit-checked-descriptor";
    vfs.pNext = nullptr;
    vfs.xFullPathname = [](sqlite3_vfs*, const char* path, int size, char* out) {
      if (static_cast<int>(std::strlen(path)) >= size) return SQLITE_CANTOPEN;
      sqlite3_snprintf(size, out, "%s", path);
      return SQLITE_OK;
    };
    return sqlite3_vfs_register(&vfs, 0) == SQLITE_OK ? vfs.zName : nullptr;
  }();
  return name;
}

// SQLite's name for the file open on `fd` (DescriptorPath::uri).
std::string descriptor_uri(const std::string& proc, const std::string& query) {
  struct stat st {};
  const char* vfs = checked_descriptor_vfs();
  if (vfs == nullptr || ::stat(proc.c_str(), &st) != 0) return {};
  return file_uri(proc, query + "&vfs=" + vfs);
}

}  // namespace

void check_file_owner(const std::string& path, bool read_only, bool allow_foreign_owner) {
  if (!allow_foreign_owner) check_owner_and_mode("cache database", path, read_only);
}

void check_cache_directory(const std::string& directory, bool allow_foreign_owner) {
  // Whoever may write the directory may plant a -wal SQLite would replay, or a link.
  if (!allow_foreign_owner) check_owner_and_mode("cache directory", directory, false);
}

void check_private_directory(const std::string& what, const std::string& directory,
                             const struct stat& st) {
  check_owner_and_mode(what, directory, st, false, "; not used");
}

void check_cache_files(const std::string& path, bool allow_foreign_owner) {
  if (allow_foreign_owner) return;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = path + suffix;
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;
      throw CacheError("cujit: cache file " + file + ": cannot stat: " + std::strerror(errno));
    }
    if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)) {
      throw CacheError("cujit: cache file " + file + " is " +
                       (S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file") +
                       "; not followed or used (remove it, or set CUJIT_CACHE_ALLOW_FOREIGN=1)");
    }
    // The lstat result itself: a second stat could find a -journal SQLite has removed since
    // (another process's transaction ending), and fail a healthy database.
    check_owner_and_mode("cache database", file, st, false);
  }
}

void check_existing_database(const std::string& path, bool allow_foreign_owner) {
  if (!file_exists(path)) throw CacheError("cujit: cache database " + path + " does not exist");
  check_cache_directory(parent_directory(path), allow_foreign_owner);
  check_cache_files(path, allow_foreign_owner);
}

bool is_network_filesystem(const std::string& directory) {
  struct statfs fs {};
  if (::statfs(directory.c_str(), &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x6969UL:      // NFS
    case 0xFF534D42UL:  // CIFS
    case 0xFE534D42UL:  // SMB2
    case 0x517BUL:      // SMB
    case 0x65735546UL:  // FUSE (sshfs, s3fs, ...)
    case 0x0BD00BD0UL:  // Lustre
    case 0x5346414FUL:  // AFS
    case 0x00C36400UL:  // Ceph
    case 0x01021997UL:  // 9p
    case 0x47504653UL:  // GPFS
      return true;
    default:
      return false;
  }
}

void create_private_directories(const std::string& directory) {
  if (directory.empty()) return;
  struct stat existing {};
  if (::stat(directory.c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) return;
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = directory.find('/', pos + 1);
    partial = directory.substr(0, pos);
    if (partial.empty() || file_exists(partial)) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      throw CacheError("cujit: cannot create cache directory " + partial + ": " +
                       std::strerror(errno));
    }
  }
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw CacheError("cujit: cache directory " + directory + " is not a directory");
  }
}

std::string parent_directory(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::uint64_t database_file_size(const std::string& path) {
  return file_size(path) + file_size(path + "-wal");
}

FileDescriptor open_deployment_file(const std::string& path, bool allow_foreign_owner) {
  struct stat st {};
  FileDescriptor fd = open_and_stat(path, true, st);
  if (!fd.valid() && errno == ENOENT) {
    throw CacheError("cujit: deployment cache database " + path + " does not exist");
  }
  if (!fd.valid()) {
    throw CacheError("cujit: deployment cache database " + path +
                     " cannot be opened: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw CacheError("cujit: deployment cache database " + path +
                     " is not a regular file (a directory, device or pipe); not used");
  }
  if (!allow_foreign_owner) check_owner_and_mode("cache database", path, st, true);
  return fd;
}

DescriptorPath::DescriptorPath(const FileDescriptor& fd, const std::string& query)
    : proc_("/proc/self/fd/" + std::to_string(fd.get())) {
  t_descriptor_path = proc_.c_str();
  uri_ = descriptor_uri(proc_, query);
}

DescriptorPath::~DescriptorPath() { t_descriptor_path = nullptr; }

std::string move_damaged_aside(const std::string& path, const std::string& reason) {
  std::string aside = path + ".corrupt-" + time_suffix();
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    throw CacheError("cujit: cache database " + path + " is damaged (" + reason +
                     ") and cannot be moved aside: " + std::strerror(errno));
  }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  return aside;
}

bool prepare_cache_location(const std::string& path, bool allow_foreign_owner,
                            std::optional<bool> network_fs) {
  std::string dir = parent_directory(path);
  create_private_directories(dir);
  const bool on_network = network_fs ? *network_fs : is_network_filesystem(dir);
  // Once the directory is private, nobody else can plant a file after these checks.
  check_cache_directory(dir, allow_foreign_owner);
  check_cache_files(path, allow_foreign_owner);
  return on_network;
}

}  // namespace cujit::detail

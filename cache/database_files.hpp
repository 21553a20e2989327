#pragma once
// The files of a cache database as the filesystem sees them, before and beside SQLite: owner and
// mode checks of the directory and of the database's files, refusal of symbolic links,
// network-filesystem detection, the checked descriptor a deployment database is read through,
// and moving a damaged database aside. POSIX calls only; SqliteStore (sqlite_store.hpp) and the
// source dump (runtime/source_dump.cpp) use them.

#include "core/checked_file.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

namespace cujit::detail {

/// Checks that `path` (an existing file) may be loaded: owned by this user (or by root when
/// `read_only`), not writable by group or others. Throws CacheError explaining the refusal.
void check_file_owner(const std::string& path, bool read_only, bool allow_foreign_owner);

/// Checks that a cache directory may hold a writable database: owned by this user and not
/// writable by group or others (a sticky 1777 directory included), so that nobody else can
/// plant `kernels.db`, `-wal`, `-shm` or lock files in it. No-op when `allow_foreign_owner`.
/// Throws CacheError explaining the refusal.
void check_cache_directory(const std::string& directory, bool allow_foreign_owner);

/// Checks a directory cujit writes private files to (the source dump directory), from `st`
/// (fstat of a descriptor open on it): check_cache_directory's rule, owned by this user and
/// not writable by group or others, with no exception. `what` names it in the message. Throws
/// CacheError explaining the refusal.
void check_private_directory(const std::string& what, const std::string& directory,
                             const struct stat& st);

/// Checks the database `path` and its `-wal`, `-shm` and `-journal` files, where they exist,
/// without following links: each must be a regular file (never a symbolic link) that
/// check_file_owner accepts. No-op when `allow_foreign_owner`. Throws CacheError.
void check_cache_files(const std::string& path, bool allow_foreign_owner);

/// Checks an existing database before it is opened for maintenance: `path` exists, and its
/// directory and files pass check_cache_directory and check_cache_files. Throws CacheError
/// naming what is missing or refused.
void check_existing_database(const std::string& path, bool allow_foreign_owner);

/// True when `directory` lies on NFS, CIFS/SMB or another network filesystem.
bool is_network_filesystem(const std::string& directory);

/// Prepares the place of the writable database `path`: creates its directory like
/// create_private_directories, then checks it (check_cache_directory) and the database's files
/// (check_cache_files). Returns `network_fs` when given, else whether the directory lies on a
/// network filesystem (is_network_filesystem). Throws CacheError.
bool prepare_cache_location(const std::string& path, bool allow_foreign_owner,
                            std::optional<bool> network_fs);

/// Creates `directory` and its missing parents with mode 0700. Throws CacheError.
void create_private_directories(const std::string& directory);

/// The directory that holds the file `path`: "." for a bare name, "/" for a file at the root.
std::string parent_directory(const std::string& path);

/// Size in bytes of the database file `path` plus its `-wal` file (0 for a missing one).
std::uint64_t database_file_size(const std::string& path);

/// Opens a deployment database once, following a link, and checks it through that descriptor:
/// a regular file (a FIFO or device is refused without waiting on it), owned by this user or
/// by root and not writable by group or others unless `allow_foreign_owner`. Returns the open
/// descriptor (the caller owns it). Throws CacheError naming `path` and the refusal.
FileDescriptor open_deployment_file(const std::string& path, bool allow_foreign_owner);

/// The name under which SQLite opens the file open on a descriptor itself: /proc/self/fd/N
/// reopens that file (not a name), so that what was checked through the descriptor is what
/// SQLite reads, whatever the checked name names by then. While an object lives, SQLite opens
/// that one name from this thread without O_NOFOLLOW (through a copy of the unix VFS that takes
/// a file name as given); every other open stays SQLite's own. Not copyable; the descriptor
/// must stay open until SQLite has opened it.
class DescriptorPath {
 public:
  /// `query`: the URI's parameters ("immutable=1").
  DescriptorPath(const FileDescriptor& fd, const std::string& query);
  ~DescriptorPath();
  DescriptorPath(const DescriptorPath&) = delete;
  DescriptorPath& operator=(const DescriptorPath&) = delete;
  /// A "file:" URI of /proc/self/fd/N with that VFS; empty where there is no /proc or no unix
  /// VFS (SQLite then opens the checked name).
  const std::string& uri() const noexcept { return uri_; }

 private:
  std::string proc_;
  std::string uri_;
};

/// Moves the damaged database `path` aside to `PATH.corrupt-<UTC time>`, deletes its `-wal`,
/// `-shm` and `-journal` files, and returns the new name. Throws CacheError naming `path` and
/// `reason` (what was wrong with it) when it cannot be moved.
std::string move_damaged_aside(const std::string& path, const std::string& reason);

}  // namespace cujit::detail

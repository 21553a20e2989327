#include "cache/sqlite_store.hpp"

#include "cache/compiler_identity.hpp"
#include "cache/entry_signature.hpp"
#include "cache/kernel_names.hpp"
#include "core/checked_file.hpp"

#include "support/sha256.hpp"
#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>

namespace cujit::detail {
namespace {

// Small columns first: SQLite reads a row's leading columns without touching the overflow
// pages that hold the blobs at the end.
// Signatures (96-byte rows, found by key with every lookup) live in a WITHOUT ROWID table:
// one B-tree probe, not an index probe and then a row fetch.
constexpr const char* kSchema = R"sql(
CREATE TABLE kernels(
  content_key TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL,
  target TEXT NOT NULL,
  record_size INTEGER NOT NULL,
  binary_size INTEGER NOT NULL,
  source_size INTEGER NOT NULL,
  created INTEGER NOT NULL,
  last_used INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  codegen_version INTEGER NOT NULL,
  checksum BLOB NOT NULL,
  lowered_names BLOB NOT NULL,
  options TEXT NOT NULL,
  metadata TEXT NOT NULL,
  log TEXT NOT NULL,
  source BLOB NOT NULL,
  binary BLOB NOT NULL);
CREATE INDEX kernels_lru ON kernels(last_used, record_size);
CREATE TABLE requests(request_key TEXT PRIMARY KEY NOT NULL, content_key TEXT NOT NULL);
CREATE INDEX requests_content ON requests(content_key);
CREATE TABLE counters(name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
CREATE TABLE signatures(key TEXT PRIMARY KEY NOT NULL, signature BLOB NOT NULL) WITHOUT ROWID;
)sql";

// Columns loaded for a lookup (no source), and for a complete record.
#define CUJIT_RECORD_COLUMNS                                                                 \
  "k.content_key, k.kind, k.target, k.binary_size, k.source_size, k.created, k.last_used, "  \
  "k.nvrtc_version, k.codegen_version, k.checksum, k.lowered_names, k.options, k.metadata, " \
  "k.log, k.binary"

// Lookups bring the signature of what they looked up along (one more primary-key probe, in
// the same statement): of the entry by content key, of the mapping by request key. A signature
// covers the source, so a signed entry's source comes too; SQLite evaluates CASE lazily, so
// an unsigned entry's source is never read.
#define CUJIT_SIGNED_COLUMNS \
  ", s.signature, CASE WHEN s.signature IS NULL THEN NULL ELSE k.source END"
constexpr const char* kFindByContent =
    "SELECT " CUJIT_RECORD_COLUMNS CUJIT_SIGNED_COLUMNS
    " FROM kernels k LEFT JOIN signatures s ON s.key = k.content_key "
    "WHERE k.content_key = ?1";
constexpr const char* kFindByRequest =
    "SELECT " CUJIT_RECORD_COLUMNS CUJIT_SIGNED_COLUMNS
    " FROM requests r JOIN kernels k ON k.content_key = r.content_key "
    "LEFT JOIN signatures s ON s.key = r.request_key WHERE r.request_key = ?1";
#undef CUJIT_SIGNED_COLUMNS
constexpr int kSignatureColumn = 15;
constexpr int kSignedSourceColumn = 16;
constexpr const char* kAllRecords =
    "SELECT " CUJIT_RECORD_COLUMNS ", k.source FROM kernels k ORDER BY k.content_key";
constexpr int kSourceColumn = 15;
constexpr const char* kRecentKeys =
    "SELECT r.request_key, k.content_key FROM requests r JOIN kernels k ON k.content_key = "
    "r.content_key ORDER BY k.last_used DESC LIMIT ?1";
// Entries of another codegen version, or built by another compiler version than this machine's
// (?1; when no compiler can be loaded here, ?1 is empty and only the codegen version counts).
#define CUJIT_STALE_WHERE " WHERE (?1 != '' AND nvrtc_version != ?1) OR codegen_version != ?2"
constexpr const char* kStaleCount = "SELECT count(*) FROM kernels" CUJIT_STALE_WHERE;
constexpr const char* kStaleKeys = "SELECT content_key FROM kernels" CUJIT_STALE_WHERE;
#undef CUJIT_STALE_WHERE
constexpr std::size_t kMaxPendingTouches = 64;
// How long flush() waits for another connection's lock (ms).
constexpr int kFlushBusyTimeoutMs = 100;

// Fills `out` from a row of CUJIT_RECORD_COLUMNS; false when a field fails its checks.
bool read_row(const Statement& s, CacheRecord& out) {
  out.content_key = s.column_bytes(0);
  out.kind = s.column_bytes(1);
  std::string target = s.column_bytes(2);
  std::int64_t binary_size = s.column_int(3);
  std::int64_t source_size = s.column_int(4);
  out.created = s.column_int(5);
  out.last_used = s.column_int(6);
  out.nvrtc_version = s.column_bytes(7);
  out.codegen_version = static_cast<int>(s.column_int(8));
  out.checksum = s.column_bytes(9);
  std::string names = s.column_bytes(10);
  out.options = s.column_bytes(11);
  out.program.metadata = s.column_bytes(12);
  out.program.log = log_text(s.column_bytes(13));  // older entries may end in a NUL
  out.program.binary = s.column_bytes(14);
  if (binary_size < 0 || static_cast<std::uint64_t>(binary_size) != out.program.binary.size()) {
    return false;
  }
  if (source_size < 0 || static_cast<std::uint64_t>(source_size) > kMaxSourceSize) return false;
  out.source_size = static_cast<std::uint64_t>(source_size);
  try {
    out.program.target = Target::parse(target);
  } catch (const Error&) {
    return false;
  }
  if (out.program.target.name() != target) return false;
  auto decoded = decode_names(names);
  if (!decoded) return false;
  out.program.lowered_names = std::move(*decoded);
  return out.checksum.size() == 16 && out.checksum_ok();
}

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

std::string parent_directory(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// True when the database header selects WAL (format versions 2 at bytes 18 and 19), so that
// the journal-mode switch can be skipped. Reads through SQLite's own file handle: opening and
// closing another descriptor of the file would drop every POSIX lock this process holds on it.
bool header_says_wal(Database& db) {
  sqlite3_file* file = nullptr;
  if (sqlite3_file_control(db.handle(), "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
      file == nullptr || file->pMethods == nullptr) {
    return false;
  }
  unsigned char header[20] = {};
  if (file->pMethods->xRead(file, header, sizeof header, 0) != SQLITE_OK) return false;
  return header[18] == 2 && header[19] == 2;
}

void add_counter(Database& db, const char* name, std::uint64_t delta) {
  if (delta == 0) return;
  Statement s = db.prepare(
      "INSERT INTO counters(name, value) VALUES(?1, ?2) "
      "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value");
  s.bind_text(1, name).bind(2, static_cast<std::int64_t>(delta));
  s.step();
}

void delete_entry(Database& db, const std::string& content_key) {
  Statement signatures = db.prepare(
      "DELETE FROM signatures WHERE key = ?1 OR key IN "
      "(SELECT request_key FROM requests WHERE content_key = ?1)");
  signatures.bind_text(1, content_key);
  signatures.step();
  Statement a = db.prepare("DELETE FROM kernels WHERE content_key = ?1");
  a.bind_text(1, content_key);
  a.step();
  Statement b = db.prepare("DELETE FROM requests WHERE content_key = ?1");
  b.bind_text(1, content_key);
  b.step();
}

// `stamp`, when given, replaces the record's created and last-used times.
// Whether the stored entry of `r`'s content key is `r` in every field a signature covers.
bool stored_as(Database& db, const CacheRecord& r) {
  Statement s = db.prepare("SELECT " CUJIT_RECORD_COLUMNS
                           ", k.source FROM kernels k WHERE k.content_key = ?1");
  s.bind_text(1, r.content_key);
  CacheRecord stored;
  if (!s.step() || !read_row(s, stored)) return false;
  stored.source_zstd = s.column_bytes(kSourceColumn);
  return signs_alike(stored, r);
}

void insert_record(Database& db, const CacheRecord& r, std::optional<std::int64_t> stamp) {
  Statement s = db.prepare(
      "INSERT OR IGNORE INTO kernels(content_key, kind, target, record_size, binary_size, "
      "source_size, created, last_used, nvrtc_version, codegen_version, checksum, "
      "lowered_names, options, metadata, log, source, binary) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)");
  s.bind_text(1, r.content_key)
      .bind_text(2, r.kind)
      .bind_text(3, r.program.target.name())
      .bind(4, static_cast<std::int64_t>(r.size()))
      .bind(5, static_cast<std::int64_t>(r.program.binary.size()))
      .bind(6, static_cast<std::int64_t>(r.source_size))
      .bind(7, stamp.value_or(r.created))
      .bind(8, stamp.value_or(r.last_used))
      .bind_text(9, r.nvrtc_version)
      .bind(10, r.codegen_version)
      .bind_blob(11, r.checksum)
      .bind_blob(12, encode_names(r.program.lowered_names))
      .bind_text(13, r.options)
      .bind_text(14, r.program.metadata)
      .bind_text(15, r.program.log)
      .bind_blob(16, r.source_zstd)
      .bind_blob(17, r.program.binary);
  s.step();
}

// Stores `signature` under `key`; an empty one deletes the key's signature.
void store_signature(Database& db, const std::string& key, const std::string& signature) {
  Statement s =
      signature.empty()
          ? db.prepare("DELETE FROM signatures WHERE key = ?1")
          : db.prepare("INSERT OR REPLACE INTO signatures(key, signature) VALUES(?1, ?2)");
  s.bind_text(1, key);
  if (!signature.empty()) s.bind_blob(2, signature);
  s.step();
}

// A request's old signature signed its old mapping: it goes with it (replaced by `signature`).
void map_request(Database& db, const std::string& request_key, const std::string& content_key,
                 const std::string& signature) {
  Statement s =
      db.prepare("INSERT OR REPLACE INTO requests(request_key, content_key) VALUES(?1, ?2)");
  s.bind_text(1, request_key).bind_text(2, content_key);
  s.step();
  store_signature(db, request_key, signature);
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

// The name under which SQLite opens the file open on `fd` itself: /proc/self/fd/N reopens that
// file (not a name), so that what was checked through `fd` is what SQLite reads. Empty where
// there is no /proc or no unix VFS (SQLite then opens the checked name).
std::string descriptor_uri(const FileDescriptor& fd, const std::string& query) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
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
    check_file_owner(file, false, false);
  }
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

std::string SqliteStore::lease_directory() const {
  // flock() is local to a host: across NFS clients it may not exclude anyone.
  return read_only_ || network_fs_ ? std::string() : path_ + ".leases";
}

SqliteStore::SqliteStore(std::string path, bool read_only, StoreOptions options)
    : path_(std::move(path)), read_only_(read_only), options_(std::move(options)) {}

SqliteStore::~SqliteStore() {
  std::lock_guard lock(mutex_);
  try {
    if (db_) flush_briefly_locked();
  } catch (...) {
    // Last-used times are a hint; losing them on a failing database is harmless.
  }
  close_locked();
}

std::int64_t SqliteStore::now() const { return options_.clock ? options_.clock() : now_ms(); }

void SqliteStore::require_writable(const char* what) const {
  if (read_only_) {
    throw CacheError("cujit: cache database " + path_ + " is a read-only deployment database; " +
                     "cannot " + what);
  }
}

std::unique_ptr<SqliteStore> SqliteStore::open_writable(const std::string& path,
                                                        const StoreOptions& options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, false, options));
  std::string dir = parent_directory(path);
  create_private_directories(dir);
  store->network_fs_ =
      options.network_fs == StoreOptions::NetworkFs::Yes ||
      (options.network_fs == StoreOptions::NetworkFs::Detect && is_network_filesystem(dir));
  // Once the directory is private, nobody else can plant a file after these checks.
  check_cache_directory(dir, options.allow_foreign_owner);
  check_cache_files(path, options.allow_foreign_owner);
  std::lock_guard lock(store->mutex_);
  try {
    store->open_locked();
  } catch (const SqliteError& e) {
    if (!e.corrupt()) throw;
    store->close_locked();
    std::string aside = path + ".corrupt-" + time_suffix();
    if (std::rename(path.c_str(), aside.c_str()) != 0) {
      throw CacheError("cujit: cache database " + path + " is damaged (" + e.what() +
                       ") and cannot be moved aside: " + std::strerror(errno));
    }
    for (const char* suffix : {"-wal", "-shm", "-journal"}) {
      std::remove((path + suffix).c_str());
    }
    warn("cache database " + path + " is damaged or not an SQLite database; moved it to " + aside +
         " and started a new one");
    store->open_locked();
  }
  return store;
}

// Opened once (a link is followed: what it names is checked), checked through the descriptor,
// and read by SQLite through that descriptor: the file checked is the file read, and a FIFO
// is refused before anything waits on it.
std::unique_ptr<SqliteStore> SqliteStore::open_read_only(const std::string& path,
                                                         const StoreOptions& options) {
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
  if (!options.allow_foreign_owner) check_owner_and_mode("cache database", path, st, true);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, true, options));
  std::lock_guard lock(store->mutex_);
  const std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
  struct Opening {  // SQLite opens the file during open_locked, on this thread
    explicit Opening(const std::string& p) { t_descriptor_path = p.c_str(); }
    ~Opening() { t_descriptor_path = nullptr; }
  } opening(proc);
  try {
    store->open_locked(descriptor_uri(fd, "immutable=1"));
  } catch (const SqliteError& e) {
    throw CacheError("cujit: deployment cache database " + path + " cannot be used: " + e.what());
  }
  return store;
}

std::unique_ptr<SqliteStore> SqliteStore::open_existing(const std::string& path,
                                                        const StoreOptions& options) {
  if (!file_exists(path)) throw CacheError("cujit: cache database " + path + " does not exist");
  check_cache_directory(parent_directory(path), options.allow_foreign_owner);
  check_cache_files(path, options.allow_foreign_owner);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, false, options));
  std::lock_guard lock(store->mutex_);
  try {
    store->db_.emplace(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, path);
    store->db_->set_busy_timeout(options.busy_timeout_ms);
    store->check_schema_locked();
  } catch (const SqliteError& e) {
    throw CacheError("cujit: cache database " + path + " cannot be used: " + e.what());
  }
  return store;
}

void SqliteStore::check_schema_locked() {
  std::int64_t version = db_->query_int("PRAGMA user_version");
  if (version != kSchemaVersion) {
    throw CacheError("cujit: cache database " + path_ + " has schema version " +
                     std::to_string(version) + "; this cujit reads version " +
                     std::to_string(kSchemaVersion));
  }
  if (db_->query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                     "('kernels', 'requests', 'counters', 'signatures')") != 4) {
    throw CacheError("cujit: " + path_ + " is not a cujit cache database");
  }
}

void SqliteStore::open_locked(const std::string& read_only_uri) {
  statements_.clear();
  if (read_only_) {
    db_.emplace(read_only_uri.empty() ? file_uri(path_, "immutable=1") : read_only_uri,
                SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, path_);
    check_schema_locked();
    prepare_lookups_locked();
    return;
  }
  db_.emplace(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, path_);
  db_->set_busy_timeout(options_.busy_timeout_ms);
  // Reading the header first makes a non-database fail here, before anything is written.
  std::int64_t version = db_->query_int("PRAGMA user_version");
  if (version > kSchemaVersion) {
    throw CacheError("cujit: cache database " + path_ + " has schema version " +
                     std::to_string(version) + ", newer than this cujit's (" +
                     std::to_string(kSchemaVersion) + "); not used");
  }
  if (network_fs_) {
    // WAL needs shared memory that network filesystems do not provide coherently.
    db_->exec("PRAGMA journal_mode=DELETE; PRAGMA mmap_size=0");
  } else if (!header_says_wal(*db_)) {
    // Switching to WAL needs an exclusive lock for a moment; retry while others hold it.
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(std::max(options_.busy_timeout_ms, 1));
    for (;;) {
      try {
        if (db_->query_text("PRAGMA journal_mode=WAL") == "wal") break;
      } catch (const SqliteError& e) {
        if (!e.busy() || std::chrono::steady_clock::now() > deadline) throw;
      }
      if (std::chrono::steady_clock::now() > deadline) break;  // stays in rollback mode
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!network_fs_) db_->exec("PRAGMA mmap_size=268435456");
  db_->exec("PRAGMA synchronous=NORMAL");
  // The process-wide cache is never closed, so SQLite's checkpoint-on-close never runs and
  // every new process rebuilds the WAL index by reading the whole WAL: keep the WAL short
  // (measured on the build machine: a warm hit in a fresh process took 2.0-2.4 ms with a
  // 120 KiB WAL, growing with every run up to the default 1000-page checkpoint).
  db_->exec("PRAGMA wal_autocheckpoint=16");
  db_->exec("PRAGMA journal_size_limit=262144");
  if (version < kSchemaVersion) create_schema_locked();
  prepare_lookups_locked();
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    opened_dev_ = static_cast<std::uint64_t>(st.st_dev);
    opened_ino_ = static_cast<std::uint64_t>(st.st_ino);
  }
}

void SqliteStore::prepare_lookups_locked() {
  // Preparing loads the schema now, as part of opening (and of KernelCache::prefetch()), not
  // during the first lookup.
  for (const char* sql : {kFindByRequest, kFindByContent}) {
    if (statements_.count(sql) == 0) statements_.emplace(sql, db_->prepare(sql));
  }
}

void SqliteStore::create_schema_locked() {
  // Takes effect only while the file has no tables: lets eviction give pages back.
  db_->exec("PRAGMA auto_vacuum=INCREMENTAL");
  Transaction t(*db_, true);
  std::int64_t version = db_->query_int("PRAGMA user_version");
  if (version == kSchemaVersion) return;  // another process created it meanwhile
  if (version > kSchemaVersion) {
    throw CacheError("cujit: cache database " + path_ + " has schema version " +
                     std::to_string(version) + ", newer than this cujit's; not used");
  }
  if (version == 0 &&
      db_->query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table'") != 0) {
    throw CacheError("cujit: " + path_ +
                     " is an SQLite database but not a cujit cache; not used (left untouched)");
  }
  // An older cujit schema: the entries are only a cache, so migration rebuilds the tables.
  db_->exec(
      "DROP TABLE IF EXISTS kernels; DROP TABLE IF EXISTS requests; "
      "DROP TABLE IF EXISTS counters; DROP TABLE IF EXISTS signatures;");
  db_->exec(kSchema);
  db_->exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
  t.commit();
}

StoreFailure SqliteStore::failure_of(const Error& error) const {
  const auto* e = dynamic_cast<const SqliteError*>(&error);
  if (e == nullptr) return StoreFailure::Other;
  return e->corrupt() ? StoreFailure::Corrupt
         : e->full()  ? StoreFailure::Full
                      : StoreFailure::Other;
}

std::uint64_t SqliteStore::generation() {
  std::lock_guard lock(mutex_);
  return generation_;
}

void SqliteStore::recreate_after_corruption(const std::string& reason,
                                            std::uint64_t seen_generation) {
  require_writable("recreate it");
  std::lock_guard lock(mutex_);
  if (generation_ != seen_generation) return;  // another thread did it already
  close_locked();
  pending_touches_.clear();
  pending_hits_ = 0;
  ++generation_;
  struct stat st {};
  bool replaced = ::stat(path_.c_str(), &st) != 0 ||
                  static_cast<std::uint64_t>(st.st_dev) != opened_dev_ ||
                  static_cast<std::uint64_t>(st.st_ino) != opened_ino_;
  if (replaced) {  // another process moved the damaged file aside (and warned)
    open_locked();
    return;
  }
  std::string aside = path_ + ".corrupt-" + time_suffix();
  if (std::rename(path_.c_str(), aside.c_str()) != 0) {
    throw CacheError("cujit: cache database " + path_ + " is damaged (" + reason +
                     ") and cannot be moved aside: " + std::strerror(errno));
  }
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::remove((path_ + suffix).c_str());
  warn("cache database " + path_ + " is damaged (" + reason + "); moved it to " + aside +
       " and started a new one");
  open_locked();
}

Lookup SqliteStore::read_locked(const char* sql, const std::string& key) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) it = statements_.emplace(sql, db_->prepare(sql)).first;
  Statement& s = it->second;
  struct Rewind {
    Statement& s;
    ~Rewind() { s.reset(); }
  } rewind{s};
  Lookup out;
  s.bind_text(1, key);
  if (!s.step()) return out;
  out.status = read_row(s, out.record) ? Lookup::Status::Hit : Lookup::Status::Damaged;
  out.signature = s.column_bytes(kSignatureColumn);
  out.record.source_zstd = s.column_bytes(kSignedSourceColumn);
  return out;
}

Lookup SqliteStore::find_locked(const char* sql, const std::string& key) {
  Lookup out = read_locked(sql, key);
  if (out.status == Lookup::Status::Hit && !read_only_) {
    pending_touches_[out.record.content_key] = now();
    ++pending_hits_;
    if (pending_touches_.size() >= kMaxPendingTouches) flush_locked();
  }
  return out;
}

void SqliteStore::close_locked() noexcept {
  statements_.clear();
  db_.reset();
}

Lookup SqliteStore::find_by_request(const std::string& request_key) {
  std::lock_guard lock(mutex_);
  return find_locked(kFindByRequest, request_key);
}

std::vector<std::pair<std::string, CacheRecord>> SqliteStore::recent(std::size_t max_records) {
  // The keys first, then one record per lock: a lookup that arrives meanwhile waits for one
  // record's read at most. Reading ahead is not a use: no touch, no hit counted.
  std::vector<std::pair<std::string, std::string>> keys;  // (request key, content key)
  {
    std::lock_guard lock(mutex_);
    Statement s = db_->prepare(kRecentKeys);
    s.bind(1, static_cast<std::int64_t>(max_records));
    while (s.step()) keys.emplace_back(s.column_bytes(0), s.column_bytes(1));
  }
  std::vector<std::pair<std::string, CacheRecord>> out;
  for (auto& [request, content] : keys) {
    Lookup found;
    {
      std::lock_guard lock(mutex_);
      found = read_locked(kFindByContent, content);
    }
    if (found.status == Lookup::Status::Hit)
      out.emplace_back(std::move(request), std::move(found.record));
  }
  return out;
}

Lookup SqliteStore::find_by_content(const std::string& content_key) {
  std::lock_guard lock(mutex_);
  return find_locked(kFindByContent, content_key);
}

void SqliteStore::write_touches_locked() {
  Statement s =
      db_->prepare("UPDATE kernels SET last_used = max(last_used, ?2) WHERE content_key = ?1");
  for (const auto& [key, when] : pending_touches_) {
    s.bind_text(1, key).bind(2, when);
    s.step();
    s.reset();
  }
  add_counter(*db_, "hits", pending_hits_);
}

void SqliteStore::flush_locked() {
  if (read_only_ || (pending_touches_.empty() && pending_hits_ == 0)) return;
  Transaction t(*db_, true);
  write_touches_locked();
  t.commit();
  pending_touches_.clear();
  pending_hits_ = 0;
}

bool SqliteStore::flush_briefly_locked() {
  // Restores the normal busy timeout on every way out of here.
  struct Timeout {
    Database& db;
    int normal;
    ~Timeout() { db.set_busy_timeout(normal); }
  } restore{*db_, options_.busy_timeout_ms};
  // Last-used times are a hint: waiting 5 s for another process's lock (at exit, say) is not
  // worth them. They stay pending for a later flush if the lock is held.
  db_->set_busy_timeout(std::min(options_.busy_timeout_ms, kFlushBusyTimeoutMs));
  try {
    flush_locked();
  } catch (const SqliteError& e) {
    if (!e.busy()) throw;
    return false;
  }
  return true;
}

void SqliteStore::flush() {
  std::lock_guard lock(mutex_);
  if (!db_ || !flush_briefly_locked()) return;
  if (read_only_ || network_fs_) return;
  // The next process to open the database rebuilds the WAL index from every frame in the WAL
  // (recovery forgets which frames were checkpointed), so a WAL left behind slows every
  // fresh process's first lookup and grows by each process's last-used writes. Truncate it
  // now if nobody else is using it; never wait for that.
  try {
    db_->set_busy_timeout(0);
    db_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (const SqliteError&) {
    // Busy or failing: the WAL stays and is checkpointed later.
  }
  db_->set_busy_timeout(options_.busy_timeout_ms);
}

void SqliteStore::put(const CacheRecord& record, const std::string& request_key,
                      const EntrySignatures& signatures) {
  require_writable("store kernels in it");
  std::uint64_t evicted = 0;
  {
    std::lock_guard lock(mutex_);
    Transaction t(*db_, true);
    insert_record(*db_, record, now());
    bool inserted = db_->query_int("SELECT changes()") > 0;
    // A signature vouches for `record`: it is kept only with an entry that is `record` in
    // every signed field (an entry of this content key stored earlier may differ, in its
    // options' program name for one, and would then fail its verification).
    const bool same = inserted || (signatures.content.empty() && signatures.request.empty()) ||
                      stored_as(*db_, record);
    if (!signatures.content.empty() && same) {
      store_signature(*db_, record.content_key, signatures.content);
    }
    if (!request_key.empty()) {
      map_request(*db_, request_key, record.content_key, same ? signatures.request : "");
    }
    if (inserted) add_counter(*db_, "misses", 1);
    write_touches_locked();
    if (options_.max_size > 0) evicted = evict_locked(options_.max_size, record.content_key);
    t.commit();
    pending_touches_.clear();
    pending_hits_ = 0;
    if (evicted > 0) {
      try {
        db_->exec("PRAGMA incremental_vacuum");
      } catch (const SqliteError&) {
        // Giving pages back to the filesystem is optional.
      }
    }
  }
}

void SqliteStore::link(const std::string& request_key, const std::string& content_key) {
  require_writable("store kernels in it");
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  map_request(*db_, request_key, content_key, "");
  t.commit();
}

void SqliteStore::remove(const std::string& content_key) {
  require_writable("remove kernels from it");
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  delete_entry(*db_, content_key);
  t.commit();
  pending_touches_.erase(content_key);
}

void SqliteStore::touch(const std::string& content_key) {
  if (read_only_) return;
  std::lock_guard lock(mutex_);
  pending_touches_[content_key] = now();
}

std::uint64_t SqliteStore::evict_locked(std::uint64_t max_size, const std::string& keep) {
  auto total = static_cast<std::uint64_t>(
      db_->query_int("SELECT COALESCE(SUM(record_size), 0) FROM kernels"));
  if (total <= max_size) return 0;
  std::vector<std::string> victims;
  {
    Statement s = db_->prepare(
        "SELECT content_key, record_size FROM kernels ORDER BY last_used ASC, created ASC");
    while (total > max_size && s.step()) {
      std::string key = s.column_bytes(0);
      if (key == keep) continue;
      victims.push_back(std::move(key));
      total -= std::min<std::uint64_t>(total, static_cast<std::uint64_t>(s.column_int(1)));
    }
  }
  for (const auto& key : victims) {
    delete_entry(*db_, key);
    pending_touches_.erase(key);
  }
  add_counter(*db_, "evictions", victims.size());
  return victims.size();
}

std::uint64_t SqliteStore::evict_to(std::uint64_t max_size) {
  require_writable("evict entries");
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  write_touches_locked();  // recent uses must count before choosing victims
  std::uint64_t n = evict_locked(max_size, "");
  t.commit();
  pending_touches_.clear();
  pending_hits_ = 0;
  if (n > 0) db_->exec("PRAGMA incremental_vacuum");
  return n;
}

std::vector<RecordSummary> SqliteStore::list(bool with_names) {
  std::lock_guard lock(mutex_);
  std::vector<RecordSummary> out;
  Statement s = db_->prepare(
      with_names ? "SELECT content_key, kind, target, record_size, binary_size, source_size, "
                   "created, last_used, options FROM kernels ORDER BY last_used DESC, content_key"
                 : "SELECT content_key, kind, target, record_size, binary_size, source_size, "
                   "created, last_used FROM kernels ORDER BY last_used DESC, content_key");
  while (s.step()) {
    RecordSummary r;
    r.content_key = s.column_bytes(0);
    r.kind = s.column_bytes(1);
    r.target = s.column_bytes(2);
    r.record_size = static_cast<std::uint64_t>(s.column_int(3));
    r.binary_size = static_cast<std::uint64_t>(s.column_int(4));
    r.source_size = static_cast<std::uint64_t>(s.column_int(5));
    r.created = s.column_int(6);
    r.last_used = s.column_int(7);
    if (with_names) r.name = kernel_names_from_options(s.column_bytes(8));
    out.push_back(std::move(r));
  }
  if (with_names) {
    // A raw module without name expressions: the __global__ functions of its source.
    Statement source = db_->prepare("SELECT source FROM kernels WHERE content_key = ?1");
    for (RecordSummary& r : out) {
      if (!r.name.empty()) continue;
      source.reset();
      source.bind_text(1, r.content_key);
      if (!source.step()) continue;
      const auto text = decompress(source.column_bytes(0), r.source_size);
      r.name = text ? kernel_names_in_source(*text) : "";
    }
  }
  return out;
}

std::optional<CacheRecord> SqliteStore::load(const std::string& key, bool with_source) {
  if (key.size() < 4 || key.size() > 64 ||
      key.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw ArgumentError("cujit: '" + key +
                        "' is not a cache key (4 to 64 lower-case hexadecimal digits)");
  }
  std::lock_guard lock(mutex_);
  std::vector<std::string> matches;
  {
    Statement s = db_->prepare(
        "SELECT content_key FROM kernels WHERE substr(content_key, 1, ?2) = ?1 UNION "
        "SELECT content_key FROM requests WHERE substr(request_key, 1, ?2) = ?1 LIMIT 3");
    s.bind_text(1, key).bind(2, static_cast<std::int64_t>(key.size()));
    while (s.step()) matches.push_back(s.column_bytes(0));
  }
  if (matches.empty()) return std::nullopt;
  if (matches.size() > 1) {
    throw ArgumentError("cujit: key prefix '" + key + "' is ambiguous in " + path_ +
                        "; give more digits");
  }
  Statement s = db_->prepare("SELECT " CUJIT_RECORD_COLUMNS
                             ", k.source FROM kernels k WHERE k.content_key = ?1");
  s.bind_text(1, matches.front());
  if (!s.step()) return std::nullopt;
  CacheRecord r;
  read_row(s, r);  // shown even when damaged: `verify` is the tool that judges it
  if (with_source) r.source_zstd = s.column_bytes(kSourceColumn);
  return r;
}

std::optional<std::string> SqliteStore::source_of(const CacheRecord& record) {
  return decompress(record.source_zstd, record.source_size);
}

DatabaseInfo SqliteStore::info() {
  std::lock_guard lock(mutex_);
  DatabaseInfo info;
  info.path = path_;
  info.schema_version = static_cast<int>(db_->query_int("PRAGMA user_version"));
  info.file_size = file_size(path_) + file_size(path_ + "-wal");
  info.entries = static_cast<std::uint64_t>(db_->query_int("SELECT count(*) FROM kernels"));
  info.requests = static_cast<std::uint64_t>(db_->query_int("SELECT count(*) FROM requests"));
  info.stored_bytes = static_cast<std::uint64_t>(
      db_->query_int("SELECT COALESCE(SUM(record_size), 0) FROM kernels"));
  info.journal_mode = db_->query_text("PRAGMA journal_mode");
  {
    Statement s = db_->prepare("SELECT target, count(*) FROM kernels GROUP BY target");
    while (s.step()) info.per_target[s.column_bytes(0)] = s.column_int(1);
  }
  {
    Statement s = db_->prepare("SELECT kind, count(*) FROM kernels GROUP BY kind");
    while (s.step()) info.per_kind[s.column_bytes(0)] = s.column_int(1);
  }
  {
    Statement s = db_->prepare("SELECT name, value FROM counters");
    while (s.step()) {
      std::string name = s.column_bytes(0);
      auto value = static_cast<std::uint64_t>(s.column_int(1));
      if (name == "hits") info.hits = value;
      if (name == "misses") info.misses = value;
      if (name == "evictions") info.evictions = value;
    }
  }
  info.signatures = static_cast<std::uint64_t>(db_->query_int("SELECT count(*) FROM signatures"));
  {
    Statement s = db_->prepare(kStaleCount);
    s.bind_text(1, compiler_version()).bind(2, std::int64_t{kCodegenVersion});
    if (s.step()) info.stale = static_cast<std::uint64_t>(s.column_int(0));
  }
  info.hits += pending_hits_;
  return info;
}

std::string SqliteStore::integrity_check() {
  std::lock_guard lock(mutex_);
  Statement s = db_->prepare("PRAGMA integrity_check");
  std::string out;
  while (s.step()) {
    if (!out.empty()) out += '\n';
    out += s.column_bytes(0);
  }
  return out;
}

VerifyReport SqliteStore::verify(bool remove_damaged) {
  if (remove_damaged) require_writable("remove damaged entries");
  VerifyReport report;
  report.integrity_message = integrity_check();
  report.integrity_ok = report.integrity_message == "ok";
  std::lock_guard lock(mutex_);
  {
    Statement s = db_->prepare(kAllRecords);
    while (s.step()) {
      CacheRecord r;
      bool ok = read_row(s, r);
      if (ok) {
        r.source_zstd = s.column_bytes(kSourceColumn);
        ok = decompress(r.source_zstd, r.source_size).has_value();
      }
      ++report.checked;
      if (!ok) report.damaged.push_back(r.content_key);
    }
  }
  if (remove_damaged && !report.damaged.empty()) {
    Transaction t(*db_, true);
    for (const auto& key : report.damaged) delete_entry(*db_, key);
    t.commit();
    report.removed = true;
  }
  return report;
}

std::uint64_t SqliteStore::prune(const PruneOptions& options) {
  require_writable("prune it");
  std::lock_guard lock(mutex_);
  flush_locked();
  Transaction t(*db_, true);
  std::uint64_t removed = 0;
  if (options.older_than_ms) {
    Statement s = db_->prepare("SELECT content_key FROM kernels WHERE last_used < ?1");
    s.bind(1, now() - *options.older_than_ms);
    std::vector<std::string> keys;
    while (s.step()) keys.push_back(s.column_bytes(0));
    for (const auto& k : keys) delete_entry(*db_, k);
    removed += keys.size();
  }
  for (const auto& target : options.targets) {
    Statement s = db_->prepare("SELECT content_key FROM kernels WHERE target = ?1");
    s.bind_text(1, target);
    std::vector<std::string> keys;
    while (s.step()) keys.push_back(s.column_bytes(0));
    for (const auto& k : keys) delete_entry(*db_, k);
    removed += keys.size();
  }
  if (options.stale) {
    Statement s = db_->prepare(kStaleKeys);
    s.bind_text(1, compiler_version()).bind(2, std::int64_t{kCodegenVersion});
    std::vector<std::string> keys;
    while (s.step()) keys.push_back(s.column_bytes(0));
    for (const auto& k : keys) delete_entry(*db_, k);
    removed += keys.size();
  }
  if (options.max_size) removed += evict_locked(*options.max_size, "");
  t.commit();
  if (removed > 0) db_->exec("PRAGMA incremental_vacuum");
  return removed;
}

std::uint64_t SqliteStore::clear() {
  require_writable("clear it");
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  auto n = static_cast<std::uint64_t>(db_->query_int("SELECT count(*) FROM kernels"));
  db_->exec("DELETE FROM kernels; DELETE FROM requests; DELETE FROM signatures;");
  t.commit();
  pending_touches_.clear();
  db_->exec("PRAGMA incremental_vacuum");
  return n;
}

std::uint64_t SqliteStore::for_each_record(
    const std::function<void(const CacheRecord&, const std::vector<std::string>&)>& fn) {
  std::lock_guard lock(mutex_);
  Statement s = db_->prepare(kAllRecords);
  Statement r = db_->prepare("SELECT request_key FROM requests WHERE content_key = ?1");
  std::uint64_t damaged = 0;
  while (s.step()) {
    CacheRecord record;
    if (!read_row(s, record)) {  // damaged entries are not copied
      ++damaged;
      continue;
    }
    record.source_zstd = s.column_bytes(kSourceColumn);
    std::vector<std::string> keys;
    r.bind_text(1, record.content_key);
    while (r.step()) keys.push_back(r.column_bytes(0));
    r.reset();
    fn(record, keys);
  }
  return damaged;
}

SqliteStore::ImportOutcome SqliteStore::import_record(
    const CacheRecord& record, const std::vector<std::string>& request_keys,
    const std::map<std::string, std::string>& signatures) {
  // A signature vouches for what it signed: carried only with what this import writes.
  auto carry = [&](const std::string& key) {
    auto it = signatures.find(key);
    if (it != signatures.end()) store_signature(*db_, key, it->second);
  };
  require_writable("import into it");
  if (!record.checksum_ok()) {
    throw CacheError("cujit: cache entry " + record.content_key +
                     " failed its checksum; not imported into " + path_);
  }
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  insert_record(*db_, record, std::nullopt);
  ImportOutcome outcome;
  outcome.inserted = db_->query_int("SELECT changes()") > 0;
  if (outcome.inserted) carry(record.content_key);
  Statement s =
      db_->prepare("INSERT OR IGNORE INTO requests(request_key, content_key) VALUES(?1, ?2)");
  Statement mapped = db_->prepare("SELECT content_key FROM requests WHERE request_key = ?1");
  for (const auto& key : request_keys) {
    s.bind_text(1, key).bind_text(2, record.content_key);
    s.step();
    s.reset();
    if (db_->query_int("SELECT changes()") > 0) carry(key);
    mapped.bind_text(1, key);
    if (mapped.step() && mapped.column_bytes(0) != record.content_key) ++outcome.kept_requests;
    mapped.reset();
  }
  t.commit();
  return outcome;
}

std::map<std::string, std::string> SqliteStore::signatures() {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::string> out;
  Statement s = db_->prepare("SELECT key, signature FROM signatures");
  while (s.step()) out.emplace(s.column_bytes(0), s.column_bytes(1));
  return out;
}

SqliteStore::SignOutcome SqliteStore::sign_all(const Signer& signer) {
  require_writable("sign it");
  std::lock_guard lock(mutex_);
  SignOutcome outcome;
  // Signed while reading (the blobs are small), written after: the read statements are done
  // before the first write.
  std::vector<std::pair<std::string, std::string>> signed_keys;
  {
    Statement s = db_->prepare(kAllRecords);  // with the source: a signature covers it
    Statement r = db_->prepare("SELECT request_key FROM requests WHERE content_key = ?1");
    while (s.step()) {
      CacheRecord record;
      if (!read_row(s, record)) {
        ++outcome.damaged;
        continue;
      }
      record.source_zstd = s.column_bytes(kSourceColumn);
      signed_keys.emplace_back(record.content_key, signer(record, ""));
      ++outcome.entries;
      r.bind_text(1, record.content_key);
      while (r.step()) {
        std::string request = r.column_bytes(0);
        std::string signature = signer(record, request);
        signed_keys.emplace_back(std::move(request), std::move(signature));
        ++outcome.requests;
      }
      r.reset();
    }
  }
  Transaction t(*db_, true);
  for (const auto& [key, signature] : signed_keys) store_signature(*db_, key, signature);
  t.commit();
  return outcome;
}

void SqliteStore::finalize_for_deployment() {
  require_writable("finalize it");
  std::lock_guard lock(mutex_);
  flush_locked();
  db_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db_->query_text("PRAGMA journal_mode=DELETE");
  db_->exec("PRAGMA incremental_vacuum");
}

std::string SqliteStore::journal_mode() {
  std::lock_guard lock(mutex_);
  return db_->query_text("PRAGMA journal_mode");
}

void SqliteStore::exec(const std::string& sql) {
  std::lock_guard lock(mutex_);
  db_->exec(sql);
}

}  // namespace cujit::detail

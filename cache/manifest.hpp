#pragma once
// Recording the kernels a run uses (CUJIT_RECORD=manifest.jsonl) so that `cujit-cache
// precompile` can build them ahead of time.

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace cujit::detail {

/// The canonical text of a manifest entry: compact JSON with sorted keys. Throws
/// ArgumentError unless `entry` is a JSON object with a string "kind".
std::string canonical_manifest_entry(const std::string& entry);

/// The "kind" of a manifest entry. Throws ArgumentError like canonical_manifest_entry.
std::string manifest_entry_kind(const std::string& entry);

/// Longest manifest line read_manifest accepts (16 MiB; recorded entries are a few KiB).
inline constexpr std::size_t kMaxManifestLine = std::size_t{16} << 20;

/// The entries of a manifest file: its non-blank lines, unparsed,
/// and, in `line_numbers` when given, the line number of each. Throws CacheError naming the
/// file when it cannot be read, is not a regular file (a directory, /dev/zero, a FIFO: never
/// waited on) or has a line longer than kMaxManifestLine.
std::vector<std::string> read_manifest(const std::string& path,
                                       std::vector<std::size_t>* line_numbers = nullptr);

/// Appends entries to a manifest file, one JSON object per line, each at most once: neither
/// twice from this process nor when the file (written by any process) already holds it.
/// Appends under an exclusive flock, so concurrent processes do not duplicate or interleave
/// lines. Thread-safe.
class ManifestRecorder {
 public:
  /// Records into `path` (created on the first new entry).
  explicit ManifestRecorder(std::string path);
  /// Appends `entry` (canonicalised) unless present; true when it was appended. Throws
  /// ArgumentError for a malformed entry, CacheError naming the file for I/O failures.
  bool record(const std::string& entry);
  /// The manifest file.
  const std::string& path() const noexcept { return path_; }

 private:
  void read_new_lines(int fd);
  std::string path_;
  std::mutex mutex_;
  std::unordered_set<std::string> seen_;
  std::uint64_t known_size_ = 0;  // bytes of the file already read into seen_
  std::string partial_;           // an unterminated last line read so far
};

}  // namespace cujit::detail

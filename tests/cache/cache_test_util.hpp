#pragma once
// Helpers shared by the cache tests: temporary directories, captured warnings, and a
// deterministic stand-in for NVRTC.

#include "cache/kernel_cache.hpp"
#include "cache/record.hpp"
#include "support/sha256.hpp"
#include "cache/sqlite_store.hpp"

#include <cujit/cache.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace cujit::test {

/// A fresh directory under the system temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cujit-cache-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Collects warnings while alive instead of printing them.
class WarningCapture {
 public:
  WarningCapture() {
    previous_ = set_warning_sink([this](const std::string& m) {
      std::lock_guard lock(mutex_);
      messages_.push_back(m);
    });
  }
  ~WarningCapture() { set_warning_sink(previous_); }
  std::vector<std::string> messages() const {
    std::lock_guard lock(mutex_);
    return messages_;
  }
  std::size_t count() const { return messages().size(); }
  bool contains(const std::string& text) const {
    for (const auto& m : messages())
      if (m.find(text) != std::string::npos) return true;
    return false;
  }
  std::string joined() const {
    std::string out;
    for (const auto& m : messages()) out += m + "\n";
    return out;
  }

 private:
  WarningSink previous_;
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

/// A deterministic "compiler": the binary is derived from the source and target, the
/// lowered names from the name expressions. Counts its calls.
struct FakeCompiler {
  std::atomic<int> calls{0};
  detail::CompileFn fn(const Target& target) {
    return [this, target](const SourceProgram& p) {
      ++calls;
      CompiledProgram out;
      out.target = target;
      out.binary = "FAKEBIN:" + target.name() + ":" + detail::to_hex(detail::sha256(p.source));
      out.binary += std::string(512, '\x7f');
      out.log = "fake log";
      for (const auto& e : p.name_expressions) out.lowered_names.emplace_back(e, "_Z" + e);
      out.metadata = R"({"fake":true})";
      return out;
    };
  }
};

/// A request and its generator for a tiny kernel named by `name`.
struct FakeKernel {
  detail::KernelRequest request;
  SourceProgram source;
  std::atomic<int>* generate_calls = nullptr;
  /// Stands in for the driver's JIT of PTX (FunctionCompiler's); empty: none.
  detail::FunctionCompiler::JitFn jit_ptx;

  detail::GenerateFn generator() const {
    return [this] {
      if (generate_calls) ++*generate_calls;
      return source;
    };
  }
};

inline FakeKernel fake_kernel(const std::string& name, const Target& target = Target{80}) {
  FakeKernel k;
  k.source.source = "extern \"C\" __global__ void " + name + "(float* x) { x[0] = 1; }\n";
  k.source.name_expressions = {name};
  k.request.kind = "test";
  k.request.spec = "spec:" + name;
  k.request.target = target;
  return k;
}

/// Swaps the comma-separated `columns` of two records' rows in `store`, as a buggy tool or a
/// careless copy between databases would.
inline void swap_columns(detail::SqliteStore& store, const std::string& key_a,
                         const std::string& key_b, const std::string& columns) {
  std::string sets;
  std::string::size_type start = 0;
  while (start < columns.size()) {
    auto comma = columns.find(',', start);
    if (comma == std::string::npos) comma = columns.size();
    const std::string c = columns.substr(start, comma - start);
    sets += (sets.empty() ? "" : ", ") + c + " = (SELECT " + c +
            " FROM cujit_swap k2 WHERE k2.content_key = CASE kernels.content_key WHEN '" + key_a +
            "' THEN '" + key_b + "' ELSE '" + key_a + "' END)";
    start = comma + 1;
  }
  // The rows are read from a snapshot: an UPDATE's subqueries see the rows it already changed.
  store.exec("CREATE TEMP TABLE cujit_swap AS SELECT * FROM kernels; UPDATE kernels SET " + sets +
             " WHERE content_key IN ('" + key_a + "', '" + key_b + "'); DROP TABLE cujit_swap;");
}

}  // namespace cujit::test

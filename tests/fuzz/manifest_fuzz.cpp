// Fuzzes the reading of CUJIT_RECORD manifests (cache/manifest.*) and of the entries in them
// (codegen/elementwise_manifest.*, codegen/reduction_manifest.*, cache/raw_replay.*), as
// `cujit-cache precompile` reads a manifest file someone gives it. The input is the file.
// Every line must be read back whole; an entry must canonicalise idempotently or be refused
// with ArgumentError; each kind's decoder must refuse a malformed entry with a cujit::Error
// (never another exception, a crash or undefined behaviour) and, when it accepts one, encode
// it back to an entry it decodes to the same thing. Appending to the file (ManifestRecorder)
// must find or add an entry exactly once whatever the file held before.

#include "support/json_text.hpp"
#include "cache/manifest.hpp"
#include "cache/raw_replay.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/reduction_manifest.hpp"

#include "fuzz_check.hpp"

#include <cujit/error.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {
namespace {

const std::string kEntry =
    R"({"kind":"raw","source":"extern \"C\" __global__ void k() {}","options":[]})";

struct TempDir {
  std::string path;
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    path =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cujit_manifest_fuzz.XXXXXX";
    CUJIT_FUZZ_CHECK(::mkdtemp(path.data()) != nullptr, "cannot create a temporary directory");
  }
  ~TempDir() {
    ::unlink((path + "/manifest.jsonl").c_str());
    ::rmdir(path.c_str());
  }
};

void write_file(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CUJIT_FUZZ_CHECK(fd >= 0, "cannot write the manifest file");
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    CUJIT_FUZZ_CHECK(n > 0, "cannot write the manifest file");
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

std::optional<std::string> canonical(const std::string& line) {
  try {
    return canonical_manifest_entry(line);
  } catch (const ArgumentError&) {
    return std::nullopt;
  }
}

void check_elementwise(const std::string& entry) {
  std::string again;
  try {
    auto [def, spec] = elementwise_from_manifest(entry);
    again = elementwise_manifest_entry(def, spec);
  } catch (const Error&) {
    return;
  }
  auto [def, spec] = elementwise_from_manifest(again);
  CUJIT_FUZZ_CHECK(elementwise_manifest_entry(def, spec) == again,
                   "an elementwise entry does not survive a round trip");
}

void check_reduction(const std::string& entry) {
  std::string again;
  try {
    auto [def, spec] = reduction_from_manifest(entry);
    again = reduction_manifest_entry(def, spec);
  } catch (const Error&) {
    return;
  }
  auto [def, spec] = reduction_from_manifest(again);
  CUJIT_FUZZ_CHECK(reduction_manifest_entry(def, spec) == again,
                   "a reduction entry does not survive a round trip");
}

void check_raw(const std::string& entry) {
  SourceProgram program;
  try {
    program = raw_program_from_entry(entry);
  } catch (const ArgumentError&) {
    return;
  }
  const std::string again = raw_manifest_entry(program);
  SourceProgram back = raw_program_from_entry(again);
  CUJIT_FUZZ_CHECK(back.name == program.name && back.source == program.source &&
                       back.options == program.options &&
                       back.name_expressions == program.name_expressions &&
                       back.headers == program.headers,
                   "a raw entry does not survive a round trip");
}

void check_line(const std::string& line) {
  CUJIT_FUZZ_CHECK(line.find('\n') == std::string::npos, "a manifest line holds a newline");
  std::optional<std::string> c = canonical(line);
  if (c) {
    CUJIT_FUZZ_CHECK(canonical(*c) == c, "canonical_manifest_entry is not idempotent");
    CUJIT_FUZZ_CHECK(manifest_entry_kind(*c) == manifest_entry_kind(line),
                     "canonicalising changed the kind");
  }
  // cujit's one rule for text in JSON (support/json_text.hpp): any bytes round-trip, as a string
  // when they are UTF-8, else as {"base64": ...}; dump_json never throws.
  const nlohmann::json wrapped = {{"text", text_json(line)}};
  const nlohmann::json back = nlohmann::json::parse(dump_json(wrapped), nullptr, false);
  CUJIT_FUZZ_CHECK(!back.is_discarded() && json_text(back["text"]) == line,
                   "a text did not round-trip through JSON");
  CUJIT_FUZZ_CHECK(back["text"].is_string() == is_utf8(line), "UTF-8 judged wrongly");
  CUJIT_FUZZ_CHECK(base64_decode(base64_encode(line)) == line, "base64 did not round-trip");
  // Each decoder sees every line, whatever its kind: replay dispatches on "kind", but a
  // decoder must not rely on that.
  check_elementwise(line);
  check_reduction(line);
  check_raw(line);
}

}  // namespace
}  // namespace cujit::detail

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cujit::detail;
  static TempDir dir;
  const std::string path = dir.path + "/manifest.jsonl";
  const std::string_view input = cujit::fuzz::as_text(data, size);
  write_file(path, input);

  const std::vector<std::string> lines = read_manifest(path);
  std::size_t expected = 0;
  for (std::size_t start = 0; start < input.size();) {
    std::size_t nl = input.find('\n', start);
    std::string_view line = input.substr(start, nl == std::string_view::npos ? nl : nl - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      CUJIT_FUZZ_CHECK(expected < lines.size() && lines[expected] == line,
                       "read_manifest lost or changed a line");
      ++expected;
    }
    start = nl == std::string_view::npos ? input.size() : nl + 1;
  }
  CUJIT_FUZZ_CHECK(lines.size() == expected, "read_manifest invented a line");
  for (const std::string& line : lines) check_line(line);

  // Recording into this file: the entry is appended unless some line already holds it, and
  // never twice.
  const std::string entry = canonical_manifest_entry(kEntry);
  auto count_entry = [&](const std::vector<std::string>& in) {
    std::size_t n = 0;
    for (const std::string& line : in) n += canonical(line) == entry ? 1 : 0;
    return n;
  };
  const std::size_t before = count_entry(lines);
  ManifestRecorder recorder(path);
  CUJIT_FUZZ_CHECK(recorder.record(kEntry) == (before == 0),
                   "recorded an entry the file held, or did not record a new one");
  CUJIT_FUZZ_CHECK(!recorder.record(kEntry), "recorded an entry twice");
  CUJIT_FUZZ_CHECK(!ManifestRecorder(path).record(kEntry), "another recorder recorded it again");
  CUJIT_FUZZ_CHECK(count_entry(read_manifest(path)) == (before == 0 ? 1 : before),
                   "the entry is not in the file as often as expected");
  return 0;
}

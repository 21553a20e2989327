// Writes the seed corpora of the fuzz targets from the test suites' own inputs: the valid
// snippets of tests/codegen/snippet_corpus.hpp (their signatures too), manifest entries and
// stored records of those kernels. Usage: cujit_fuzz_make_seeds OUTPUT_DIR (tests/fuzz/corpus);
// writes OUTPUT_DIR/<target>/seed_<n>, replacing earlier seeds of that name.

#include "cache/raw_replay.hpp"
#include "cache/record.hpp"
#include "cache/remote_entry.hpp"
#include "fuzz/fuzz_keys.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/reduction_manifest.hpp"
#include "codegen/snippet_corpus.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace cujit::detail {
namespace {

namespace fs = std::filesystem;
using testing::ElementwiseCase;
using testing::ReductionCase;

// Distinct seeds of one target, in a stable order.
class Seeds {
 public:
  explicit Seeds(fs::path dir) : dir_(std::move(dir)) {}
  void add(const std::string& seed) {
    if (seen_.insert(seed).second) seeds_.push_back(seed);
  }
  void write() const {
    fs::create_directories(dir_);
    for (std::size_t k = 0; k < seeds_.size(); ++k) {
      std::ofstream out(dir_ / ("seed_" + std::to_string(k)), std::ios::binary);
      out << seeds_[k];
    }
    std::cout << dir_.string() << ": " << seeds_.size() << " seeds\n";
  }

 private:
  fs::path dir_;
  std::set<std::string> seen_;
  std::vector<std::string> seeds_;
};

std::string u32(std::uint32_t v) {
  std::string out;
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  return out;
}
std::string u64(std::uint64_t v) { return u32(static_cast<std::uint32_t>(v)) + u32(v >> 32); }
std::string field(const std::string& bytes) {
  return u32(static_cast<std::uint32_t>(bytes.size())) + bytes;
}

// Every argument a float32 array (resolve_types' most common case), as signature_fuzz reads it.
std::string float_args(std::size_t count) {
  return std::string(count, static_cast<char>(DType::Float32));
}

void signature_seeds(Seeds& seeds) {
  auto add = [&](const std::string& in, const std::string& out) {
    seeds.add(in);
    const std::size_t n = parse_signature(in, "k", "in_params").size() +
                          parse_signature(out, "k", "out_params").size();
    seeds.add(in + "|" + out + "|" + float_args(n));
  };
  for (const ElementwiseCase& c : testing::valid_elementwise_corpus()) add(c.in, c.out);
  for (const ReductionCase& c : testing::valid_reduction_corpus()) add(c.in, c.out);
  // From signature_test.cpp: every dtype and alias, whitespace, placeholders, raw.
  add("float32 x, T y,raw U  z ,\traw int64 w, bfloat16 h", "T out");
  add("T x,\n  T y", "raw T z");
  add("bool a, int8 b, int16 c, int32 d, int64 e, uint8 f, uint16 g, uint32 h",
      "uint64 j, float16 k, float64 l, complex64 m, complex128 o, float p, double q, half r");
  seeds.add("");
  seeds.add("raw x");
  seeds.add("float32 i");
}

void snippet_seeds(Seeds& seeds) {
  for (const ElementwiseCase& c : testing::valid_elementwise_corpus()) {
    seeds.add("o" + c.operation);
    if (!c.preamble.empty()) seeds.add("p" + c.preamble);
    if (!c.loop_prep.empty()) seeds.add("l" + c.loop_prep);
    if (!c.after_loop.empty()) seeds.add("a" + c.after_loop);
  }
  for (const ReductionCase& c : testing::valid_reduction_corpus()) {
    seeds.add("m" + c.map_expr);
    seeds.add("r" + c.reduce_expr);
    seeds.add("q" + c.post_map_expr);
    if (!c.identity.empty()) seeds.add("i" + c.identity);
  }
  // Snippets the analyser rejects (snippet_analysis_test.cpp), so that the error paths are
  // covered from the start.
  seeds.add("oz = x +* y");
  seeds.add("ox = 1; z = x");
  seeds.add("oint i = 0; z = x");
  seeds.add("oz = _raw_q[0]");
  seeds.add("Oz = x; requires");
  seeds.add("mx +");
  seeds.add("qa = 1; y = a");
  seeds.add("p#if __CUDA_ARCH__ >= 800\nint f;\n#endif");
}

void record_seeds(Seeds& seeds) {
  std::vector<std::pair<std::string, std::string>> names = {{"scale<float>", "_Z5scaleIfEvPT_S0_i"},
                                                            {"k", "k"}};
  const std::string source = "extern \"C\" __global__ void k(float* p) { p[0] = 1; }\n";
  // mode 0: lowered names.
  seeds.add('\0' + field(encode_names(names)));
  seeds.add('\0' + field(encode_names({})));
  // mode 1: zstd frames with their sizes.
  seeds.add('\1' + field(compress(source)) + field(u64(source.size())));
  seeds.add('\1' + field(compress("")) + field(u64(0)));
  seeds.add('\1' + field(compress(std::string(5000, 'a'))) + field(u64(5000)));
  // mode 2: targets.
  for (const char* t : {"sm_90", "compute_80", "75", "sm_90a", "sm_"}) {
    seeds.add('\2' + field(t));
  }
  // mode 3: whole rows, intact (a hit) and with each kind of damage.
  const std::string binary =
      "\x7f"
      "ELF not really a cubin";
  auto row = [&](char mode, const std::string& target, const std::string& blob,
                 const std::string& checksum, std::uint64_t binary_size,
                 std::uint64_t source_size) {
    return mode + field(target) + field(blob) + field(checksum) + field(binary) +
           field(compress(source)) + field(R"({"options":["-use_fast_math"]})") +
           field(R"({"block":256})") + field("") + field(u64(binary_size)) +
           field(u64(source_size)) + field(u64(kCodegenVersion));
  };
  // The seal of the row record_fuzz stores (its content key, kind "raw", the row's metadata).
  auto seal = [&](const std::string& target) {
    CacheRecord r;
    r.content_key = std::string(62, '0') + "aa";
    r.kind = "raw";
    r.program.target = Target::parse(target);
    r.program.lowered_names = names;
    r.program.metadata = R"({"block":256})";
    r.program.binary = binary;
    return record_checksum(r);
  };
  const std::string blob = encode_names(names), sum = seal("sm_90");
  seeds.add(row('\3', "sm_90", blob, sum, binary.size(), source.size()));
  seeds.add(row('\7', "compute_80", blob, seal("compute_80"), binary.size(), source.size()));
  seeds.add(row('\3', "sm_80", blob, sum, binary.size(), source.size()));  // relabelled
  seeds.add(row('\3', "sm_090", blob, sum, binary.size(), source.size()));
  seeds.add(row('\3', "sm_90", blob.substr(0, blob.size() - 1), sum, binary.size(), 10));
  seeds.add(row('\3', "sm_90", blob, sum.substr(1) + "x", binary.size(), source.size()));
  seeds.add(row('\3', "sm_90", blob, sum, binary.size() + 1, kMaxSourceSize + 1));
}

// Fleet entries: signed by the fuzzers' fixed key, unsigned, for another request, truncated.
void remote_seeds(Seeds& seeds) {
  const std::string request = std::string(62, '0') + "aa";
  SourceProgram p;
  p.source = "extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n";
  p.name_expressions = {"k"};
  CompiledProgram c;
  c.target = Target{90};
  c.binary = "\x7f" "ELF not really a cubin";
  c.lowered_names = {{"k", "k"}};
  c.metadata = R"({"block":256})";
  const CacheRecord r = make_record(content_key(p, c.target, "raw"), "raw", p, c, 1);
  const std::string signed_value =
      encode_remote_entry(request, r, sign_entry(r, request, fuzz::fixed_signing_key()));
  seeds.add(signed_value);
  seeds.add(encode_remote_entry(request, r, ""));
  seeds.add(encode_remote_entry(std::string(64, 'b'), r, ""));
  seeds.add(signed_value.substr(0, signed_value.size() / 2));
}

void manifest_seeds(Seeds& seeds) {
  std::vector<std::string> entries;
  for (const ElementwiseCase& c : testing::valid_elementwise_corpus()) {
    ElementwiseDefinition def = make_elementwise_definition(
        c.in, c.out, c.operation, "k_" + c.name, c.preamble, c.loop_prep, c.after_loop, {}, true);
    EwSpecialization s;
    s.params.resize(def.in.size() + def.out.size());
    entries.push_back(elementwise_manifest_entry(def, s));
  }
  for (const ReductionCase& c : testing::valid_reduction_corpus()) {
    ReductionDefinition def =
        make_reduction_definition(c.in, c.out, c.map_expr, c.reduce_expr, c.post_map_expr,
                                  c.identity, "k_" + c.name, c.reduce_type, c.preamble, {}, true);
    RedSpecialization s;
    s.params.resize(def.in.size() + def.out.size());
    s.reduce_ctype = c.reduce_type;
    entries.push_back(reduction_manifest_entry(def, s));
  }
  SourceProgram raw;
  raw.source =
      "#include \"scale.h\"\ntemplate <class T> __global__ void scale(T* p) { p[0] *= 2; }";
  raw.options = {"-use_fast_math"};
  raw.name_expressions = {"scale<float>"};
  raw.headers = {{"scale.h", "#pragma once\n"}};
  raw.name = "scale.cu";
  entries.push_back(raw_manifest_entry(raw));
  for (const std::string& e : entries) seeds.add(e + "\n");
  // A whole manifest, a blank line, an unterminated last line, CRLF, a foreign line.
  std::string file;
  for (std::size_t k = 0; k < entries.size(); k += 7) file += entries[k] + "\n";
  seeds.add(file + "\n  \n" + entries.back());
  seeds.add(entries.front() + "\r\n" + R"({"kind":"future","x":1})" + "\r\nnot json\n");
}

}  // namespace
}  // namespace cujit::detail

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cujit_fuzz_make_seeds OUTPUT_DIR\n";
    return 2;
  }
  namespace fs = std::filesystem;
  using cujit::detail::Seeds;
  const fs::path root = argv[1];
  Seeds signature(root / "signature"), snippet(root / "snippet"), record(root / "record"),
      manifest(root / "manifest"), remote(root / "remote");
  cujit::detail::signature_seeds(signature);
  cujit::detail::snippet_seeds(snippet);
  cujit::detail::record_seeds(record);
  cujit::detail::manifest_seeds(manifest);
  cujit::detail::remote_seeds(remote);
  for (const Seeds* s : {&signature, &snippet, &record, &manifest, &remote}) s->write();
  return 0;
}

// One serialisation per specialisation (codegen/spec_serial.hpp, spec_json.hpp): every field
// of each family's list reaches the key text, the memo bytes and the manifest JSON; the JSON
// reads back into the same value; the key text keeps its frozen format (the goldens'
// banners); fields older entries lack read as their defaults.
#include "codegen/spec_serial.hpp"

#include <cujit/error.hpp>

#include "codegen/elementwise_spec.hpp"
#include "codegen/reduction_spec.hpp"
#include "codegen/scan_spec.hpp"
#include "codegen/spec_json.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cujit::detail {
namespace {

// Changes field number `target` (in list order; a parameter's fields counted after its
// list's) and nothing else; counts the fields it passes.
struct Mutate {
  int target;
  int seen = 0;
  bool hit() { return seen++ == target; }
  void number(const SpecField&, int& v) {
    if (hit()) ++v;
  }
  void number_or(const SpecField& f, int& v, int) { number(f, v); }
  template <class E>
  void choice(const SpecField&, E& v, E last, const char*) {
    if (hit()) v = v == last ? E{} : static_cast<E>(static_cast<int>(v) + 1);
  }
  void flag(const SpecField&, bool& v) {
    if (hit()) v = !v;
  }
  void marker(const SpecField& f, bool& v) { flag(f, v); }
  void text(const SpecField&, std::string& v) {
    if (hit()) v += "x";
  }
  template <class P>
  void params(const SpecField&, std::vector<P>& values) {
    for (P& p : values) visit_fields(p, *this);
  }
  void dtype(const char*, DType& v) {
    if (hit()) v = v == DType::Float32 ? DType::Int64 : DType::Float32;
  }
  void kind(const char*, bool& v) {
    if (hit()) v = !v;
  }
  void flag(const char*, bool& v) {
    if (hit()) v = !v;
  }
};

template <class Spec>
std::string bytes_of(const Spec& s) {
  std::string out;
  append_spec_bytes(out, s);
  return out;
}

template <class Spec>
int field_count(Spec s) {
  Mutate m{-1};
  visit_fields(s, m);
  return m.seen;
}

// Each field, changed alone, changes every rendering; the JSON reads back to the changed value.
template <class Spec>
void expect_every_field_rendered(const Spec& base) {
  const int fields = field_count(base);
  for (int k = 0; k < fields; ++k) {
    Spec changed = base;
    Mutate m{k};
    visit_fields(changed, m);
    SCOPED_TRACE("field " + std::to_string(k) + ": " + changed.key());
    EXPECT_NE(bytes_of(changed), bytes_of(base));
    EXPECT_NE(spec_json(changed).dump(), spec_json(base).dump());
    EXPECT_EQ(spec_json_text(changed), spec_json(changed).dump());
    EXPECT_NE(changed.key(), base.key());
    Spec read;
    read_spec_json(spec_json(changed), read);
    EXPECT_EQ(bytes_of(read), bytes_of(changed));
    EXPECT_EQ(read.key(), changed.key());
  }
}

EwSpecialization ew_spec() {
  EwSpecialization s;
  s.layout = EwLayout::Strided;
  s.vec = 1;
  s.ndim = 3;
  s.block_size = 128;
  s.params.resize(3);
  s.params[1].scalar = true;
  s.params[2].dtype = DType::Float64;
  return s;
}

RedSpecialization red_spec() {
  RedSpecialization s;
  s.strategy = RedStrategy::Rows;
  s.reduce_ctype = "float";
  s.vec = 4;
  s.group = 8;
  s.params.resize(2);
  return s;
}

TEST(SpecSerial, EveryElementwiseFieldReachesEveryRendering) {
  EXPECT_EQ(field_count(ew_spec()), 6 + 3 * 8);
  expect_every_field_rendered(ew_spec());
}

TEST(SpecSerial, EveryReductionFieldReachesEveryRendering) {
  EXPECT_EQ(field_count(red_spec()), 18 + 2 * 5);
  expect_every_field_rendered(red_spec());
}

TEST(SpecSerial, ParameterCountsAndDevicesGiveDifferentBytes) {
  EwSpecialization more = ew_spec();
  more.params.push_back(more.params.back());
  EXPECT_NE(bytes_of(more), bytes_of(ew_spec()));
  RedSpecialization fewer = red_spec();
  fewer.params.pop_back();
  EXPECT_NE(bytes_of(fewer), bytes_of(red_spec()));
  // A text field carries its length: "ab" + "c..." and "abc" + "..." differ.
  RedSpecialization a = red_spec(), b = red_spec();
  a.reduce_ctype = "ab";
  b.reduce_ctype = "abc";
  EXPECT_NE(bytes_of(a), bytes_of(b));
}

TEST(SpecSerial, KeyTextKeepsItsFormat) {
  EXPECT_EQ(ew_spec().key(),
            "layout=2;vec=1;tile=64;nd=3;i64=0;block=128;params=float32a100100,float32s100100,"
            "float64a100100,");
  EXPECT_EQ(red_spec().key(),
            "strategy=1;R=float;ond=1;rnd=1;rc=0;vec=4;group=8;rl=0;rpp=1;2p=0;i64=0;"
            "block=256;b2=0;params=float32a101,float32a101,");
  RedSpecialization peeled = red_spec();
  peeled.peel = true;
  EXPECT_NE(peeled.key().find(";b2=0;peel;params="), std::string::npos);
}

// The direct writer's text is nlohmann's own dump of it (what a tree of these members would
// dump: keys sorted, numbers, bools, escapes and bytes that are not UTF-8 as nlohmann writes
// them); the readers' round trips above check its values.
TEST(SpecSerial, DirectTextIsNlohmannsDumpOfIt) {
  EXPECT_EQ(spec_json_text(ew_spec()), dump_json(spec_json(ew_spec())));
  RedSpecialization red = red_spec();
  red.peel = red.fold = red.staged = true;
  red.reduce_ctype = "odd \"type\"\\\n\x01 \xc3\xa9 \xff";
  EXPECT_EQ(spec_json_text(red), dump_json(spec_json(red)));
  ScanSpecialization scan;
  scan.scan_ctype = "Pair<float, int>";
  scan.params.resize(2);
  scan.params[1].dtype = DType::Int64;
  EXPECT_EQ(spec_json_text(scan), dump_json(spec_json(scan)));
  ScanSpecialization back;
  read_spec_json(spec_json(scan), back);
  EXPECT_EQ(back.key(), scan.key());
  EwSpecialization none;  // no parameters: an empty list
  EXPECT_EQ(spec_json_text(none), dump_json(spec_json(none)));
  EXPECT_NE(spec_json_text(none).find("\"params\":[]"), std::string::npos);
}

TEST(SpecSerial, FieldsOlderEntriesLackReadAsDefaults) {
  nlohmann::json ew = spec_json(ew_spec());
  ew.erase("tile_rows");
  EwSpecialization e;
  e.tile_rows = 32;
  read_spec_json(ew, e);
  EXPECT_EQ(e.tile_rows, 64);
  nlohmann::json red = spec_json(red_spec());
  EXPECT_FALSE(red.contains("peel"));  // written only when set
  red.erase("pass2_block");
  RedSpecialization r;
  r.pass2_block = 64;
  read_spec_json(red, r);
  EXPECT_EQ(r.pass2_block, 0);
  EXPECT_FALSE(r.peel);
}

TEST(SpecSerial, ReaderRefusesUnknownValues) {
  nlohmann::json ew = spec_json(ew_spec());
  EwSpecialization e;
  ew["layout"] = 9;
  EXPECT_THROW(read_spec_json(ew, e), ArgumentError);
  ew = spec_json(ew_spec());
  ew["params"][0]["dtype"] = "float128";
  EXPECT_THROW(read_spec_json(ew, e), ArgumentError);
  ew = spec_json(ew_spec());
  ew["vec"] = 1e300;
  EXPECT_THROW(read_spec_json(ew, e), ArgumentError);
  ew = spec_json(ew_spec());
  ew["index64"] = 1;  // a number is not a bool
  EXPECT_THROW(read_spec_json(ew, e), nlohmann::json::exception);
}

}  // namespace
}  // namespace cujit::detail

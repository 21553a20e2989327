// Manifest entries the fuzzer (tests/fuzz/manifest_fuzz.cpp) found mishandled: numeric fields
// went through nlohmann's implicit int conversion, which truncated 64-bit values silently (so
// a damaged entry was accepted as another kernel) and is undefined behaviour for floats out of
// int's range.

#include "codegen/elementwise_manifest.hpp"
#include "codegen/reduction_manifest.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace cujit::detail {
namespace {

std::string elementwise_entry() {
  const ElementwiseDefinition def =
      make_elementwise_definition("float32 x", "float32 y", "y = x", "copy", "", "", "", {}, true);
  EwSpecialization s;
  s.params.resize(2);
  return elementwise_manifest_entry(def, s);
}

std::string reduction_entry() {
  const ReductionDefinition def = make_reduction_definition(
      "float32 x", "float32 y", "x", "a + b", "y = a", "0", "total", "float", "", {}, true);
  RedSpecialization s;
  s.params.resize(2);
  s.reduce_ctype = "float";
  return reduction_manifest_entry(def, s);
}

// The entry with specialization[field] replaced by `value` (JSON text).
std::string with_field(const std::string& entry, const std::string& field,
                       const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(entry);
  j["specialization"][field] = nlohmann::json::parse(value);
  return j.dump();
}

TEST(ManifestFuzzRegression, UnchangedEntriesStillDecode) {
  EXPECT_NO_THROW(elementwise_from_manifest(elementwise_entry()));
  EXPECT_NO_THROW(reduction_from_manifest(reduction_entry()));
}

TEST(ManifestFuzzRegression, ElementwiseIntegerFieldsAreChecked) {
  const std::string entry = elementwise_entry();
  for (const char* field : {"layout", "vec", "ndim", "block_size", "tile_rows"}) {
    // 2^32 + 1 used to wrap to 1 (accepted as vec 1, ndim 1); 1e300 was undefined behaviour;
    // a float or a bool is not what cujit writes.
    for (const char* value : {"4294967297", "1e300", "-1e300", "256.0", "true", "\"1\""}) {
      EXPECT_THROW(elementwise_from_manifest(with_field(entry, field, value)), ArgumentError)
          << field << " = " << value;
    }
  }
  EXPECT_EQ(elementwise_from_manifest(with_field(entry, "vec", "4")).second.vec, 4);
}

TEST(ManifestFuzzRegression, ReductionIntegerFieldsAreChecked) {
  const std::string entry = reduction_entry();
  for (const char* field : {"strategy", "out_ndim", "red_ndim", "vec", "group", "row_loads",
                            "rows_per_pass", "block_size", "pass2_block"}) {
    for (const char* value : {"4294967297", "4294967328", "1e300", "-1e300", "1.0", "false"}) {
      EXPECT_THROW(reduction_from_manifest(with_field(entry, field, value)), ArgumentError)
          << field << " = " << value;
    }
  }
  EXPECT_EQ(reduction_from_manifest(with_field(entry, "group", "16")).second.group, 16);
}

}  // namespace
}  // namespace cujit::detail

// Request equality between the two ways to specialise: ElementwiseKernel::specialize and
// ReductionKernel::specialize (runtime/offline_specialize, from ArgSpecs, no GPU) must ask the
// kernel cache the request a first call on a GPU makes (runtime/elementwise.cpp,
// runtime/reduction.cpp, from Arrays). The launch path's steps are replayed here on argument
// descriptions built field by field as CallDescs builds them from Arrays (device addresses,
// byte strides, Array::is_c_contiguous), the outputs it allocates described as allocated;
// both paths then build through the family's one build (ElementwiseFamily::build,
// ReductionFamily::build). Runs on the CPU; nothing here compiles.
#include "runtime/offline_specialize.hpp"

#include <cujit/error.hpp>

#include "cache/record.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/reduction_manifest.hpp"
#include "core/layout.hpp"
#include "runtime/elementwise_family.hpp"
#include "runtime/reduction_family.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>

namespace cujit::detail {
namespace {

// A 256-byte aligned device address, as cujit's allocations have.
constexpr std::uint64_t kBase = 0x7f3a00000000;
const Target kSm90{90, BinaryFormat::Cubin};
const DeviceLimits kH100{90, 132, 2048};

// Argument descriptions as CallDescs::describe(k, const Array&) fills them.
class ArrayDescs {
 public:
  ArgDesc array(Shape shape, Shape strides, DType dtype, std::uint64_t address) {
    ArgDesc d;
    d.is_array = true;
    d.dtype = dtype;
    d.null = false;
    d.c_contiguous = is_c_contiguous(shape, strides, dtype_size(dtype));
    shapes_.push_back(std::move(shape));
    d.shape = &shapes_.back();
    shapes_.push_back(std::move(strides));
    d.strides = &shapes_.back();
    d.address = address;
    d.device = 0;
    return d;
  }
  ArgDesc c_array(const Shape& shape, DType dtype, std::uint64_t address) {
    return array(shape, c_contiguous_strides(shape, dtype_size(dtype)), dtype, address);
  }
  static ArgDesc scalar(DType dtype) {
    ArgDesc d;
    d.dtype = dtype;
    return d;
  }

 private:
  std::deque<Shape> shapes_;
};

std::shared_ptr<const ElementwiseDefinition> squared_diff() {
  return std::make_shared<const ElementwiseDefinition>(make_elementwise_definition(
      "T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff", "", "", "", {}, true));
}

std::shared_ptr<const ReductionDefinition> row_sum() {
  return std::make_shared<const ReductionDefinition>(make_reduction_definition(
      "T x", "T y", "x", "a + b", "y = a", "0", "row_sum", "", "", {}, true));
}

// ElementwiseKernel::launch and Impl::run on a GPU with `limits`: `args` holds every
// parameter (outputs the call did not give described as allocated), the first `given` the
// call's.
KernelRequest launch_request(std::shared_ptr<const ElementwiseDefinition> def,
                             const std::vector<ArgDesc>& args, std::size_t given,
                             const DeviceLimits& limits, const Target& target) {
  const ParamList params(def->in, def->out);
  const Who who{"kernel", def->name};
  const ResolvedTypes types =
      resolve_call_types(who, params, def->in, def->out, args.data(), given);
  ArrayScan scan;
  scan_arrays(scan, who, params, args.data(), given, given);
  Shape sized;
  const Shape& shape = elementwise_shape(who, scan, -1, sized);
  const EwPlan plan = plan_elementwise(*def, args.data(), shape, 0, elementwise_tuning(), limits);
  auto spec = std::make_shared<const EwSpecialization>(
      elementwise_specialization(*def, types, plan, args.data(), given));
  return ElementwiseFamily::build(def, spec, target).request;
}

// ReductionKernel::launch and Impl::plan_call on a GPU with `limits`.
KernelRequest launch_request(std::shared_ptr<const ReductionDefinition> def,
                             const std::vector<ArgDesc>& args, std::size_t given,
                             const ReduceOptions& reduce, const DeviceLimits& limits,
                             const Target& target) {
  const ParamList params(def->in, def->out);
  const Who who{"reduction kernel", def->name};
  const ResolvedTypes types =
      resolve_call_types(who, params, def->in, def->out, args.data(), given);
  ArrayScan scan;
  scan_arrays(scan, who, params, args.data(), given, params.n_in());
  if (scan.shape == nullptr) throw ArgumentError("no input array gives the shape");
  const Shape& shape = *scan.shape;
  const RedAxes axes = reduction_axes(who, shape, reduce);
  const RedPlan plan = plan_reduction(*def, types, resolve_reduce_ctype(*def, types), args.data(),
                                      shape, axes, reduce.keepdims, 0, reduction_tuning(), limits);
  return ReductionFamily::build(def, std::make_shared<const RedSpecialization>(plan.spec), target)
      .request;
}

std::string key_of(const KernelRequest& r) { return request_key(r.kind, r.spec, r.target); }

void expect_same(const KernelRequest& offline, const KernelRequest& launch) {
  EXPECT_EQ(offline.kind, launch.kind);
  EXPECT_EQ(offline.spec, launch.spec);
  EXPECT_EQ(offline.target, launch.target);
  EXPECT_EQ(offline.manifest_entry, launch.manifest_entry);
  EXPECT_EQ(key_of(offline), key_of(launch));
}

ReduceOptions over(std::initializer_list<int> axes, bool keepdims = false) {
  ReduceOptions r;
  r.axes = Axes(axes);
  r.keepdims = keepdims;
  return r;
}

TEST(OfflineRequest, ReadmeSquaredDiffEqualsTheLaunchPathsRequest) {
  const auto def = squared_diff();
  ArrayDescs a;
  // squared_diff(x, y) with x (1024, 1024) and y (1024,) from Array::empty; z allocated.
  const std::vector<ArgDesc> launch = {a.c_array({1024, 1024}, DType::Float32, kBase),
                                       a.c_array({1024}, DType::Float32, kBase + (4 << 20)),
                                       a.c_array({1024, 1024}, DType::Float32, kBase + (8 << 20))};
  const std::vector<ArgSpec> specs = {ArgSpec::array(DType::Float32, {1024, 1024}),
                                      ArgSpec::array(DType::Float32, {1024})};
  const FamilyBuild offline = offline_elementwise_build(def, specs, kSm90, {});
  expect_same(offline.request, launch_request(def, launch, 2, kH100, kSm90));
  // An elementwise kernel's code does not depend on the GPU's size.
  expect_same(offline.request, launch_request(def, launch, 2, {90, 16, 1536}, kSm90));
  // The description matters: a y at a 4-byte boundary rules out 16-byte rows.
  const std::vector<ArgSpec> unaligned = {
      specs[0], ArgSpec::array(DType::Float32, {1024}, ArrayLayout::CContiguous, 4)};
  EXPECT_NE(offline_elementwise_build(def, unaligned, kSm90, {}).request.spec,
            offline.request.spec);
}

TEST(OfflineRequest, ColumnMajorReversedAndGivenOutputsEqualTheLaunchPathsRequests) {
  const auto def = squared_diff();
  ArrayDescs a;
  // x: a transposed (256, 512) C array; y: a (512, 256) C array with its columns reversed
  // (x[:, ::-1]: the view starts at the last element of row 0); z given.
  const std::vector<ArgDesc> launch = {
      a.array({512, 256}, {4, 2048}, DType::Float32, kBase),
      a.array({512, 256}, {1024, -4}, DType::Float32, kBase + (1 << 20) + 1020),
      a.c_array({512, 256}, DType::Float32, kBase + (2 << 20))};
  const std::vector<ArgSpec> specs = {
      ArgSpec::array(DType::Float32, {512, 256}, ArrayLayout::FContiguous),
      ArgSpec::strided(DType::Float32, {512, 256}, {1024, -4}, 4),
      ArgSpec::array(DType::Float32, {512, 256})};
  expect_same(offline_elementwise_build(def, specs, kSm90, {}).request,
              launch_request(def, launch, 3, kH100, kSm90));
}

TEST(OfflineRequest, ScalarsAndUnalignedArraysEqualTheLaunchPathsRequests) {
  const auto def = std::make_shared<const ElementwiseDefinition>(make_elementwise_definition(
      "T x, T a, T b", "T y", "y = a * x + b", "axpb", "", "", "", {}, true));
  ArrayDescs a;
  // x (4097,) float64 at an 8-byte boundary: no 16-byte vectors.
  const std::vector<ArgDesc> launch = {
      a.c_array({4097}, DType::Float64, kBase + 8), ArrayDescs::scalar(DType::Float64),
      ArrayDescs::scalar(DType::Float64), a.c_array({4097}, DType::Float64, kBase + (1 << 20))};
  const std::vector<ArgSpec> specs = {
      ArgSpec::array(DType::Float64, {4097}, ArrayLayout::CContiguous, 8),
      ArgSpec::scalar(DType::Float64), ArgSpec::scalar(DType::Float64)};
  expect_same(offline_elementwise_build(def, specs, kSm90, {}).request,
              launch_request(def, launch, 3, kH100, kSm90));
}

TEST(OfflineRequest, RowSumEqualsTheLaunchPathsRequest) {
  const auto def = row_sum();
  ArrayDescs a;
  const std::vector<ArgDesc> launch = {a.c_array({4096, 50257}, DType::Float32, kBase),
                                       a.c_array({4096}, DType::Float32, kBase + (1ull << 30))};
  const std::vector<ArgSpec> specs = {ArgSpec::array(DType::Float32, {4096, 50257})};
  expect_same(offline_reduction_build(def, specs, over({1}), kSm90, {}).request,
              launch_request(def, launch, 1, over({1}), kH100, kSm90));
}

TEST(OfflineRequest, ReductionRequestFollowsTheDescribedDevice) {
  const auto def = row_sum();
  ArrayDescs a;
  // 200 long rows: a block per row on 8 SMs, rows split over blocks in two passes on 132.
  const std::vector<ArgDesc> launch = {a.c_array({200, 100000}, DType::Float32, kBase),
                                       a.c_array({200}, DType::Float32, kBase + (1ull << 30))};
  const std::vector<ArgSpec> specs = {ArgSpec::array(DType::Float32, {200, 100000})};
  SpecializeOptions small;
  small.device.sm_count = 8;
  const KernelRequest on_small =
      offline_reduction_build(def, specs, over({1}), kSm90, small).request;
  expect_same(on_small, launch_request(def, launch, 1, over({1}), {90, 8, 2048}, kSm90));
  const KernelRequest on_h100 = offline_reduction_build(def, specs, over({1}), kSm90, {}).request;
  expect_same(on_h100, launch_request(def, launch, 1, over({1}), kH100, kSm90));
  EXPECT_NE(on_small.spec, on_h100.spec);
  // sm_86 holds 1536 threads per SM by default, as the architecture does.
  const Target sm86{86, BinaryFormat::Cubin};
  SpecializeOptions ga102;
  ga102.device.sm_count = 84;
  expect_same(offline_reduction_build(def, specs, over({1}), sm86, ga102).request,
              launch_request(def, launch, 1, over({1}), {86, 84, 1536}, sm86));
}

TEST(OfflineRequest, KeepdimsColumnMajorAndGivenOutputEqualTheLaunchPathsRequest) {
  const auto def = row_sum();
  ArrayDescs a;
  const std::vector<ArgDesc> launch = {a.array({1000, 64}, {4, 4000}, DType::Float32, kBase),
                                       a.c_array({1, 64}, DType::Float32, kBase + (1 << 20))};
  const std::vector<ArgSpec> specs = {
      ArgSpec::array(DType::Float32, {1000, 64}, ArrayLayout::FContiguous),
      ArgSpec::array(DType::Float32, {1, 64})};
  expect_same(offline_reduction_build(def, specs, over({0}, true), kSm90, {}).request,
              launch_request(def, launch, 2, over({0}, true), kH100, kSm90));
}

TEST(OfflineRequest, BadDescriptionsNameTheKernelAndTheArgument) {
  const auto def = squared_diff();
  const auto f32 = [](Shape s) { return ArgSpec::array(DType::Float32, std::move(s)); };
  auto message = [&](const std::vector<ArgSpec>& specs, const SpecializeOptions& o = {}) {
    try {
      offline_elementwise_build(def, specs, kSm90, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THROW(offline_elementwise_build(def, {f32({4})}, kSm90, {}), ArgumentError);
  EXPECT_THROW(
      offline_elementwise_build(def, {f32({4}), ArgSpec::array(DType::Float64, {4})}, kSm90, {}),
      TypeError);
  EXPECT_THROW(offline_elementwise_build(def, {f32({3, 4}), f32({5})}, kSm90, {}), ShapeError);
  EXPECT_NE(message({f32({3, 4}), f32({5})}).find("input 'y'"), std::string::npos);
  EXPECT_THROW(offline_elementwise_build(def, {f32({4}), f32({-1})}, kSm90, {}), ShapeError);
  const std::string strides =
      message({f32({4}), ArgSpec::strided(DType::Float32, {2, 2}, {4}, 256)});
  EXPECT_NE(strides.find("'squared_diff'"), std::string::npos) << strides;
  EXPECT_NE(strides.find("argument 'y'"), std::string::npos) << strides;
  const std::string alignment =
      message({ArgSpec::array(DType::Float32, {4}, ArrayLayout::CContiguous, 2), f32({4})});
  EXPECT_NE(alignment.find("argument 'x'"), std::string::npos) << alignment;
  EXPECT_NE(alignment.find("alignment 2"), std::string::npos) << alignment;
  EXPECT_THROW(offline_elementwise_build(def, {f32({4}), f32({4}), ArgSpec::scalar(DType::Float32)},
                                         kSm90, {}),
               TypeError);
  EXPECT_THROW(offline_elementwise_build(def, {f32({0, 4}), f32({4})}, kSm90, {}), ArgumentError);
  SpecializeOptions no_sms;
  no_sms.device.sm_count = 0;
  EXPECT_THROW(offline_elementwise_build(def, {f32({4}), f32({4})}, kSm90, no_sms), ArgumentError);
  SpecializeOptions bad_block;
  bad_block.block_size = 2048;
  EXPECT_THROW(offline_elementwise_build(def, {f32({4}), f32({4})}, kSm90, bad_block),
               ArgumentError);
  EXPECT_THROW(offline_reduction_build(row_sum(), {f32({4, 4})}, over({2}), kSm90, {}), ShapeError);
  EXPECT_THROW(offline_reduction_build(row_sum(), {ArgSpec::scalar(DType::Float32)}, {}, kSm90, {}),
               ArgumentError);
}

// A preamble that includes a header found through the kernel's -I option: the header's contents
// are part of the request (and the same offline and on the launch path, which share the build).
TEST(OfflineRequest, HeadersThePreambleIncludesAreInTheRequest) {
  const std::string dir = ::testing::TempDir() + "cujit-offline-includes";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/offset.h") << "#define OFFSET 1.0f\n";
  const auto def = std::make_shared<const ElementwiseDefinition>(
      make_elementwise_definition("T x", "T y", "y = x + OFFSET", "offset", "#include \"offset.h\"",
                                  "", "", {"-I" + dir}, true));
  const std::vector<ArgSpec> specs = {ArgSpec::array(DType::Float32, {64})};
  const KernelRequest before = offline_elementwise_build(def, specs, kSm90, {}).request;
  EXPECT_EQ(before.include_digest.size(), 64u);
  std::ofstream(dir + "/offset.h") << "#define OFFSET 2.0f\n";
  const KernelRequest after = offline_elementwise_build(def, specs, kSm90, {}).request;
  EXPECT_NE(after.include_digest, before.include_digest);
  EXPECT_EQ(after.spec, before.spec);  // the manifest entry stays what the user wrote
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cujit::detail

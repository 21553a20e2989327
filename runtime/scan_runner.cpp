#include "runtime/scan_runner.hpp"

#include <cujit/error.hpp>

#include "codegen/scan_abi.hpp"
#include "runtime/family.hpp"
#include "runtime/kernel_params.hpp"
#include "runtime/memory.hpp"
#include "support/log.hpp"

#include <cstdlib>
#include <limits>

namespace cujit::detail {
namespace {

// CUJIT_SCAN_DEBUG=1 reports each loaded specialisation (tile, registers, occupancy).
void debug_scan(const std::string& kernel, const ScanSpecialization& spec, CUfunction f) {
  static const bool enabled = std::getenv("CUJIT_SCAN_DEBUG") != nullptr;
  if (!enabled) return;
  int regs = 0, active = 0;
  driver().cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&active, f, scan_threads(spec),
                                                       scan_dynamic_shared(spec));
  log_always(LogLevel::Info, "scan '" + kernel + "': " + spec.key() + "; " + std::to_string(regs) +
                                 " registers, " + std::to_string(active) + " blocks/SM");
}

}  // namespace

// Lets `loaded`'s kernel take its dynamic shared memory, which may pass the 48 KiB a kernel
// gets without asking; ArgumentError naming the kernel when the block needs more than the
// device has.
void ScanRunner::allow_shared(const ScanLoaded& loaded, int device) const {
  int fixed = 0, limit = 0;
  CUdevice handle = 0;
  check(driver().cuFuncGetAttribute(&fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, loaded.function),
        "cuFuncGetAttribute");
  check(driver().cuDeviceGet(&handle, device), "cuDeviceGet");
  check(driver().cuDeviceGetAttribute(&limit, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                      handle),
        "cuDeviceGetAttribute");
  const std::size_t needed = loaded.shared_bytes + static_cast<std::size_t>(fixed);
  if (needed > static_cast<std::size_t>(limit)) {
    const char* family = def_->select == SelectWhat::None ? "scan kernel" : "select kernel";
    throw ArgumentError(std::string("cujit: ") + family + " '" + def_->name + "': a block of " +
                        "this tile needs " + std::to_string(needed) +
                        " bytes of shared memory, more than device " + std::to_string(device) +
                        "'s " + std::to_string(limit) + "; use a smaller cujit::block_size");
  }
  check(
      driver().cuFuncSetAttribute(loaded.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(loaded.shared_bytes)),
      "cuFuncSetAttribute", "scan kernel '" + def_->name + "'");
}

std::shared_ptr<const ScanFamily::Resolved> ScanRunner::resolve(const Arg* args,
                                                                const ArgDesc* descs,
                                                                std::size_t count) {
  const std::string key = type_key(args, count);
  if (auto found = resolved_.find(key)) return found;
  return resolved_.insert(
      key, std::make_shared<const ScanFamily::Resolved>(ScanFamily::resolve(*def_, descs, count)));
}

std::shared_ptr<const ScanLoaded> ScanRunner::load(const ScanSpecialization& spec, int device) {
  std::string own_key;
  std::string& memo = PerThread<std::string, MemoKeyBuffer>::get(own_key);
  memo_key(memo, spec, device);
  if (auto found = loaded_.find(memo)) return found;
  const std::string key = memo;  // compiling may launch kernels on this thread
  auto shared_spec = std::make_shared<const ScanSpecialization>(spec);
  auto made = std::make_shared<ScanLoaded>();
  made->module = compile_and_load(def_->name, device, [&](const DeviceTarget& on) {
    return compile_family(for_device(ScanFamily::build(def_, shared_spec, on.target), on));
  });
  made->parameters = scan_parameters(*def_, spec);
  made->function = kernel_function(*made->module, scan_symbol(*def_), def_->name);
  made->shared_bytes = static_cast<unsigned>(scan_dynamic_shared(spec));
  allow_shared(*made, device);
  debug_scan(def_->name, spec, made->function);
  return loaded_.insert(key, std::move(made));
}

std::shared_ptr<const ScanCall> ScanRunner::make_call(const Who& who, ScanPlan plan, int device) {
  if (plan.n_tiles > std::numeric_limits<int>::max()) {
    throw ArgumentError(who.text() + ": " + std::to_string(plan.n) +
                        " elements make more tiles than one launch can take");
  }
  auto call = std::make_shared<ScanCall>();
  call->plan = std::move(plan);
  call->loaded = load(call->plan.spec, device);
  call->layout = scan_layout_bytes(scan_layout_abi(*def_, call->plan.spec), call->plan);
  return call;
}

void ScanRunner::execute(const ScanCall& call, const Arg* args, const Array* const* arrays,
                         CUstream stream, int device) const {
  const ScanPlan& plan = call.plan;
  const auto buffer = allocate(device, plan.scratch.total, stream);
  std::uint64_t scratch = buffer->address;
  check(driver().cuMemsetD8Async(scratch, 0, plan.scratch.cleared, stream), "cuMemsetD8Async");
  KernelParams packed;
  pack_parameters(call.loaded->parameters,
                  {args, arrays, 0, const_cast<unsigned char*>(call.layout.data()), &scratch},
                  packed);
  const LaunchShape shape{static_cast<unsigned>(plan.n_tiles), 1,
                          static_cast<unsigned>(scan_threads(plan.spec)), 1,
                          call.loaded->shared_bytes};
  launch_function(call.loaded->function, shape, stream, packed.data(), device, false,
                  def_->select == SelectWhat::None ? "the launch of scan kernel"
                                                   : "the launch of select kernel",
                  def_->name);
}

}  // namespace cujit::detail

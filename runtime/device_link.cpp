#include "runtime/device_link.hpp"

#include "runtime/nvjitlink_library.hpp"

#include "core/link_input.hpp"
#include "support/unique_handle.hpp"

#include <cujit/error.hpp>

#include <memory>
#include <vector>

namespace cujit::detail {
namespace {

struct LinkRelease {
  void operator()(nvJitLinkHandle handle) const noexcept { nvjitlink().nvJitLinkDestroy(&handle); }
};
using Handle = UniqueHandle<nvJitLinkHandle, LinkRelease>;

nvJitLinkInputType input_type(LinkInput::Kind kind) {
  switch (kind) {
    case LinkInput::Kind::LtoIr:
      return NVJITLINK_INPUT_LTOIR;
    case LinkInput::Kind::Cubin:
      return NVJITLINK_INPUT_CUBIN;
    case LinkInput::Kind::Fatbin:
      return NVJITLINK_INPUT_FATBIN;
    case LinkInput::Kind::Ptx:
      return NVJITLINK_INPUT_PTX;
  }
  return NVJITLINK_INPUT_ANY;
}

std::string error_log(nvJitLinkHandle handle) {
  std::size_t size = 0;
  if (nvjitlink().nvJitLinkGetErrorLogSize(handle, &size) != NVJITLINK_SUCCESS || size == 0) {
    return {};
  }
  std::string log(size, '\0');
  nvjitlink().nvJitLinkGetErrorLog(handle, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

[[noreturn]] void link_failed(nvJitLinkHandle handle, const std::string& what,
                              const SourceProgram& program, const Target& target,
                              const std::vector<std::string>& options) {
  std::string log = error_log(handle);
  std::string message = "cujit: nvJitLink failed to link " + program.name + " for " +
                        target.name() + " (" + what + ")\n" + log + "\nlink inputs:";
  for (const LinkInput& input : program.link_inputs) {
    message += " " + input.name + " (" + to_string(input.kind) + ", " +
               std::to_string(input.bytes.size()) + " bytes)";
  }
  throw CompileError(message, std::move(log), options, program.source);
}

}  // namespace

std::string link_device_code(const std::string& ltoir, const SourceProgram& program,
                             const Target& target) {
  // Inputs may come from a manifest or a struct the caller filled in: nvJitLink sees only a
  // kind that exists and bytes that start as that kind's files do.
  for (const LinkInput& input : program.link_inputs) {
    check_link_input(input, "cujit: " + program.name);
  }
  const NvJitLink& link = nvjitlink();
  const std::vector<std::string> options = {
      "-arch=sm_" + std::to_string(target.arch) + (target.arch_specific ? "a" : ""), "-lto"};
  std::vector<const char*> option_ptrs = {options[0].c_str(), options[1].c_str()};
  nvJitLinkHandle raw = nullptr;
  if (link.nvJitLinkCreate(&raw, static_cast<std::uint32_t>(option_ptrs.size()),
                           option_ptrs.data()) != NVJITLINK_SUCCESS) {
    throw CompileError("cujit: nvJitLink could not start a link for " + target.name(), "", options,
                       program.source);
  }
  Handle handle(raw);
  if (link.nvJitLinkAddData(raw, NVJITLINK_INPUT_LTOIR, ltoir.data(), ltoir.size(),
                            program.name.c_str()) != NVJITLINK_SUCCESS) {
    link_failed(raw, "the program's own LTO-IR", program, target, options);
  }
  for (const LinkInput& input : program.link_inputs) {
    if (link.nvJitLinkAddData(raw, input_type(input.kind), input.bytes.data(), input.bytes.size(),
                              input.name.c_str()) != NVJITLINK_SUCCESS) {
      link_failed(raw, "input " + input.name, program, target, options);
    }
  }
  if (link.nvJitLinkComplete(raw) != NVJITLINK_SUCCESS) {
    link_failed(raw, "the link", program, target, options);
  }
  std::size_t size = 0;
  link.nvJitLinkGetLinkedCubinSize(raw, &size);
  std::string cubin(size, '\0');
  if (link.nvJitLinkGetLinkedCubin(raw, cubin.data()) != NVJITLINK_SUCCESS) {
    link_failed(raw, "reading the linked cubin", program, target, options);
  }
  return cubin;
}

}  // namespace cujit::detail

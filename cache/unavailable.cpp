#include "cache/unavailable.hpp"

namespace cujit::detail {
namespace {

std::string listed(const std::vector<std::string>& items, const char* none) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? none : out;
}

std::string target_names(const std::vector<Target>& targets) {
  std::vector<std::string> names;
  for (const Target& t : targets) names.push_back(t.name());
  return listed(names, "none");
}

}  // namespace

std::string compiler_unavailable_message(const KernelRequest& request,
                                         const std::vector<std::string>& deployments,
                                         const std::string& writable, const std::string& reason) {
  const std::string kernel = request.name.empty() ? request.kind : "'" + request.name + "'";
  std::string m = "cujit: " + request.kind + " kernel " + kernel + " for " + request.target.name() +
                  " is in no cache and cannot be compiled here.\n";
  m += "  why: " + (reason.rfind("cujit: ", 0) == 0 ? reason.substr(7) : reason) + "\n";
  m += "  searched: the in-process cache; deployment databases: " +
       listed(deployments, "none (CUJIT_CACHE_PATH)") +
       "; writable database: " + (writable.empty() ? "none" : writable) +
       "; compatible targets: " + target_names(request.compatible) + "\n";
  if (request.manifest_entry.empty()) {
    m += "  this kernel cannot be precompiled from a manifest; compile it on a machine with "
         "NVRTC and ship that cache database";
    return m;
  }
  m += "  specialisation (one manifest line): " + request.manifest_entry + "\n";
  m += "  to cover it, on a machine with NVRTC: add that line to kernels.jsonl (or record a run "
       "with CUJIT_RECORD=kernels.jsonl), then\n    cujit-cache precompile kernels.jsonl --arch " +
       request.target.name() + " -o kernels.db\n  and ship kernels.db in CUJIT_CACHE_PATH";
  return m;
}

}  // namespace cujit::detail

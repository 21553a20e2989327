// The pure parts of the program types: target names and lowered-name lookup.
#include <cujit/program.hpp>

#include <cujit/error.hpp>

#include <algorithm>

namespace cujit {
namespace {

// The first architecture with arch-specific ("a") features.
constexpr int kFirstArchSpecific = 90;

// Every architecture NVRTC has offered since CUDA 11; lookups for others could only miss.
constexpr int kArchs[] = {50, 52, 53, 60, 61,  62,  70,  72,  75,  80, 86,
                          87, 88, 89, 90, 100, 101, 103, 110, 120, 121};

}  // namespace

std::string Target::name() const {
  return (format == BinaryFormat::Cubin ? "sm_" : "compute_") + std::to_string(arch) +
         (arch_specific ? "a" : "");
}

Target Target::parse(const std::string& text) {
  Target target;
  std::string digits = text;
  const bool prefixed = text.rfind("sm_", 0) == 0 || text.rfind("compute_", 0) == 0;
  if (prefixed && text.back() == 'a') {
    target.arch_specific = true;
    digits.pop_back();
  }
  const std::string named = digits;
  if (named.rfind("sm_", 0) == 0) {
    digits = named.substr(3);
  } else if (named.rfind("compute_", 0) == 0) {
    digits = named.substr(8);
    target.format = BinaryFormat::Ptx;
  }
  const bool ok =
      !digits.empty() && digits.size() <= 4 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!ok) {
    throw ArgumentError("cujit: invalid target '" + text +
                        "': expected sm_XY (cubin), compute_XY (PTX) or sm_XYa (arch-specific "
                        "cubin), e.g. sm_90");
  }
  target.arch = std::stoi(digits);
  if (target.arch_specific && target.arch < kFirstArchSpecific) {
    throw ArgumentError("cujit: invalid target '" + text +
                        "': arch-specific targets start at sm_90a");
  }
  return target;
}

std::vector<Target> compatible_targets(int arch) {
  std::vector<Target> out;
  if (arch >= kFirstArchSpecific) out.push_back({arch, BinaryFormat::Cubin, true});
  for (auto it = std::rbegin(kArchs); it != std::rend(kArchs); ++it) {
    if (*it < arch && *it / 10 == arch / 10) out.push_back({*it, BinaryFormat::Cubin});
  }
  for (auto it = std::rbegin(kArchs); it != std::rend(kArchs); ++it) {
    if (*it <= arch) out.push_back({*it, BinaryFormat::Ptx});
  }
  return out;
}

const std::string& CompiledProgram::lowered_name(const std::string& expression) const {
  for (const auto& entry : lowered_names) {
    if (entry.first == expression) return entry.second;
  }
  return expression;
}

}  // namespace cujit

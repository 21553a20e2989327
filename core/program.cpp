// The pure parts of the program types: target names and lowered-name lookup.
#include <cujit/program.hpp>

#include <cujit/error.hpp>

#include <algorithm>

namespace cujit {

std::string Target::name() const {
  return (format == BinaryFormat::Cubin ? "sm_" : "compute_") + std::to_string(arch);
}

Target Target::parse(const std::string& text) {
  Target target;
  std::string digits = text;
  if (text.rfind("sm_", 0) == 0) {
    digits = text.substr(3);
  } else if (text.rfind("compute_", 0) == 0) {
    digits = text.substr(8);
    target.format = BinaryFormat::Ptx;
  }
  const bool ok =
      !digits.empty() && digits.size() <= 4 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!ok) {
    throw ArgumentError("cujit: invalid target '" + text +
                        "': expected sm_XY (cubin) or compute_XY (PTX), e.g. sm_90");
  }
  target.arch = std::stoi(digits);
  return target;
}

const std::string& CompiledProgram::lowered_name(const std::string& expression) const {
  for (const auto& entry : lowered_names) {
    if (entry.first == expression) return entry.second;
  }
  return expression;
}

}  // namespace cujit

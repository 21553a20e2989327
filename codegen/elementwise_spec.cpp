#include "codegen/elementwise_spec.hpp"

#include "codegen/spec_serial.hpp"

namespace cujit::detail {

std::string EwSpecialization::key() const { return spec_key_text(*this); }

std::string elementwise_symbol(const ElementwiseDefinition& def) { return "cujit_ew_" + def.name; }

std::vector<int> strided_array_params(const ElementwiseDefinition& def, const EwSpecialization& s) {
  std::vector<int> result;
  const int total = static_cast<int>(def.in.size() + def.out.size());
  for (int k = 0; k < total; ++k) {
    const Param& p = k < static_cast<int>(def.in.size()) ? def.in[k] : def.out[k - def.in.size()];
    const EwParam& e = s.params[k];
    if (!p.raw && !e.scalar && (e.used || e.raw_view_used)) result.push_back(k);
  }
  return result;
}

}  // namespace cujit::detail

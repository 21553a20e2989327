#include "codegen/elementwise_spec.hpp"

#include <sstream>

namespace cujit::detail {

std::string EwSpecialization::key() const {
  std::ostringstream k;
  k << "layout=" << static_cast<int>(layout) << ";vec=" << vec << ";tile=" << tile_rows
    << ";nd=" << ndim << ";i64=" << index64 << ";block=" << block_size << ";params=";
  for (const EwParam& p : params) {
    k << dtype_name(p.dtype) << (p.scalar ? "s" : "a") << p.used << p.raw_view_used << p.load_output
      << p.raw_contiguous << p.transposed << p.row_broadcast << ',';
  }
  return k.str();
}

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

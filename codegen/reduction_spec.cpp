#include "codegen/reduction_spec.hpp"

#include <sstream>

namespace cujit::detail {

std::string RedSpecialization::key() const {
  // Called on every launch (the specialisation lookup): appends, no stream.
  std::string k;
  k.reserve(96 + 16 * params.size());
  auto num = [&k](const char* label, long long value) {
    k += label;
    k += std::to_string(value);
  };
  num("strategy=", static_cast<int>(strategy));
  k += ";R=";
  k += reduce_ctype;
  num(";ond=", out_ndim);
  num(";rnd=", red_ndim);
  num(";rc=", red_contiguous);
  num(";vec=", vec);
  num(";group=", group);
  num(";rl=", row_loads);
  num(";rpp=", rows_per_pass);
  num(";2p=", two_pass);
  num(";i64=", index64);
  num(";block=", block_size);
  num(";b2=", pass2_block);
  if (peel) k += ";peel";  // absent when false: earlier keys are unchanged
  k += ";params=";
  for (const RedParam& p : params) {
    k += dtype_name(p.dtype);
    k += p.scalar ? 's' : 'a';
    k += static_cast<char>('0' + p.used);
    k += static_cast<char>('0' + p.raw_view_used);
    k += static_cast<char>('0' + p.raw_contiguous);
    k += ',';
  }
  return k;
}

std::int64_t reduction_tile(const RedSpecialization& s) {
  return std::int64_t{s.block_size} * s.vec * (s.vec > 1 ? kUnrollVector : kUnrollScalar);
}

std::string reduction_symbol(const ReductionDefinition& def) { return "cujit_red_" + def.name; }
std::string reduction_pass2_symbol(const ReductionDefinition& def) {
  return "cujit_red2_" + def.name;
}

std::vector<int> reduction_layout_inputs(const ReductionDefinition& def,
                                         const RedSpecialization& s) {
  std::vector<int> result;
  for (int k = 0; k < static_cast<int>(def.in.size()); ++k) {
    if (!def.in[k].raw && !s.params[k].scalar) result.push_back(k);
  }
  return result;
}

std::vector<int> reduction_layout_outputs(const ReductionDefinition& def) {
  std::vector<int> result;
  for (int k = 0; k < static_cast<int>(def.out.size()); ++k) {
    if (!def.out[k].raw) result.push_back(k);
  }
  return result;
}

std::size_t reduction_partial_bytes(const RedSpecialization& s) {
  for (int t = 0; t < kDTypeCount; ++t) {
    const auto dtype = static_cast<DType>(t);
    if (s.reduce_ctype == dtype_cuda_type(dtype)) return 2 * dtype_size(dtype) + 8;
  }
  return kMaxAccumulatorBytes;
}

}  // namespace cujit::detail

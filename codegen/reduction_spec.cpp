#include "codegen/reduction_spec.hpp"

#include "codegen/spec_serial.hpp"

namespace cujit::detail {

std::string RedSpecialization::key() const { return spec_key_text(*this); }

std::int64_t reduction_tile(const RedSpecialization& s) {
  return std::int64_t{s.block_size} * s.vec * (s.vec > 1 ? kUnrollVector : kUnrollScalar);
}

std::int64_t reduction_stage_capacity(const ReductionDefinition& def, const RedSpecialization& s) {
  std::size_t bytes = 0;
  for (std::size_t k = 0; k < def.in.size() && k < s.params.size(); ++k) {
    const RedParam& e = s.params[k];
    if (e.used && !e.scalar && !def.in[k].raw) bytes += dtype_size(e.dtype);
  }
  return bytes == 0 ? 0 : static_cast<std::int64_t>(16384 / bytes);
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

bool columns_pass2_sliced(const RedSpecialization& s) {
  return static_cast<std::size_t>(s.second_pass_block()) * reduction_partial_bytes(s) <= 16384;
}

}  // namespace cujit::detail

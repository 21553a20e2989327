#include "codegen/scan_abi.hpp"

#include "codegen/kernel_call.hpp"

namespace cujit::detail {

std::vector<AbiParam> scan_parameters(const ScanDefinition& def, const ScanSpecialization& s) {
  const ParamList params(def.in, def.out);
  std::vector<AbiParam> list;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const ScanParam& e = s.params[k];
    list.push_back(abi_argument(static_cast<int>(k), false, e.scalar, e.dtype,
                                k < params.n_in() ? "const char* __restrict__" : "char*"));
  }
  AbiParam layout;
  layout.kind = AbiParam::Kind::Struct;
  layout.declaration = "const _cj_SL _cj_L";
  list.push_back(std::move(layout));
  AbiParam scratch;
  scratch.kind = AbiParam::Kind::Scratch;
  scratch.declaration = "unsigned char* _cj_scratch";
  list.push_back(std::move(scratch));
  return list;
}

AbiStruct scan_layout_abi(const ScanDefinition& def, const ScanSpecialization& s) {
  const int na = static_cast<int>(scan_layout_params(def, s).size());
  const int kd = s.flat ? 0 : s.kept_ndim, sd = s.flat ? 0 : s.scan_ndim;
  using T = AbiField::Type;
  return AbiStruct("_cj_SL", s.index64,
                   {{"n", T::Index},
                    {"row_len", T::Index},
                    {"group_flags", T::Index},
                    {"tile_values", T::Index},
                    {"group_aggregates", T::Index},
                    {"group_prefixes", T::Index},
                    {"kept_shape", T::Index, 0, kd},
                    {"scan_shape", T::Index, 0, sd},
                    {"kept_strides", T::Index, na, kd},
                    {"scan_strides", T::Index, na, sd}});
}

}  // namespace cujit::detail

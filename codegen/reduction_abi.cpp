#include "codegen/reduction_abi.hpp"

#include "codegen/kernel_call.hpp"

namespace cujit::detail {

std::vector<AbiParam> reduction_parameters(const ReductionDefinition& def,
                                           const RedSpecialization& s) {
  const ParamList params(def.in, def.out);
  std::vector<AbiParam> list;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const RedParam& e = s.params[k];
    list.push_back(abi_argument(static_cast<int>(k), params[k].raw, e.scalar, e.dtype,
                                k < params.n_in() ? "const char* __restrict__" : "char*"));
  }
  if (s.segmented) {
    // The segments' begin and end offsets: raw arrays after the definition's parameters.
    const DType offsets = s.segments64 ? DType::Int64 : DType::Int32;
    for (int k = 0; k < 2; ++k) {
      list.push_back(abi_argument(static_cast<int>(params.size()) + k, true, false, offsets, ""));
    }
  }
  AbiParam layout;
  layout.kind = AbiParam::Kind::Struct;
  layout.declaration = "const _cj_RL _cj_L";
  list.push_back(std::move(layout));
  AbiParam scratch;
  scratch.kind = AbiParam::Kind::Scratch;
  scratch.declaration = "_cj_Acc* _cj_part";
  list.push_back(std::move(scratch));
  return list;
}

AbiStruct reduction_layout_abi(const ReductionDefinition& def, const RedSpecialization& s) {
  const int na = static_cast<int>(reduction_layout_inputs(def, s).size());
  const int nb = static_cast<int>(reduction_layout_outputs(def).size());
  const int no = s.out_ndim, nr = s.red_ndim;
  using T = AbiField::Type;
  std::vector<AbiField> fields{{"n_out", T::Index},
                               {"n_red", T::Index},
                               {"chunk", T::Index},
                               {"nsplit", T::Index},
                               {"out_shape", T::Index, 0, no},
                               {"red_shape", T::Index, 0, nr},
                               {"in_out", T::Index, na, no},
                               {"in_red", T::Index, na, nr},
                               {"out_out", T::Index, nb, no},
                               {"out_magic", T::U32, 0, no},
                               {"out_shift", T::U32, 0, no},
                               {"red_magic", T::U32, 0, nr},
                               {"red_shift", T::U32, 0, nr}};
  if (s.fold) fields.push_back({"fold", T::Index});  // absent otherwise: earlier layouts unchanged
  return AbiStruct("_cj_RL", s.index64, std::move(fields));
}

}  // namespace cujit::detail

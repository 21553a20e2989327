#include "codegen/elementwise_abi.hpp"

#include "codegen/kernel_call.hpp"

namespace cujit::detail {

std::vector<AbiParam> elementwise_parameters(const ElementwiseDefinition& def,
                                             const EwSpecialization& s) {
  const ParamList params(def.in, def.out);
  const bool layout_struct = s.layout != EwLayout::Vectorized && s.layout != EwLayout::Contiguous;
  std::vector<AbiParam> list;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const EwParam& e = s.params[k];
    const std::string pointer =
        layout_struct ? "char*" : std::string(dtype_cuda_type(e.dtype)) + "* __restrict__";
    list.push_back(abi_argument(static_cast<int>(k), params[k].raw, e.scalar, e.dtype, pointer));
  }
  AbiParam count;
  count.kind = AbiParam::Kind::Count;
  count.index64 = s.index64;
  count.declaration = std::string(s.index64 ? "long long" : "int") + " _cj_n";
  list.push_back(std::move(count));
  if (layout_struct) {
    AbiParam layout;
    layout.kind = AbiParam::Kind::Struct;
    layout.declaration = "const _cj_Layout _cj_L";
    list.push_back(std::move(layout));
  }
  return list;
}

AbiStruct elementwise_layout_abi(const ElementwiseDefinition& def, const EwSpecialization& s) {
  const int arrays = static_cast<int>(strided_array_params(def, s).size());
  return AbiStruct("_cj_Layout", s.index64,
                   {{"shape", AbiField::Type::Index, 0, s.ndim},
                    {"strides", AbiField::Type::Index, arrays, s.ndim},
                    {"magic", AbiField::Type::U32, 0, s.ndim},
                    {"shift", AbiField::Type::U32, 0, s.ndim}});
}

}  // namespace cujit::detail

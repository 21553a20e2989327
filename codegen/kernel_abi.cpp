#include "codegen/kernel_abi.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace cujit::detail {
namespace {

std::size_t extent(int n) { return static_cast<std::size_t>(std::max(n, 1)); }

std::size_t elements(const AbiField& f) {
  return (f.rows > 0 ? extent(f.rows) : 1) * (f.cols > 0 || f.rows > 0 ? extent(f.cols) : 1);
}

}  // namespace

AbiStruct::AbiStruct(std::string name, bool index64, std::vector<AbiField> fields)
    : name_(std::move(name)), index64_(index64), fields_(std::move(fields)) {
  std::size_t at = 0, align = 4;
  for (const AbiField& f : fields_) {
    const std::size_t item = f.type == AbiField::Type::Index && index64_ ? 8 : 4;
    align = std::max(align, item);
    at = (at + item - 1) / item * item;
    offsets_.push_back(at);
    at += item * elements(f);
  }
  size_ = (at + align - 1) / align * align;
}

std::string AbiStruct::declaration() const {
  std::string text = "struct " + name_ + " {\n";
  for (const AbiField& f : fields_) {
    text += f.type == AbiField::Type::U32 ? "  unsigned " : index64_ ? "  long long " : "  int ";
    text += f.name;
    if (f.rows > 0) text += "[" + std::to_string(extent(f.rows)) + "]";
    if (f.rows > 0 || f.cols > 0) text += "[" + std::to_string(extent(f.cols)) + "]";
    text += ";\n";
  }
  return text + "};\n";
}

int AbiStruct::field(const std::string& name) const {
  for (std::size_t k = 0; k < fields_.size(); ++k) {
    if (fields_[k].name == name) return static_cast<int>(k);
  }
  throw std::logic_error("cujit: " + name_ + " has no field " + name);
}

void AbiStruct::put(unsigned char* out, int field, std::size_t flat, std::int64_t value) const {
  const AbiField& f = fields_[static_cast<std::size_t>(field)];
  if (flat >= elements(f)) throw std::logic_error("cujit: " + name_ + "." + f.name + " overflows");
  if (f.type == AbiField::Type::Index && index64_) {
    std::memcpy(out + offsets_[field] + 8 * flat, &value, 8);
  } else {
    const auto v32 = static_cast<std::uint32_t>(value);
    std::memcpy(out + offsets_[field] + 4 * flat, &v32, 4);
  }
}

AbiParam abi_argument(int k, bool raw, bool scalar, DType dtype, const std::string& pointer) {
  const std::string T(dtype_cuda_type(dtype)), id = std::to_string(k);
  AbiParam a;
  a.param = k;
  if (raw) {
    a.kind = AbiParam::Kind::RawArray;
    a.declaration =
        T + "* _cj_p" + id + ", long long _cj_size" + id + ", long long _cj_stride" + id;
  } else if (scalar) {
    a.kind = AbiParam::Kind::Scalar;
    a.dtype = dtype;
    a.declaration = T + " _cj_s" + id;
  } else {
    a.declaration = pointer + " _cj_p" + id;
  }
  return a;
}

std::string abi_signature(const std::vector<AbiParam>& params) {
  std::string text;
  for (const AbiParam& p : params) text += (text.empty() ? "" : ", ") + p.declaration;
  return text;
}

}  // namespace cujit::detail

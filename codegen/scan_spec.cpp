#include "codegen/scan_spec.hpp"

#include "codegen/spec_serial.hpp"

namespace cujit::detail {

std::string ScanSpecialization::key() const { return spec_key_text(*this); }

std::size_t scan_value_bytes(const ScanSpecialization& s) {
  for (int t = 0; t < kDTypeCount; ++t) {
    const auto dtype = static_cast<DType>(t);
    if (s.scan_ctype == dtype_cuda_type(dtype)) return dtype_size(dtype);
  }
  return 0;
}

std::size_t scan_dynamic_shared(const ScanSpecialization& s) {
  const auto tile = static_cast<std::size_t>(scan_tile(s));
  const std::size_t value = scan_value_bytes(s);
  return (tile + tile / 32) * (value > 0 ? value : kMaxScanValueBytes);
}

bool scan_packed(const ScanSpecialization& s) {
  const std::size_t bytes = scan_value_bytes(s);
  return bytes > 0 && bytes <= 4;
}

int scan_slot_words(const ScanSpecialization& s) {
  std::size_t value = scan_value_bytes(s);
  if (value == 0) value = kMaxScanValueBytes;
  // The head flag is an int after the value; the struct is padded to the value's alignment
  // (a dtype's alignment is its size, at most 16).
  std::size_t bytes = value;
  if (s.segmented) {
    const std::size_t align = value < 4 ? 4 : value;
    bytes = (((value + 3) / 4 * 4 + 4) + align - 1) / align * align;
  }
  return static_cast<int>((bytes + 3) / 4);
}

ScanScratch scan_scratch(const ScanSpecialization& s, std::int64_t n_tiles) {
  auto round16 = [](std::size_t v) { return (v + 15) / 16 * 16; };
  const auto tiles = static_cast<std::size_t>(n_tiles);
  const std::size_t groups = (tiles + 31) / 32;
  const std::size_t slot = 4 * static_cast<std::size_t>(scan_slot_words(s));
  ScanScratch out;
  if (scan_packed(s)) {
    out.group_flags = 16 + 8 * tiles;
    out.cleared = out.total = out.group_flags + 8 * groups;
    out.tile_values = 16;
    out.group_aggregates = out.group_prefixes = out.group_flags;
    return out;
  }
  out.group_flags = 16 + 4 * tiles;
  out.cleared = out.group_flags + 4 * groups;
  out.tile_values = round16(out.cleared);
  out.group_aggregates = out.tile_values + round16(tiles * slot);
  out.group_prefixes = out.group_aggregates + round16(groups * slot);
  out.total = out.group_prefixes + round16(groups * slot);
  return out;
}

std::string scan_symbol(const ScanDefinition& def) {
  return (def.select == SelectWhat::None ? "cujit_scan_" : "cujit_select_") + def.name;
}

std::vector<int> scan_layout_params(const ScanDefinition& def, const ScanSpecialization& s) {
  std::vector<int> result;
  const int n_in = static_cast<int>(def.in.size());
  for (int k = 0; k < n_in; ++k) {
    if (!s.params[k].scalar) result.push_back(k);
  }
  if (def.select != SelectWhat::None) return result;  // outputs written by position
  for (int j = 0; j < static_cast<int>(def.out.size()); ++j) result.push_back(n_in + j);
  return result;
}

}  // namespace cujit::detail

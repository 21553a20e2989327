#pragma once
// One specialisation of an elementwise kernel as a value: what the user wrote (the definition)
// and the facts that select the generated code (the specialisation). Below both the planner,
// which computes a specialisation, and the generator, which reads one; neither includes the
// other.

#include <cujit/dtype.hpp>
#include <cujit/program.hpp>

#include "codegen/signature.hpp"
#include "codegen/snippet_use.hpp"
#include "codegen/spec_serial.hpp"

#include <string>
#include <vector>

namespace cujit::detail {

/// What the user wrote (constructor arguments), after parsing.
struct ElementwiseDefinition {
  std::string name;
  std::string in_signature, out_signature;  // as written, for the cache spec
  std::vector<Param> in, out;
  std::string operation, preamble, loop_prep, after_loop;
  std::vector<std::string> compile_options;
  bool reduce_dims = true;
  ParamUse use;                 ///< what the snippets use, computed once by make_*_definition
  std::vector<LinkInput> link;  ///< device code the snippets call, linked with nvJitLink
  /// elementwise_manifest_prefix(*this), set by whoever finished the definition (the kernel
  /// object, after `link`); empty: computed for each entry. Clear it when changing a field.
  std::string manifest_prefix;
};

enum class EwLayout : unsigned char {
  Vectorized,  ///< every array contiguous and aligned: `vec` elements per 16-byte access
  Contiguous,  ///< every array contiguous: one element per access
  Strided,     ///< N-d byte strides (broadcast, transposed, sliced, negative)
  Rows2D,      ///< two dimensions, every array contiguous or broadcast along each row:
               ///< `vec` elements per 16-byte access, one fast division per vector
  Tiled2D,     ///< two dimensions after collapsing: 64x32 tiles, 32x8 threads, no division;
               ///< arrays whose first dimension is the faster one go through shared memory
};

/// Per parameter (inputs, then outputs) facts that select the generated code.
struct EwParam {
  DType dtype = DType::Float32;
  bool scalar = false;         ///< passed by value (a host scalar)
  bool used = true;            ///< referenced by a snippet; unused arrays are never loaded
  bool raw_view_used = false;  ///< `_raw_<name>` referenced
  bool load_output = false;    ///< output read before the operation (vectorised path)
  bool raw_contiguous = true;  ///< raw parameters: C-contiguous (else 1-d with a byte stride)
  bool transposed = false;     ///< Tiled2D: dimension 0 has the smaller stride (via a tile)
  bool row_broadcast = false;  ///< Rows2D: one element per row (stride 0 along the row)
};

struct EwSpecialization {
  std::vector<EwParam> params;  ///< in, then out
  EwLayout layout = EwLayout::Contiguous;
  int vec = 1;           ///< elements per thread access (Vectorized)
  int ndim = 1;          ///< dimensions after collapsing (Strided)
  bool index64 = false;  ///< 64-bit index arithmetic
  int block_size = 256;
  int tile_rows = 64;  ///< Tiled2D: rows per tile (32, 64 or 128)

  /// The key text of everything above (spec_serial.hpp): the generated source's banner.
  std::string key() const;
};

/// The fields of an elementwise specialisation, once, in key order (spec_serial.hpp): the
/// key text, the memo bytes and the manifest entry are rendered from this list.
template <class Param, class V>
enable_if_same_t<Param, EwParam> visit_fields(Param& p, V& v) {
  v.dtype("dtype", p.dtype);
  v.kind("scalar", p.scalar);
  v.flag("used", p.used);
  v.flag("raw_view_used", p.raw_view_used);
  v.flag("load_output", p.load_output);
  v.flag("raw_contiguous", p.raw_contiguous);
  v.flag("transposed", p.transposed);
  v.flag("row_broadcast", p.row_broadcast);
}
template <class Spec, class V>
enable_if_same_t<Spec, EwSpecialization> visit_fields(Spec& s, V& v) {
  v.choice({"layout", "layout"}, s.layout, EwLayout::Tiled2D, "layout");
  v.number({"vec", "vec"}, s.vec);
  v.number_or({"tile_rows", "tile"}, s.tile_rows, 64);  // older entries lack it
  v.number({"ndim", "nd"}, s.ndim);
  v.flag({"index64", "i64"}, s.index64);
  v.number({"block_size", "block"}, s.block_size);
  v.params({"params", "params"}, s.params);
}

/// The kernel's symbol: "cujit_ew_<name>".
std::string elementwise_symbol(const ElementwiseDefinition& def);

/// Names of the arrays that take part in the strided layout, in layout order: used non-raw,
/// non-scalar parameters (and those whose _raw_ view is used).
std::vector<int> strided_array_params(const ElementwiseDefinition& def, const EwSpecialization& s);

}  // namespace cujit::detail

#include "codegen/elementwise_codegen.hpp"

#include "codegen/device_support.hpp"
#include "codegen/elementwise_plan.hpp"

#include <cctype>
#include <sstream>

namespace cujit::detail {
namespace {

bool needs_fp16(const EwSpecialization& s) {
  for (const EwParam& p : s.params) {
    if (p.dtype == DType::Float16 || p.dtype == DType::BFloat16) return true;
  }
  return false;
}

std::string cuda_type(DType t) { return std::string(dtype_cuda_type(t)); }

// Counts lines so #line directives can return to the generated file's own numbering.
class Writer {
 public:
  explicit Writer(std::string file) : file_(std::move(file)) {}
  Writer& operator<<(const std::string& text) {
    for (char c : text) line_ += (c == '\n');
    out_ += text;
    return *this;
  }
  // Emits `code` so that diagnostics inside it name `label` and the snippet's own lines.
  // Statements get a closing ';' as in CuPy, so "z = x + y" needs none.
  void snippet(const std::string& label, const std::string& code, bool statements = true) {
    if (code.empty()) return;
    *this << "#line 1 \"" + label + "\"\n" << code << (statements ? ";\n" : "\n");
    *this << "#line " + std::to_string(line_ + 1) + " \"" + file_ + "\"\n";
  }
  const std::string& str() const { return out_; }

 private:
  std::string file_;
  std::string out_;
  int line_ = 1;
};

}  // namespace

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

namespace {

// Tiled2D: each block walks tile_rows x 32 tiles (rows x columns) of the 2-d iteration space
// with 32x8 threads, tile_rows / 8 rows each. Arrays stored column-major (transposed) are read and
// written through a padded shared-memory tile so that every global access is coalesced; the rest
// are read in place.
template <class Body>
void generate_tiled_loop(Writer& w, const EwSpecialization& s, const std::vector<int>& arrays,
                         std::size_t n_in, Body&& element_body) {
  auto slot = [&](int k) {
    for (std::size_t a = 0; a < arrays.size(); ++a) {
      if (arrays[a] == k) return std::to_string(a);
    }
    return std::string("0");
  };
  auto address = [&](int k, const std::string& T, const std::string& r, const std::string& c) {
    return "*reinterpret_cast<" + T + "*>(_cj_p" + std::to_string(k) + " + " + r +
           " * _cj_L.strides[" + slot(k) + "][0] + " + c + " * _cj_L.strides[" + slot(k) + "][1])";
  };
  // Tiles of tile_rows x 32: tile_rows / 8 elements per thread; tiles padded by one.
  const std::string TR = std::to_string(s.tile_rows), TRm1 = std::to_string(s.tile_rows - 1),
                    TP = std::to_string(s.tile_rows + 1), K = std::to_string(s.tile_rows / 8);
  bool any_load = false, any_store = false;
  for (int k : arrays) {
    const EwParam& e = s.params[k];
    if (!e.transposed || !e.used) continue;
    const bool input = k < static_cast<int>(n_in);
    // Raw bytes: a __shared__ array of a class type (complex, half) would need a constructor.
    const std::string T = cuda_type(e.dtype), id = std::to_string(k);
    w << "  __shared__ __align__(16) unsigned char _cj_tile" + id + "_bytes[32 * " + TP +
             " * sizeof(" + T + ")];\n  " + T + " (*_cj_tile" + id + ")[" + TP +
             "] = reinterpret_cast<" + T + " (*)[" + TP + "]>(_cj_tile" + id + "_bytes);\n";
    any_load |= input || e.load_output;
    any_store |= !input;
  }
  w << "  const int _cj_R = _cj_L.shape[0], _cj_C = _cj_L.shape[1];\n";
  w << "  const int _cj_tc = (_cj_C + 31) / 32, _cj_tiles = _cj_tc * ((_cj_R + " + TRm1 + ") / " +
           TR + ");\n";
  // Column-major inputs are loaded one tile ahead into registers, so their loads overlap the
  // previous tile's compute and stores instead of waiting behind a barrier.
  auto load_ahead = [&](const std::string& indent, const std::string& tile) {
    w << indent + "{\n" + indent + "  const int _cj_q = " + tile + ";\n";
    w << indent + "  const int _cj_qr0 = (_cj_q / _cj_tc) * " + TR +
             ", _cj_qc0 = (_cj_q % _cj_tc) * 32;\n";
    w << "#pragma unroll\n" + indent + "  for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    w << indent + "    const int _cj_rr = _cj_qr0 + threadIdx.x + 32 * (_cj_k >> 2), _cj_cc = " +
             "_cj_qc0 + threadIdx.y + 8 * (_cj_k & 3);\n";
    w << indent + "    if (_cj_rr < _cj_R && _cj_cc < _cj_C) {\n";
    for (int k : arrays) {
      const EwParam& e = s.params[k];
      if (!e.transposed || !e.used || !(k < static_cast<int>(n_in) || e.load_output)) continue;
      w << indent + "      _cj_n" + std::to_string(k) +
               "[_cj_k] = " + address(k, cuda_type(e.dtype), "_cj_rr", "_cj_cc") + ";\n";
    }
    w << indent + "    }\n" + indent + "  }\n" + indent + "}\n";
  };
  if (any_load) {
    for (int k : arrays) {
      const EwParam& e = s.params[k];
      if (!e.transposed || !e.used || !(k < static_cast<int>(n_in) || e.load_output)) continue;
      w << "  " + cuda_type(e.dtype) + " _cj_n" + std::to_string(k) + "[" + K + "];\n";
    }
    w << "  if (blockIdx.x < _cj_tiles)\n";
    load_ahead("  ", "blockIdx.x");
  }
  w << "  for (int _cj_t = blockIdx.x; _cj_t < _cj_tiles; _cj_t += gridDim.x) {\n";
  w << "    const int _cj_r0 = (_cj_t / _cj_tc) * " + TR + ", _cj_c0 = (_cj_t % _cj_tc) * 32;\n";
  // Column-major outputs go from their tile to memory, coalesced along the rows.
  auto store_transposed_outputs = [&] {
    w << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    w << "      const int _cj_rr = _cj_r0 + threadIdx.x + 32 * (_cj_k >> 2), _cj_cc = _cj_c0 + "
         "threadIdx.y + 8 * (_cj_k & 3);\n";
    w << "      if (_cj_rr < _cj_R && _cj_cc < _cj_C) {\n";
    for (int k : arrays) {
      const EwParam& e = s.params[k];
      if (!e.transposed || !e.used || k < static_cast<int>(n_in)) continue;
      const std::string tile = "_cj_tile" + std::to_string(k) +
                               "[threadIdx.y + 8 * (_cj_k & 3)][threadIdx.x + 32 * (_cj_k >> 2)]";
      w << "        " + address(k, cuda_type(e.dtype), "_cj_rr", "_cj_cc") + " = " + tile + ";\n";
    }
    w << "      }\n    }\n";
  };

  if (any_load) {
    // This tile's registers into shared memory, then the next tile's loads.
    w << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    for (int k : arrays) {
      const EwParam& e = s.params[k];
      if (!e.transposed || !e.used || !(k < static_cast<int>(n_in) || e.load_output)) continue;
      w << "      _cj_tile" + std::to_string(k) +
               "[threadIdx.y + 8 * (_cj_k & 3)][threadIdx.x + 32 * (_cj_k >> 2)] = _cj_n" +
               std::to_string(k) + "[_cj_k];\n";
    }
    w << "    }\n    __syncthreads();\n";
    w << "    if (_cj_t + (int)gridDim.x < _cj_tiles)\n";
    load_ahead("    ", "_cj_t + (int)gridDim.x");
  }
  w << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
  w << "      const int _cj_r = _cj_r0 + threadIdx.y + 8 * _cj_k, _cj_c = _cj_c0 + threadIdx.x;\n";
  w << "      if (_cj_r < _cj_R && _cj_c < _cj_C) {\n";
  w << "        const int i = _cj_r * _cj_C + _cj_c;\n        (void)i;\n";
  element_body("        ", [&](int k, const std::string& T) {
    if (s.params[k].transposed) {
      return "_cj_tile" + std::to_string(k) + "[threadIdx.x][threadIdx.y + 8 * _cj_k]";
    }
    return address(k, T, "_cj_r", "_cj_c");
  });
  w << "      }\n    }\n";
  if (any_store) {
    w << "    __syncthreads();\n";
    store_transposed_outputs();
  }
  if (any_load || any_store) w << "    __syncthreads();\n";
  w << "  }\n";
}

}  // namespace

SourceProgram generate_elementwise(const ElementwiseDefinition& def, const EwSpecialization& s) {
  const std::string file = def.name + ".cu";
  const std::string I = s.index64 ? "long long" : "int";
  const std::size_t n_in = def.in.size();
  const int total = static_cast<int>(n_in + def.out.size());
  auto param = [&](int k) -> const Param& {
    return k < static_cast<int>(n_in) ? def.in[k] : def.out[k - n_in];
  };
  const std::vector<int> strided = strided_array_params(def, s);
  auto strided_slot = [&](int k) {
    for (std::size_t a = 0; a < strided.size(); ++a) {
      if (strided[a] == k) return static_cast<int>(a);
    }
    return -1;
  };

  Writer w(file);
  w << "// cujit elementwise kernel '" + def.name + "': " + s.key() + "\n";
  if (needs_fp16(s)) w << std::string(fp16_includes());
  w << std::string(device_support_source());
  w.snippet("preamble", def.preamble, false);

  const bool strided_like = s.layout == EwLayout::Strided || s.layout == EwLayout::Tiled2D ||
                            s.layout == EwLayout::Rows2D;
  if (strided_like) {
    w << elementwise_layout_abi(def, s).declaration();
    // Byte offset of flat C-order index j in array a.
    w << "__device__ __forceinline__ " + I + " _cj_offset(const _cj_Layout& L, int a, " + I +
             " j) {\n  " + I + " off = 0;\n";
    w << "#pragma unroll\n  for (int d = " + std::to_string(s.ndim - 1) + "; d > 0; --d) {\n";
    if (s.index64) {
      w << "    const long long q = j / L.shape[d];\n";
    } else {
      w << "    const int q = (int)_cj_div((unsigned)j, L.magic[d], L.shift[d]);\n";
    }
    w << "    off += (j - q * L.shape[d]) * L.strides[a][d];\n    j = q;\n  }\n";
    w << "  return off + j * L.strides[a][0];\n}\n";
    w << "template <class T> struct _cj_View {\n  char* p; const _cj_Layout* L; int a; " + I +
             " n;\n  __device__ T& operator[](" + I +
             " j) const { return *reinterpret_cast<T*>(p + _cj_offset(*L, a, j)); }\n"
             "  __device__ " +
             I + " size() const { return n; }\n};\n";
  }

  // Signature.
  std::ostringstream sig;
  sig << "extern \"C\" __global__ void __launch_bounds__(" << s.block_size << ") "
      << elementwise_symbol(def) << "(";
  for (int k = 0; k < total; ++k) {
    const Param& p = param(k);
    const EwParam& e = s.params[k];
    const std::string T = cuda_type(e.dtype);
    const std::string id = std::to_string(k);
    if (p.raw) {
      sig << T << "* _cj_p" << id << ", long long _cj_size" << id << ", long long _cj_stride" << id;
    } else if (e.scalar) {
      sig << T << " _cj_s" << id;
    } else if (strided_like) {
      sig << "char* _cj_p" << id;
    } else {
      sig << T << "* __restrict__ _cj_p" << id;
    }
    sig << ", ";
  }
  sig << I << " _cj_n";
  if (strided_like) sig << ", const _cj_Layout _cj_L";
  sig << ")";
  w << sig.str() + " {\n";
  w << "  const _cj_Indexer<" + I + "> _ind{_cj_n};\n  (void)_ind;\n";
  // Placeholders name their resolved types inside the kernel, as in CuPy: (T)i works.
  std::set<std::string> typedefs;
  for (int k = 0; k < total; ++k) {
    const Param& p = param(k);
    if (p.is_generic && typedefs.insert(p.placeholder).second) {
      w << "  typedef " + cuda_type(s.params[k].dtype) + " " + p.placeholder + ";\n";
    }
  }
  w << "  const " + I + " _cj_stride_all = (" + I + ")gridDim.x * blockDim.x;\n";
  w << "  " + I + " _cj_tid = (" + I + ")blockIdx.x * blockDim.x + threadIdx.x;\n";
  w << "  (void)_cj_stride_all;\n  (void)_cj_tid;\n";

  // Raw parameters and _raw_ views live for the whole thread.
  for (int k = 0; k < total; ++k) {
    const Param& p = param(k);
    const EwParam& e = s.params[k];
    const std::string T = cuda_type(e.dtype);
    const std::string id = std::to_string(k);
    if (p.raw) {
      w << "  const _cj_RawArray<" + T + ", " + I + ", " + (e.raw_contiguous ? "true" : "false") +
               "> " + p.name + "{_cj_p" + id + ", _cj_size" + id + ", _cj_stride" + id + "};\n";
    } else if (e.raw_view_used && !e.scalar) {
      if (strided_like) {
        w << "  const _cj_View<" + T + "> _raw_" + p.name + "{_cj_p" + id + ", &_cj_L, " +
                 std::to_string(strided_slot(k)) + ", _cj_n};\n";
      } else {
        w << "  const _cj_RawArray<" + T + ", " + I + ", true> _raw_" + p.name + "{_cj_p" + id +
                 ", _cj_n, sizeof(" + T + ")};\n";
      }
    }
  }
  w.snippet("loop_prep", def.loop_prep);

  // The per-element body: declares each used parameter, then runs the operation.
  auto element_body = [&](const std::string& indent, auto&& declare) {
    w << indent + "{\n";
    for (int k = 0; k < total; ++k) {
      const Param& p = param(k);
      const EwParam& e = s.params[k];
      if (p.raw || !e.used) continue;
      const std::string T = cuda_type(e.dtype);
      const bool input = k < static_cast<int>(n_in);
      if (e.scalar) {
        w << indent + "  " + (input ? "const " : "") + T + " " + p.name + " = _cj_s" +
                 std::to_string(k) + ";\n";
      } else {
        w << indent + "  " + (input ? "const " : "") + T + "& " + p.name + " = " + declare(k, T) +
                 ";\n";
      }
    }
    w.snippet("operation", def.operation);
    w << indent + "}\n";
  };

  if (s.layout == EwLayout::Vectorized) {
    const std::string V = std::to_string(s.vec);
    w << "  const " + I + " _cj_nvec = _cj_n / " + V + ";\n";
    w << "  for (" + I + " _cj_v = _cj_tid; _cj_v < _cj_nvec; _cj_v += _cj_stride_all) {\n";
    for (int k = 0; k < total; ++k) {
      const Param& p = param(k);
      const EwParam& e = s.params[k];
      if (p.raw || e.scalar || !e.used) continue;
      const std::string T = cuda_type(e.dtype);
      const std::string id = std::to_string(k);
      const bool input = k < static_cast<int>(n_in);
      const std::string vec = "_cj_Vec<" + T + ", " + V + ">";
      if (input || e.load_output) {
        w << "    " + vec + " _cj_v" + id + " = *reinterpret_cast<const " + vec + "*>(_cj_p" + id +
                 " + _cj_v * " + V + ");\n";
      } else {
        w << "    " + vec + " _cj_v" + id + ";\n";
      }
    }
    w << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + V + "; ++_cj_k) {\n";
    w << "      const " + I + " i = _cj_v * " + V + " + _cj_k;\n      (void)i;\n";
    element_body("      ", [&](int k, const std::string&) {
      return "_cj_v" + std::to_string(k) + ".v[_cj_k]";
    });
    w << "    }\n";
    for (int k = static_cast<int>(n_in); k < total; ++k) {
      const Param& p = param(k);
      const EwParam& e = s.params[k];
      if (p.raw || e.scalar || !e.used) continue;
      const std::string T = cuda_type(e.dtype);
      const std::string id = std::to_string(k);
      w << "    *reinterpret_cast<_cj_Vec<" + T + ", " + V + ">*>(_cj_p" + id + " + _cj_v * " + V +
               ") = _cj_v" + id + ";\n";
    }
    w << "  }\n";
    // The tail that does not fill a vector.
    w << "  for (" + I + " i = _cj_nvec * " + V + " + _cj_tid; i < _cj_n; i += _cj_stride_all)\n";
    element_body("  ",
                 [&](int k, const std::string&) { return "_cj_p" + std::to_string(k) + "[i]"; });
  } else if (s.layout == EwLayout::Contiguous) {
    w << "  for (" + I + " i = _cj_tid; i < _cj_n; i += _cj_stride_all)\n";
    element_body("  ",
                 [&](int k, const std::string&) { return "_cj_p" + std::to_string(k) + "[i]"; });
  } else if (s.layout == EwLayout::Rows2D) {
    // One vector of `vec` elements of one row per iteration; L.magic[1] divides by C / vec.
    const std::string V = std::to_string(s.vec);
    w << "  const int _cj_C = _cj_L.shape[1], _cj_cv = _cj_C / " + V +
             ", _cj_nv = _cj_L.shape[0] * _cj_cv;\n";
    w << "  for (int _cj_v = _cj_tid; _cj_v < _cj_nv; _cj_v += _cj_stride_all) {\n";
    w << "    const int _cj_r = (int)_cj_div((unsigned)_cj_v, _cj_L.magic[1], _cj_L.shift[1]);\n";
    w << "    const int _cj_c = (_cj_v - _cj_r * _cj_cv) * " + V + ";\n";
    for (std::size_t a = 0; a < strided.size(); ++a) {
      const int k = strided[a];
      const EwParam& e = s.params[k];
      if (!e.used) continue;
      const std::string T = cuda_type(e.dtype), id = std::to_string(k);
      const std::string row =
          "(_cj_p" + id + " + _cj_r * _cj_L.strides[" + std::to_string(a) + "][0])";
      const bool input = k < static_cast<int>(n_in);
      const std::string vec = "_cj_Vec<" + T + ", " + V + ">";
      if (e.row_broadcast) {
        w << "    const " + T + " _cj_b" + id + " = *reinterpret_cast<const " + T + "*>" + row +
                 ";\n";
      } else if (input || e.load_output) {
        w << "    " + vec + " _cj_v" + id + " = *reinterpret_cast<const " + vec + "*>(" + row +
                 " + _cj_c * sizeof(" + T + "));\n";
      } else {
        w << "    " + vec + " _cj_v" + id + ";\n";
      }
    }
    w << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + V + "; ++_cj_k) {\n";
    w << "      const int i = _cj_r * _cj_C + _cj_c + _cj_k;\n      (void)i;\n";
    element_body("      ", [&](int k, const std::string&) {
      return s.params[k].row_broadcast ? "_cj_b" + std::to_string(k)
                                       : "_cj_v" + std::to_string(k) + ".v[_cj_k]";
    });
    w << "    }\n";
    for (std::size_t a = 0; a < strided.size(); ++a) {
      const int k = strided[a];
      const EwParam& e = s.params[k];
      if (!e.used || k < static_cast<int>(n_in)) continue;
      const std::string T = cuda_type(e.dtype), id = std::to_string(k);
      w << "    *reinterpret_cast<_cj_Vec<" + T + ", " + V + ">*>(_cj_p" + id +
               " + _cj_r * _cj_L.strides[" + std::to_string(a) + "][0] + _cj_c * sizeof(" + T +
               ")) = _cj_v" + id + ";\n";
    }
    w << "  }\n";
  } else if (s.layout == EwLayout::Tiled2D) {
    generate_tiled_loop(w, s, strided, n_in, element_body);
  } else {
    w << "  for (" + I + " i = _cj_tid; i < _cj_n; i += _cj_stride_all)\n";
    element_body("  ", [&](int k, const std::string& T) {
      return "*reinterpret_cast<" + T + "*>(_cj_p" + std::to_string(k) + " + _cj_offset(_cj_L, " +
             std::to_string(strided_slot(k)) + ", i))";
    });
  }
  w.snippet("after_loop", def.after_loop);
  w << "}\n";

  SourceProgram program;
  program.name = file;
  program.source = w.str();
  program.options = def.compile_options;
  if (needs_fp16(s) && !cuda_include_option().empty()) {
    program.options.push_back(cuda_include_option());
  }
  return program;
}

}  // namespace cujit::detail

#include "codegen/elementwise_codegen.hpp"

#include "codegen/device_support.hpp"
#include "codegen/elementwise_abi.hpp"
#include "codegen/elementwise_tiles.hpp"
#include "codegen/kernel_call.hpp"
#include "codegen/source_writer.hpp"

#include <cctype>
#include <sstream>

namespace cujit::detail {
namespace {

bool needs_fp16(const ElementwiseDefinition& def, const EwSpecialization& s) {
  for (const EwParam& p : s.params) {
    if (p.dtype == DType::Float16 || p.dtype == DType::BFloat16) return true;
  }
  return mentions_fp16(def.preamble);
}

}  // namespace

namespace {

// The source of one specialisation, written section by section.
class EwSource {
 public:
  EwSource(const ElementwiseDefinition& def, const EwSpecialization& s)
      : def_(def),
        s_(s),
        w_(def.name + ".cu"),
        I_(s.index64 ? "long long" : "int"),
        n_in_(def.in.size()),
        total_(static_cast<int>(def.in.size() + def.out.size())),
        strided_(strided_array_params(def, s)),
        strided_like_(s.layout == EwLayout::Strided || s.layout == EwLayout::Tiled2D ||
                      s.layout == EwLayout::Rows2D) {}

  std::string generate() {
    header();
    signature();
    thread_state();
    w_.statements("loop_prep", def_.loop_prep);
    switch (s_.layout) {
      case EwLayout::Vectorized:
        vectorized();
        break;
      case EwLayout::Contiguous:
        contiguous();
        break;
      case EwLayout::Rows2D:
        rows2d();
        break;
      case EwLayout::Tiled2D:
        write_tiled_loop(w_, s_, strided_, n_in_,
                         [this](const std::string& indent, const TileDeclare& declare) {
                           element_body(indent, declare);
                         });
        break;
      case EwLayout::Strided:
        strided();
        break;
    }
    w_.statements("after_loop", def_.after_loop);
    w_ << "}\n";
    return w_.str();
  }

 private:
  const Param& param(int k) const {
    return k < static_cast<int>(n_in_) ? def_.in[k] : def_.out[k - n_in_];
  }
  bool input(int k) const { return k < static_cast<int>(n_in_); }
  int strided_slot(int k) const {
    for (std::size_t a = 0; a < strided_.size(); ++a) {
      if (strided_[a] == k) return static_cast<int>(a);
    }
    return -1;
  }

  // Includes, the device support code, the preamble and, for strided layouts, the layout
  // struct with its offset function and view type.
  void header() {
    w_ << "// cujit elementwise kernel '" + def_.name + "': " + s_.key() + "\n";
    if (needs_fp16(def_, s_)) w_ << std::string(fp16_includes());
    w_ << std::string(device_support_source());
    if (!def_.preamble.empty()) w_.snippet("preamble", def_.preamble, "");
    if (!strided_like_) return;
    w_ << elementwise_layout_abi(def_, s_).declaration();
    // Byte offset of flat C-order index j in array a.
    w_ << "__device__ __forceinline__ " + I_ + " _cj_offset(const _cj_Layout& L, int a, " + I_ +
              " j) {\n  " + I_ + " off = 0;\n";
    w_ << "#pragma unroll\n  for (int d = " + std::to_string(s_.ndim - 1) + "; d > 0; --d) {\n";
    if (s_.index64) {
      w_ << "    const long long q = j / L.shape[d];\n";
    } else {
      w_ << "    const int q = (int)_cj_div((unsigned)j, L.magic[d], L.shift[d]);\n";
    }
    w_ << "    off += (j - q * L.shape[d]) * L.strides[a][d];\n    j = q;\n  }\n";
    w_ << "  return off + j * L.strides[a][0];\n}\n";
    w_ << "template <class T> struct _cj_View {\n  char* p; const _cj_Layout* L; int a; " + I_ +
              " n;\n  __device__ T& operator[](" + I_ +
              " j) const { return *reinterpret_cast<T*>(p + _cj_offset(*L, a, j)); }\n"
              "  __device__ " +
              I_ + " size() const { return n; }\n};\n";
  }

  // The kernel's parameter list, in the order generate_elementwise documents.
  void signature() {
    w_ << "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s_.block_size) + ") " +
              elementwise_symbol(def_) + "(" + abi_signature(elementwise_parameters(def_, s_)) +
              ") {\n";
  }

  // Placeholder typedefs, the thread's index, raw parameters and _raw_ views.
  void thread_state() {
    w_ << "  const _cj_Indexer<" + I_ + "> _ind{_cj_n};\n  (void)_ind;\n";
    w_ << placeholder_typedefs(ParamList(def_.in, def_.out), s_.params, "  ");
    w_ << "  const " + I_ + " _cj_stride_all = (" + I_ + ")gridDim.x * blockDim.x;\n";
    w_ << "  " + I_ + " _cj_tid = (" + I_ + ")blockIdx.x * blockDim.x + threadIdx.x;\n";
    w_ << "  (void)_cj_stride_all;\n  (void)_cj_tid;\n";
    // Raw parameters and _raw_ views live for the whole thread.
    for (int k = 0; k < total_; ++k) {
      const Param& p = param(k);
      const EwParam& e = s_.params[k];
      const std::string T = cuda_type(e.dtype);
      const std::string id = std::to_string(k);
      if (p.raw) {
        w_ << "  const _cj_RawArray<" + T + ", " + I_ + ", " +
                  (e.raw_contiguous ? "true" : "false") + "> " + p.name + "{_cj_p" + id +
                  ", _cj_size" + id + ", _cj_stride" + id + "};\n";
      } else if (e.raw_view_used && !e.scalar) {
        if (strided_like_) {
          w_ << "  const _cj_View<" + T + "> _raw_" + p.name + "{_cj_p" + id + ", &_cj_L, " +
                    std::to_string(strided_slot(k)) + ", _cj_n};\n";
        } else {
          w_ << "  const _cj_RawArray<" + T + ", " + I_ + ", true> _raw_" + p.name + "{_cj_p" + id +
                    ", _cj_n, sizeof(" + T + ")};\n";
        }
      }
    }
  }

  // The per-element body: declares each used parameter (`declare(k, T)` is the element's
  // expression), then runs the operation.
  template <class Declare>
  void element_body(const std::string& indent, Declare&& declare) {
    w_ << indent + "{\n";
    for (int k = 0; k < total_; ++k) {
      const Param& p = param(k);
      const EwParam& e = s_.params[k];
      if (p.raw || !e.used) continue;
      const std::string T = cuda_type(e.dtype);
      if (e.scalar) {
        w_ << indent + "  " + (input(k) ? "const " : "") + T + " " + p.name + " = _cj_s" +
                  std::to_string(k) + ";\n";
      } else {
        w_ << indent + "  " + (input(k) ? "const " : "") + T + "& " + p.name + " = " +
                  declare(k, T) + ";\n";
      }
    }
    w_.statements("operation", def_.operation);
    w_ << indent + "}\n";
  }

  void element_by_index(const std::string& indent) {
    element_body(indent,
                 [](int k, const std::string&) { return "_cj_p" + std::to_string(k) + "[i]"; });
  }

  // 16-byte vectors of every array, then the tail that does not fill a vector.
  void vectorized() {
    const std::string V = std::to_string(s_.vec);
    w_ << "  const " + I_ + " _cj_nvec = _cj_n / " + V + ";\n";
    w_ << "  for (" + I_ + " _cj_v = _cj_tid; _cj_v < _cj_nvec; _cj_v += _cj_stride_all) {\n";
    for (int k = 0; k < total_; ++k) {
      const EwParam& e = s_.params[k];
      if (param(k).raw || e.scalar || !e.used) continue;
      const std::string id = std::to_string(k);
      const std::string vec = "_cj_Vec<" + cuda_type(e.dtype) + ", " + V + ">";
      if (input(k) || e.load_output) {
        w_ << "    " + vec + " _cj_v" + id + " = *reinterpret_cast<const " + vec + "*>(_cj_p" + id +
                  " + _cj_v * " + V + ");\n";
      } else {
        w_ << "    " + vec + " _cj_v" + id + ";\n";
      }
    }
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + V + "; ++_cj_k) {\n";
    w_ << "      const " + I_ + " i = _cj_v * " + V + " + _cj_k;\n      (void)i;\n";
    element_body("      ", [&](int k, const std::string&) {
      return "_cj_v" + std::to_string(k) + ".v[_cj_k]";
    });
    w_ << "    }\n";
    for (int k = static_cast<int>(n_in_); k < total_; ++k) {
      const EwParam& e = s_.params[k];
      if (param(k).raw || e.scalar || !e.used) continue;
      const std::string id = std::to_string(k);
      w_ << "    *reinterpret_cast<_cj_Vec<" + cuda_type(e.dtype) + ", " + V + ">*>(_cj_p" + id +
                " + _cj_v * " + V + ") = _cj_v" + id + ";\n";
    }
    w_ << "  }\n";
    // The tail that does not fill a vector.
    w_ << "  for (" + I_ + " i = _cj_nvec * " + V + " + _cj_tid; i < _cj_n; i += _cj_stride_all)\n";
    element_by_index("  ");
  }

  void contiguous() {
    w_ << "  for (" + I_ + " i = _cj_tid; i < _cj_n; i += _cj_stride_all)\n";
    element_by_index("  ");
  }

  void strided() {
    w_ << "  for (" + I_ + " i = _cj_tid; i < _cj_n; i += _cj_stride_all)\n";
    element_body("  ", [&](int k, const std::string& T) {
      return "*reinterpret_cast<" + T + "*>(_cj_p" + std::to_string(k) + " + _cj_offset(_cj_L, " +
             std::to_string(strided_slot(k)) + ", i))";
    });
  }

  // Rows whose length or start is not a multiple of a vector: elements one by one, four per
  // thread and iteration (a grid stride apart), all loaded before any is computed or stored,
  // so that each thread keeps four loads in flight; L.magic[1] divides by C.
  void rows2d_scalar() {
    constexpr int kBatch = 4;
    const std::string U = std::to_string(kBatch);
    // Unsigned: n < 2^31 leaves headroom for one grid stride only, and a thread steps four.
    w_ << "  const int _cj_C = _cj_L.shape[1];\n";
    w_ << "  const unsigned _cj_nv = (unsigned)(_cj_L.shape[0] * _cj_C), _cj_su = "
          "(unsigned)_cj_stride_all;\n";
    w_ << "  for (unsigned _cj_v = (unsigned)_cj_tid; _cj_v < _cj_nv; _cj_v += " + U +
              "u * _cj_su) {\n";
    w_ << "    int _cj_r[" + U + "], _cj_c[" + U + "];\n";
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + U + "; ++_cj_k) {\n";
    w_ << "      const unsigned _cj_e = min(_cj_v + _cj_k * _cj_su, _cj_nv - 1u);\n";
    w_ << "      _cj_r[_cj_k] = (int)_cj_div(_cj_e, _cj_L.magic[1], _cj_L.shift[1]);\n";
    w_ << "      _cj_c[_cj_k] = (int)_cj_e - _cj_r[_cj_k] * _cj_C;\n    }\n";
    auto address = [&](std::size_t a, int k, const std::string& T, bool broadcast) {
      const std::string id = std::to_string(k), slot = std::to_string(a);
      return "(_cj_p" + id + " + _cj_r[_cj_k] * _cj_L.strides[" + slot + "][0]" +
             (broadcast ? std::string() : " + _cj_c[_cj_k] * sizeof(" + T + ")") + ")";
    };
    // Loads of every lane first (lanes past the end read the last element again: harmless).
    for (std::size_t a = 0; a < strided_.size(); ++a) {
      const int k = strided_[a];
      const EwParam& e = s_.params[k];
      if (!e.used) continue;
      const std::string T = cuda_type(e.dtype), id = std::to_string(k);
      w_ << "    " + T + " _cj_v" + id + "[" + U + "];\n";
      if (!input(k) && !e.load_output) continue;
      w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + U + "; ++_cj_k) _cj_v" + id +
                "[_cj_k] = *reinterpret_cast<const " + T + "*>" +
                address(a, k, T, e.row_broadcast) + ";\n";
    }
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + U + "; ++_cj_k) {\n";
    w_ << "      if (_cj_v + _cj_k * _cj_su >= _cj_nv) break;\n";
    w_ << "      const int i = _cj_r[_cj_k] * _cj_C + _cj_c[_cj_k];\n      (void)i;\n";
    element_body("      ", [&](int k, const std::string&) {
      return "_cj_v" + std::to_string(k) + "[_cj_k]";
    });
    for (std::size_t a = 0; a < strided_.size(); ++a) {
      const int k = strided_[a];
      const EwParam& e = s_.params[k];
      if (!e.used || input(k)) continue;
      const std::string T = cuda_type(e.dtype);
      w_ << "      *reinterpret_cast<" + T + "*>" + address(a, k, T, false) + " = _cj_v" +
                std::to_string(k) + "[_cj_k];\n";
    }
    w_ << "    }\n  }\n";
  }

  // One vector of `vec` elements of one row per iteration; L.magic[1] divides by C / vec.
  void rows2d() {
    if (s_.vec == 1) {
      rows2d_scalar();
      return;
    }
    const std::string V = std::to_string(s_.vec);
    w_ << "  const int _cj_C = _cj_L.shape[1], _cj_cv = _cj_C / " + V +
              ", _cj_nv = _cj_L.shape[0] * _cj_cv;\n";
    w_ << "  for (int _cj_v = _cj_tid; _cj_v < _cj_nv; _cj_v += _cj_stride_all) {\n";
    w_ << "    const int _cj_r = (int)_cj_div((unsigned)_cj_v, _cj_L.magic[1], _cj_L.shift[1]);\n";
    w_ << "    const int _cj_c = (_cj_v - _cj_r * _cj_cv) * " + V + ";\n";
    for (std::size_t a = 0; a < strided_.size(); ++a) {
      const int k = strided_[a];
      const EwParam& e = s_.params[k];
      if (!e.used) continue;
      const std::string T = cuda_type(e.dtype), id = std::to_string(k);
      const std::string row =
          "(_cj_p" + id + " + _cj_r * _cj_L.strides[" + std::to_string(a) + "][0])";
      const std::string vec = "_cj_Vec<" + T + ", " + V + ">";
      if (e.row_broadcast) {
        w_ << "    const " + T + " _cj_b" + id + " = *reinterpret_cast<const " + T + "*>" + row +
                  ";\n";
      } else if (input(k) || e.load_output) {
        w_ << "    " + vec + " _cj_v" + id + " = *reinterpret_cast<const " + vec + "*>(" + row +
                  " + _cj_c * sizeof(" + T + "));\n";
      } else {
        w_ << "    " + vec + " _cj_v" + id + ";\n";
      }
    }
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + V + "; ++_cj_k) {\n";
    w_ << "      const int i = _cj_r * _cj_C + _cj_c + _cj_k;\n      (void)i;\n";
    element_body("      ", [&](int k, const std::string&) {
      return s_.params[k].row_broadcast ? "_cj_b" + std::to_string(k)
                                        : "_cj_v" + std::to_string(k) + ".v[_cj_k]";
    });
    w_ << "    }\n";
    for (std::size_t a = 0; a < strided_.size(); ++a) {
      const int k = strided_[a];
      const EwParam& e = s_.params[k];
      if (!e.used || input(k)) continue;
      const std::string T = cuda_type(e.dtype), id = std::to_string(k);
      w_ << "    *reinterpret_cast<_cj_Vec<" + T + ", " + V + ">*>(_cj_p" + id +
                " + _cj_r * _cj_L.strides[" + std::to_string(a) + "][0] + _cj_c * sizeof(" + T +
                ")) = _cj_v" + id + ";\n";
    }
    w_ << "  }\n";
  }

  const ElementwiseDefinition& def_;
  const EwSpecialization& s_;
  SourceWriter w_;
  const std::string I_;
  const std::size_t n_in_;
  const int total_;
  const std::vector<int> strided_;
  const bool strided_like_;
};

}  // namespace

SourceProgram generate_elementwise(const ElementwiseDefinition& def, const EwSpecialization& s) {
  SourceProgram program;
  program.name = def.name + ".cu";
  program.source = EwSource(def, s).generate();
  program.options = def.compile_options;
  if (needs_fp16(def, s) && !cuda_include_option().empty()) {
    program.options.push_back(cuda_include_option());
  }
  add_minimal_option(program.options, def.preamble + "\n" + def.operation + "\n" + def.loop_prep +
                                          "\n" + def.after_loop);
  program.link_inputs = def.link;
  return program;
}

}  // namespace cujit::detail

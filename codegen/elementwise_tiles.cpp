#include "codegen/elementwise_tiles.hpp"

#include "codegen/kernel_call.hpp"

namespace cujit::detail {
namespace {

class TiledLoop {
 public:
  TiledLoop(SourceWriter& w, const EwSpecialization& s, const std::vector<int>& arrays,
            std::size_t n_in)
      : w_(w),
        s_(s),
        arrays_(arrays),
        n_in_(static_cast<int>(n_in)),
        TR(std::to_string(s.tile_rows)),
        TP(std::to_string(s.tile_rows + 1)),
        K(std::to_string(s.tile_rows / 8)) {}

  void write(const TileBody& element_body) {
    declare_tiles();
    w_ << "  const int _cj_R = _cj_L.shape[0], _cj_C = _cj_L.shape[1];\n";
    w_ << "  const int _cj_tc = (_cj_C + 31) / 32, _cj_tiles = _cj_tc * ((_cj_R + " +
              std::to_string(s_.tile_rows - 1) + ") / " + TR + ");\n";
    if (any_load_) {
      for (int k : arrays_) {
        if (!tile_loaded(k)) continue;
        w_ << "  " + T(k) + " _cj_n" + std::to_string(k) + "[" + K + "];\n";
      }
      w_ << "  if (blockIdx.x < _cj_tiles)\n";
      load_ahead("  ", "blockIdx.x");
    }
    w_ << "  for (int _cj_t = blockIdx.x; _cj_t < _cj_tiles; _cj_t += gridDim.x) {\n";
    w_ << "    const int _cj_r0 = (_cj_t / _cj_tc) * " + TR + ", _cj_c0 = (_cj_t % _cj_tc) * 32;\n";
    prefetch_direct();
    if (any_load_) {
      tiles_from_registers();
      w_ << "    if (_cj_t + (int)gridDim.x < _cj_tiles)\n";
      load_ahead("    ", "_cj_t + (int)gridDim.x");
    }
    elements(element_body);
    if (any_store_) {
      w_ << "    __syncthreads();\n";
      store_transposed_outputs();
    }
    if (any_load_ || any_store_) w_ << "    __syncthreads();\n";
    w_ << "  }\n";
  }

 private:
  std::string T(int k) const { return cuda_type(s_.params[k].dtype); }
  bool input(int k) const { return k < n_in_; }
  bool tiled(int k) const { return s_.params[k].transposed && s_.params[k].used; }
  bool tile_loaded(int k) const { return tiled(k) && (input(k) || s_.params[k].load_output); }
  // Row-major inputs read in place: loaded into registers before the barrier.
  bool direct(int k) const { return input(k) && s_.params[k].used && !s_.params[k].transposed; }
  std::string slot(int k) const {
    for (std::size_t a = 0; a < arrays_.size(); ++a) {
      if (arrays_[a] == k) return std::to_string(a);
    }
    return "0";
  }
  std::string address(int k, const std::string& type, const std::string& r,
                      const std::string& c) const {
    return "*reinterpret_cast<" + type + "*>(_cj_p" + std::to_string(k) + " + " + r +
           " * _cj_L.strides[" + slot(k) + "][0] + " + c + " * _cj_L.strides[" + slot(k) + "][1])";
  }
  // Tile rows _cj_rr (along the thread's x) and columns _cj_cc of element _cj_k of a thread's
  // share of the tile at (r0, c0): consecutive threads walk a column-major array's rows.
  std::string tile_coordinates(const std::string& r0, const std::string& c0) const {
    return "const int _cj_rr = " + r0 + " + threadIdx.x + 32 * (_cj_k >> 2), _cj_cc = " + c0 +
           " + threadIdx.y + 8 * (_cj_k & 3);\n";
  }

  void declare_tiles() {
    for (int k : arrays_) {
      if (!tiled(k)) continue;
      // Raw bytes: a __shared__ array of a class type (complex, half) would need a constructor.
      const std::string id = std::to_string(k);
      w_ << "  __shared__ __align__(16) unsigned char _cj_tile" + id + "_bytes[32 * " + TP +
                " * sizeof(" + T(k) + ")];\n  " + T(k) + " (*_cj_tile" + id + ")[" + TP +
                "] = reinterpret_cast<" + T(k) + " (*)[" + TP + "]>(_cj_tile" + id + "_bytes);\n";
      any_load_ |= tile_loaded(k);
      any_store_ |= !input(k);
    }
  }

  // Column-major inputs are loaded one tile ahead into registers, so that a block looping
  // over several tiles overlaps their loads with the previous tile's compute and stores.
  void load_ahead(const std::string& indent, const std::string& tile) {
    w_ << indent + "{\n" + indent + "  const int _cj_q = " + tile + ";\n";
    w_ << indent + "  const int _cj_qr0 = (_cj_q / _cj_tc) * " + TR +
              ", _cj_qc0 = (_cj_q % _cj_tc) * 32;\n";
    w_ << "#pragma unroll\n" + indent + "  for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    w_ << indent + "    " + tile_coordinates("_cj_qr0", "_cj_qc0");
    w_ << indent + "    if (_cj_rr < _cj_R && _cj_cc < _cj_C) {\n";
    for (int k : arrays_) {
      if (!tile_loaded(k)) continue;
      w_ << indent + "      _cj_n" + std::to_string(k) +
                "[_cj_k] = " + address(k, T(k), "_cj_rr", "_cj_cc") + ";\n";
    }
    w_ << indent + "    }\n" + indent + "  }\n" + indent + "}\n";
  }

  // Row-major inputs into registers first, so that their loads are in flight together with
  // the tiles' instead of after the barrier (H100, x.T + y: 0.89 of copy loading y after it).
  void prefetch_direct() {
    bool any = false;
    for (int k : arrays_) {
      if (!direct(k)) continue;
      any = true;
      w_ << "    " + T(k) + " _cj_d" + std::to_string(k) + "[" + K + "];\n";
    }
    if (!any) return;
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    w_ << "      const int _cj_r = _cj_r0 + threadIdx.y + 8 * _cj_k, _cj_c = _cj_c0 + "
          "threadIdx.x;\n";
    w_ << "      if (_cj_r < _cj_R && _cj_c < _cj_C) {\n";
    for (int k : arrays_) {
      if (!direct(k)) continue;
      w_ << "        _cj_d" + std::to_string(k) +
                "[_cj_k] = " + address(k, T(k), "_cj_r", "_cj_c") + ";\n";
    }
    w_ << "      }\n    }\n";
  }

  // This tile's registers into shared memory, then the barrier.
  void tiles_from_registers() {
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    for (int k : arrays_) {
      if (!tile_loaded(k)) continue;
      w_ << "      _cj_tile" + std::to_string(k) +
                "[threadIdx.y + 8 * (_cj_k & 3)][threadIdx.x + 32 * (_cj_k >> 2)] = _cj_n" +
                std::to_string(k) + "[_cj_k];\n";
    }
    w_ << "    }\n    __syncthreads();\n";
  }

  void elements(const TileBody& element_body) {
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    w_ << "      const int _cj_r = _cj_r0 + threadIdx.y + 8 * _cj_k, _cj_c = _cj_c0 + "
          "threadIdx.x;\n";
    w_ << "      if (_cj_r < _cj_R && _cj_c < _cj_C) {\n";
    w_ << "        const int i = _cj_r * _cj_C + _cj_c;\n        (void)i;\n";
    element_body("        ", [this](int k, const std::string& type) {
      if (s_.params[k].transposed) {
        return "_cj_tile" + std::to_string(k) + "[threadIdx.x][threadIdx.y + 8 * _cj_k]";
      }
      if (direct(k)) return "_cj_d" + std::to_string(k) + "[_cj_k]";
      return address(k, type, "_cj_r", "_cj_c");
    });
    w_ << "      }\n    }\n";
  }

  // Column-major outputs go from their tile to memory, coalesced along the rows.
  void store_transposed_outputs() {
    w_ << "#pragma unroll\n    for (int _cj_k = 0; _cj_k < " + K + "; ++_cj_k) {\n";
    w_ << "      " + tile_coordinates("_cj_r0", "_cj_c0");
    w_ << "      if (_cj_rr < _cj_R && _cj_cc < _cj_C) {\n";
    for (int k : arrays_) {
      if (!tiled(k) || input(k)) continue;
      const std::string tile = "_cj_tile" + std::to_string(k) +
                               "[threadIdx.y + 8 * (_cj_k & 3)][threadIdx.x + 32 * (_cj_k >> 2)]";
      w_ << "        " + address(k, T(k), "_cj_rr", "_cj_cc") + " = " + tile + ";\n";
    }
    w_ << "      }\n    }\n";
  }

  SourceWriter& w_;
  const EwSpecialization& s_;
  const std::vector<int>& arrays_;
  const int n_in_;
  const std::string TR, TP, K;  // tile rows, padded tile rows, elements per thread
  bool any_load_ = false, any_store_ = false;
};

}  // namespace

void write_tiled_loop(SourceWriter& w, const EwSpecialization& s, const std::vector<int>& arrays,
                      std::size_t n_in, const TileBody& element_body) {
  TiledLoop(w, s, arrays, n_in).write(element_body);
}

}  // namespace cujit::detail

#pragma once
// The Tiled2D loop of an elementwise kernel: 2-d iteration in tiles, column-major arrays
// through shared memory.

#include "codegen/elementwise_spec.hpp"
#include "codegen/source_writer.hpp"

#include <functional>
#include <string>
#include <vector>

namespace cujit::detail {

/// The expression of parameter k's element (of C++ type T) inside the tile loop.
using TileDeclare = std::function<std::string(int k, const std::string& T)>;
/// Writes one element's body at `indent`, declaring each parameter through `declare`.
using TileBody = std::function<void(const std::string& indent, const TileDeclare& declare)>;

/// Writes the body of a Tiled2D kernel: each block takes tile_rows x 32 tiles (rows x columns)
/// of the 2-d iteration space with 32x8 threads, tile_rows / 8 rows each. Arrays stored
/// column-major (`transposed`) are read and written through padded shared-memory tiles so that
/// every global access is coalesced; row-major inputs are loaded into registers ahead of the
/// tiles' barrier; `arrays` are the layout struct's arrays in order, the first `n_in`
/// parameters inputs.
void write_tiled_loop(SourceWriter& w, const EwSpecialization& s, const std::vector<int>& arrays,
                      std::size_t n_in, const TileBody& element_body);

}  // namespace cujit::detail

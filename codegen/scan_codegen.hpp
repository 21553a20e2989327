#pragma once
// CUDA source for one specialisation of a scan kernel (map -> scan -> post-map): a single
// pass with decoupled look-back, read once and written once. Pure text generation; no CUDA
// headers, testable without a GPU.

#include <cujit/program.hpp>

#include "codegen/scan_spec.hpp"

namespace cujit::detail {

/// Generates the source. The kernel takes, in order: for each parameter (in, then out) a
/// scalar input's value in its dtype, or an array's address; then the layout struct _cj_SL by
/// value (codegen/scan_abi.hpp); then the scratch: a 64-bit tile counter, at byte 16 one
/// 32-bit flag per tile (both zero before the launch), and the tiles' aggregates and inclusive
/// prefixes at the layout's offsets, scan_slot_words() words each.
///
/// Each block takes the next tile (block_size * items consecutive elements) from the counter,
/// loads and maps it striped, scans it blocked through shared memory, publishes its aggregate,
/// reads its predecessors' (up to 32 back) and folds them in order from the last inclusive
/// prefix, publishes its own prefix and writes the post-map striped. Folding in order makes
/// each tile's prefix the same value whichever predecessors had finished: results are the same
/// bits on every run. Segmented specialisations scan (head, value) pairs, a head at each
/// row's first element.
SourceProgram generate_scan(const ScanDefinition& def, const ScanSpecialization& s);

}  // namespace cujit::detail

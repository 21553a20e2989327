#pragma once
// Scan kernels as manifest entries (JSON) and back, so `cujit-cache precompile` can regenerate
// exactly the source a run used; and building a validated definition.

#include "codegen/scan_spec.hpp"

#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// Parses and checks the constructor arguments of a ScanKernel: as a reduction's (messages
/// name a "scan kernel", its "scan_expr" and "scan_type"), and ArgumentError for an empty
/// identity or a raw parameter.
ScanDefinition make_scan_definition(std::string in_params, std::string out_params,
                                    std::string map_expr, std::string scan_expr,
                                    std::string post_map_expr, std::string identity,
                                    std::string name, std::string scan_type, bool exclusive,
                                    std::string preamble, std::vector<std::string> options);

/// Parses and checks the constructor arguments of a SelectKernel: the inputs, the predicate
/// (an expression over them), whether it keeps indices rather than the first input's values,
/// and whether it partitions (writes the rejected ones too). Its outputs are the kept values
/// (the first input's type) or indices (int64), and the count (int64). Throws as
/// make_scan_definition, naming a "select kernel".
ScanDefinition make_select_definition(std::string in_params, std::string predicate,
                                      std::string name, bool indices, std::string preamble,
                                      std::vector<std::string> options, bool partition = false);

/// The manifest entry: JSON with sorted keys (it doubles as the cache's request spec); kind
/// "select" for a select kernel.
std::string scan_manifest_entry(const ScanDefinition& def, const ScanSpecialization& s);

/// The inverse of scan_manifest_entry (either kind). Throws ArgumentError for a malformed entry.
std::pair<ScanDefinition, ScanSpecialization> scan_from_manifest(const std::string& entry);

}  // namespace cujit::detail

#pragma once
// Reduction kernels as manifest entries (JSON) and back, so `cujit-cache precompile` can
// regenerate exactly the source a run used; and building a validated definition.

#include "codegen/reduction_spec.hpp"

#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// How a definition's messages name the family and its parts (a scan shares the fields).
struct DefinitionWords {
  const char* family = "reduction kernel";
  const char* what = "reduction";
  const char* verb = "reduced";
  const char* combine = "reduce_expr";
  const char* type = "reduce_type";
};

/// Parses and checks the constructor arguments of a ReductionKernel. Throws SignatureError
/// for bad signatures, ArgumentError for an invalid kernel name, no output, an empty
/// map_expr, reduce_expr or post_map_expr, a compile option that is not one NVRTC option, or
/// a reduce_type that is not a type name (see check_type_name).
ReductionDefinition make_reduction_definition(std::string in_params, std::string out_params,
                                              std::string map_expr, std::string reduce_expr,
                                              std::string post_map_expr, std::string identity,
                                              std::string name, std::string reduce_type,
                                              std::string preamble,
                                              std::vector<std::string> options, bool reduce_dims,
                                              const DefinitionWords& words = {});

/// The manifest entry: JSON with sorted keys, so equal kernels give equal text (it doubles as
/// the cache's request spec).
std::string reduction_manifest_entry(const ReductionDefinition& def, const RedSpecialization& s);

/// The inverse of reduction_manifest_entry. Throws ArgumentError for a malformed entry.
std::pair<ReductionDefinition, RedSpecialization> reduction_from_manifest(const std::string& entry);

}  // namespace cujit::detail

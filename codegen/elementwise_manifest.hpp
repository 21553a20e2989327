#pragma once
// Elementwise kernels as manifest entries (JSON) and back, so `cujit-cache precompile` can
// regenerate exactly the source a run used; and building a validated definition.

#include "codegen/elementwise_spec.hpp"

#include <string>
#include <utility>

namespace cujit::detail {

/// Parses and checks the constructor arguments of an ElementwiseKernel. Throws
/// SignatureError for bad signatures, ArgumentError for an invalid kernel name, an empty
/// operation or a compile option that is not one NVRTC option.
ElementwiseDefinition make_elementwise_definition(std::string in_params, std::string out_params,
                                                  std::string operation, std::string name,
                                                  std::string preamble, std::string loop_prep,
                                                  std::string after_loop,
                                                  std::vector<std::string> options,
                                                  bool reduce_dims);

/// The manifest entry: JSON with sorted keys, so equal kernels give equal text (it doubles as
/// the cache's request spec). Uses def.manifest_prefix when it is set.
std::string elementwise_manifest_entry(const ElementwiseDefinition& def, const EwSpecialization& s);

/// The part of `def`'s manifest entries before the specialisation's value (which sorts last):
/// `{"after_loop":...,"specialization":`. A kernel object keeps it in its definition
/// (ElementwiseDefinition::manifest_prefix), so that each new specialisation writes only its
/// own fields.
std::string elementwise_manifest_prefix(const ElementwiseDefinition& def);

/// The inverse of elementwise_manifest_entry. Throws ArgumentError for a malformed entry.
std::pair<ElementwiseDefinition, EwSpecialization> elementwise_from_manifest(
    const std::string& entry);

}  // namespace cujit::detail

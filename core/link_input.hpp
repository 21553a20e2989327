#pragma once
// Checks of device code given to link with (LinkInput): a kind that exists and bytes that
// start as that kind's files do, before nvJitLink sees them. They catch the wrong file, a
// truncated one or a value that is not a kind; they do not make hostile device code safe to
// link: link inputs are code the process runs, trusted like the source (docs/fleet.md, threat
// model).

#include <cujit/program.hpp>

#include <cstdint>
#include <string>

namespace cujit::detail {

/// Largest link input LinkInput::from_file reads (1 GiB).
inline constexpr std::uint64_t kMaxLinkInputBytes = std::uint64_t{1} << 30;

/// Throws ArgumentError, starting with `who` ("cujit: RawModule"), when `input`'s kind is not
/// one of LinkInput::Kind's values, its bytes are empty, or they do not start as the kind's
/// files do: LTO-IR's magic number, a 64-bit little-endian CUDA ELF whose header tables lie
/// inside the bytes (cubin), a fatbin header whose size fits the bytes, PTX text without NUL
/// bytes (a trailing one aside) with .version and .target directives.
void check_link_input(const LinkInput& input, const std::string& who);

}  // namespace cujit::detail

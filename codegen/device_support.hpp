#pragma once
// CUDA support code that generated kernels include: complex numbers, raw-array wrappers,
// fast integer division and vector loads. Plain text; NVRTC compiles it with the kernel.

#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

/// True when `text` (a preamble, a reduce type) names half or bfloat16 types or their
/// headers, so the kernel needs fp16_includes() and the toolkit's include directory.
bool mentions_fp16(const std::string& text);

/// Adds NVRTC's `-minimal` to `options` (unless there already) when code around `user_text`
/// (everything the user wrote: preamble, snippets, reduce type) compiles without what it
/// leaves out: texture, surface and CUDA runtime declarations, device-side launches. It cuts
/// the front end's header processing (H100 host, generated kernels: 21-31 ms to 13-19 ms per
/// compilation). Conservative: text that includes a header or mentions `cuda`, `tex`, `surf`
/// or `<<<` keeps the full declarations; the compiler retries without `-minimal` if a
/// compilation still fails with it.
void add_minimal_option(std::vector<std::string>& options, const std::string& user_text);

/// The support code, without half/bfloat16 headers (see needs_fp16_headers).
std::string_view device_support_source();

/// Include lines for half and bfloat16 (cuda_fp16.h, cuda_bf16.h).
std::string_view fp16_includes();

/// The NVRTC option that points at the CUDA headers (cuda_fp16.h) on this machine, or an
/// empty string when none is found. Looks at CUDA_PATH, CUDA_HOME, /usr/local/cuda.
const std::string& cuda_include_option();

}  // namespace cujit::detail

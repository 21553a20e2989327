#pragma once
// Runs a compiler (NVRTC, the clang snippet analyser) on a thread with a large stack, as
// compilers run themselves: their parsers recurse once per nesting level, and a source with a
// few thousand nested parentheses overflows a worker thread's default 8 MiB stack (SIGSEGV
// inside NVRTC, found by the issue-16 probe). The stack is reserved, not committed: pages are
// only touched as deep as the recursion goes.

#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

namespace cujit::detail {

/// Bytes of stack the compiler thread reserves (256 MiB; NVRTC used about 5 KiB per level of
/// parentheses, so this covers tens of thousands of levels).
inline constexpr std::size_t kCompilerStackBytes = std::size_t{256} << 20;

/// Runs `fn` on a new thread with a kCompilerStackBytes stack and waits for it; an exception
/// `fn` throws is rethrown here. Where no such thread can be created (address-space limits),
/// runs `fn` on the calling thread.
void run_on_large_stack(const std::function<void()>& fn);

/// run_on_large_stack for a function that returns a value.
template <class F>
auto on_large_stack(F&& fn) -> std::invoke_result_t<F&> {
  using Result = std::invoke_result_t<F&>;
  if constexpr (std::is_void_v<Result>) {
    run_on_large_stack(fn);
  } else {
    std::optional<Result> result;
    run_on_large_stack([&] { result.emplace(fn()); });
    return std::move(*result);
  }
}

}  // namespace cujit::detail

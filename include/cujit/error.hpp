#pragma once
/// \file Exceptions thrown by cujit. Every error derives from cujit::Error; each API family
/// throws its own subclass so callers can react to one kind of failure.

#include <cujit/export.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace cujit {

/// Base of every exception cujit throws. what() is a complete, human-readable message.
class CUJIT_EXPORT Error : public std::runtime_error {
 public:
  /// An error whose what() is `message`.
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A malformed parameter signature such as "float32 x, T". The message shows the signature
/// with a caret under the offending column.
class CUJIT_EXPORT SignatureError : public Error {
 public:
  /// An error at zero-based `column` of the signature.
  SignatureError(const std::string& message, std::size_t column)
      : Error(message), column_(column) {}
  /// Zero-based column of the offending character in the signature string.
  std::size_t column() const noexcept { return column_; }

 private:
  std::size_t column_;
};

/// An argument whose dtype does not match what the kernel expects, or a type placeholder
/// that cannot be resolved.
class CUJIT_EXPORT TypeError : public Error {
 public:
  using Error::Error;  ///< An error whose what() is the message given.
};

/// Shapes that cannot be broadcast together, a wrong output shape, a bad axis.
class CUJIT_EXPORT ShapeError : public Error {
 public:
  using Error::Error;  ///< An error whose what() is the message given.
};

/// A bad argument value: wrong argument count, null pointer, invalid option, bad name.
class CUJIT_EXPORT ArgumentError : public Error {
 public:
  using Error::Error;  ///< An error whose what() is the message given.
};

/// Arrays on different devices, or an array on a device other than the one expected.
class CUJIT_EXPORT DeviceError : public Error {
 public:
  using Error::Error;  ///< An error whose what() is the message given.
};

/// A snippet or source that does not compile. Carries the compiler log, the options and the
/// numbered source; where the error lies in a user's snippet, line() and column() point there
/// (1-based; 0 when unknown).
class CUJIT_EXPORT CompileError : public Error {
 public:
  /// An error with the compiler's `log`, the `options` and the `source` it compiled, and the
  /// position in the user's snippet (1-based; 0 when unknown).
  CompileError(const std::string& message, std::string log, std::vector<std::string> options,
               std::string source, int line = 0, int column = 0)
      : Error(message),
        log_(std::move(log)),
        options_(std::move(options)),
        source_(std::move(source)),
        line_(line),
        column_(column) {}
  /// The compiler's log (NVRTC's, or the linker's).
  const std::string& log() const noexcept { return log_; }
  /// The compiler options used.
  const std::vector<std::string>& options() const noexcept { return options_; }
  /// The source compiled, lines numbered.
  const std::string& source() const noexcept { return source_; }
  /// 1-based line of the error in the user's snippet; 0 when unknown.
  int line() const noexcept { return line_; }
  /// 1-based column of the error in the user's snippet; 0 when unknown.
  int column() const noexcept { return column_; }

 private:
  std::string log_;
  std::vector<std::string> options_;
  std::string source_;
  int line_;
  int column_;
};

/// A kernel that must be compiled while no compiler can be loaded: NVRTC is not installed on
/// this machine (a deployment target), or CUJIT_NVRTC_PATH names none. Raised by a cache miss;
/// the message names the kernel, its specialisation, the target, the databases searched and the
/// `cujit-cache precompile` command that would have covered it.
class CUJIT_EXPORT CompilerUnavailableError : public CompileError {
 public:
  /// An error with no log, options or source (nothing was compiled).
  explicit CompilerUnavailableError(const std::string& message)
      : CompileError(message, "", {}, "") {}
};

/// A failure reported by the CUDA driver, or no driver / no device at all.
class CUJIT_EXPORT CudaError : public Error {
 public:
  /// An error for CUresult `code`.
  CudaError(const std::string& message, int code) : Error(message), code_(code) {}
  /// The CUresult value (0 when the failure was not a driver call, e.g. no driver found).
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// A kernel-cache failure that could not be degraded to a warning (only from explicit cache
/// API calls such as opening a named database; kernel launches never throw it).
class CUJIT_EXPORT CacheError : public Error {
 public:
  using Error::Error;  ///< An error whose what() is the message given.
};

}  // namespace cujit

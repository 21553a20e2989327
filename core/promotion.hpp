#pragma once
// NumPy 2's type rules for array expressions (NEP 50), as pure functions: the result dtype of
// two arrays' dtypes, of a float function of one, and of an array and a "weak" scalar (a plain
// C++ number, as NumPy treats a Python number: it takes the array's dtype when that is of its
// kind or a higher one). bfloat16, which NumPy lacks, follows ml_dtypes: with float16, float32.

#include <cujit/dtype.hpp>

#include <optional>

namespace cujit::detail {

/// The kind of a weak scalar: a C++ bool, integer or floating-point number.
enum class WeakKind : std::uint8_t { Bool, Int, Float };

/// numpy.result_type of two dtypes (promote_types): bool below every number; signed with
/// unsigned to the signed type that holds both (int64 with uint64: float64); an integer with a
/// float to the smallest float that holds the integer's values (8-bit: float16, 16-bit:
/// float32, wider: float64) and then the larger float; float16 with bfloat16: float32;
/// complex with a float of its precision or less stays complex.
DType promote_types(DType a, DType b) noexcept;

/// The dtype a weak scalar of `kind` takes next to an operand of dtype `other`: `other` when
/// its kind is the scalar's or higher (bool < integer < float), else the default of the
/// scalar's kind (int64, float64) promoted with `other`.
DType promote_weak(WeakKind kind, DType other) noexcept;

/// The dtype of a weak scalar alone (bool, int64, float64).
DType weak_default(WeakKind kind) noexcept;

/// The result of a float function (exp, log, sqrt, sin, ...) of `t`: floats keep theirs; bool
/// and 8-bit integers give float16, 16-bit ones float32, wider ones float64 (NumPy's loops).
DType float_function_type(DType t) noexcept;

/// The result of true division of two operands of common dtype `t`: floats and complex keep
/// theirs, bool and integers of any width give float64 (NumPy's true_divide resolver).
DType true_divide_type(DType t) noexcept;

/// The kind rank used by the weak rule: bool 0, integers 1, floats 2, complex 3.
int kind_rank(DType t) noexcept;

/// Whether every value of the integer `value` fits `t` (an integer dtype); floats and bool take
/// any value (converted).
bool integer_fits(long long value, DType t) noexcept;

}  // namespace cujit::detail

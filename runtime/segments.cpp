// cujit::Segments: the offsets of a segmented reduction, as views of 1-d integer arrays. What
// is wrong with the arrays is kept as text and reported by the call, which can name the kernel.

#include <cujit/kernel_args.hpp>

#include <string>

namespace cujit {
namespace {

std::string name_of(DType t) { return std::string(dtype_name(t)); }

std::string offsets_problem(const Array& a, const char* what) {
  if (!a.valid()) return std::string(what) + " is a null array";
  if (a.dtype() != DType::Int32 && a.dtype() != DType::Int64) {
    return std::string(what) + " has dtype " + name_of(a.dtype()) + "; int32 or int64 expected";
  }
  if (a.ndim() != 1) {
    return std::string(what) + " has " + std::to_string(a.ndim()) + " dimensions; 1 expected";
  }
  return {};
}

}  // namespace

Segments::Segments(const Array& offsets) : has_arrays_(true) {
  begin_ = end_ = offsets;
  dtype_ = offsets.dtype();
  problem_ = offsets_problem(offsets, "the segment offsets");
  if (problem_.empty() && offsets.size() == 0) {
    problem_ =
        "the segment offsets are empty; CSR offsets hold one more entry than there are "
        "segments";
  }
  if (!problem_.empty()) return;
  count_ = offsets.size() - 1;
  begin_ = offsets.slice(0, 0, count_);
  end_ = offsets.slice(0, 1, count_ + 1);
}

Segments::Segments(const Array& begin, const Array& end) : has_arrays_(true) {
  begin_ = begin;
  end_ = end;
  dtype_ = begin.dtype();
  problem_ = offsets_problem(begin, "the segments' begin offsets");
  if (problem_.empty()) problem_ = offsets_problem(end, "the segments' end offsets");
  if (problem_.empty() && begin.dtype() != end.dtype()) {
    problem_ = std::string("the segments' begin offsets are ") + name_of(begin.dtype()) +
               " and their end offsets " + name_of(end.dtype()) + "; one dtype expected";
  }
  if (problem_.empty() && begin.size() != end.size()) {
    problem_ = "the segments' begin offsets hold " + std::to_string(begin.size()) +
               " entries and their end offsets " + std::to_string(end.size()) +
               "; one length expected";
  }
  if (problem_.empty()) count_ = begin.size();
}

Segments::Segments(DType dtype, std::int64_t count) : dtype_(dtype), count_(count) {
  if (dtype != DType::Int32 && dtype != DType::Int64) {
    problem_ = std::string("the segment offsets' dtype is ") + name_of(dtype) +
               "; int32 or int64 expected";
    count_ = -1;
  } else if (count < 0) {
    problem_ = "a negative segment count (" + std::to_string(count) + ")";
    count_ = -1;
  }
}

}  // namespace cujit

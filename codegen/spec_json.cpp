#include "codegen/spec_json.hpp"

#include <cstring>

namespace cujit::detail {

std::string& SpecTextWriter::member(const char* name) {
  if (count_ == kMaxMembers) throw Error("cujit: a specialisation has too many fields");
  members_[count_++] = {name, values_.size()};
  return values_;
}

void SpecTextWriter::finish_into(std::string& out) {
  // nlohmann's objects are std::maps of std::string: byte order, as strcmp compares. An
  // insertion sort of indices: a dozen members at most.
  unsigned char order[kMaxMembers];
  for (std::size_t k = 0; k < count_; ++k) {
    std::size_t j = k;
    for (; j > 0 && std::strcmp(members_[order[j - 1]].name, members_[k].name) > 0; --j) {
      order[j] = order[j - 1];
    }
    order[j] = static_cast<unsigned char>(k);
  }
  out.reserve(out.size() + values_.size() + 16 * count_ + 2);
  out += '{';
  for (std::size_t k = 0; k < count_; ++k) {
    const std::size_t m = order[k];
    const std::size_t end = m + 1 < count_ ? members_[m + 1].begin : values_.size();
    if (k > 0) out += ',';
    ((out += '"') += members_[m].name) += "\":";
    out.append(values_, members_[m].begin, end - members_[m].begin);
  }
  out += '}';
  count_ = 0;
  values_.clear();
}

std::string entry_with_spec(const nlohmann::json& entry, const std::string& spec_text) {
  std::string text = dump_json(entry);
  constexpr std::string_view kLast = ",\"specialization\":null}";
  if (text.size() < kLast.size() ||
      text.compare(text.size() - kLast.size(), kLast.size(), kLast) != 0) {
    throw Error("cujit: a manifest entry's specialization does not sort last");
  }
  text.resize(text.size() - std::string_view("null}").size());
  text += spec_text;
  text += '}';
  return text;
}

}  // namespace cujit::detail

#pragma once
// One serialisation of a specialisation. Each family lists its fields once, in key order, with
// the name its manifest entry uses and the label of its key text (`visit_fields` in
// elementwise_spec.hpp and reduction_spec.hpp). The renderers walk that list:
//   - spec_key_text: the text a generated source's banner carries (and the `key()` of a value);
//   - append_spec_bytes: the in-process key under which a loaded specialisation is kept;
//   - spec_json.hpp: the manifest entry's "specialization", which is also part of the cache's
//     request spec, and its reader.
// A field added to a list reaches every one of them; nothing else spells the fields out.
//
// What a field list calls on its visitor `v` (for a const value when it renders, a mutable
// one when it reads):
//   v.number(f, int&)                 an int
//   v.number_or(f, int&, absent)      an int that older manifest entries may lack
//   v.choice(f, E&, E last, what)     an enumeration 0..last ("what" names it in errors)
//   v.flag(f, bool&)                  a bool
//   v.marker(f, bool&)                a bool written only when set, so that a field added
//                                     later leaves every earlier key unchanged
//   v.text(f, std::string&)           a C++ type name
//   v.params(f, std::vector<P>&)      per-parameter values; each P has a field list too:
//     p.dtype(name, DType&), p.kind(name, bool& scalar), p.flag(name, bool&)

#include <cujit/dtype.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace cujit::detail {

/// void, for a field list's T or const T only: one list serves the renderers (const values)
/// and the readers (mutable ones).
template <class Given, class T>
using enable_if_same_t = std::enable_if_t<std::is_same_v<std::remove_const_t<Given>, T>>;

/// A field's name in a manifest entry and its label in the key text.
struct SpecField {
  const char* name;
  const char* label;
};

/// Renders the key text: "label=value" joined by ';', a parameter as its dtype name, 's'
/// (scalar) or 'a' (array) and one digit per flag, followed by ','.
class SpecKeyText {
 public:
  explicit SpecKeyText(std::string& out) : out_(out) {}
  void number(const SpecField& f, int value) { put(f, std::to_string(value)); }
  void number_or(const SpecField& f, int value, int) { number(f, value); }
  template <class E>
  void choice(const SpecField& f, E value, E, const char*) {
    number(f, static_cast<int>(value));
  }
  void flag(const SpecField& f, bool value) { put(f, value ? "1" : "0"); }
  void marker(const SpecField& f, bool value) {
    if (!value) return;
    if (!first_) out_ += ';';
    out_ += f.label;
    first_ = false;
  }
  void text(const SpecField& f, const std::string& value) { put(f, value); }
  template <class P>
  void params(const SpecField& f, const std::vector<P>& values) {
    put(f, "");
    Param p{out_};
    for (const P& value : values) {
      visit_fields(value, p);
      out_ += ',';
    }
  }

 private:
  struct Param {
    std::string& out;
    void dtype(const char*, DType value) { out += dtype_name(value); }
    void kind(const char*, bool scalar) { out += scalar ? 's' : 'a'; }
    void flag(const char*, bool value) { out += value ? '1' : '0'; }
  };
  void put(const SpecField& f, const std::string& value) {
    if (!first_) out_ += ';';
    out_ += f.label;
    out_ += '=';
    out_ += value;
    first_ = false;
  }
  std::string& out_;
  bool first_ = true;
};

/// Appends the bytes of every field: ints as 4 bytes, enumerations and flags as one, a text
/// with its length, a parameter as its dtype and its flags packed into 4 bytes. Unambiguous
/// for one family (the field list fixes the order and widths); no allocation past `out`'s
/// capacity, so a call's lookup may render it.
class SpecBytes {
 public:
  explicit SpecBytes(std::string& out) : out_(out) {}
  void number(const SpecField&, int value) { put(&value, sizeof value); }
  void number_or(const SpecField& f, int value, int) { number(f, value); }
  template <class E>
  void choice(const SpecField&, E value, E, const char*) {
    static_assert(sizeof(E) == 1, "an enumeration field is rendered as one byte");
    out_ += static_cast<char>(value);
  }
  void flag(const SpecField&, bool value) { out_ += static_cast<char>(value); }
  void marker(const SpecField& f, bool value) { flag(f, value); }
  void text(const SpecField& f, const std::string& value) {
    number(f, static_cast<int>(value.size()));
    out_ += value;
  }
  template <class P>
  void params(const SpecField& f, const std::vector<P>& values) {
    number(f, static_cast<int>(values.size()));
    for (const P& value : values) {
      Param p;
      visit_fields(value, p);
      out_ += static_cast<char>(p.dtype_byte);
      put(&p.bits, sizeof p.bits);
    }
  }

 private:
  struct Param {
    unsigned char dtype_byte = 0;
    std::uint32_t bits = 0;
    int bit = 0;
    void dtype(const char*, DType value) { dtype_byte = static_cast<unsigned char>(value); }
    void kind(const char* name, bool scalar) { flag(name, scalar); }
    void flag(const char*, bool value) {
      if (value) bits |= std::uint32_t{1} << bit;
      ++bit;  // a parameter has fewer than 32 flags
    }
  };
  void put(const void* data, std::size_t size) {
    out_.append(static_cast<const char*>(data), size);
  }
  std::string& out_;
};

/// The key text of specialisation `s` (what a generated source's banner carries).
template <class Spec>
std::string spec_key_text(const Spec& s) {
  std::string out;
  out.reserve(96 + 16 * s.params.size());
  SpecKeyText v(out);
  visit_fields(s, v);
  return out;
}

/// Appends the bytes of `s` to `out` (a memo key of loaded specialisations).
template <class Spec>
void append_spec_bytes(std::string& out, const Spec& s) {
  SpecBytes v(out);
  visit_fields(s, v);
}

}  // namespace cujit::detail

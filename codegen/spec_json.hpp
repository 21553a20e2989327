#pragma once
// The JSON renderer and reader of a specialisation's field list (spec_serial.hpp): the
// "specialization" object of a manifest entry, which is part of the cache's request spec.
// Field names are the list's names; nlohmann's objects sort them, so the text does not depend
// on the list's order. The reader is strict (a manifest is a file anyone may hand to
// `cujit-cache precompile`): integers must fit, enumerations must be known, dtypes named.

#include <cujit/dtype.hpp>
#include <cujit/error.hpp>

#include "codegen/manifest_json.hpp"
#include "codegen/spec_serial.hpp"
#include "support/json_text.hpp"

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cujit::detail {

/// Writes the "specialization" object as the text nlohmann would dump for it, without
/// building a JSON tree: the members as text, then sorted by name as nlohmann's objects sort
/// them (a warm first call spent 75,000 host instructions in a tree and its dump, 40% of its
/// own work).
class SpecTextWriter {
 public:
  void number(const SpecField& f, int value) { member(f.name) += std::to_string(value); }
  void number_or(const SpecField& f, int value, int) { number(f, value); }
  template <class E>
  void choice(const SpecField& f, E value, E, const char*) {
    number(f, static_cast<int>(value));
  }
  void flag(const SpecField& f, bool value) { member(f.name) += value ? "true" : "false"; }
  void marker(const SpecField& f, bool value) {
    if (value) flag(f, value);
  }
  void text(const SpecField& f, const std::string& value) {
    append_text_json(member(f.name), value);  // nlohmann's escapes, exactly
  }
  template <class P>
  void params(const SpecField& f, const std::vector<P>& values) {
    member(f.name) += '[';
    SpecTextWriter param;
    for (const P& value : values) {
      if (values_.back() != '[') values_ += ',';
      Param p{param};
      visit_fields(value, p);
      param.finish_into(values_);
    }
    values_ += ']';
  }
  /// The object's text.
  std::string finish() {
    std::string out;
    finish_into(out);
    return out;
  }

 private:
  struct Param {
    SpecTextWriter& w;
    void dtype(const char* name, DType value) {
      ((w.member(name) += '"') += dtype_name(value)) += '"';
    }
    void kind(const char* name, bool scalar) { w.member(name) += scalar ? "true" : "false"; }
    void flag(const char* name, bool value) { w.member(name) += value ? "true" : "false"; }
  };
  struct Member {
    const char* name;
    std::size_t begin;  ///< its value in values_, up to the next member's begin
  };
  static constexpr std::size_t kMaxMembers = 32;
  /// Starts a member; its value is what is appended to the returned text until the next one.
  std::string& member(const char* name);
  /// Appends the object's text to `out` and empties the writer.
  void finish_into(std::string& out);

  Member members_[kMaxMembers];
  std::size_t count_ = 0;
  std::string values_;
};

/// Reads the fields of a manifest entry's "specialization" object. Throws
/// nlohmann::json::exception for a missing field or one of the wrong JSON type, ArgumentError
/// for an integer that does not fit, an unknown enumeration value or dtype.
class SpecJsonReader {
 public:
  explicit SpecJsonReader(const nlohmann::json& in) : in_(in) {}
  void number(const SpecField& f, int& value) { value = manifest_int(in_, f.name); }
  void number_or(const SpecField& f, int& value, int absent) {
    value = in_.contains(f.name) ? manifest_int(in_, f.name) : absent;
  }
  template <class E>
  void choice(const SpecField& f, E& value, E last, const char* what) {
    const int v = manifest_int(in_, f.name);
    if (v < 0 || v > static_cast<int>(last)) {
      throw ArgumentError(std::string("cujit: manifest entry has an unknown ") + what + " " +
                          std::to_string(v));
    }
    value = static_cast<E>(v);
  }
  void flag(const SpecField& f, bool& value) { value = in_.at(f.name).get<bool>(); }
  void marker(const SpecField& f, bool& value) {
    value = in_.contains(f.name) && in_.at(f.name).get<bool>();
  }
  void text(const SpecField& f, std::string& value) { value = in_.at(f.name).get<std::string>(); }
  template <class P>
  void params(const SpecField& f, std::vector<P>& values) {
    values.clear();
    for (const nlohmann::json& object : in_.at(f.name)) {
      Param p{object};
      visit_fields(values.emplace_back(), p);
    }
  }

 private:
  struct Param {
    const nlohmann::json& object;
    void dtype(const char* name, DType& value) {
      const nlohmann::json& text = object.at(name);
      if (!parse_dtype(text.get<std::string>(), value)) {
        throw ArgumentError("cujit: manifest entry has an unknown dtype " + text.dump());
      }
    }
    void kind(const char* name, bool& scalar) { scalar = object.at(name).get<bool>(); }
    void flag(const char* name, bool& value) { value = object.at(name).get<bool>(); }
  };
  const nlohmann::json& in_;
};

/// The "specialization" object of `s` as text (SpecTextWriter).
template <class Spec>
std::string spec_json_text(const Spec& s) {
  SpecTextWriter v;
  visit_fields(s, v);
  return v.finish();
}

/// The "specialization" object of `s`, parsed from spec_json_text.
template <class Spec>
nlohmann::json spec_json(const Spec& s) {
  return nlohmann::json::parse(spec_json_text(s));
}

/// An entry's text with `spec_text` as the value of its "specialization" member, which must
/// be null in `entry` and sort after every other member.
std::string entry_with_spec(const nlohmann::json& entry, const std::string& spec_text);

/// Reads `s` from a "specialization" object; throws as SpecJsonReader does.
template <class Spec>
void read_spec_json(const nlohmann::json& in, Spec& s) {
  SpecJsonReader v(in);
  visit_fields(s, v);
}

}  // namespace cujit::detail

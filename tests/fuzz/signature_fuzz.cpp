// Fuzzes the parameter-signature parser (codegen/signature.*): parse_signature must accept a
// signature or throw SignatureError pointing inside it, what it accepts must print and parse
// back to the same parameters, and check_signatures / resolve_types must only throw their
// documented errors and, when they succeed, bind types exactly.
//
// Input: "IN|OUT|ARGS". IN and OUT are signatures ('|' cannot occur in one); each byte of ARGS
// describes one argument (bit 7: missing, bit 6: scalar, low bits: dtype), inputs first.

#include "codegen/signature.hpp"

#include "fuzz_check.hpp"

#include <cujit/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {
namespace {

std::string print(const std::vector<Param>& params) {
  std::string out;
  for (const Param& p : params) {
    if (!out.empty()) out += ", ";
    if (p.raw) out += "raw ";
    out += p.is_generic ? p.placeholder : std::string(dtype_name(p.dtype));
    out += ' ';
    out += p.name;
  }
  return out;
}

// Parses one signature and checks what the parser promises; nullopt when it was rejected.
std::optional<std::vector<Param>> parse_checked(std::string_view text, const char* what) {
  std::vector<Param> params;
  try {
    params = parse_signature(text, "fuzz_kernel", what);
  } catch (const SignatureError& e) {
    CUJIT_FUZZ_CHECK(e.column() <= text.size(), "error column outside the signature");
    CUJIT_FUZZ_CHECK(std::string_view(e.what()).find("fuzz_kernel") != std::string_view::npos,
                     "error message does not name the kernel");
    return std::nullopt;
  }
  for (const Param& p : params) {
    CUJIT_FUZZ_CHECK(is_valid_kernel_name(p.name), "accepted an invalid or reserved name");
    CUJIT_FUZZ_CHECK(!(p.name.size() == 1 && p.name[0] >= 'A' && p.name[0] <= 'Z'),
                     "accepted a placeholder as a name");
    CUJIT_FUZZ_CHECK(p.column < text.size(), "parameter column outside the signature");
    std::string_view at = text.substr(p.column);
    std::string_view type = p.raw ? "raw" : std::string_view(p.placeholder);
    if (p.raw || p.is_generic) {
      CUJIT_FUZZ_CHECK(at.substr(0, type.size()) == type, "column does not point at the type");
    }
    CUJIT_FUZZ_CHECK(!p.is_generic || p.placeholder.size() == 1, "bad placeholder");
    CUJIT_FUZZ_CHECK(p.is_generic || static_cast<int>(p.dtype) < kDTypeCount, "bad dtype");
  }
  for (std::size_t a = 0; a < params.size(); ++a) {
    for (std::size_t b = a + 1; b < params.size(); ++b) {
      CUJIT_FUZZ_CHECK(params[a].name != params[b].name, "accepted a duplicate name");
    }
  }
  // What was accepted prints as a canonical signature that parses to the same parameters.
  const std::string printed = print(params);
  std::vector<Param> again = parse_signature(printed, "fuzz_kernel", what);
  CUJIT_FUZZ_CHECK(again == params, "printed signature parses differently");
  return params;
}

ArgType arg_of(unsigned char byte) {
  ArgType a;
  a.present = (byte & 0x80) == 0;
  a.is_array = (byte & 0x40) == 0;
  a.dtype = static_cast<DType>((byte & 0x3f) % kDTypeCount);
  return a;
}

void check_resolution(const std::vector<Param>& in, const std::vector<Param>& out,
                      std::string_view arg_bytes) {
  std::vector<ArgType> in_args;
  std::vector<ArgType> out_args;
  std::size_t next = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    in_args.push_back(arg_of(next < arg_bytes.size() ? arg_bytes[next++] : 0));
  }
  if (arg_bytes.size() - next >= out.size()) {
    for (std::size_t k = 0; k < out.size(); ++k) out_args.push_back(arg_of(arg_bytes[next++]));
  }
  if (next < arg_bytes.size() && (arg_bytes[next] & 1) != 0 && !in_args.empty()) {
    in_args.pop_back();  // a miscount must be an ArgumentError
  }
  ResolvedTypes types;
  try {
    types = resolve_types(in, out, in_args, out_args, "fuzz_kernel");
  } catch (const TypeError&) {
    return;
  } catch (const ArgumentError&) {
    return;
  }
  CUJIT_FUZZ_CHECK(types.in.size() == in.size() && types.out.size() == out.size(),
                   "resolved a type count that differs from the signature");
  auto check_param = [&](const Param& p, DType resolved) {
    if (!p.is_generic) {
      CUJIT_FUZZ_CHECK(resolved == p.dtype, "a fixed dtype was resolved to another");
    } else {
      auto it = types.placeholders.find(p.placeholder);
      CUJIT_FUZZ_CHECK(it != types.placeholders.end() && it->second == resolved,
                       "a placeholder parameter differs from its binding");
    }
  };
  for (std::size_t k = 0; k < in.size(); ++k) {
    check_param(in[k], types.in[k]);
    if (in_args[k].present && in_args[k].is_array) {
      CUJIT_FUZZ_CHECK(types.in[k] == in_args[k].dtype, "an input array was cast silently");
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    check_param(out[k], types.out[k]);
    if (!out_args.empty() && out_args[k].present) {
      CUJIT_FUZZ_CHECK(out_args[k].is_array, "accepted a scalar output");
      CUJIT_FUZZ_CHECK(types.out[k] == out_args[k].dtype, "an output array was cast silently");
    }
  }
}

}  // namespace
}  // namespace cujit::detail

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cujit::detail;
  std::string_view input = cujit::fuzz::as_text(data, size);
  std::size_t bar1 = input.find('|');
  std::string_view in_text = input.substr(0, bar1);
  std::optional<std::vector<Param>> in = parse_checked(in_text, "in_params");
  if (bar1 == std::string_view::npos || !in) return 0;
  std::string_view rest = input.substr(bar1 + 1);
  std::size_t bar2 = rest.find('|');
  std::optional<std::vector<Param>> out = parse_checked(rest.substr(0, bar2), "out_params");
  if (!out) return 0;
  for (bool allow_raw : {true, false}) {
    try {
      check_signatures(*in, *out, "fuzz_kernel", allow_raw);
    } catch (const cujit::SignatureError&) {
      continue;
    }
    for (const Param& o : *out) {
      CUJIT_FUZZ_CHECK(allow_raw || !o.raw, "accepted a raw output");
      for (const Param& p : *in) CUJIT_FUZZ_CHECK(p.name != o.name, "accepted a shared name");
    }
  }
  if (bar2 != std::string_view::npos) check_resolution(*in, *out, rest.substr(bar2 + 1));
  return 0;
}

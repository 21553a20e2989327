#include "codegen/snippet_analysis.hpp"

namespace cujit::detail {

namespace {

std::vector<SnippetVariable> raw_views(const std::vector<Param>& params,
                                       const std::vector<DType>& dtypes) {
  std::vector<SnippetVariable> vars;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const std::string type(dtype_cuda_type(dtypes[k]));
    if (params[k].raw) {
      vars.push_back({params[k].name, type, SnippetVariable::Kind::RawArray, true});
    } else {
      vars.push_back({"_raw_" + params[k].name, type, SnippetVariable::Kind::RawArray, true});
    }
  }
  return vars;
}

std::vector<std::pair<std::string, std::string>> aliases_of(const ResolvedTypes& types) {
  std::vector<std::pair<std::string, std::string>> aliases;
  for (const auto& [name, dtype] : types.placeholders) {
    aliases.emplace_back(name, std::string(dtype_cuda_type(dtype)));
  }
  return aliases;
}

Snippet make_snippet(std::string label, std::string text, Snippet::Form form,
                     std::vector<SnippetVariable> variables, int scope_parent = -1) {
  Snippet s;
  s.label = std::move(label);
  s.text = std::move(text);
  s.form = form;
  s.variables = std::move(variables);
  s.scope_parent = scope_parent;
  return s;
}

}  // namespace

SnippetSet elementwise_snippet_set(const std::string& kernel, const std::vector<Param>& in,
                                   const std::vector<Param>& out, const ResolvedTypes& types,
                                   const std::string& operation, const std::string& preamble,
                                   const std::string& loop_prep, const std::string& after_loop) {
  SnippetSet set;
  set.kernel_name = kernel;
  set.type_aliases = aliases_of(types);
  std::vector<SnippetVariable> outer = raw_views(in, types.in);
  for (SnippetVariable& v : raw_views(out, types.out)) outer.push_back(std::move(v));
  outer.push_back({"_ind", "", SnippetVariable::Kind::Size, false});
  std::vector<SnippetVariable> element = {{"i", "long long", SnippetVariable::Kind::Index, false}};
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in[k].raw) continue;
    element.push_back({in[k].name, std::string(dtype_cuda_type(types.in[k])),
                       SnippetVariable::Kind::Element, false});
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k].raw) continue;
    element.push_back({out[k].name, std::string(dtype_cuda_type(types.out[k])),
                       SnippetVariable::Kind::Element, true});
  }
  set.snippets.push_back(make_snippet("preamble", preamble, Snippet::Form::TopLevel, {}));
  set.snippets.push_back(make_snippet("loop_prep", loop_prep, Snippet::Form::Statements, outer));
  set.snippets.push_back(
      make_snippet("operation", operation, Snippet::Form::Statements, element, 1));
  set.snippets.push_back(make_snippet("after_loop", after_loop, Snippet::Form::Statements, {}, 1));
  return set;
}

SnippetSet reduction_snippet_set(const std::string& kernel, const std::vector<Param>& in,
                                 const std::vector<Param>& out, const ResolvedTypes& types,
                                 const std::string& reduce_type, const std::string& map_expr,
                                 const std::string& reduce_expr, const std::string& post_map_expr,
                                 const std::string& identity, const std::string& preamble) {
  SnippetSet set;
  set.kernel_name = kernel;
  set.type_aliases = aliases_of(types);
  const std::vector<SnippetVariable> sizes = {{"_in_ind", "", SnippetVariable::Kind::Size, false},
                                              {"_out_ind", "", SnippetVariable::Kind::Size, false}};
  std::vector<SnippetVariable> map_vars = raw_views(in, types.in);
  map_vars.push_back({"_J", "long long", SnippetVariable::Kind::Index, false});
  map_vars.insert(map_vars.end(), sizes.begin(), sizes.end());
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (in[k].raw) continue;
    map_vars.push_back({in[k].name, std::string(dtype_cuda_type(types.in[k])),
                        SnippetVariable::Kind::Element, false});
  }
  std::vector<SnippetVariable> post_vars = raw_views(out, types.out);
  post_vars.insert(post_vars.end(), sizes.begin(), sizes.end());
  post_vars.push_back({"a", reduce_type, SnippetVariable::Kind::Element, false});
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k].raw) continue;
    post_vars.push_back({out[k].name, std::string(dtype_cuda_type(types.out[k])),
                         SnippetVariable::Kind::Element, true});
  }
  set.snippets.push_back(make_snippet("preamble", preamble, Snippet::Form::TopLevel, {}));
  set.snippets.push_back(make_snippet("identity", identity, Snippet::Form::Expression, {}));
  set.snippets.push_back(make_snippet("map_expr", map_expr, Snippet::Form::Expression, map_vars));
  set.snippets.push_back(make_snippet("reduce_expr", reduce_expr, Snippet::Form::Expression,
                                      {{"a", reduce_type, SnippetVariable::Kind::Element, false},
                                       {"b", reduce_type, SnippetVariable::Kind::Element, false}}));
  set.snippets.push_back(
      make_snippet("post_map_expr", post_map_expr, Snippet::Form::Statements, post_vars));
  return set;
}

}  // namespace cujit::detail

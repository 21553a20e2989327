// Evaluating array expressions: the graph flattened into its canonical form (operands first,
// identical subexpressions once, arrays and scalars numbered by first use), one
// ElementwiseKernel per structure for the process, called with the arrays and scalars.
#include "runtime/expression_node.hpp"

#include "core/layout.hpp"
#include "runtime/family.hpp"

#include <cujit/elementwise.hpp>
#include <cujit/error.hpp>
#include <cujit/reduction.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

namespace cujit::detail {

// cujit's own launches of an ElementwiseKernel (include/cujit/elementwise.hpp).
struct KernelAccess {
  /// Launches `k` on `args`; returns its first output when `first` (else a null Array, and no
  /// copy of a given output is made).
  static Array launch(const ElementwiseKernel& k, const std::vector<Arg>& args,
                      const LaunchOptions& options, bool first) {
    return k.launch(args.data(), args.size(), options, nullptr, first);
  }
};

namespace {

// The graph of an expression and the values behind its slots (the arrays are the nodes',
// which the caller's root keeps alive).
struct Flattened {
  ExprGraph graph;
  std::vector<const Array*> arrays;  // null for a traced argument's slot
  std::vector<Scalar> scalars;       // a traced argument's slot: a placeholder
  std::vector<int> input_args;       // per input slot: the traced argument, or -1 (traces only)
  std::vector<int> scalar_args;      // per scalar slot: the traced argument, or -1 (traces only)
};

// The canonical graph of an expression: a post-order walk from the root, identical
// subexpressions (same operation, dtypes, slot and operands) once, slots numbered by first use.
// Expressions are small (tens of nodes), so linear searches beat hashing here. The walk
// writes into `out` and `by_node` (cleared first), which evaluate() keeps per thread so that
// an evaluation allocates nothing for them once their capacity suffices.
class Flattener {
 public:
  using Seen = std::vector<std::pair<const ExprNode*, int>>;
  /// `traced`: the walk may meet a traced function's symbolic arguments (traced_kernel); an
  /// evaluation may not (ArgumentError: an expression of them has no values yet).
  Flattener(Flattened& out, Seen& by_node, bool traced = false)
      : out_(out), by_node_(by_node), traced_(traced) {
    out_.graph.nodes.clear();
    out_.graph.inputs.clear();
    out_.graph.scalars.clear();
    out_.graph.outputs.clear();
    out_.arrays.clear();
    out_.scalars.clear();
    out_.input_args.clear();
    out_.scalar_args.clear();
    by_node_.clear();
  }

  void run(const NodePtr& root) { visit(root); }

  // Several roots (a traced function's results): out0, out1, ... in order.
  void run(const std::vector<NodePtr>& roots) {
    for (const NodePtr& r : roots) out_.graph.outputs.push_back(visit(r));
    if (roots.size() == 1 &&
        out_.graph.outputs[0] + 1 == static_cast<int>(out_.graph.nodes.size())) {
      out_.graph.outputs.clear();  // one result at the end: the plain form (and name)
    }
  }

 private:
  int visit(const NodePtr& node) {
    for (const auto& [seen, id] : by_node_) {
      if (seen == node.get()) return id;
    }
    ExprGraphNode g;
    g.op = node->op;
    g.dtype = node->dtype;
    g.operand_dtype = node->operand_dtype;
    g.args.reserve(node->args.size());
    for (const NodePtr& a : node->args) g.args.push_back(visit(a));
    if (node->arg >= 0 && !traced_) {
      throw ArgumentError(
          "cujit: fuse: an expression of a fused function's arguments is evaluated while the "
          "function is traced (eval, conversion to Array, or a reduction such as max); return "
          "it instead, or reduce outside the fused function");
    }
    if (node->op == ExprOp::Input) {
      g.index = node->arg >= 0 ? argument_slot(node->arg, node->dtype) : array_slot(*node->array);
    }
    if (node->op == ExprOp::Scalar) {
      g.index = scalar_slot(node->scalar ? *node->scalar : Scalar(0), node->dtype, node->arg);
    }
    const int id = add(std::move(g));
    by_node_.emplace_back(node.get(), id);
    return id;
  }

  int add(ExprGraphNode g) {
    std::vector<ExprGraphNode>& nodes = out_.graph.nodes;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const ExprGraphNode& n = nodes[i];
      if (n.op == g.op && n.dtype == g.dtype && n.operand_dtype == g.operand_dtype &&
          n.index == g.index && n.args == g.args) {
        return static_cast<int>(i);
      }
    }
    nodes.push_back(std::move(g));
    return static_cast<int>(nodes.size() - 1);
  }

  int array_slot(const Array& a) {
    for (std::size_t i = 0; i < out_.arrays.size(); ++i) {
      if (out_.arrays[i] == nullptr) continue;  // a traced argument's slot
      const Array& b = *out_.arrays[i];
      if (b.data() == a.data() && b.dtype() == a.dtype() && b.shape() == a.shape() &&
          b.strides() == a.strides() && b.device_id() == a.device_id()) {
        return static_cast<int>(i);
      }
    }
    out_.arrays.push_back(&a);
    out_.graph.inputs.push_back(a.dtype());
    return static_cast<int>(out_.arrays.size() - 1);
  }

  // A traced function's array argument: one slot per argument.
  int argument_slot(int arg, DType dtype) {
    for (std::size_t i = 0; i < out_.input_args.size(); ++i) {
      if (out_.input_args[i] == arg) return static_cast<int>(i);
    }
    out_.input_args.resize(out_.arrays.size(), -1);  // only traced graphs fill these
    out_.arrays.push_back(nullptr);
    out_.graph.inputs.push_back(dtype);
    out_.input_args.push_back(arg);
    return static_cast<int>(out_.arrays.size() - 1);
  }

  // One slot per scalar node (never merged by value: the kernel must not depend on values).
  int scalar_slot(const Scalar& s, DType dtype, int arg) {
    if (arg >= 0) {  // only traced graphs fill scalar_args
      out_.scalar_args.resize(out_.scalars.size(), -1);
      out_.scalar_args.push_back(arg);
    }
    out_.scalars.push_back(s);
    out_.graph.scalars.push_back(dtype);
    return static_cast<int>(out_.scalars.size() - 1);
  }

  Flattened& out_;
  Seen& by_node_;
  bool traced_ = false;
};

// The flattened form of `roots` in fresh storage (traces, reductions, definitions).
template <class Roots>
Flattened flatten(const Roots& roots, bool traced = false) {
  Flattened out;
  Flattener::Seen seen;
  Flattener(out, seen, traced).run(roots);
  return out;
}

// evaluate()'s per-thread storage, and whether an evaluation on this thread is using it (an
// evaluation inside another, should one ever happen, takes fresh storage).
struct Scratch {
  Flattened flat;
  Flattener::Seen seen;
  std::vector<Arg> args;
  bool busy = false;
};

bool same_graph(const ExprGraph& a, const ExprGraph& b) {
  if (a.inputs != b.inputs || a.scalars != b.scalars || a.outputs != b.outputs ||
      a.nodes.size() != b.nodes.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const ExprGraphNode &m = a.nodes[i], &n = b.nodes[i];
    if (m.op != n.op || m.dtype != n.dtype || m.operand_dtype != n.operand_dtype ||
        m.index != n.index || m.args != n.args) {
      return false;
    }
  }
  return true;
}

// FNV-1a over the graph's fields: the bucket of its kernel, found without building a key.
std::uint64_t graph_hash(const ExprGraph& g) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  for (const ExprGraphNode& n : g.nodes) {
    mix(static_cast<std::uint64_t>(n.op) | static_cast<std::uint64_t>(n.dtype) << 8 |
        static_cast<std::uint64_t>(n.operand_dtype) << 16 |
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(n.index)) << 24);
    for (int a : n.args) mix(static_cast<std::uint64_t>(a));
  }
  for (DType t : g.inputs) mix(static_cast<std::uint64_t>(t) + 0x100);
  for (DType t : g.scalars) mix(static_cast<std::uint64_t>(t) + 0x200);
  for (int o : g.outputs) mix(static_cast<std::uint64_t>(o) + 0x300);
  return h;
}

// A kernel made for an expression structure (and, for reductions, the reduction).
template <class Kernel>
struct KernelEntry {
  ExprGraph graph;
  ExprReduce op;
  std::shared_ptr<const Kernel> kernel;
};

// One kernel per expression structure and `op` for the life of the process, made by `make`
// (from the structure's definition) on the structure's first evaluation only. Never
// destroyed: kernels unload their modules on destruction, which must not run after the
// driver's and the cache's statics are gone at exit.
template <class Kernel, class Make>
std::shared_ptr<const Kernel> kernel_of(const ExprGraph& graph, ExprReduce op, Make&& make) {
  // The last kernel this thread used, checked first: a loop evaluating one expression takes
  // no lock and computes no hash.
  struct LastKernel;
  KernelEntry<Kernel> own;  // while the thread's own is destroyed (at its exit)
  KernelEntry<Kernel>& last = PerThread<KernelEntry<Kernel>, LastKernel>::get(own);
  if (last.kernel && last.op == op && same_graph(last.graph, graph)) return last.kernel;
  static std::mutex& mutex = *new std::mutex;
  static auto& kernels = *new std::unordered_map<std::uint64_t, std::vector<KernelEntry<Kernel>>>;
  std::shared_ptr<const Kernel> kernel;
  {
    std::lock_guard lock(mutex);
    auto& bucket = kernels[graph_hash(graph) ^ static_cast<unsigned>(op)];
    for (const KernelEntry<Kernel>& e : bucket) {
      if (e.op == op && same_graph(e.graph, graph)) {
        kernel = e.kernel;
        break;
      }
    }
    if (!kernel) {
      bucket.push_back({graph, op, make()});
      kernel = bucket.back().kernel;
    }
  }
  last.graph = graph;  // copied into the storage it had: no allocation once it is large enough
  last.op = op;
  last.kernel = kernel;
  return kernel;
}

std::shared_ptr<const ElementwiseKernel> kernel_for(const ExprGraph& graph) {
  // The op is unused for elementwise kernels: Sum stands for "none".
  return kernel_of<ElementwiseKernel>(graph, ExprReduce::Sum, [&] {
    ExprDefinition d = generate_expression(graph);
    ElementwiseOptions options;
    options.preamble = std::move(d.preamble);
    return std::make_shared<const ElementwiseKernel>(d.in_params, d.out_params, d.operation, d.name,
                                                     std::move(options));
  });
}

std::shared_ptr<const ReductionKernel> reduction_for(const ExprGraph& graph, ExprReduce op) {
  return kernel_of<ReductionKernel>(graph, op, [&] {
    ExprReduction r = generate_expression_reduction(graph, op);
    ReductionOptions options;
    options.preamble = std::move(r.preamble);
    options.reduce_type = std::move(r.reduce_type);
    return std::make_shared<const ReductionKernel>(r.in_params, r.out_params, r.map_expr,
                                                   r.reduce_expr, r.post_map, r.identity, r.name,
                                                   std::move(options));
  });
}

// The arguments of a call of f's kernel, into `args` (cleared first).
void put_arguments(std::vector<Arg>& args, const Flattened& f) {
  args.clear();
  args.reserve(f.arrays.size() + f.scalars.size() + 1);
  for (const Array* a : f.arrays) args.emplace_back(*a);
  for (const Scalar& s : f.scalars) args.emplace_back(s);
}

std::vector<Arg> arguments(const Flattened& f) {
  std::vector<Arg> args;
  put_arguments(args, f);
  return args;
}

}  // namespace

TracedKernel traced_kernel(const std::vector<NodePtr>& roots) {
  Flattened f = flatten(roots, true);
  TracedKernel t;
  t.kernel = kernel_for(f.graph);
  t.graph = std::move(f.graph);
  t.input_args = std::move(f.input_args);
  t.input_args.resize(f.arrays.size(), -1);
  t.scalar_args = std::move(f.scalar_args);
  t.scalar_args.resize(f.scalars.size(), -1);
  t.scalar_values = std::move(f.scalars);
  return t;
}

// Runs `root` into a new array (out == nullptr) or into *out.
Array evaluate(const NodePtr& root, const Array* out, const LaunchOptions& options) {
  struct ScratchTag;
  Scratch own;  // while the thread's own is destroyed (at its exit)
  Scratch& scratch = PerThread<Scratch, ScratchTag>::get(own);
  Scratch fresh;
  Scratch& storage = scratch.busy ? fresh : scratch;
  storage.busy = true;
  struct Release {
    Scratch& s;
    ~Release() { s.busy = false; }
  } release{storage};
  Flattener(storage.flat, storage.seen).run(root);
  const Flattened& f = storage.flat;
  if (f.arrays.empty() && out == nullptr) {
    throw ArgumentError(
        "cujit: eval: the expression has no array to take its shape and device "
        "from (scalars only); evaluate it into one: eval(e, out)");
  }
  const auto kernel = kernel_for(f.graph);
  std::vector<Arg>& args = storage.args;
  put_arguments(args, f);
  if (out != nullptr) args.emplace_back(*out);
  LaunchOptions o = options;
  if (f.arrays.empty() && out != nullptr) o.size = out->size();
  return KernelAccess::launch(*kernel, args, o, out == nullptr);
}

// Reduces `root`'s values with `op` over reduce's axes into a new array.
Array evaluate_reduction(const NodePtr& root, ExprReduce op, const ReduceOptions& reduce,
                         const LaunchOptions& options) {
  const Flattened f = flatten(root);
  if (f.arrays.empty()) {
    throw ArgumentError(std::string("cujit: ") + expr_reduce_name(op) +
                        ": the expression has no array to take its shape and device from "
                        "(scalars only)");
  }
  const auto kernel = reduction_for(f.graph, op);
  return kernel->call(arguments(f), reduce, options).front();
}

// The root of `e`, which must not be a C++ number alone (it has no dtype or shape to make).
NodePtr root_of(const Expr& e, const char* what) {
  if (detail::node_of(e)->weak) {
    throw ArgumentError(std::string("cujit: ") + what +
                        ": the expression has no array (a C++ number alone)");
  }
  return detail::node_of(e);
}

ExprDefinition expression_definition(const NodePtr& root) {
  return generate_expression(flatten(root).graph);
}

}  // namespace cujit::detail

namespace cujit {
namespace {

// The byte range [first, last) a view's elements span.
std::pair<std::uint64_t, std::uint64_t> span_of(const Array& a) {
  std::int64_t low = 0, high = 0;
  for (std::size_t d = 0; d < a.shape().size(); ++d) {
    if (a.shape()[d] == 0) return {a.data(), a.data()};
    const std::int64_t step = a.strides()[d] * (a.shape()[d] - 1);
    (step < 0 ? low : high) += step;
  }
  return {a.data() + low, a.data() + high + static_cast<std::int64_t>(a.itemsize())};
}

bool same_view(const Array& a, const Array& b) {
  return a.data() == b.data() && a.shape() == b.shape() && a.strides() == b.strides() &&
         a.dtype() == b.dtype();
}

// Whether `out` (spanning `span`) overlaps an input of `root` that is not the very same view.
// (Each node once: shared subexpressions would make a tree walk exponential.)
bool overlaps_differently(const detail::NodePtr& root, const Array& out,
                          const std::pair<std::uint64_t, std::uint64_t>& span,
                          std::vector<const detail::ExprNode*>& seen) {
  if (std::find(seen.begin(), seen.end(), root.get()) != seen.end()) return false;
  seen.push_back(root.get());
  if (root->op == detail::ExprOp::Input) {
    if (!root->array) return false;  // a traced argument: evaluate() refuses it
    const Array& in = *root->array;
    if (same_view(in, out) || in.device_id() != out.device_id()) return false;
    const auto a = span_of(in);
    return a.first < span.second && span.first < a.second;
  }
  for (const detail::NodePtr& n : root->args) {
    if (overlaps_differently(n, out, span, seen)) return true;
  }
  return false;
}

bool overlaps_differently(const detail::NodePtr& root, const Array& out) {
  struct Seen;
  std::vector<const detail::ExprNode*> own;  // while the thread's own is destroyed
  std::vector<const detail::ExprNode*>& seen =
      detail::PerThread<std::vector<const detail::ExprNode*>, Seen>::get(own);
  seen.clear();
  return overlaps_differently(root, out, span_of(out), seen);
}

// numpy.can_cast(from, to, "same_kind"): a safe cast, or one within a kind (bool, unsigned,
// signed, float, complex); signed into unsigned is neither.
bool same_kind_cast(DType from, DType to) {
  if (detail::promote_types(from, to) == to) return true;
  return dtype_kind(from) == dtype_kind(to);
}

Array& assign(Array& a, detail::ExprOp op, const Expr& e, const char* symbol) {
  Expr result =
      detail::expr_of(detail::binary_node(op, detail::node_of(Expr(a)), detail::node_of(e)));
  if (result.dtype() != a.dtype()) {
    if (!same_kind_cast(result.dtype(), a.dtype())) {
      throw TypeError(std::string("cujit: operator '") + symbol + "': the result is " +
                      std::string(dtype_name(result.dtype())) + ", which the " +
                      std::string(dtype_name(a.dtype())) +
                      " array cannot take (NumPy's same_kind rule)");
    }
    result = astype(result, a.dtype());
  }
  eval(result, a);
  return a;
}

}  // namespace

Array Expr::eval(const LaunchOptions& options) const {
  return detail::evaluate(detail::root_of(*this, "eval"), nullptr, options);
}

void eval(const Expr& e, const Array& out, const LaunchOptions& options) {
  // A C++ number alone fills `out`: it takes out's dtype.
  const detail::NodePtr root = detail::node_of(e)->weak
                                   ? detail::cast_node(detail::node_of(e), out.dtype())
                                   : detail::node_of(e);
  if (root->op != detail::ExprOp::Scalar && overlaps_differently(root, out)) {
    const Array temporary =
        detail::expr_of(root).eval(options);  // then copied: no element read after it is written
    detail::evaluate(detail::node_of(Expr(temporary)), &out, options);
    return;
  }
  detail::evaluate(root, &out, options);
}

namespace {

// Whether a reduction of `shape` over `reduce`'s axes reduces no element (axes out of range
// are left to the kernel's ShapeError).
bool reduces_nothing(const Shape& shape, const ReduceOptions& reduce) {
  const auto rank = static_cast<int>(shape.size());
  if (!reduce.axes) return detail::shape_product(shape) == 0;
  for (int axis : *reduce.axes) {
    const int a = axis < 0 ? axis + rank : axis;
    if (a >= 0 && a < rank && shape[static_cast<std::size_t>(a)] == 0) return true;
  }
  return false;
}

Array reduce_with(detail::ExprReduce op, const Expr& e, const ReduceOptions& reduce,
                  const LaunchOptions& options) {
  const detail::NodePtr root = detail::root_of(e, detail::expr_reduce_name(op));
  if (reduce.segments) {
    throw ArgumentError(std::string("cujit: ") + detail::expr_reduce_name(op) +
                        ": cujit::segments applies to ReductionKernel calls, not to expressions");
  }
  const bool needs_an_element = op == detail::ExprReduce::Min || op == detail::ExprReduce::Max ||
                                op == detail::ExprReduce::ArgMin ||
                                op == detail::ExprReduce::ArgMax;
  if (needs_an_element && reduces_nothing(root->shape(), reduce)) {
    throw ArgumentError(std::string("cujit: ") + detail::expr_reduce_name(op) +
                        ": a zero-size reduction has no identity (shape " +
                        detail::shape_text(root->shape()) + ")");
  }
  return detail::evaluate_reduction(root, op, reduce, options);
}

}  // namespace

Array sum(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::Sum, e, reduce, options);
}
Array prod(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::Prod, e, reduce, options);
}
Array min(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::Min, e, reduce, options);
}
Array max(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::Max, e, reduce, options);
}
Array mean(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::Mean, e, reduce, options);
}

Array argmin(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::ArgMin, e, reduce, options);
}
Array argmax(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::ArgMax, e, reduce, options);
}
Array logsumexp(const Expr& e, const ReduceOptions& reduce, const LaunchOptions& options) {
  return reduce_with(detail::ExprReduce::LogSumExp, e, reduce, options);
}

Array& operator+=(Array& a, const Expr& e) { return assign(a, detail::ExprOp::Add, e, "+="); }
Array& operator-=(Array& a, const Expr& e) { return assign(a, detail::ExprOp::Sub, e, "-="); }
Array& operator*=(Array& a, const Expr& e) { return assign(a, detail::ExprOp::Mul, e, "*="); }
Array& operator/=(Array& a, const Expr& e) { return assign(a, detail::ExprOp::Div, e, "/="); }

}  // namespace cujit

// Reverse-mode AD. The forward sweep clones the primal's ops; the backward
// sweep walks them in reverse and adds each operand's adjoint. Adjoints are
// accumulated by name: a contribution with more dims than its value is summed
// over the extra dims, so lifting and broadcasting need no rule of their own.
// Loops are in reverse_loops.cpp. See docs/internals/ad.md.
#include "compiler/transforms/ad/reverse.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/STLExtras.h>

#include "compiler/transforms/ad/partials.h"
#include "compiler/transforms/ad/reverse_builder.h"

namespace delta::ad {
namespace reverse {

llvm::Error Unsupported(const Op& op, const std::string& what) {
  return llvm::make_error<AdError>(
      AdError::Kind::Unsupported, op.loc,
      "reverse-mode AD cannot differentiate " + what + " yet");
}

namespace {
// Values used inside `block` (and its nested regions) but defined outside.
void CollectCaptures(const Block& block, llvm::DenseSet<const Value*>& inside,
                     std::vector<const Value*>& captures) {
  for (const Value* arg : block.args) inside.insert(arg);
  for (const auto& op : block.ops) {
    for (const Value* operand : op->operands)
      if (!inside.contains(operand) && !llvm::is_contained(captures, operand))
        captures.push_back(operand);
    for (const auto& region : op->regions)
      CollectCaptures(*region, inside, captures);
    for (const Value* result : op->results) inside.insert(result);
  }
}

}  // namespace

std::vector<const Value*> CapturesOf(const Op& op) {
  llvm::DenseSet<const Value*> inside;
  std::vector<const Value*> captures;
  for (const auto& region : op.regions)
    CollectCaptures(*region, inside, captures);
  return captures;
}

// The gathers through which a loop body reads `capture`, if it reads it
// only at points fixed by the iteration. See Note [Rows read per iteration].

// --- Activity ----------------------------------------------------------------

void ReverseBuilder::ComputeActivity(const Function& primal) {
  const auto& wrt = fn_.derivative->wrt;
  for (size_t i = 0; i < primal.params.size(); ++i)
    if ((wrt.empty() || (i < wrt.size() && wrt[i])) &&
        IsFloatValue(primal.params[i]))
      varied_.insert(primal.params[i]);
  // A value is varied if a varied value flows into it; loops need a fixpoint.
  bool changed = true;
  std::function<void(const Block&)> visit = [&](const Block& block) {
    for (const auto& op : block.ops) {
      if (op->kind == OpKind::Loop || op->kind == OpKind::While) {
        size_t first_state = op->kind == OpKind::Loop ? 2 : 0;
        for (const auto& region : op->regions) {
          size_t arg_offset = op->kind == OpKind::Loop ? 1 : 0;
          const Op* yield = region->terminator();
          for (size_t i = 0; i + arg_offset < region->args.size(); ++i) {
            const Value* init = op->operands[first_state + i];
            const Value* arg = region->args[i + arg_offset];
            bool from_yield =
                op->kind == OpKind::Loop || &region == &op->regions.back();
            const Value* next =
                from_yield && yield && i < yield->operands.size()
                    ? yield->operands[i]
                    : nullptr;
            if (IsFloatValue(arg) && !Varied(arg) &&
                (Varied(init) || (next && Varied(next)))) {
              varied_.insert(arg);
              changed = true;
            }
          }
        }
      }
      // A combiner's arguments vary with the reduction's operands.
      if (op->kind == OpKind::ReduceCustom &&
          llvm::any_of(op->operands, [&](const Value* v) { return Varied(v); }))
        for (const Value* arg : op->regions[0]->args)
          if (IsFloatValue(arg) && !Varied(arg)) {
            varied_.insert(arg);
            changed = true;
          }
      for (const auto& region : op->regions) visit(*region);
      bool any =
          llvm::any_of(op->operands, [&](const Value* v) { return Varied(v); });
      if (!any && !op->regions.empty()) {
        for (const Value* capture : CapturesOf(*op)) any |= Varied(capture);
        for (const auto& region : op->regions)
          if (const Op* yield = region->terminator())
            for (const Value* v : yield->operands) any |= Varied(v);
      }
      if (!any) continue;
      for (const Value* result : op->results)
        if (IsFloatValue(result) && !Varied(result)) {
          varied_.insert(result);
          changed = true;
        }
    }
  };
  for (int round = 0; changed && round < 100; ++round) {
    changed = false;
    visit(*primal.body);
  }
}

// --- Adjoints ----------------------------------------------------------------

Value* ReverseBuilder::Zero(const Type& type) {
  Value* zero = ir::IsFloat(type.elem) ? b_.FloatConst(type.elem, 0.0)
                                       : b_.IntConst(type.elem, 0);
  return b_.Broadcast(zero, type.dims);
}

void ReverseBuilder::Accumulate(const Value* value, Value* contribution) {
  if (!contribution || !Varied(value)) return;
  Type type = ForwardType(value->type);
  // Sum over the dims the value does not have, broadcast over those it has
  // and the contribution lacks.
  DimList extra = contribution->type.dims.Minus(type.dims);
  if (!extra.empty())
    contribution = b_.Reduce(ir::ReduceKind::Sum, contribution, extra);
  contribution = b_.Broadcast(contribution, type.dims);
  if (contribution->type.elem != type.elem)
    contribution = b_.Convert(contribution, type.elem);
  auto [it, inserted] = adjoint_.try_emplace(value, contribution);
  if (!inserted) it->second = b_.Binary(OpKind::Add, it->second, contribution);
}

// --- Forward sweep -----------------------------------------------------------

llvm::Error ReverseBuilder::Forward(const Op& op) {
  switch (op.kind) {
    case OpKind::Map:
      return Unsupported(op, "a map that could not be batched");
    case OpKind::Loop: {
      bool active =
          llvm::any_of(op.results, [&](const Value* v) { return Varied(v); });
      if (active) return ForwardLoop(op);
      break;
    }
    case OpKind::While: {
      bool active =
          llvm::any_of(op.results, [&](const Value* v) { return Varied(v); });
      if (active) return ForwardWhile(op);
      break;
    }
    default:  // a local dim gets a dim of the derived function (CloneOp)
      break;
  }
  transforms::CloneOp(b_, op, forward_);
  return llvm::Error::success();
}

// --- Backward sweep ----------------------------------------------------------

llvm::Expected<std::vector<Value*>> ReverseBuilder::ReverseBlock(
    const Block& block, const std::vector<Value*>& seeds,
    const std::vector<const Value*>& wanted, const Tape* tape, Value* step) {
  // Adjoints and tapes made here are only valid inside this region.
  auto saved_adjoints = std::move(adjoint_);
  auto saved_tapes = std::move(tapes_);
  adjoint_.clear();
  tapes_.clear();
  std::vector<const Op*> ops;
  for (const auto& op : block.ops) {
    if (op->kind == OpKind::Yield || op->kind == OpKind::Return) break;
    ops.push_back(op.get());
    if (tape && ReadFromTape(*op, *tape, step)) continue;
    if (llvm::Error error = Forward(*op)) return std::move(error);
  }
  const Op* terminator = block.terminator();
  for (size_t i = 0; i < seeds.size() && i < terminator->operands.size(); ++i)
    Accumulate(terminator->operands[i], seeds[i]);
  for (auto it = ops.rbegin(); it != ops.rend(); ++it)
    if (llvm::Error error = Backward(**it)) return std::move(error);
  std::vector<Value*> result;
  for (const Value* value : wanted) result.push_back(Adjoint(value));
  adjoint_ = std::move(saved_adjoints);
  tapes_ = std::move(saved_tapes);
  return result;
}

llvm::Error ReverseBuilder::Backward(const Op& op) {
  bool has_adjoint = llvm::any_of(
      op.results, [&](const Value* v) { return Adjoint(v) != nullptr; });
  if (!has_adjoint) return llvm::Error::success();
  b_.SetLoc(op.loc);
  auto operand = [&](size_t i) { return op.operands[i]; };
  auto p = [&](size_t i) { return P(op.operands[i]); };
  Value* dy = op.results.empty() ? nullptr : Adjoint(op.results[0]);
  Value* y = op.results.empty() ? nullptr : P(op.results[0]);
  auto sub = [&](Value* a, Value* c) { return b_.Binary(OpKind::Sub, a, c); };
  auto div = [&](Value* a, Value* c) { return b_.Binary(OpKind::Div, a, c); };
  auto mul = [&](Value* a, Value* c) { return b_.Binary(OpKind::Mul, a, c); };
  switch (ir::InfoOf(op.kind).derivative) {
    // Elementwise ops: da_i += dy * dy/da_i, by the partials that forward
    // mode uses too (ad/partials.cpp).
    case ir::OpDerivative::Partials: {
      std::vector<Value*> x;
      std::vector<Value*> d;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        x.push_back(p(i));
        bool wanted = Varied(operand(i)) && IsFloatValue(operand(i));
        d.push_back(wanted ? dy : nullptr);
      }
      std::vector<Value*> contributions = ApplyPartials(b_, op.kind, x, y, d);
      for (size_t i = 0; i < op.operands.size(); ++i)
        Accumulate(operand(i), contributions[i]);
      return llvm::Error::success();
    }
    // Comparisons, logic, constants, sizes, indices, floor, ceil and
    // stop_gradient carry no adjoint.
    case ir::OpDerivative::None:
      return llvm::Error::success();
    case ir::OpDerivative::Linear:
    case ir::OpDerivative::Structural:
      break;
  }
  switch (op.kind) {
    // Original: y = broadcast(a)  Adjoint: da += dy (summed by Accumulate)
    case OpKind::Broadcast:
      Accumulate(operand(0), dy);
      break;
    // Original: y = rename(a, d -> e)   Adjoint: da += rename(dy, e -> d)
    case OpKind::Rename:
      Accumulate(operand(0), b_.Rename(dy, forward_.Lookup(op.dims[1]),
                                       forward_.Lookup(op.dims[0])));
      break;
    // Original: y = gather(x, i…)       Adjoint: dx += scatter_add(dy, i…)
    case OpKind::Gather: {
      std::vector<Value*> indices;
      for (size_t i = 1; i < op.operands.size(); ++i) indices.push_back(p(i));
      Accumulate(operand(0),
                 b_.ScatterAdd(dy, indices, ForwardType(operand(0)->type)));
      break;
    }
    // Original: y = scatter_add(v, i…)  Adjoint: dv += gather(dy, i…)
    case OpKind::ScatterAdd: {
      std::vector<Value*> indices;
      for (size_t i = 1; i < op.operands.size(); ++i) indices.push_back(p(i));
      Accumulate(operand(0), b_.Gather(dy, indices));
      break;
    }
    // Original: y = cumsum(a, d)  Adjoint: da += sum(dy, d) - cumsum(dy, d) +
    // dy
    case OpKind::Cumsum: {
      const Dim* dim = forward_.Lookup(op.dims[0]);
      Value* total = b_.Reduce(ir::ReduceKind::Sum, dy, {dim});
      Accumulate(operand(0),
                 b_.Binary(OpKind::Add, sub(total, b_.Cumsum(dy, dim)), dy));
      break;
    }
    case OpKind::Reduce: {
      if (!op.regions.empty()) return Unsupported(op, "a fused reduction");
      DimList dims;
      for (const Dim* dim : op.dims) dims.Insert(forward_.Lookup(dim));
      Value* x = p(0);
      switch (op.reduce) {
        // Original: y = sum(x, D)     Adjoint: dx += dy (broadcast over D)
        case ir::ReduceKind::Sum:
          Accumulate(operand(0), dy);
          break;
        // Original: y = max(x, D)     Adjoint: dx[argmax] += dy (lowest
        // row-major index among ties). argmax takes one dim, so the dims are
        // searched from the last to the first (as forward mode does), then
        // each position is read at the positions of the dims before it.
        case ir::ReduceKind::Max:
        case ir::ReduceKind::Min: {
          ir::ReduceKind arg = op.reduce == ir::ReduceKind::Max
                                   ? ir::ReduceKind::Argmax
                                   : ir::ReduceKind::Argmin;
          std::vector<Value*> positions(dims.size());
          Value* rest = x;
          for (size_t i = dims.size(); i-- > 0;) {
            positions[i] = b_.Reduce(arg, rest, {dims[i]});
            if (i > 0) rest = b_.Gather(rest, {positions[i]});
          }
          std::vector<Value*> at;
          for (Value* position : positions)
            at.push_back(at.empty() ? position : b_.Gather(position, at));
          Accumulate(operand(0), b_.ScatterAdd(dy, at, x->type));
          break;
        }
        // Original: y = prod(x, D)    Adjoint: dx += dy * prod of the others,
        // exact with zeros: count them instead of dividing by them.
        case ir::ReduceKind::Prod: {
          ElemKind kind = x->type.elem;
          Value* zero = Scalar(kind, 0.0);
          Value* is_zero = b_.Binary(OpKind::Eq, x, zero);
          Value* zeros = b_.Reduce(ir::ReduceKind::Sum,
                                   b_.Convert(is_zero, ElemKind::I64), dims);
          Value* nonzero_product =
              b_.Reduce(ir::ReduceKind::Prod,
                        b_.Select(is_zero, Scalar(kind, 1.0), x), dims);
          Value* none =
              b_.Binary(OpKind::Eq, zeros, b_.IntConst(ElemKind::I64, 0));
          Value* single =
              b_.Binary(OpKind::Eq, zeros, b_.IntConst(ElemKind::I64, 1));
          Value* others =
              b_.Select(is_zero, b_.Select(single, nonzero_product, zero),
                        b_.Select(none, div(nonzero_product, x), zero));
          Accumulate(operand(0), mul(dy, others));
          break;
        }
        // Original: y = argmax(x, D), argmin   Adjoint: none (an index)
        case ir::ReduceKind::Argmax:
        case ir::ReduceKind::Argmin:
          break;
      }
      break;
    }
    case OpKind::Loop:
      return BackwardLoop(op, *op.regions[0], tapes_[&op]);
    case OpKind::While:
      return BackwardLoop(op, *op.regions[1], tapes_[&op]);
    case OpKind::If:
      return BackwardIf(op);
    case OpKind::Call:
      return BackwardCall(op);
    case OpKind::ReduceCustom:
      return BackwardReduceCustom(op);
    case OpKind::Map:
      return Unsupported(op, "a map that could not be batched");
    // ReverseBlock stops at a block's terminator.
    case OpKind::Yield:
    case OpKind::Return:
      // The ops handled above; listing them keeps this switch exhaustive,
      // so that a new linear or structural op is a compile error here until
      // it has a rule.
#define DELTA_CASE_Partials(Name) case OpKind::Name:
#define DELTA_CASE_None(Name) case OpKind::Name:
#define DELTA_CASE_Linear(Name)
#define DELTA_CASE_Structural(Name)
#define DELTA_OP(Name, mnemonic, Arity, Elements, Derivative, Flags) \
  DELTA_CASE_##Derivative(Name)
#include "compiler/ir/ops.def"
#undef DELTA_CASE_Partials
#undef DELTA_CASE_None
#undef DELTA_CASE_Linear
#undef DELTA_CASE_Structural
      break;
  }
  return llvm::Error::success();
}

llvm::Error ReverseBuilder::BackwardIf(const Op& op) {
  std::vector<const Value*> captures;
  for (const Value* capture : CapturesOf(op))
    if (Varied(capture)) captures.push_back(capture);
  if (captures.empty()) return llvm::Error::success();
  std::vector<Type> types;
  for (const Value* capture : captures)
    types.push_back(ForwardType(capture->type));
  std::vector<Value*> seeds;
  for (const Value* result : op.results) seeds.push_back(Adjoint(result));
  Op* reverse = b_.Create(OpKind::If, {P(op.operands[0])}, types);
  reverse->loc = op.loc;
  for (const auto& branch : op.regions) {
    ir::InsertionGuard guard(b_);
    Block* region = b_.AddRegion(reverse, {});
    b_.SetInsertionBlock(region);
    auto adjoints = ReverseBlock(*branch, seeds, captures);
    if (!adjoints) return adjoints.takeError();
    std::vector<Value*> yields;
    for (size_t c = 0; c < captures.size(); ++c) {
      Value* d = (*adjoints)[c];
      yields.push_back(d ? b_.Broadcast(d, types[c].dims) : Zero(types[c]));
    }
    b_.Yield(yields);
  }
  for (size_t c = 0; c < captures.size(); ++c)
    Accumulate(captures[c], reverse->results[c]);
  return llvm::Error::success();
}

llvm::Error ReverseBuilder::BackwardCall(const Op& op) {
  Function* callee = op.callee;
  // The cotangents of the call's float results (zeros where none).
  std::vector<Value*> cotangents;
  for (const Value* result : op.results) {
    if (!IsFloatValue(result)) continue;
    Value* d = Adjoint(result);
    Type type = ForwardType(result->type);
    cotangents.push_back(d ? b_.Broadcast(d, type.dims) : Zero(type));
  }
  std::vector<Value*> operands;
  for (const Value* arg : op.operands) operands.push_back(P(arg));
  Function* rule = callee->custom_vjp;
  if (rule) {
    for (const Value* result : op.results) operands.push_back(P(result));
  } else {
    // No rule: differentiate the callee on its own and recompute its
    // forward pass in the backward sweep (this is what checkpoint means).
    std::string name = callee->name + ".vjp";
    rule = fn_.module->FindFunction(name);
    if (!rule) {
      rule = fn_.module->AddFunction(name);
      ir::Derivative derivative;
      derivative.mode = ir::Derivative::Mode::Vjp;
      derivative.primal = callee;
      derivative.wrt.assign(callee->params.size(), true);
      rule->derivative = derivative;
      SetUpReverseSignature(*rule);
    }
  }
  operands.insert(operands.end(), cotangents.begin(), cotangents.end());
  std::vector<Type> result_types;
  for (const Value* arg : op.operands)
    if (IsFloatValue(arg)) result_types.push_back(ForwardType(arg->type));
  Op* call = b_.Create(OpKind::Call, operands, result_types);
  call->callee = rule;
  for (const Dim* dim : op.dims) call->dims.push_back(forward_.Lookup(dim));
  size_t next = 0;
  for (const Value* arg : op.operands)
    if (IsFloatValue(arg)) Accumulate(arg, call->results[next++]);
  return llvm::Error::success();
}

namespace {
// `value` at the point of the dims in `indices` that it has.

Value* ValueAt(Builder& b, Value* value, const std::vector<Value*>& indices) {
  std::vector<Value*> used;
  for (Value* index : indices)
    if (value->type.dims.Contains(index->type.index_dim)) used.push_back(index);
  return used.empty() ? value : b.Gather(value, used);
}
}  // namespace

Value* ReverseBuilder::Apply(const Block& combiner, Value* a, Value* b) {
  forward_.values[combiner.args[0]] =
      b_.Broadcast(a, ForwardType(combiner.args[0]->type).dims);
  forward_.values[combiner.args[1]] =
      b_.Broadcast(b, ForwardType(combiner.args[1]->type).dims);
  for (const auto& inner : combiner.ops) {
    if (inner->kind == OpKind::Yield) break;
    transforms::CloneOp(b_, *inner, forward_);
  }
  return P(combiner.terminator()->operands[0]);
}

llvm::Expected<Value*> ReverseBuilder::PerPoint(
    const DimList& dims, const Type& type,
    llvm::function_ref<llvm::Expected<Value*>(const std::vector<Value*>&)>
        body) {
  if (dims.empty()) {
    llvm::Expected<Value*> value = body({});
    if (value && !*value) return Zero(type);
    return value;
  }
  Op* map = b_.Create(OpKind::Map, {}, {type.WithDims(type.dims.Union(dims))});
  map->dims.assign(dims.begin(), dims.end());
  ir::InsertionGuard guard(b_);
  Block* region = b_.AddRegion(map, ir::IndexTypes(dims));
  b_.SetInsertionBlock(region);
  llvm::Expected<Value*> value =
      body(std::vector<Value*>(region->args.begin(), region->args.end()));
  if (!value) return value.takeError();
  b_.Yield({*value ? b_.Broadcast(*value, type.dims) : Zero(type)});
  return map->result();
}

// Note [Adjoint of a custom reduction]
// Original: y = reduce.custom [d] (init, x) { f }, f associative, init its
// neutral element. With the exclusive folds P_k = init ⊕ x_0 ⊕ … ⊕ x_{k-1}
// and S_k = x_{k+1} ⊕ … ⊕ x_{n-1} ⊕ init, y = f(f(P_k, x_k), S_k) for every
// k, so
//   Adjoint: dx_k += vjp of b -> f(f(P_k, b), S_k) at x_k, applied to dy
//            dinit += vjp of a -> f(a, X) at init, applied to dy, where
//            X = S_-1 = x_0 ⊕ … ⊕ x_{n-1} ⊕ init
// P and S are two loops over d (one from each end) that stack their state;
// the vjps run once per element, in parallel (a map over d and the other
// dims of the result), each reversing f twice. O(n) time and memory per
// reduction. A sequential fold reversed by the loop rule would carry the
// adjoint of all of x as loop state: O(n^2). A combiner that reads a
// differentiated value besides its arguments is reported: its adjoint would
// be a sum over every application of f, which this rule does not form.
llvm::Error ReverseBuilder::BackwardReduceCustom(const Op& op) {
  const Value* init_operand = op.operands[0];
  const Value* x_operand = op.operands[1];
  const Block& combiner = *op.regions[0];
  for (const Value* capture : CapturesOf(op))
    if (Varied(capture))
      return Unsupported(op,
                         "reduce(f, …) with an f that reads a differentiated "
                         "value besides its arguments");
  Value* dy = Adjoint(op.results[0]);
  Value* init = P(init_operand);
  Value* x = P(x_operand);
  const Dim* dim = forward_.Lookup(op.dims[0]);
  const Type y_type = ForwardType(op.results[0]->type);
  const Type acc_type = ForwardType(combiner.args[0]->type);
  const Type elem_type = ForwardType(combiner.args[1]->type);
  const DimList outer = y_type.dims.Minus(acc_type.dims);
  Value* last =
      b_.Binary(OpKind::Sub, b_.Size(dim), b_.IntConst(ElemKind::I64, 1));
  auto reversed = [&](Value* k) {
    return b_.Convert(
        b_.Binary(OpKind::Sub, last, b_.Convert(k, ElemKind::I64)),
        ElemKind::Index, dim);
  };
  // The fold from each end: its final state and its state before each
  // element (stacked over d at the loop's iteration).
  auto fold = [&](bool from_end) {
    Op* loop = b_.Create(OpKind::Loop,
                         {b_.IntConst(ElemKind::I64, 0), b_.Size(dim),
                          b_.Broadcast(init, y_type.dims)},
                         {y_type, y_type.WithDims(y_type.dims.Union({dim}))});
    loop->dims = {dim};
    loop->loc = op.loc;
    ir::InsertionGuard guard(b_);
    Block* region =
        b_.AddRegion(loop, {Type{ElemKind::Index, dim, {}}, y_type});
    b_.SetInsertionBlock(region);
    Value* k = from_end ? reversed(region->args[0]) : region->args[0];
    Value* x_k = x->type.dims.Contains(dim) ? b_.Gather(x, {k}) : x;
    Value* acc = region->args[1];
    Value* next = llvm::cantFail(PerPoint(
        outer, acc_type,
        [&](const std::vector<Value*>& at) -> llvm::Expected<Value*> {
          Value* a = ValueAt(b_, acc, at);
          Value* b = ValueAt(b_, x_k, at);
          return from_end ? Apply(combiner, b, a) : Apply(combiner, a, b);
        }));
    b_.Yield({b_.Broadcast(next, y_type.dims), acc});
    return std::make_pair(loop->results[0], loop->results[1]);
  };
  Value* prefix = fold(false).second;
  std::pair<Value*, Value*> from_end = fold(true);
  Value* total = from_end.first;
  Value* suffix = b_.Gather(from_end.second, {reversed(b_.Iota(dim))});
  if (Varied(x_operand)) {
    auto dx = PerPoint(
        outer.Union({dim}), elem_type,
        [&](const std::vector<Value*>& at) -> llvm::Expected<Value*> {
          Value* a = b_.Broadcast(ValueAt(b_, prefix, at), acc_type.dims);
          Value* b = b_.Broadcast(ValueAt(b_, x, at), elem_type.dims);
          Value* c = b_.Broadcast(ValueAt(b_, suffix, at), acc_type.dims);
          Value* seed = ValueAt(b_, dy, at);
          // f(t, c) with t = f(a, b): reverse the outer f, then the inner.
          Value* t = Apply(combiner, a, b);
          forward_.values[combiner.args[1]] = c;
          forward_.values[combiner.args[0]] = t;
          auto dt = ReverseBlock(combiner, {seed}, {combiner.args[0]});
          if (!dt) return dt.takeError();
          if (!(*dt)[0]) return nullptr;
          forward_.values[combiner.args[0]] = a;
          forward_.values[combiner.args[1]] = b;
          auto db = ReverseBlock(combiner, {(*dt)[0]}, {combiner.args[1]});
          if (!db) return db.takeError();
          return (*db)[0];
        });
    if (!dx) return dx.takeError();
    Accumulate(x_operand, *dx);
  }
  if (Varied(init_operand)) {
    auto dinit =
        PerPoint(outer, acc_type,
                 [&](const std::vector<Value*>& at) -> llvm::Expected<Value*> {
                   forward_.values[combiner.args[0]] =
                       b_.Broadcast(ValueAt(b_, init, at), acc_type.dims);
                   forward_.values[combiner.args[1]] =
                       b_.Broadcast(ValueAt(b_, total, at), elem_type.dims);
                   auto da = ReverseBlock(combiner, {ValueAt(b_, dy, at)},
                                          {combiner.args[0]});
                   if (!da) return da.takeError();
                   return (*da)[0];
                 });
    if (!dinit) return dinit.takeError();
    Accumulate(init_operand, *dinit);
  }
  return llvm::Error::success();
}

llvm::Error ReverseBuilder::Run(const Function& primal) {
  const ir::Derivative& derivative = *fn_.derivative;
  for (size_t k = 0; k < primal.size_params.size(); ++k) {
    forward_.dims[primal.dims[k]] = fn_.dims[k];
    forward_.values[primal.size_params[k]] = fn_.size_params[k];
  }
  // A local dim without a DimDef (a lane of constant size that demap made
  // fresh) is copied here: the derived function must not name a dim of the
  // primal, which is erased after AD.
  for (size_t k = primal.size_params.size(); k < primal.dims.size(); ++k) {
    const Dim* dim = primal.dims[k];
    if (!dim->size) forward_.dims[dim] = fn_.CopyDim(*dim, dim->name);
  }
  for (size_t i = 0; i < primal.params.size(); ++i)
    forward_.values[primal.params[i]] = fn_.params[i];
  ComputeActivity(primal);

  const Op* ret = primal.body->terminator();
  std::vector<Value*> seeds;
  if (derivative.mode == ir::Derivative::Mode::Gradient) {
    if (ret->operands.size() != 1 || !IsFloatValue(ret->operands[0]) ||
        !ret->operands[0]->type.IsScalar())
      // Sema rules this out: a compiler bug, at the return.
      return llvm::make_error<AdError>(
          AdError::Kind::Internal, ret->loc,
          "internal error: grad needs a function with one float scalar "
          "result");
    seeds.push_back(b_.FloatConst(ret->operands[0]->type.elem, 1.0));
  } else {
    size_t next = primal.params.size();
    for (const Value* result : ret->operands)
      seeds.push_back(IsFloatValue(result) ? fn_.params[next++] : nullptr);
  }
  std::vector<const Value*> wanted(primal.params.begin(), primal.params.end());
  auto adjoints = ReverseBlock(*primal.body, seeds, wanted);
  if (!adjoints) return adjoints.takeError();

  std::vector<Value*> results;
  if (derivative.mode == ir::Derivative::Mode::Gradient &&
      derivative.with_value)
    for (const Value* value : ret->operands) results.push_back(P(value));
  for (size_t i = 0; i < primal.params.size(); ++i) {
    bool wanted_param = derivative.wrt.empty() ||
                        (i < derivative.wrt.size() && derivative.wrt[i]);
    if (!wanted_param || !IsFloatValue(primal.params[i])) continue;
    Value* d = (*adjoints)[i];
    Type type = fn_.params[i]->type;
    results.push_back(d ? b_.Broadcast(d, type.dims) : Zero(type));
  }
  b_.Return(results);
  return llvm::Error::success();
}

}  // namespace reverse

using ir::Block;
using ir::Dim;
using ir::Function;
using ir::Type;
using ir::Value;
using reverse::IsFloatValue;
using reverse::ReverseBuilder;
using transforms::CloneMap;

void SetUpReverseSignature(Function& derived) {
  const Function& primal = *derived.derivative->primal;
  CloneMap map;
  for (size_t k = 0; k < primal.size_params.size(); ++k) {
    Value* size = derived.NewValue(primal.size_params[k]->type,
                                   primal.size_params[k]->name);
    derived.size_params.push_back(size);
    Dim* dim =
        derived.NewDim(primal.dims[k]->name, primal.dims[k]->constant, size);
    map.dims[primal.dims[k]] = dim;
  }
  auto add_param = [&](const Type& type, const std::string& name) {
    derived.AddParam(map.Lookup(type), name);
  };
  for (size_t i = 0; i < primal.params.size(); ++i)
    add_param(primal.params[i]->type,
              i < primal.param_names.size() ? primal.param_names[i] : "");
  const ir::Derivative& derivative = *derived.derivative;
  if (derivative.mode == ir::Derivative::Mode::Vjp)
    for (const Type& type : primal.result_types)
      if (ir::IsFloat(type.elem)) add_param(type, "dy");
  if (derivative.mode == ir::Derivative::Mode::Gradient &&
      derivative.with_value)
    for (const Type& type : primal.result_types)
      derived.result_types.push_back(map.Lookup(type));
  for (size_t i = 0; i < primal.params.size(); ++i) {
    bool wanted = derivative.wrt.empty() ||
                  (i < derivative.wrt.size() && derivative.wrt[i]);
    if (wanted && IsFloatValue(primal.params[i]))
      derived.result_types.push_back(map.Lookup(primal.params[i]->type));
  }
}

llvm::Error BuildReverse(const Function& primal, Function& derived) {
  return ReverseBuilder(derived).Run(primal);
}

}  // namespace delta::ad

// Reverse mode of `loop` and `while`: the forward sweep's scan with its
// residual tape, and the backward loop that reads it. See
// docs/internals/ad.md, step 5.
#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "compiler/transforms/ad/reverse_builder.h"
#include "compiler/transforms/opt/fusion_cost.h"

namespace delta::ad::reverse {

llvm::Error ReverseBuilder::ForwardLoop(const Op& op) {
  Tape tape;
  size_t state = op.operands.size() - 2;
  const Block& body = *op.regions[0];
  Value* lo = nullptr;
  if (!op.dims.empty()) {
    const Dim* dim = forward_.Lookup(op.dims[0]);
    tape.steps = StepsDim(dim->name + ".steps", b_.Size(dim));
    tape.iterator_dim = dim;
  } else {
    // A range loop runs over a local dim of size max(hi - lo, 0).
    lo = P(op.operands[0]);
    tape.steps =
        StepsDim("steps", b_.Binary(OpKind::Sub, P(op.operands[1]), lo));
    tape.lo = lo;
  }
  std::vector<Value*> operands = {b_.IntConst(ElemKind::I64, 0),
                                  b_.Size(tape.steps)};
  std::vector<Type> types;
  for (size_t i = 0; i < state; ++i) {
    operands.push_back(P(op.operands[i + 2]));
    types.push_back(ForwardType(op.results[i]->type));
  }
  // Outputs stacked over the loop's dim are stacked over `steps` here and
  // renamed back after.
  for (size_t i = state; i < op.results.size(); ++i) {
    Type t = ForwardType(op.results[i]->type);
    types.push_back(
        t.WithDims(t.dims.Minus({tape.iterator_dim}).Union({tape.steps})));
  }
  for (size_t i = 0; i < state; ++i) {
    Type t = ForwardType(op.results[i]->type);
    types.push_back(t.WithDims(t.dims.Union({tape.steps})));
  }
  Op* scan = b_.Create(OpKind::Loop, operands, types);
  scan->dims = {tape.steps};
  scan->loc = op.loc;
  auto outermost = EnterScan(scan);
  std::vector<Type> arg_types = {Type{ElemKind::Index, tape.steps, {}}};
  for (size_t i = 0; i < state; ++i)
    arg_types.push_back(ForwardType(body.args[i + 1]->type));
  {
    ir::InsertionGuard guard(b_);
    Block* region = b_.AddRegion(scan, arg_types);
    b_.SetInsertionBlock(region);
    Value* position = b_.Convert(region->args[0], ElemKind::I64);
    Value* iterator = tape.iterator_dim ? b_.Convert(position, ElemKind::Index,
                                                     tape.iterator_dim)
                                        : b_.Binary(OpKind::Add, lo, position);
    forward_.values[body.args[0]] = iterator;
    for (size_t i = 0; i < state; ++i)
      forward_.values[body.args[i + 1]] = region->args[i + 1];
    std::vector<Value*> states(region->args.begin() + 1, region->args.end());
    if (llvm::Error error = ForwardScanBody(body, scan, states, tape))
      return error;
  }
  for (size_t i = 0; i < op.results.size(); ++i)
    forward_.values[op.results[i]] =
        i < state ? scan->results[i]
                  : b_.Rename(scan->results[i], tape.steps, tape.iterator_dim);
  for (size_t i = 0; i < state; ++i)
    tape.states.push_back(scan->results[op.results.size() + i]);
  tapes_[&op] = tape;
  return llvm::Error::success();
}

llvm::Error ReverseBuilder::ForwardWhile(const Op& op) {
  size_t state = op.operands.size();
  const Block& cond = *op.regions[0];
  const Block& body = *op.regions[1];
  // 1. Run the while once, counting iterations.
  std::vector<Value*> operands;
  std::vector<Type> types;
  for (const Value* init : op.operands) {
    operands.push_back(P(init));
    types.push_back(ForwardType(init->type));
  }
  Type i64{ElemKind::I64, nullptr, {}};
  operands.push_back(b_.IntConst(ElemKind::I64, 0));
  types.push_back(i64);
  Op* counted = b_.Create(OpKind::While, operands, types);
  counted->loc = op.loc;
  for (int r = 0; r < 2; ++r) {
    const Block& source = r == 0 ? cond : body;
    ir::InsertionGuard guard(b_);
    Block* region = b_.AddRegion(counted, types);
    b_.SetInsertionBlock(region);
    for (size_t i = 0; i < state; ++i)
      forward_.values[source.args[i]] = region->args[i];
    for (const auto& inner : source.ops) {
      if (inner->kind == OpKind::Yield) break;
      if (llvm::Error error = Forward(*inner)) return error;
    }
    std::vector<Value*> yields;
    for (Value* v : source.terminator()->operands) yields.push_back(P(v));
    if (r == 1)
      yields.push_back(b_.Binary(OpKind::Add, region->args[state],
                                 b_.IntConst(ElemKind::I64, 1)));
    b_.Yield(yields);
  }
  for (size_t i = 0; i < state; ++i)
    forward_.values[op.results[i]] = counted->results[i];
  // 2. Run it again as a scan over a dim of that size, keeping the states.
  Dim* steps = StepsDim("iterations", counted->results[state]);
  std::vector<Value*> scan_operands = {b_.IntConst(ElemKind::I64, 0),
                                       b_.Size(steps)};
  std::vector<Type> scan_types;
  for (const Value* init : op.operands) {
    scan_operands.push_back(P(init));
    scan_types.push_back(ForwardType(init->type));
  }
  for (const Value* init : op.operands) {
    Type t = ForwardType(init->type);
    scan_types.push_back(t.WithDims(t.dims.Union({steps})));
  }
  Op* scan = b_.Create(OpKind::Loop, scan_operands, scan_types);
  scan->dims = {steps};
  scan->loc = op.loc;
  auto outermost = EnterScan(scan);
  Tape tape;
  tape.steps = steps;
  std::vector<Type> arg_types = {Type{ElemKind::Index, steps, {}}};
  for (const Value* init : op.operands)
    arg_types.push_back(ForwardType(init->type));
  {
    ir::InsertionGuard guard(b_);
    Block* region = b_.AddRegion(scan, arg_types);
    b_.SetInsertionBlock(region);
    for (size_t i = 0; i < state; ++i)
      forward_.values[body.args[i]] = region->args[i + 1];
    std::vector<Value*> states(region->args.begin() + 1, region->args.end());
    if (llvm::Error error = ForwardScanBody(body, scan, states, tape))
      return error;
  }
  for (size_t i = 0; i < state; ++i)
    tape.states.push_back(scan->results[state + i]);
  tapes_[&op] = tape;
  return llvm::Error::success();
}

// Note [Residual tape]
// The forward sweep of a loop runs its body once, as a scan that stacks
// over the iterations the state before each one and the values of the
// body's ops (the residuals). The backward sweep reads them at its
// iteration instead of computing them again, as JAX's scan does: each body
// runs once forward and once backward. Kept: the results of the body's
// top-level ops, but not indices, values over a dim made in the body, and
// ops cheaper to redo than to read back (constants, broadcasts, renames,
// gathers). A loop in the body is kept with its own tape, stacked once
// more, when its count is known before the outermost scan (StepsDim), so
// that nested loops also run once each way; otherwise its forward sweep
// runs again in the backward sweep. Residuals that no backward op reads
// are stacked outputs without users, which dead-code elimination drops
// with the work behind them. A call to `checkpoint(f)` is the other trade:
// it keeps nothing and is recomputed. Nor are values that are the same on
// every iteration kept (LoopInvariants: an index shifted by one and its
// boundary mask, a step size): stacking them would write the same array
// once per iteration; the backward sweep computes them again, and
// hoist-loop-invariants moves both computations out of the loops.
//
// Cheaper to redo is the fusion cost model's rule (Note [Fusion cost]):
// an elementwise op, a select, a conversion or a scalar map is redone when
// the work of redoing it and every value it needs that is not kept either,
// per element, is at most a store and a reload. The backward sweep's
// fusion then takes the redone work into its own loop. RK4's stages are
// such chains (a shifted read, a product, an axpy): GradBench's ode kept
// four [steps, n] arrays of them and now keeps the state and one.
namespace {
bool IsCheapToRedo(const Op& op) {
  if (op.regions.empty() && op.operands.empty()) return true;
  switch (op.kind) {
    case OpKind::Broadcast:
    case OpKind::Rename:
    case OpKind::Gather:
    case OpKind::DimDef:
      return true;
    default:
      return false;
  }
}

// The work per element of redoing the operands of `op` that are redone too
// (`redo`).
int64_t OperandsRedoCost(const Op& op,
                         const llvm::DenseMap<const Value*, int64_t>& redo) {
  int64_t cost = 0;
  for (const Value* operand : op.operands)
    if (auto it = redo.find(operand); it != redo.end()) cost += it->second;
  return cost;
}

// The work per element of redoing `op` in the backward sweep, with its
// redone operands, or nullopt when it is not an op to redo.
std::optional<int64_t> RedoCost(
    const Op& op, const llvm::DenseMap<const Value*, int64_t>& redo) {
  bool arithmetic = ir::IsElementwiseUnary(op.kind) ||
                    ir::IsElementwiseBinary(op.kind) ||
                    op.kind == OpKind::Select || op.kind == OpKind::Convert ||
                    transforms::IsScalarMap(op);
  if (!arithmetic || op.results.size() != 1 ||
      ir::HasFlag(op.kind, ir::kMathCall))
    return std::nullopt;
  return opt::ElementCost(op) + OperandsRedoCost(op, redo);
}
// The results of `body`'s top-level ops that do not depend on its
// arguments (the iterator, the state) nor come from an op with an effect
// other than a run-time check.
llvm::DenseSet<const Value*> LoopInvariants(const Block& body) {
  llvm::DenseSet<const Value*> varying(body.args.begin(), body.args.end());
  llvm::DenseSet<const Value*> invariant;
  for (const auto& op : body.ops) {
    bool varies = transforms::HasEffectsDeep(*op) &&
                  !(op->regions.empty() && transforms::MayOnlyFail(*op));
    for (const Value* operand : op->operands)
      varies |= varying.contains(operand);
    for (const Value* capture : CapturesOf(*op))
      varies |= varying.contains(capture);
    (varies ? varying : invariant)
        .insert(op->results.begin(), op->results.end());
  }
  return invariant;
}
}  // namespace

llvm::Error ReverseBuilder::ForwardScanBody(const Block& body, Op* scan,
                                            std::vector<Value*> yields,
                                            Tape& tape) {
  Block& region = *b_.block();
  for (const auto& inner : body.ops) {
    if (inner->kind == OpKind::Yield) break;
    if (llvm::Error error = Forward(*inner)) return error;
  }
  std::vector<Value*> next;
  for (Value* v : body.terminator()->operands) next.push_back(P(v));
  yields.insert(yields.begin(), next.begin(), next.end());
  // Dims made in the body cannot be stacked over.
  llvm::DenseSet<const Dim*> local;
  for (const auto& op : region.ops)
    if (op->kind == OpKind::DimDef) local.insert(op->dims[0]);
  auto stackable = [&](const Value* derived) {
    const Type& type = derived->type;
    return type.elem != ElemKind::Index &&
           llvm::none_of(type.dims,
                         [&](const Dim* dim) { return local.contains(dim); });
  };
  auto stack = [&](Value* derived) {
    yields.push_back(derived);
    Value* stacked = fn_.NewValue(
        derived->type.WithDims(derived->type.dims.Union({tape.steps})));
    stacked->def = scan;
    stacked->index = static_cast<unsigned>(scan->results.size());
    scan->results.push_back(stacked);
    return stacked;
  };
  // Whether every value of a nested tape can be stacked.
  std::function<bool(const Tape&)> can_stack = [&](const Tape& inner) {
    return !local.contains(inner.steps) &&
           llvm::all_of(inner.states, stackable) &&
           llvm::all_of(
               inner.residuals,
               [&](const auto& kept) { return stackable(kept.second); }) &&
           llvm::all_of(inner.nested, [&](const auto& loop) {
             return can_stack(loop.second);
           });
  };
  std::function<Tape(const Tape&)> stack_tape = [&](const Tape& inner) {
    Tape out;
    out.steps = inner.steps;
    out.iterator_dim = inner.iterator_dim;
    for (Value* state : inner.states) out.states.push_back(stack(state));
    for (const Value* value : inner.residual_order)
      out.Keep(value, stack(inner.residuals.lookup(value)));
    for (const auto& [loop, nested] : inner.nested)
      out.nested.emplace_back(loop, stack_tape(nested));
    return out;
  };
  llvm::DenseSet<const Value*> invariant = LoopInvariants(body);
  // The work of redoing each value that is not kept (see the Note).
  llvm::DenseMap<const Value*, int64_t> redo;
  for (const auto& inner : body.ops) {
    if (inner->kind == OpKind::Yield) break;
    if (IsCheapToRedo(*inner) || inner->results.empty() ||
        invariant.contains(inner->results[0])) {
      // A read of a redone value redoes it.
      int64_t cost = OperandsRedoCost(*inner, redo);
      for (const Value* result : inner->results) redo[result] = cost;
      continue;
    }
    if (std::optional<int64_t> cost = RedoCost(*inner, redo);
        cost && opt::RecomputingIsCheaper(*cost)) {
      redo[inner->results[0]] = *cost;
      continue;
    }
    if (!llvm::all_of(inner->results,
                      [&](const Value* v) { return stackable(P(v)); }))
      continue;
    auto loop_tape = tapes_.find(inner.get());
    if (loop_tape != tapes_.end()) {
      if (!can_stack(loop_tape->second)) continue;
      tape.nested.emplace_back(inner.get(), stack_tape(loop_tape->second));
    }
    for (const Value* result : inner->results)
      tape.Keep(result, stack(P(result)));
  }
  b_.Yield(yields);
  return llvm::Error::success();
}

Dim* ReverseBuilder::StepsDim(const std::string& name, Value* count) {
  Dim* steps = fn_.NewOuterDim(name, std::nullopt, nullptr);
  auto define = [&](Value* known) {
    b_.DimDef(steps,
              b_.Binary(OpKind::Max, known, b_.IntConst(ElemKind::I64, 0)));
  };
  if (Value* before = outer_scan_ ? BeforeOuterScan(count) : nullptr)
    EmitBeforeOuterScan([&] { define(before); });
  else
    define(count);
  return steps;
}

void ReverseBuilder::EmitBeforeOuterScan(llvm::function_ref<void()> emit) {
  // Emitted at the end of the scan's block, which the scan ends while it
  // is being built, then the scan is moved back to the end.
  Block& block = *outer_scan_->parent;
  {
    ir::InsertionGuard guard(b_);
    b_.SetInsertionBlock(&block);
    emit();
  }
  auto scan = llvm::find_if(
      block.ops, [&](const auto& op) { return op.get() == outer_scan_; });
  std::rotate(scan, scan + 1, block.ops.end());
}

Value* ReverseBuilder::BeforeOuterScan(Value* value) {
  if (value->def == nullptr)  // the function's arguments and sizes are known
    return value->block == fn_.body.get() ||
                   llvm::is_contained(fn_.size_params, value)
               ? value
               : nullptr;
  const Op& def = *value->def;
  if (def.parent == outer_scan_->parent) return value;
  bool arithmetic = def.kind == OpKind::Add || def.kind == OpKind::Sub ||
                    def.kind == OpKind::Mul || def.kind == OpKind::Max ||
                    def.kind == OpKind::Min;
  bool leaf = def.kind == OpKind::Const ||
              (def.kind == OpKind::Size &&
               (def.dims[0]->constant ||
                (def.dims[0]->size && BeforeOuterScan(def.dims[0]->size))));
  if (!arithmetic && !leaf) return nullptr;
  CloneMap operands;
  for (Value* operand : def.operands) {
    Value* before = BeforeOuterScan(operand);
    if (!before) return nullptr;
    operands.values[operand] = before;
  }
  Op* copy = nullptr;
  EmitBeforeOuterScan([&] { copy = transforms::CloneOp(b_, def, operands); });
  return copy->result();
}

bool ReverseBuilder::ReadFromTape(const Op& op, const Tape& tape, Value* step) {
  if (op.results.empty() || !tape.residuals.contains(op.results[0]))
    return false;
  for (const Value* result : op.results)
    forward_.values[result] = b_.Gather(tape.residuals.lookup(result), {step});
  for (const auto& [loop, inner] : tape.nested) {
    if (loop != &op) continue;
    Tape read = ReadTape(inner, step);
    if (loop->kind == OpKind::Loop && loop->dims.empty())
      read.lo = P(loop->operands[0]);
    tapes_[loop] = std::move(read);
  }
  return true;
}

Tape ReverseBuilder::ReadTape(const Tape& stacked, Value* step) {
  Tape tape;
  tape.steps = stacked.steps;
  tape.iterator_dim = stacked.iterator_dim;
  for (Value* state : stacked.states)
    tape.states.push_back(b_.Gather(state, {step}));
  for (const Value* value : stacked.residual_order)
    tape.Keep(value, b_.Gather(stacked.residuals.lookup(value), {step}));
  for (const auto& [loop, inner] : stacked.nested)
    tape.nested.emplace_back(loop, ReadTape(inner, step));
  return tape;
}

llvm::Error ReverseBuilder::BackwardLoop(const Op& op, const Block& body,
                                         const Tape& tape) {
  if (!tape.steps) return Unsupported(op, "this loop");
  bool is_loop = op.kind == OpKind::Loop;
  size_t state = is_loop ? op.operands.size() - 2 : op.operands.size();
  size_t arg_offset = is_loop ? 1 : 0;
  std::vector<const Value*> captures;
  std::vector<const Op*> row_reads;
  for (const Value* capture : CapturesOf(op)) {
    if (!Varied(capture)) continue;
    if (auto reads = RowReads(body, capture, is_loop))
      row_reads.insert(row_reads.end(), reads->begin(), reads->end());
    else
      captures.push_back(capture);
  }
  std::vector<size_t> float_state;
  for (size_t i = 0; i < state; ++i)
    if (Varied(body.args[i + arg_offset])) float_state.push_back(i);
  // The carry: adjoints of the float state, then of the captured values;
  // then, stacked, each row read's adjoint and indices.
  std::vector<Value*> operands = {b_.IntConst(ElemKind::I64, 0),
                                  b_.Size(tape.steps)};
  std::vector<Type> types;
  for (size_t i : float_state) {
    Value* seed = Adjoint(op.results[i]);
    Type type = ForwardType(op.results[i]->type);
    operands.push_back(seed ? b_.Broadcast(seed, type.dims) : Zero(type));
    types.push_back(type);
  }
  for (const Value* capture : captures) {
    Type type = ForwardType(capture->type);
    operands.push_back(Zero(type));
    types.push_back(type);
  }
  size_t carried = types.size();
  auto stacked = [&](const Value* value) {
    Type type = ForwardType(value->type);
    return type.WithDims(type.dims.Union({tape.steps}));
  };
  for (const Op* read : row_reads)
    for (size_t i = 0; i < read->operands.size(); ++i)
      types.push_back(stacked(i == 0 ? read->result() : read->operands[i]));
  Op* reverse = b_.Create(OpKind::Loop, operands, types);
  reverse->dims = {tape.steps};
  reverse->loc = op.loc;
  std::vector<Type> arg_types = {Type{ElemKind::Index, tape.steps, {}}};
  arg_types.insert(arg_types.end(), types.begin(), types.begin() + carried);
  {
    ir::InsertionGuard guard(b_);
    Block* region = b_.AddRegion(reverse, arg_types);
    b_.SetInsertionBlock(region);
    // Iteration k = steps - 1 - j, read from the tape.
    Value* last = b_.Binary(OpKind::Sub, b_.Size(tape.steps),
                            b_.IntConst(ElemKind::I64, 1));
    Value* position = b_.Binary(OpKind::Sub, last,
                                b_.Convert(region->args[0], ElemKind::I64));
    Value* k = b_.Convert(position, ElemKind::Index, tape.steps);
    // The iterator as the body knows it: an index of the loop's dim, or
    // lo + position for a range loop.
    Value* iterator = nullptr;
    if (tape.iterator_dim)
      iterator = b_.Convert(position, ElemKind::Index, tape.iterator_dim);
    else if (tape.lo)
      iterator = b_.Binary(OpKind::Add, tape.lo, position);
    if (is_loop) forward_.values[body.args[0]] = iterator;
    for (size_t i = 0; i < state; ++i)
      forward_.values[body.args[i + arg_offset]] =
          b_.Gather(tape.states[i], {k});
    // Seeds: the state's adjoint, and each stacked output's at k.
    std::vector<Value*> seeds(body.terminator()->operands.size(), nullptr);
    for (size_t j = 0; j < float_state.size(); ++j)
      seeds[float_state[j]] = region->args[1 + j];
    for (size_t i = state; i < op.results.size(); ++i)
      if (Value* d_out = Adjoint(op.results[i]))
        seeds[i] = b_.Gather(
            b_.Broadcast(d_out, ForwardType(op.results[i]->type).dims),
            {iterator});
    std::vector<const Value*> wanted;
    for (size_t i : float_state) wanted.push_back(body.args[i + arg_offset]);
    wanted.insert(wanted.end(), captures.begin(), captures.end());
    for (const Op* read : row_reads) wanted.push_back(read->result());
    auto adjoints = ReverseBlock(body, seeds, wanted, &tape, k);
    if (!adjoints) return adjoints.takeError();
    std::vector<Value*> yields;
    for (size_t j = 0; j < float_state.size(); ++j) {
      Value* d = (*adjoints)[j];
      yields.push_back(d ? b_.Broadcast(d, types[j].dims) : Zero(types[j]));
    }
    for (size_t c = 0; c < captures.size(); ++c) {
      Value* acc = region->args[1 + float_state.size() + c];
      Value* d = (*adjoints)[float_state.size() + c];
      yields.push_back(d ? b_.Binary(OpKind::Add, acc, d) : acc);
    }
    for (size_t r = 0; r < row_reads.size(); ++r) {
      const Op* read = row_reads[r];
      Value* d = (*adjoints)[float_state.size() + captures.size() + r];
      Type type = ForwardType(read->result()->type);
      yields.push_back(d ? b_.Broadcast(d, type.dims) : Zero(type));
      for (size_t i = 1; i < read->operands.size(); ++i)
        yields.push_back(P(read->operands[i]));
    }
    b_.Yield(yields);
  }
  size_t first_init = is_loop ? 2 : 0;
  for (size_t j = 0; j < float_state.size(); ++j)
    Accumulate(op.operands[first_init + float_state[j]], reverse->results[j]);
  for (size_t c = 0; c < captures.size(); ++c)
    Accumulate(captures[c], reverse->results[float_state.size() + c]);
  size_t next = carried;
  for (const Op* read : row_reads) {
    Value* rows = reverse->results[next++];
    std::vector<Value*> indices;
    for (size_t i = 1; i < read->operands.size(); ++i)
      indices.push_back(reverse->results[next++]);
    Accumulate(
        read->operands[0],
        b_.ScatterAdd(rows, indices, ForwardType(read->operands[0]->type)));
  }
  return llvm::Error::success();
}

// Note [Rows read per iteration]
// A loop over k that reads a captured array only at points fixed by k
// (`w[lay: k]`) adds to its adjoint one row per iteration. Carried as an
// accumulator, each iteration would add a whole array of zeros but for
// that row; instead the backward loop stacks each read's adjoint and its
// indices over the steps, and one scatter_add after the loop adds them in.
std::optional<std::vector<const Op*>> RowReads(const Block& body,
                                               const Value* capture,
                                               bool is_loop) {
  // Values fixed by the iteration: the iterator, constants and sizes, and
  // region-free ops of them.
  llvm::DenseSet<const Value*> fixed;
  if (is_loop) fixed.insert(body.args[0]);
  std::vector<const Op*> reads;
  for (const auto& op : body.ops) {
    if (op->regions.empty() && llvm::all_of(op->operands, [&](const Value* v) {
          return fixed.contains(v);
        }))
      fixed.insert(op->results.begin(), op->results.end());
    if (!llvm::is_contained(op->operands, capture)) {
      bool nested_use = false;
      for (const auto& region : op->regions)
        transforms::WalkOps(*region, [&](Op& inner) {
          nested_use |= llvm::is_contained(inner.operands, capture);
        });
      if (nested_use) return std::nullopt;
      continue;
    }
    if (op->kind != OpKind::Gather || op->operands[0] != capture ||
        !llvm::all_of(llvm::drop_begin(op->operands),
                      [&](const Value* v) { return fixed.contains(v); }))
      return std::nullopt;
    reads.push_back(op.get());
  }
  if (reads.empty()) return std::nullopt;
  return reads;
}

}  // namespace delta::ad::reverse

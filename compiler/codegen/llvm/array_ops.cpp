// Array ops as loop nests over named dims: every array is dense row-major in
// memory order (canonical dim order, but see Note [Physical layout] in
// layout.cpp), so loops run in that order and the innermost one is
// unit-stride (LLVM vectorizes it). Operands are read at the coordinates of
// the dims they have, which is broadcasting by name.
#include <llvm/Support/ErrorHandling.h>

#include "compiler/codegen/llvm/emitter.h"
#include "compiler/transforms/rewrite.h"

namespace delta::codegen {
namespace {

// True if every use of `value` in `map`'s body is a gather of one element
// at the point the body computes, so that the map may write its result
// over `value` there.
bool ReadsOnlyAtPoint(const ir::Op& map, const ir::Value* value) {
  const ir::Block& body = *map.region(0);
  for (const auto& inner : body.ops) {
    for (size_t k = 0; k < inner->operands.size(); ++k) {
      if (inner->operands[k] != value) continue;
      if (inner->kind != ir::OpKind::Gather || k != 0 ||
          !inner->results[0]->type.IsScalar())
        return false;
      for (size_t m = 1; m < inner->operands.size(); ++m) {
        const ir::Value* index = inner->operands[m];
        auto arg = std::find(body.args.begin(), body.args.end(), index);
        if (arg == body.args.end() ||
            map.dims[arg - body.args.begin()] != index->type.index_dim)
          return false;
      }
    }
    for (const auto& region : inner->regions) {
      bool used = false;
      for (const auto& nested : region->ops)
        ForEachUse(*nested, [&](const ir::Value* used_value) {
          used |= used_value == value;
        });
      if (used) return false;
    }
  }
  return true;
}

// An index argument of a region (a map's, a reduction's, a loop's over a
// dim) runs over its dim, so a gather at it needs no range check. Inside
// an outlined chunk LLVM could not prove that itself (the chunk's bounds
// are arguments), and the check's branch kept the loop scalar.
bool IsLoopIndex(const ir::Value* value) {
  return value->def == nullptr && value->block != nullptr &&
         value->block->parent != nullptr &&
         value->type.elem == ir::ElemKind::Index;
}

// Whether every index in `value` was checked against its dim where it was
// made, so that a gather need not check it again: a loop index, a
// to_index or an iota, or elements read from one of those. A gather that
// checks is a loop exit, which keeps LLVM from vectorizing its loop: BA's
// forward pass reads cam[cp, cams] at cam_of's indices of each
// observation, converted once by to_index.
bool IsCheckedIndex(const ir::Value* value) {
  if (IsLoopIndex(value)) return true;
  const ir::Op* def = value->def;
  if (def == nullptr) return false;
  switch (def->kind) {
    case ir::OpKind::ToIndex:
    case ir::OpKind::Iota:
      return true;
    case ir::OpKind::Gather:
      return IsCheckedIndex(def->operands[0]);
    default:
      return false;
  }
}

// Note [One-hot dims]: reverse mode assembles the adjoint of a vector that
// a function reads element by element (`cam[cp: 6]`) as a map over the
// vector's dim whose body compares the dim's index with constants and
// selects one of several values (BA's Jacobian: a map over [cp, uv, obs]
// choosing among eleven [obs, comp] arrays). Looped over, every element
// evaluates every compare and reads every array. The dims of a map whose
// index is compared with a value from outside the body, if they are small
// constants, are unrolled inside the loops over the other dims instead:
// each copy of the body sees constant indices, LLVM folds the compares and
// selects away, and copies that compute the same values share them. The
// outer loops run over the large dims, which the pool splits and the
// vectorizer widens.
constexpr int64_t kOneHotDimMax = 16;

// Whether an op of `body` may fail at run time or has an effect, or has
// regions (loops of its own).
bool MayFailInside(const ir::Block& body) {
  for (const auto& inner : body.ops)
    if (inner->kind != ir::OpKind::Yield &&
        (transforms::HasEffects(*inner) || !inner->regions.empty()))
      return true;
  return false;
}

constexpr int64_t kOneHotCopiesMax = 32;

ir::DimList OneHotDims(const ir::Op& map) {
  const ir::Block& body = *map.region(0);
  ir::DimList dims;
  int64_t copies = 1;
  for (const auto& inner : body.ops) {
    if (inner->kind != ir::OpKind::Eq && inner->kind != ir::OpKind::Ne)
      continue;
    for (size_t k = 0; k < 2; ++k) {
      const ir::Value* index = inner->operands[k];
      const ir::Value* other = inner->operands[1 - k];
      auto arg = std::find(body.args.begin(), body.args.end(), index);
      bool outside = other->def != nullptr && other->def->parent != &body;
      if (arg == body.args.end() || !outside) continue;
      const ir::Dim* dim = map.dims[arg - body.args.begin()];
      if (dims.Contains(dim) || !dim->constant ||
          *dim->constant > kOneHotDimMax ||
          copies * *dim->constant > kOneHotCopiesMax)
        continue;
      copies *= *dim->constant;
      dims.Insert(dim);
    }
  }
  // Some dim must remain to loop over.
  if (dims.size() == map.dims.size()) return {};
  return dims;
}

}  // namespace

ArrayView FunctionEmitter::View(const ir::Type& type, llvm::Value* data,
                                bool canonical) {
  ArrayView view;
  view.data = data;
  view.type = type;
  view.strides.resize(type.dims.size());
  std::vector<const ir::Dim*> order =
      canonical
          ? std::vector<const ir::Dim*>(type.dims.begin(), type.dims.end())
          : LoopOrder(type.dims);
  llvm::Value* stride = builder_.getInt64(1);
  for (size_t i = order.size(); i-- > 0;) {
    view.strides[type.dims.IndexOf(order[i])] = stride;
    if (i > 0) stride = builder_.CreateMul(stride, DimSize(order[i]));
  }
  return view;
}

llvm::Value* FunctionEmitter::ElementPointer(const ArrayView& view,
                                             const Coords& coords) {
  llvm::Value* offset = builder_.getInt64(0);
  for (size_t i = 0; i < view.type.dims.size(); ++i) {
    auto it = coords.find(view.type.dims[i]);
    if (it == coords.end())
      llvm::report_fatal_error("codegen: no coordinate for dim " +
                               llvm::Twine(view.type.dims[i]->name));
    offset = builder_.CreateAdd(
        offset, builder_.CreateMul(it->second, view.strides[i]));
  }
  return builder_.CreateInBoundsGEP(MemoryType(view.type.elem), view.data,
                                    offset);
}

llvm::Value* FunctionEmitter::LoadElement(const ArrayView& view,
                                          const Coords& coords) {
  llvm::LoadInst* load = builder_.CreateLoad(MemoryType(view.type.elem),
                                             ElementPointer(view, coords));
  if (access_group_ != nullptr)
    load->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
  llvm::Value* value = load;
  if (view.type.elem == ir::ElemKind::Bool)
    value = builder_.CreateTrunc(value, builder_.getInt1Ty());
  return value;
}

void FunctionEmitter::StoreElement(const ArrayView& view, const Coords& coords,
                                   llvm::Value* value) {
  StoreAt(ElementPointer(view, coords), view.type.elem, value);
}

void FunctionEmitter::StoreAt(llvm::Value* pointer, ir::ElemKind elem,
                              llvm::Value* value) {
  if (elem == ir::ElemKind::Bool)
    value = builder_.CreateZExt(value, builder_.getInt8Ty());
  llvm::StoreInst* store = builder_.CreateStore(value, pointer);
  if (access_group_ != nullptr)
    store->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
}

Operand FunctionEmitter::Prepare(const ir::Value* value) {
  Operand operand;
  if (value->type.IsScalar()) {
    operand.scalar = Get(value);
    return operand;
  }
  operand.is_array = true;
  operand.array = View(value->type, Get(value));
  return operand;
}

llvm::Value* FunctionEmitter::Read(const Operand& operand,
                                   const Coords& coords) {
  return operand.is_array ? LoadElement(operand.array, coords) : operand.scalar;
}

std::pair<llvm::Value*, llvm::Value*> FunctionEmitter::DimRange(
    const ir::Dim* dim) {
  auto range = dim_ranges_.find(dim);
  if (range != dim_ranges_.end()) return range->second;
  return {builder_.getInt64(0), DimSize(dim)};
}

void FunctionEmitter::EmitLoopNest(llvm::ArrayRef<const ir::Dim*> dims,
                                   Coords& coords,
                                   const std::function<void()>& body,
                                   llvm::MDNode* parallel_accesses) {
  if (dims.empty()) {
    body();
    return;
  }
  const ir::Dim* dim = dims.front();
  bool blocked = dim_ranges_.contains(dim);
  // An innermost dim of a few elements inside another loop is unrolled
  // here, so that the loop around it is the innermost one, which the
  // vectorizer widens (LLVM's own full unrolling gives up on long bodies,
  // such as a fused map's over [obs, comp] with comp = 2).
  if (dims.size() == 1 && !coords.empty() && dim->constant && !blocked &&
      *dim->constant <= kUnrolledDimMax) {
    for (int64_t i = 0; i < *dim->constant; ++i) {
      coords[dim] = builder_.getInt64(i);
      body();
    }
    coords.erase(dim);
    return;
  }
  auto [lo, hi] = DimRange(dim);
  EmitFor(
      lo, hi,
      [&](llvm::Value* i) {
        coords[dim] = i;
        EmitLoopNest(dims.drop_front(), coords, body, parallel_accesses);
        coords.erase(dim);
      },
      parallel_accesses);
}

llvm::Value* FunctionEmitter::EmitTabulate(
    const ir::Type& type, const std::function<llvm::Value*(Coords&)>& element,
    llvm::Value* into) {
  Coords coords;
  if (type.IsScalar()) return element(coords);
  llvm::Value* result = into != nullptr ? into : Allocate(type);
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> dims = LoopOrder(type.dims);
  EmitParallelNest(dims, coords, ElementCount(type.dims),
                   [&] { StoreElement(view, coords, element(coords)); });
  return result;
}

// See Note [In-place array ops] in docs/internals/codegen.md.
llvm::Value* FunctionEmitter::ReusableOperand(const ir::Op& op,
                                              const ir::Type& type) {
  // With a GPU, an operand may have a device copy that a write on the host
  // would leave stale (Note [Data movement] in docs/gpu.md).
  if (owned_ == nullptr || type.IsScalar() || module_.hooks != nullptr)
    return nullptr;
  std::vector<const ir::Value*> candidates;
  if (op.kind == ir::OpKind::Map)
    ForEachUse(op,
               [&](const ir::Value* value) { candidates.push_back(value); });
  else  // an elementwise op
    candidates.assign(op.operands.begin(), op.operands.end());
  for (const ir::Value* value : candidates) {
    if (value->type.IsScalar() || !(value->type.dims == type.dims) ||
        ElemBytes(value->type.elem) != ElemBytes(type.elem) ||
        !owned_->contains(value))
      continue;
    auto it = last_use_->find(value);
    if (it == last_use_->end() || it->second != op_index_) continue;
    if (op.kind == ir::OpKind::Map && !ReadsOnlyAtPoint(op, value)) continue;
    owned_->erase(value);
    return Get(value);
  }
  return nullptr;
}

llvm::Value* FunctionEmitter::Destination(const ir::Value* result) const {
  auto destination = destinations_.find(result);
  return destination != destinations_.end() ? destination->second : nullptr;
}

llvm::Value* FunctionEmitter::ResultBuffer(const ir::Op& op,
                                           const ir::Value* result) {
  if (llvm::Value* destination = Destination(result)) return destination;
  return ReusableOperand(op, result->type);
}

void FunctionEmitter::EmitElementwise(const ir::Op& op) {
  std::vector<Operand> operands;
  for (const ir::Value* value : op.operands) operands.push_back(Prepare(value));
  Set(op.results[0], EmitTabulate(
                         op.results[0]->type,
                         [&](Coords& coords) -> llvm::Value* {
                           std::vector<llvm::Value*> x;
                           for (const Operand& operand : operands)
                             x.push_back(Read(operand, coords));
                           if (op.kind == ir::OpKind::Select)
                             return builder_.CreateSelect(x[0], x[1], x[2]);
                           if (x.size() == 1) return EmitUnaryScalar(op, x[0]);
                           return EmitBinaryScalar(op, x[0], x[1]);
                         },
                         ResultBuffer(op, op.results[0])));
}

// The dims of `op` that EmitMap unrolls inside its loops: the one-hot
// dims (Note [One-hot dims]) and, like EmitLoopNest, an innermost dim of
// a few elements; never a blocked dim, and never every dim.
ir::DimList FunctionEmitter::UnrolledMapDims(const ir::Op& op) {
  ir::DimList unrolled;
  for (const ir::Dim* dim : OneHotDims(op))
    if (!dim_ranges_.contains(dim)) unrolled.Insert(dim);
  std::vector<const ir::Dim*> order = LoopOrder(ir::DimList(op.dims));
  auto small = [&](const ir::Dim* dim) {
    return order.size() > 1 && dim->constant && !dim_ranges_.contains(dim) &&
           *dim->constant <= kUnrolledDimMax;
  };
  if (small(order.back())) unrolled.Insert(order.back());
  // Note [Small dims outermost] in layout.cpp.
  if (order.front() == module_.layout.outermost && small(order.front()))
    unrolled.Insert(order.front());
  if (unrolled.size() == op.dims.size()) return {};
  return unrolled;
}

void FunctionEmitter::EmitMap(const ir::Op& op) {
  std::vector<ArrayView> results;
  for (const ir::Value* result : op.results) {
    llvm::Value* into = ResultBuffer(op, result);
    results.push_back(
        View(result->type, into != nullptr ? into : Allocate(result->type)));
  }
  const ir::Block& body = *op.region(0);
  const ir::Op* yield = body.terminator();
  // Each point runs the whole body: count it as a few elements of work.
  llvm::Value* work = builder_.CreateMul(
      ElementCount(ir::DimList(op.dims)),
      builder_.getInt64(static_cast<int64_t>(body.ops.size())));
  // The unrolled dims' points run one after the other inside the loops
  // over the rest, and their scalar results are stored after the last
  // one: LLVM cannot tell that the stores do not overwrite what the next
  // copy reads, so stores in between would keep it from sharing the
  // values that copies compute alike (a forward pass that fuse-maps
  // copied into a reverse pass over one more dim).
  ir::DimList unrolled = UnrolledMapDims(op);
  std::vector<const ir::Dim*> loops =
      LoopOrder(ir::DimList(op.dims).Minus(unrolled));
  // LLVM's cost model judged BA's fused forward and reverse pass (two
  // copies sharing most values) not worth vectorizing, wrongly: 28 -> 19
  // ms; and its forward pass with indirect reads of the cameras, 16 ->
  // 13.4 ms. A body that cannot fail has one exit, so the loop is legal
  // to vectorize (Note [One-hot dims] in docs/internals/codegen.md).
  bool outer_force = force_vectorize_;
  force_vectorize_ = !MayFailInside(body);
  Coords coords;
  EmitParallelNest(loops, coords, work, [&] {
    struct Store {
      llvm::Value* pointer;
      ir::ElemKind elem;
      llvm::Value* value;
    };
    std::vector<Store> stores;
    auto emit_point = [&] {
      std::vector<llvm::Value*> args;
      for (const ir::Dim* dim : op.dims) args.push_back(coords[dim]);
      EmitRegion(
          body, args, std::vector<bool>(args.size(), false), YieldMode::Borrow,
          [&](const std::vector<llvm::Value*>& values) {
            for (size_t i = 0; i < values.size(); ++i) {
              const ir::Type& type = yield->operands[i]->type;
              if (type.IsScalar()) {
                stores.push_back({ElementPointer(results[i], coords),
                                  results[i].type.elem, values[i]});
                continue;
              }
              // A yielded array fills the slice of the result at this
              // point.
              if (module_.hooks != nullptr)
                module_.hooks->BeforeHostRead(*this, type, values[i]);
              ArrayView slice = View(type, values[i]);
              std::vector<const ir::Dim*> dims = LoopOrder(type.dims);
              EmitLoopNest(dims, coords, [&] {
                StoreElement(results[i], coords, LoadElement(slice, coords));
              });
            }
          });
    };
    // Every point of the unrolled dims, the last dim fastest.
    std::function<void(size_t)> unroll = [&](size_t k) {
      if (k == unrolled.size()) {
        emit_point();
        return;
      }
      for (int64_t i = 0; i < *unrolled[k]->constant; ++i) {
        coords[unrolled[k]] = builder_.getInt64(i);
        unroll(k + 1);
      }
      coords.erase(unrolled[k]);
    };
    unroll(0);
    for (const Store& store : stores)
      StoreAt(store.pointer, store.elem, store.value);
  });
  force_vectorize_ = outer_force;
  for (size_t i = 0; i < results.size(); ++i)
    Set(op.results[i], results[i].data);
}

// See Note [Reduction loop order] in docs/internals/codegen.md.
void FunctionEmitter::EmitReduce(const ir::Op& op) {
  if (EmitContraction(op)) return;
  const ir::Type& type = op.results[0]->type;
  ir::ElemKind elem = type.elem;
  ir::DimList reduced(op.dims);
  ir::DimList all = type.dims.Union(reduced);
  std::vector<const ir::Dim*> all_dims(all.begin(), all.end());
  Operand operand;
  if (op.regions.empty()) operand = Prepare(op.operands[0]);
  auto element = [&](Coords& coords) -> llvm::Value* {
    if (op.regions.empty()) return Read(operand, coords);
    std::vector<llvm::Value*> args;
    for (const ir::Dim* dim : all_dims) args.push_back(coords[dim]);
    return EmitRegionValues(*op.region(0), args,
                            std::vector<bool>(args.size(), false))[0];
  };
  // The innermost reduced dims accumulate in a register; the outer ones,
  // if any, accumulate into the result in memory.
  std::vector<const ir::Dim*> loop_dims = LoopOrder(all);
  size_t split = loop_dims.size();
  while (split > 0 && reduced.Contains(loop_dims[split - 1])) --split;
  llvm::ArrayRef<const ir::Dim*> outer(loop_dims.data(), split);
  llvm::ArrayRef<const ir::Dim*> inner(loop_dims.data() + split,
                                       loop_dims.size() - split);
  bool outer_reduces = false;
  for (const ir::Dim* dim : outer) outer_reduces |= reduced.Contains(dim);

  llvm::AllocaInst* acc = EntryAlloca(RegisterType(elem), "acc");
  auto accumulate = [&](Coords& coords) {
    EmitLoopNest(inner, coords, [&] {
      llvm::Value* x = element(coords);
      llvm::Value* old = builder_.CreateLoad(acc->getAllocatedType(), acc);
      llvm::Value* next = ReduceCombine(op.reduce, elem, old, x);
      // At -O3 a float sum may be reassociated, so that the vectorizer can
      // split it into vector lanes (results change in the last bits).
      if (auto* add = llvm::dyn_cast<llvm::Instruction>(next);
          add != nullptr && module_.fast_math &&
          llvm::isa<llvm::FPMathOperator>(add))
        add->setHasAllowReassoc(true);
      builder_.CreateStore(next, acc);
    });
  };
  Coords coords;
  if (type.IsScalar()) {
    builder_.CreateStore(ReduceIdentity(op.reduce, elem), acc);
    accumulate(coords);
    Set(op.results[0], builder_.CreateLoad(acc->getAllocatedType(), acc));
    return;
  }
  llvm::Value* result = Destination(op.results[0]);
  if (result == nullptr) result = Allocate(type);
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> result_dims = LoopOrder(type.dims);
  if (outer_reduces) {
    EmitLoopNest(result_dims, coords, [&] {
      StoreElement(view, coords, ReduceIdentity(op.reduce, elem));
    });
  }
  auto reduce_point = [&] {
    builder_.CreateStore(outer_reduces ? LoadElement(view, coords)
                                       : ReduceIdentity(op.reduce, elem),
                         acc);
    accumulate(coords);
    StoreElement(view, coords,
                 builder_.CreateLoad(acc->getAllocatedType(), acc));
  };
  // Result points are independent unless an outer loop reduces too.
  if (outer_reduces)
    EmitLoopNest(outer, coords, reduce_point);
  else
    EmitParallelNest(outer, coords, ElementCount(all), reduce_point);
  Set(op.results[0], result);
}

void FunctionEmitter::EmitArgReduce(const ir::Op& op) {
  const ir::Type& type = op.results[0]->type;
  const ir::Dim* dim = op.dims[0];
  bool is_max = op.reduce == ir::ReduceKind::Argmax;
  ir::ElemKind elem = op.regions.empty()
                          ? op.operands[0]->type.elem
                          : op.region(0)->terminator()->operands[0]->type.elem;
  ir::DimList all = type.dims.Union(ir::DimList{dim});
  std::vector<const ir::Dim*> all_dims(all.begin(), all.end());
  Operand operand;
  if (op.regions.empty()) operand = Prepare(op.operands[0]);
  // An empty dim has no arg-extremum (unless there is nothing to compute).
  llvm::Value* empty = builder_.CreateAnd(
      builder_.CreateICmpEQ(DimSize(dim), builder_.getInt64(0)),
      builder_.CreateICmpNE(ElementCount(type.dims), builder_.getInt64(0)));
  EmitCheck(
      builder_.CreateNot(empty), op.loc,
      ir::ReduceName(op.reduce).str() + " over the empty dim " + dim->name);
  llvm::AllocaInst* best = EntryAlloca(RegisterType(elem), "best");
  llvm::AllocaInst* best_index = EntryAlloca(builder_.getInt64Ty(), "argbest");
  // Loops over the result dims, then over `dim` in increasing order, so
  // that ties keep the lowest index.
  Set(op.results[0], EmitTabulate(type, [&](Coords& coords) -> llvm::Value* {
        builder_.CreateStore(
            ReduceIdentity(is_max ? ir::ReduceKind::Max : ir::ReduceKind::Min,
                           elem),
            best);
        builder_.CreateStore(builder_.getInt64(0), best_index);
        EmitLoopNest({dim}, coords, [&] {
          llvm::Value* x;
          if (op.regions.empty()) {
            x = Read(operand, coords);
          } else {
            std::vector<llvm::Value*> args;
            for (const ir::Dim* d : all_dims) args.push_back(coords[d]);
            x = EmitRegionValues(*op.region(0), args,
                                 std::vector<bool>(args.size(), false))[0];
          }
          llvm::Value* old =
              builder_.CreateLoad(best->getAllocatedType(), best);
          llvm::Value* better;
          if (ir::IsFloat(elem)) {
            better = is_max ? builder_.CreateFCmpOGT(x, old)
                            : builder_.CreateFCmpOLT(x, old);
            // The first NaN wins: max and min propagate NaN.
            better = builder_.CreateOr(
                better, builder_.CreateAnd(builder_.CreateFCmpUNO(x, x),
                                           builder_.CreateFCmpORD(old, old)));
          } else if (elem == ir::ElemKind::Bool) {
            better = is_max ? builder_.CreateICmpUGT(x, old)
                            : builder_.CreateICmpULT(x, old);
          } else {
            better = is_max ? builder_.CreateICmpSGT(x, old)
                            : builder_.CreateICmpSLT(x, old);
          }
          builder_.CreateStore(builder_.CreateSelect(better, x, old), best);
          llvm::Value* old_index =
              builder_.CreateLoad(builder_.getInt64Ty(), best_index);
          builder_.CreateStore(
              builder_.CreateSelect(better, coords[dim], old_index),
              best_index);
        });
        return builder_.CreateLoad(builder_.getInt64Ty(), best_index);
      }));
}

void FunctionEmitter::EmitReduceCustom(const ir::Op& op) {
  const ir::Type& type = op.results[0]->type;
  const ir::Dim* dim = op.dims[0];
  const ir::Block& body = *op.region(0);
  const ir::Type& acc_type = body.args[0]->type;
  const ir::Type& elem_type = body.args[1]->type;
  Operand init = Prepare(op.operands[0]);
  Operand x = Prepare(op.operands[1]);
  if (acc_type.IsScalar() && elem_type.IsScalar()) {
    // Element by element: the region combines scalars.
    llvm::AllocaInst* acc = EntryAlloca(RegisterType(type.elem), "acc");
    Set(op.results[0], EmitTabulate(type, [&](Coords& coords) -> llvm::Value* {
          builder_.CreateStore(Read(init, coords), acc);
          EmitLoopNest({dim}, coords, [&] {
            llvm::Value* old =
                builder_.CreateLoad(acc->getAllocatedType(), acc);
            llvm::Value* next = EmitRegionValues(body, {old, Read(x, coords)},
                                                 {false, false})[0];
            builder_.CreateStore(next, acc);
          });
          return builder_.CreateLoad(acc->getAllocatedType(), acc);
        }));
    return;
  }
  // The region combines arrays: at each point of the result's other dims,
  // fold the slices of x along `dim` into a copy of init's slice.
  auto slice = [&](const ir::Type& slice_type, const Operand& from,
                   const Coords& at) -> llvm::Value* {
    if (slice_type.IsScalar()) return Read(from, at);
    llvm::Value* data = Allocate(slice_type);
    ArrayView view = View(slice_type, data);
    Coords coords = at;
    std::vector<const ir::Dim*> dims = LoopOrder(slice_type.dims);
    EmitLoopNest(dims, coords,
                 [&] { StoreElement(view, coords, Read(from, coords)); });
    return data;
  };
  llvm::Value* result = type.IsScalar() ? nullptr : Allocate(type);
  ArrayView view;
  if (result != nullptr) view = View(type, result);
  llvm::AllocaInst* acc = EntryAlloca(ValueType(acc_type), "acc");
  std::vector<bool> owned = {!acc_type.IsScalar(), !elem_type.IsScalar()};
  ir::DimList outer = type.dims.Minus(acc_type.dims);
  std::vector<const ir::Dim*> outer_dims(outer.begin(), outer.end());
  Coords coords;
  EmitLoopNest(outer_dims, coords, [&] {
    builder_.CreateStore(slice(acc_type, init, coords), acc);
    EmitFor(builder_.getInt64(0), DimSize(dim), [&](llvm::Value* k) {
      Coords at = coords;
      at[dim] = k;
      llvm::Value* b = slice(elem_type, x, at);
      llvm::Value* a = builder_.CreateLoad(acc->getAllocatedType(), acc);
      EmitRegion(body, {a, b}, owned, YieldMode::Transfer,
                 [&](const std::vector<llvm::Value*>& values) {
                   builder_.CreateStore(values[0], acc);
                 });
    });
    llvm::Value* folded = builder_.CreateLoad(acc->getAllocatedType(), acc);
    if (acc_type.IsScalar()) {
      // A scalar result is read from `acc` after the nest.
      if (result != nullptr) StoreElement(view, coords, folded);
      return;
    }
    ArrayView piece = View(acc_type, folded);
    Coords inner = coords;
    std::vector<const ir::Dim*> dims = LoopOrder(acc_type.dims);
    EmitLoopNest(dims, inner,
                 [&] { StoreElement(view, inner, LoadElement(piece, inner)); });
    Free(folded);
  });
  Set(op.results[0], result != nullptr
                         ? result
                         : builder_.CreateLoad(acc->getAllocatedType(), acc));
}

void FunctionEmitter::EmitCumsum(const ir::Op& op) {
  const ir::Type& type = op.results[0]->type;
  const ir::Dim* dim = op.dims[0];
  Operand x = Prepare(op.operands[0]);
  llvm::Value* result = Allocate(type);
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> dims = LoopOrder(type.dims);
  Coords coords;
  EmitLoopNest(dims, coords, [&] {
    llvm::Value* value = Read(x, coords);
    llvm::Value* k = coords[dim];
    // Add the previous prefix (in the result already) unless k == 0.
    llvm::Value* has_previous = builder_.CreateICmpSGT(k, builder_.getInt64(0));
    Coords previous = coords;
    previous[dim] = builder_.CreateSelect(
        has_previous, builder_.CreateSub(k, builder_.getInt64(1)), k);
    llvm::Value* sum = ReduceCombine(ir::ReduceKind::Sum, type.elem,
                                     LoadElement(view, previous), value);
    StoreElement(view, coords, builder_.CreateSelect(has_previous, sum, value));
  });
  Set(op.results[0], result);
}

void FunctionEmitter::EmitIndexCheck(llvm::Value* index, const ir::Dim* dim,
                                     const ir::Loc& loc) {
  llvm::Value* size = DimSize(dim);
  llvm::Value* in_range =
      builder_.CreateAnd(builder_.CreateICmpSGE(index, builder_.getInt64(0)),
                         builder_.CreateICmpSLT(index, size));
  EmitCheck(in_range, loc,
            "index %lld is out of range for dim " + dim->name + " of size %lld",
            index, size);
}

void FunctionEmitter::EmitGather(const ir::Op& op) {
  ArrayView x = View(op.operands[0]->type, Get(op.operands[0]));
  std::vector<Operand> indices;
  for (size_t i = 1; i < op.operands.size(); ++i)
    indices.push_back(Prepare(op.operands[i]));
  Set(op.results[0],
      EmitTabulate(op.results[0]->type, [&](Coords& coords) -> llvm::Value* {
        Coords at = coords;
        for (size_t i = 0; i < indices.size(); ++i) {
          const ir::Value* operand = op.operands[i + 1];
          const ir::Dim* dim = operand->type.index_dim;
          llvm::Value* index = Read(indices[i], coords);
          if (!IsCheckedIndex(operand)) EmitIndexCheck(index, dim, op.loc);
          at[dim] = index;
        }
        return LoadElement(x, at);
      }));
}

void FunctionEmitter::EmitScatterAdd(const ir::Op& op) {
  const ir::Type& type = op.results[0]->type;
  Operand values = Prepare(op.operands[0]);
  std::vector<Operand> indices;
  ir::DimList indexed;
  ir::DimList space = op.operands[0]->type.dims;
  for (size_t i = 1; i < op.operands.size(); ++i) {
    indices.push_back(Prepare(op.operands[i]));
    indexed.Insert(op.operands[i]->type.index_dim);
    space = space.Union(op.operands[i]->type.dims);
  }
  space = space.Union(type.dims.Minus(indexed));
  llvm::Value* result = Allocate(type);
  llvm::Value* bytes = builder_.CreateMul(
      ElementCount(type.dims), builder_.getInt64(ElemBytes(type.elem)));
  builder_.CreateMemSet(result, builder_.getInt8(0), bytes, llvm::Align(64));
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> dims(space.begin(), space.end());
  Coords coords;
  // In canonical order, so that colliding indices add up in the same order
  // as in the interpreter.
  EmitLoopNest(dims, coords, [&] {
    Coords at = coords;
    for (size_t i = 0; i < indices.size(); ++i) {
      const ir::Dim* dim = op.operands[i + 1]->type.index_dim;
      llvm::Value* index = Read(indices[i], coords);
      EmitIndexCheck(index, dim, op.loc);
      at[dim] = index;
    }
    llvm::Value* old = LoadElement(view, at);
    StoreElement(view, at,
                 ReduceCombine(ir::ReduceKind::Sum, type.elem, old,
                               Read(values, coords)));
  });
  Set(op.results[0], result);
}

void FunctionEmitter::EmitBroadcast(const ir::Op& op) {
  Operand x = Prepare(op.operands[0]);
  Set(op.results[0], EmitTabulate(op.results[0]->type, [&](Coords& coords) {
        return Read(x, coords);
      }));
}

void FunctionEmitter::EmitRename(const ir::Op& op) {
  const ir::Dim* from = op.dims[0];
  const ir::Dim* to = op.dims[1];
  llvm::Value* from_size = DimSize(from);
  llvm::Value* to_size = DimSize(to);
  EmitCheck(builder_.CreateICmpEQ(from_size, to_size), op.loc,
            "cannot rename dim " + from->name + " of size %lld to dim " +
                to->name + " of size %lld",
            from_size, to_size);
  Operand x = Prepare(op.operands[0]);
  Set(op.results[0], EmitTabulate(op.results[0]->type, [&](Coords& coords) {
        Coords at = coords;
        at[from] = coords[to];
        return Read(x, at);
      }));
}

void FunctionEmitter::EmitToIndex(const ir::Op& op) {
  const ir::Dim* dim = op.dims[0];
  Operand k = Prepare(op.operands[0]);
  ir::ElemKind from = op.operands[0]->type.elem;
  Set(op.results[0], EmitTabulate(op.results[0]->type, [&](Coords& coords) {
        llvm::Value* index =
            EmitConvert(Read(k, coords), from, ir::ElemKind::I64);
        EmitIndexCheck(index, dim, op.loc);
        return index;
      }));
}

void FunctionEmitter::EmitIota(const ir::Op& op) {
  const ir::Dim* dim = op.dims[0];
  Set(op.results[0], EmitTabulate(op.results[0]->type,
                                  [&](Coords& coords) { return coords[dim]; }));
}

}  // namespace delta::codegen

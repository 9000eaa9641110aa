// Fusion: elementwise chains become maps with scalar bodies, and reductions
// absorb the chain that feeds them.
//
// Note [What fusion fuses]
// A chain grows backwards from a root through operands defined in the same
// block by a fusible op whose result has no other user, so nothing is ever
// computed twice except through a broadcast (an op under a broadcast runs
// once per element of the result, which is the price of not materializing
// it): Note [Fusion cost] in fusion_cost.cpp lets a chain take in such an
// op only while recomputing it costs less than storing it, so a tanh or a
// layer norm under a contraction's extra dims stays a map. Roots are visited
// consumers first, so each chain is maximal. A lone elementwise op stays an
// array op (the backends handle it as one loop anyway); a broadcast, iota
// or map is never a root, since a map of it would only copy it. Scalars
// (constants included) are used from outside the region directly. A
// reduction that is a matrix product (contraction_shape.h) takes in only
// the multiplication: its operands stay arrays for the kernel. A rename
// is a read at another dim's index; it fuses when the dim it renames away
// is free in the chain's index space.
#include "compiler/transforms/opt/fuse_elementwise.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <algorithm>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/contraction_shape.h"
#include "compiler/transforms/opt/fusion_cost.h"
#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

// Whether two dims are known to have one size, so that renaming one to
// the other needs no run-time check.
bool SameSize(const ir::Dim* a, const ir::Dim* b) {
  if (a->constant && b->constant) return *a->constant == *b->constant;
  return a->size != nullptr && a->size == b->size;
}

bool IsFusible(const Op& op) {
  if (op.results.size() != 1 || op.results[0]->type.IsScalar()) return false;
  if (ir::IsElementwiseUnary(op.kind) || ir::IsElementwiseBinary(op.kind))
    return true;
  switch (op.kind) {
    case OpKind::Select:
    case OpKind::Broadcast:
    case OpKind::Iota:
      return true;
    case OpKind::Rename:
      return SameSize(op.dims[0], op.dims[1]);
    case OpKind::Map: {
      const Op* yield = op.regions[0]->terminator();
      return yield->operands[0]->type.IsScalar() &&
             !transforms::HasEffectsDeep(op);
    }
    default:
      return false;
  }
}

bool IsRoot(const Op& op) {
  return IsFusible(op) && op.kind != OpKind::Broadcast &&
         op.kind != OpKind::Iota && op.kind != OpKind::Map;
}

// Whether reduce(mul(a, b)) is a product the matrix kernel takes.
bool IsKernelContraction(const Op& reduce, const Op& producer) {
  if (reduce.reduce != ir::ReduceKind::Sum || producer.kind != OpKind::Mul)
    return false;
  ir::ElemKind elem = reduce.results[0]->type.elem;
  if (elem != ir::ElemKind::F32 && elem != ir::ElemKind::F64) return false;
  const Value* a = producer.operands[0];
  const Value* b = producer.operands[1];
  return ir::ClassifyContraction(reduce.results[0]->type.dims, a->type.dims,
                                 b->type.dims, ir::DimList(reduce.dims))
      .has_value();
}

// An arithmetic op whose array operands each lack some of its dims (an
// outer difference such as `centroids - points` over [n, k, d]): reading
// its operands again per user costs an add, while the result can be far
// larger than them. Fused into every user, even with several, and never
// grown through (its operands stay arrays for its other users).
bool IsCheapBroadcast(const Op& op) {
  switch (op.kind) {
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Select:
      break;
    default:
      return false;
  }
  const ir::DimList& dims = op.results[0]->type.dims;
  for (const Value* operand : op.operands)
    if (!operand->type.IsScalar() && operand->type.dims.size() >= dims.size())
      return false;
  return true;
}

Type ScalarOf(const Type& type) { return type.WithDims({}); }

class Fuser {
 public:
  explicit Fuser(ir::Function& function)
      : function_(function),
        builder_(&function),
        users_(transforms::CountUsers(function)) {}

  bool changed() const { return changed_; }

  void Block(ir::Block& block) {
    for (size_t i = block.ops.size(); i-- > 0;) {
      Op& op = *block.ops[i];
      for (auto& region : op.regions) Block(*region);
      Op* fused = nullptr;
      if (op.kind == OpKind::Reduce && op.regions.empty()) {
        fused = FuseReduce(op);
      } else if (IsRoot(op)) {
        fused = FuseMap(op);
      }
      if (!fused) continue;
      changed_ = true;
      users_ = transforms::CountUsers(function_);
      i = transforms::IndexOf(*fused);
    }
  }

 private:
  // The producer of `operand` that a chain in `block` may take in, or null:
  // fusible, and read only there unless it is a cheap broadcast.
  Op* Fusible(Value* operand, const ir::Block& block) {
    Op* producer = operand->def;
    if (!producer || producer->parent != &block || !IsFusible(*producer) ||
        (users_.lookup(operand) != 1 && !IsCheapBroadcast(*producer)))
      return nullptr;
    return producer;
  }

  static int64_t Saturated(int64_t a, int64_t b) {
    return a > INT64_MAX - b ? INT64_MAX : a + b;
  }

  // The extra work of copying `op` and the chain it would bring in into a
  // loop over `loop` (Note [Fusion cost]).
  int64_t CopyCost(Op& op, const ir::DimList& loop,
                   llvm::DenseMap<const ir::Dim*, const ir::Dim*> read_at) {
    int64_t cost = RecomputeCost(op, ReadsPerElement(op, loop, read_at));
    if (op.kind == OpKind::Rename) read_at[op.dims[1]] = op.dims[0];
    if (users_.lookup(op.results[0]) != 1 && IsCheapBroadcast(op))
      return cost;  // never grown through
    for (Value* operand : op.operands)
      if (Op* producer = Fusible(operand, *op.parent))
        cost = Saturated(cost, CopyCost(*producer, loop, read_at));
    return cost;
  }

  // The ops of the chain ending at `root`, in block order.
  // The root loops over its result's dims; a producer over fewer dims is
  // taken in only while Note [Fusion cost] allows.
  std::vector<Op*> Chain(Op& root) {
    llvm::SmallPtrSet<Op*, 8> members = {&root};
    std::vector<Op*> chain = {&root};
    shared_.clear();
    const ir::DimList& loop = root.results[0]->type.dims;
    // Dims renamed away inside the chain: each reads its target's index,
    // so it must be free (not a dim of the root, not renamed twice).
    ir::DimList renamed = loop;
    // Each rename's target, to the dim it reads there.
    llvm::DenseMap<const ir::Dim*, const ir::Dim*> read_at;
    if (root.kind == OpKind::Rename) {
      renamed.Insert(root.dims[0]);
      read_at[root.dims[1]] = root.dims[0];
    }
    int64_t extra_cost = 0;
    for (size_t next = 0; next < chain.size(); ++next) {
      if (shared_.contains(chain[next])) continue;
      for (Value* operand : chain[next]->operands) {
        Op* producer = Fusible(operand, *root.parent);
        if (!producer || members.contains(producer)) continue;
        // A producer that is recomputed is taken with all it would bring
        // in, or not at all: taking only the top of a costly chain would
        // leave the loop reading several of its arrays instead of one.
        int64_t cost =
            RecomputeCost(*producer, ReadsPerElement(*producer, loop, read_at));
        if (cost > 0 && !RecomputingIsCheaper(Saturated(
                            extra_cost, CopyCost(*producer, loop, read_at))))
          continue;
        if (producer->kind == OpKind::Rename) {
          if (renamed.Contains(producer->dims[0])) continue;
          renamed.Insert(producer->dims[0]);
          read_at[producer->dims[1]] = producer->dims[0];
        }
        if (users_.lookup(operand) != 1) shared_.insert(producer);
        extra_cost += cost;
        members.insert(producer);
        chain.push_back(producer);
      }
    }
    std::sort(chain.begin(), chain.end(), [](Op* a, Op* b) {
      return transforms::IndexOf(*a) < transforms::IndexOf(*b);
    });
    return chain;
  }

  // Emits the body of the chain for one point, whose index in each dim is
  // in `indices`; returns the root's value there.
  Value* Scalarize(const std::vector<Op*>& chain,
                   llvm::DenseMap<const ir::Dim*, Value*> indices) {
    // A rename reads its target's index, which the root gives or a later
    // rename (one that reads this one's result) sets: go from the root.
    for (Op* op : llvm::reverse(chain)) {
      if (op->kind != OpKind::Rename) continue;
      Value* at = builder_.Convert(indices.at(op->dims[1]), ir::ElemKind::I64);
      indices[op->dims[0]] = builder_.ToIndex(op->dims[0], at);
    }
    llvm::DenseMap<Value*, Value*> scalar;
    auto read = [&](Value* value) -> Value* {
      auto it = scalar.find(value);
      if (it != scalar.end()) return it->second;
      if (value->type.IsScalar()) return value;
      std::vector<Value*> at;
      for (const ir::Dim* dim : value->type.dims) at.push_back(indices.at(dim));
      Value* element = builder_.Gather(value, at);
      scalar[value] = element;
      return element;
    };
    for (Op* op : chain) {
      Value* result = op->results[0];
      switch (op->kind) {
        case OpKind::Broadcast:
        case OpKind::Rename:
          scalar[result] = read(op->operands[0]);
          break;
        case OpKind::Iota:
          scalar[result] = indices.at(op->dims[0]);
          break;
        case OpKind::Map: {
          transforms::CloneMap map;
          const ir::Block& body = *op->regions[0];
          for (size_t k = 0; k < op->dims.size(); ++k)
            map.values[body.args[k]] = indices.at(op->dims[k]);
          for (const auto& inner : body.ops) {
            if (inner->kind == OpKind::Yield) {
              scalar[result] = map.Lookup(inner->operands[0]);
              break;
            }
            transforms::CloneOp(builder_, *inner, map);
          }
          break;
        }
        default: {
          std::vector<Value*> operands;
          for (Value* operand : op->operands) operands.push_back(read(operand));
          Op* copy = builder_.Create(op->kind, std::move(operands),
                                     {ScalarOf(result->type)});
          copy->loc = op->loc;
          scalar[result] = copy->results[0];
          break;
        }
      }
    }
    return scalar.at(chain.back()->results[0]);
  }

  // Erases the chain's ops, but not a shared op that other users still
  // read (see IsCheapBroadcast).
  void EraseChain(const std::vector<Op*>& chain) {
    transforms::UserCounts users;
    if (!shared_.empty()) users = transforms::CountUsers(function_);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (shared_.contains(*it) && users.lookup((*it)->results[0]) > 0)
        continue;
      transforms::EraseOp(**it);
    }
    shared_.clear();
  }

  Op* FuseMap(Op& root) {
    std::vector<Op*> chain = Chain(root);
    if (chain.size() < 2) return nullptr;
    const Type& type = root.results[0]->type;
    ir::Block& block = *root.parent;
    Op* map = nullptr;
    builder_.SetLoc(root.loc);
    transforms::InsertAt(builder_, block, transforms::IndexOf(root), [&] {
      map = builder_.Create(OpKind::Map, {}, {type});
      map->dims.assign(type.dims.begin(), type.dims.end());
      ir::Block* body = builder_.AddRegion(map, ir::IndexTypes(type.dims));
      ir::InsertionGuard guard(builder_);
      builder_.SetInsertionBlock(body);
      llvm::DenseMap<const ir::Dim*, Value*> indices;
      for (size_t k = 0; k < type.dims.size(); ++k)
        indices[type.dims[k]] = body->args[k];
      builder_.Yield({Scalarize(chain, indices)});
    });
    map->results[0]->name = root.results[0]->name;
    transforms::ReplaceAllUses(function_, root.results[0], map->results[0]);
    EraseChain(chain);
    return map;
  }

  Op* FuseReduce(Op& reduce) {
    Value* operand = reduce.operands[0];
    Op* producer = operand->def;
    if (!producer || producer->parent != reduce.parent ||
        !IsFusible(*producer) ||
        (users_.lookup(operand) != 1 && !IsCheapBroadcast(*producer)))
      return nullptr;
    // The reduction reads its operand once per element: the producer's
    // dims are the loop's. What the chain takes in behind it is costed by
    // Chain (Note [Fusion cost]).
    // A matrix product keeps its operands: the kernel reads arrays, and
    // computing them inside the loop nest would repeat them per row or
    // column and leave the product to the slow loop (Note [What fusion
    // fuses]).
    // A cheap broadcast that others read too is fused alone and stays for
    // them (IsCheapBroadcast).
    bool shared = users_.lookup(operand) != 1;
    std::vector<Op*> chain = IsKernelContraction(reduce, *producer) || shared
                                 ? std::vector<Op*>{producer}
                                 : Chain(*producer);
    if (shared) shared_ = {producer};
    const ir::DimList& all = operand->type.dims;
    ir::Block* body = builder_.AddRegion(&reduce, ir::IndexTypes(all));
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(body);
    builder_.SetLoc(reduce.loc);
    llvm::DenseMap<const ir::Dim*, Value*> indices;
    for (size_t k = 0; k < all.size(); ++k) indices[all[k]] = body->args[k];
    builder_.Yield({Scalarize(chain, indices)});
    reduce.operands.clear();
    EraseChain(chain);
    return &reduce;
  }

  ir::Function& function_;
  ir::Builder builder_;
  transforms::UserCounts users_;
  // The chain's members that have other users (IsCheapBroadcast).
  llvm::SmallPtrSet<Op*, 4> shared_;
  bool changed_ = false;
};

}  // namespace

bool FuseElementwise(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions) {
    Fuser fuser(*function);
    fuser.Block(*function->body);
    changed |= fuser.changed();
  }
  return changed;
}

}  // namespace delta::opt

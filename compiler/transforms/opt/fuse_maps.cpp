// Map fusion: sibling point-wise loops over the same dims become one.
//
// Note [Map fusion]
// fuse-elementwise fuses chains whose intermediates have one user. What it
// leaves is a graph of maps and elementwise ops over the same dims whose
// values have several users: a projection's shared subterms, the values a
// reverse pass reads twice, an LSTM cell's gates. Each is a loop that
// stores an array that later loops load again. This pass walks each block
// in order and merges every member (a map whose body is scalar ops, or an
// elementwise array op) into the latest group over the same dims, which
// becomes one map with a result per member. Inside it, a member reads an
// earlier member's result as the scalar computed at the same point, so a
// result that nothing outside reads is dead (DCE drops it) and never
// stored. The merged map is placed where the group was, if everything the
// member reads exists there, or else where the member was, if nothing in
// between reads the group. An op with effects (a print, a loop that may
// print) ends every group, so output keeps its order; run-time checks, in
// members or between them, do not: fusing loops that may fail can only
// change which failure is reported. Maps with regions inside stay alone, so
// that one loop that does not vectorize cannot stop a whole group from
// vectorizing.
//
// A member over one more dim than a group, a small constant one that is
// last in canonical order (a reverse pass over [obs, comp] reading the
// forward pass's [obs] values), takes in a copy of the group's body: code
// generation unrolls such an innermost dim (kUnrolledDimMax), so the
// copies compute the same scalars at each point and LLVM keeps one. The
// group stays for its other readers, if any; without them DCE removes it,
// and its values are never stored.
//
// Note [Shifted reads]
// A member that reads a group's result at another point than its own (a
// stencil: RK4's stages read the previous one at i - 1) would keep the two
// loops apart, each stage storing what the next loads. Instead the ops of
// the group's body that compute the result (its slice) are copied to the
// read, evaluated at the read's indices, and the member merges. The copy
// costs its float ops per element (ElementCost; integer ops compute
// positions and masks); merging saves a store and a reload of each value
// that crosses between the loops and a load of each array both read. The
// copy is made when the cost per saved value passes RecomputingIsCheaper.
// See docs/internals/passes.md, "Shifted reads".
#include "compiler/transforms/opt/fuse_maps.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <optional>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/index_range.h"
#include "compiler/transforms/opt/fusion_cost.h"
#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

// An elementwise op over an array, or a `to_index` of one (see
// CannotFailIn).
bool IsElementwiseArrayOp(const Op& op) {
  if (op.results.size() != 1 || op.results[0]->type.IsScalar()) return false;
  if (op.kind == OpKind::ToIndex) return true;
  if (transforms::HasEffects(op)) return false;
  return ir::IsElementwiseUnary(op.kind) || ir::IsElementwiseBinary(op.kind) ||
         op.kind == OpKind::Select;
}

// A gather of a whole array at index arrays over its result's dims (the
// array-level form of a shifted read `y[n: k]` under a map): a member once
// made a map that reads the index arrays at its points.
bool IsElementwiseGather(const Op& op) {
  if (op.kind != OpKind::Gather || op.results[0]->type.IsScalar() ||
      op.operands.size() != op.operands[0]->type.dims.size() + 1)
    return false;
  for (size_t i = 1; i < op.operands.size(); ++i)
    if (op.operands[i]->type.dims != op.results[0]->type.dims) return false;
  return true;
}

bool IsMember(const Op& op) {
  return transforms::IsScalarMap(op) || IsElementwiseArrayOp(op);
}

// The dims a member loops over, in the order of its index arguments.
std::vector<const ir::Dim*> LoopDims(const Op& op) {
  if (op.kind == OpKind::Map) return op.dims;
  const ir::DimList& dims = op.results[0]->type.dims;
  return {dims.begin(), dims.end()};
}

// Whether `read` (an op in a map's body) is a gather of the whole of
// `array` at exactly the body's point.
bool IsPointRead(const Op& read, const Value* array, const ir::Block& body) {
  if (read.kind != OpKind::Gather || read.operands[0] != array ||
      read.operands.size() != array->type.dims.size() + 1)
    return false;
  for (size_t i = 0; i < array->type.dims.size(); ++i) {
    const Value* index = read.operands[i + 1];
    if (index->block != &body || index->def != nullptr ||
        index->type.index_dim != array->type.dims[i])
      return false;
  }
  return true;
}

// The most elements of the extra dim of a member that takes in a group's
// body: code generation unrolls innermost dims up to this size. Under
// Note [Fusion cost] the copy is then read once per element, whatever its
// cost: the unrolled copies compute the same scalars and LLVM keeps one.
constexpr int64_t kCopiedDimMax = 4;

// Whether `member`'s dims are `group`'s and one more that code generation
// unrolls: constant, small, and last.
bool AddsOneSmallDim(const Op& group, const Op& member) {
  ir::DimList group_dims(LoopDims(group));
  ir::DimList member_dims(LoopDims(member));
  if (member_dims.size() != group_dims.size() + 1 ||
      !member_dims.ContainsAll(group_dims))
    return false;
  const ir::Dim* extra = member_dims[member_dims.size() - 1];
  return !group_dims.Contains(extra) && extra->constant &&
         *extra->constant <= kCopiedDimMax;
}

constexpr int kRoundsMax = 4;

class MapFuser {
 public:
  explicit MapFuser(ir::Function& function)
      : function_(function), builder_(&function) {}

  bool changed() const { return changed_; }

  void Block(ir::Block& block) {
    // The latest group over each set of dims.
    std::vector<Op*> open;
    for (size_t i = 0; i < block.ops.size(); ++i) {
      if (IsElementwiseGather(*block.ops[i]) && ReadsGroup(*block.ops[i], open))
        GatherAsMap(*block.ops[i]);
      Op& op = *block.ops[i];
      if (!IsMember(op) || !CannotFailIn(op, open)) {
        for (auto& region : op.regions) Block(*region);
        // A run-time check may move past a member, like checks inside.
        if (!transforms::MayOnlyFail(op) && transforms::HasEffectsDeep(op))
          open.clear();
        continue;
      }
      ir::DimList dims(LoopDims(op));
      Op** group = nullptr;
      for (Op*& candidate : open)
        if (ir::DimList(LoopDims(*candidate)) == dims) group = &candidate;
      // A group that the member reads over one dim fewer: its body is
      // copied in (see the Note), and the map that replaces the member at
      // position i is visited next as a member like any other.
      if (Op* producer = ProducerToCopy(op)) {
        CopyInto(*producer, op);
        changed_ = true;
        --i;
        continue;
      }
      if (group == nullptr) {
        open.push_back(&op);
        continue;
      }
      if (CopyShiftedReads(**group, op)) changed_ = true;
      std::optional<size_t> at = Placement(**group, op);
      if (!at) {
        *group = &op;
        continue;
      }
      // Either way the op after the member moves to position i: the ops in
      // between are not visited again.
      *group = Merge(**group, op, *at);
      --i;
      changed_ = true;
    }
    // Merging can give a map reads of a producer after it was visited.
    for (size_t i = 0; i < block.ops.size(); ++i)
      if (Op* producer = ProducerToCopy(*block.ops[i])) {
        CopyInto(*producer, *block.ops[i]);
        changed_ = true;
        --i;
      }
  }

 private:
  // Where `member` and `group` can be one map: the block position of
  // `group` or of `member`, or nullopt.
  std::optional<size_t> Placement(const Op& group, const Op& member) {
    const ir::Block& block = *group.parent;
    size_t group_at = transforms::IndexOf(group);
    size_t member_at = transforms::IndexOf(member);
    bool available = true;  // everything member reads exists at group_at
    bool point_reads = true;
    auto reads = [&](const Value* value, const Op* reader) {
      if (value->def == &group) {
        // Elementwise members read every operand at their point.
        if (reader != nullptr &&
            !IsPointRead(*reader, value, *member.region(0)))
          point_reads = false;
        return;
      }
      if (value->def != nullptr && value->def->parent == &block &&
          transforms::IndexOf(*value->def) >= group_at)
        available = false;
    };
    if (member.kind == OpKind::Map) {
      const ir::Block& body = *member.region(0);
      for (const auto& inner : body.ops)
        for (const Value* operand : inner->operands)
          if (operand->block != &body &&
              (operand->def == nullptr || operand->def->parent != &body))
            reads(operand, inner.get());
    } else {
      for (const Value* operand : member.operands) reads(operand, nullptr);
    }
    if (!point_reads) return std::nullopt;
    if (available) return group_at;
    // Sinking the group to the member: nothing in between may read it.
    for (size_t k = group_at + 1; k < member_at; ++k) {
      bool reads_group = false;
      auto check = [&](const Op& inner) {
        for (const Value* operand : inner.operands)
          reads_group |= operand->def == &group;
      };
      check(*block.ops[k]);
      for (auto& region : block.ops[k]->regions)
        transforms::WalkOps(*region, check);
      if (reads_group) return std::nullopt;
    }
    return member_at;
  }

  // Whether `member`, if a to_index, converts a result of an open group
  // that cannot be out of range there (Note [Index ranges]: the position of
  // a shifted read), so that merged, it is index arithmetic. Any other
  // to_index stays an array op: its check inside a loop would keep LLVM
  // from vectorizing it (`cam[cams: cam_of]` with an index array).
  static bool CannotFailIn(const Op& member, const std::vector<Op*>& open) {
    if (member.kind != OpKind::ToIndex) return true;
    const Op* producer = member.operands[0]->def;
    if (producer == nullptr || !llvm::is_contained(open, producer) ||
        producer->kind != OpKind::Map)
      return false;
    size_t k = member.operands[0]->index;
    return ir::IsIndexInRange(producer->region(0)->terminator()->operands[k],
                              member.dims[0]);
  }

  // Whether `op` reads a result of an open group: then as a map it can
  // join one. A gather of other arrays stays an array op (on a GPU, a
  // copy rather than a kernel).
  static bool ReadsGroup(const Op& op, const std::vector<Op*>& open) {
    for (const Value* operand : op.operands)
      if (operand->def && llvm::is_contained(open, operand->def)) return true;
    return false;
  }

  // Replaces an elementwise gather (IsElementwiseGather) by the map that
  // reads its index arrays and then its array at each point.
  void GatherAsMap(Op& gather) {
    std::vector<const ir::Dim*> dims(gather.results[0]->type.dims.begin(),
                                     gather.results[0]->type.dims.end());
    Op* map = nullptr;
    builder_.SetLoc(gather.loc);
    transforms::InsertAt(
        builder_, *gather.parent, transforms::IndexOf(gather), [&] {
          map = builder_.Create(OpKind::Map, {}, {gather.results[0]->type});
          map->dims = dims;
          ir::Block* body = builder_.AddRegion(map, ir::IndexTypes(dims));
          ir::InsertionGuard guard(builder_);
          builder_.SetInsertionBlock(body);
          std::vector<Value*> point(body->args.begin(), body->args.end());
          std::vector<Value*> at;
          for (size_t i = 1; i < gather.operands.size(); ++i)
            at.push_back(builder_.Gather(gather.operands[i], point));
          builder_.Yield({builder_.Gather(gather.operands[0], at)});
        });
    map->results[0]->name = gather.results[0]->name;
    transforms::ReplaceUses(function_, {{gather.results[0], map->results[0]}});
    transforms::EraseOp(gather);
    changed_ = true;
  }

  // See Note [Shifted reads]. Replaces each read in `member`'s body of a
  // result of `group` at another point than the member's own by a copy of
  // the ops of the group's body that compute it, evaluated there, when
  // that costs less than the stores and reloads it saves. Returns whether
  // it copied.
  bool CopyShiftedReads(const Op& group, Op& member) {
    if (member.kind != OpKind::Map || group.kind == OpKind::ToIndex)
      return false;
    ir::Block& body = *member.region(0);
    std::vector<Op*> shifted;
    // The group's results that the member reads, and below, the arrays
    // that both read.
    llvm::SmallPtrSet<const Value*, 8> crossing;
    for (const auto& inner : body.ops)
      for (const Value* operand : inner->operands) {
        if (operand->def != &group) continue;
        crossing.insert(operand);
        if (inner->kind != OpKind::Gather || operand != inner->operands[0] ||
            IsPointRead(*inner, operand, body))
          continue;
        if (inner->operands.size() != operand->type.dims.size() + 1)
          return false;  // a slice of the result: not an element
        // The copy reads what the group reads at these indices, as indices
        // of the group's dims (codegen places a read by its index's dim).
        for (size_t i = 0; i < operand->type.dims.size(); ++i)
          if (inner->operands[i + 1]->type.index_dim != operand->type.dims[i])
            return false;
        shifted.push_back(inner.get());
      }
    if (shifted.empty()) return false;
    // An array that both bodies read is loaded once when they are one.
    llvm::SmallPtrSet<const Value*, 8> group_reads;
    if (group.kind == OpKind::Map) {
      for (const auto& inner : group.region(0)->ops)
        if (inner->kind == OpKind::Gather)
          group_reads.insert(inner->operands[0]);
    } else {
      group_reads.insert(group.operands.begin(), group.operands.end());
    }
    for (const auto& inner : body.ops)
      if (inner->kind == OpKind::Gather &&
          group_reads.contains(inner->operands[0]))
        crossing.insert(inner->operands[0]);
    int64_t cost = 0;
    for (const Op* read : shifted)
      cost += SliceCost(group, read->operands[0]->index);
    // Merged, the loops no longer store and reload the values that cross
    // between them, nor load twice what both read: each is worth one store
    // and reload of work.
    int64_t per_value = (cost + static_cast<int64_t>(crossing.size()) - 1) /
                        static_cast<int64_t>(crossing.size());
    if (!RecomputingIsCheaper(per_value)) return false;
    transforms::ReplaceEach(
        function_, shifted, [&](ir::Builder& builder, Op& read) {
          const Value* array = read.operands[0];
          std::vector<Value*> at;  // the read's index of each of group's dims
          for (const ir::Dim* dim : LoopDims(group))
            for (size_t i = 0; i < array->type.dims.size(); ++i)
              if (array->type.dims[i] == dim)
                at.push_back(read.operands[i + 1]);
          return CopyResultAt(builder, group, array->index, at);
        });
    return true;
  }

  // The ops of `map`'s body that its `k`th yielded value depends on.
  static llvm::SmallPtrSet<const Op*, 16> Slice(const Op& map, size_t k) {
    const ir::Block& body = *map.region(0);
    llvm::SmallPtrSet<const Op*, 16> slice;
    std::vector<const Value*> work{body.terminator()->operands[k]};
    while (!work.empty()) {
      const Value* value = work.back();
      work.pop_back();
      const Op* def = value->def;
      if (def == nullptr || def->parent != &body || !slice.insert(def).second)
        continue;
      work.insert(work.end(), def->operands.begin(), def->operands.end());
    }
    return slice;
  }

  // The work of a copy of that slice. Its integer ops compute the
  // positions it reads (a shifted index and the test of its lane) and
  // count as moves: LLVM keeps them in vector registers beside the loop
  // index.
  static int64_t SliceCost(const Op& map, size_t k) {
    if (map.kind != OpKind::Map)  // an elementwise op: itself
      return ir::IsFloat(map.results[0]->type.elem) ? ElementCost(map) : 0;
    int64_t cost = 0;
    for (const Op* op : Slice(map, k))
      if (ir::IsFloat(op->results[0]->type.elem)) cost += ElementCost(*op);
    return cost;
  }

  // Clones the ops that compute `map`'s `k`th result at the point `at`
  // (an index per dim of the map) at the builder's insertion point.
  static Value* CopyResultAt(ir::Builder& builder, const Op& map, size_t k,
                             const std::vector<Value*>& at) {
    if (map.kind != OpKind::Map) {  // an elementwise op, at `at`
      std::vector<const ir::Dim*> dims = LoopDims(map);
      llvm::DenseMap<const ir::Dim*, Value*> index_of;
      for (size_t d = 0; d < dims.size(); ++d) index_of[dims[d]] = at[d];
      return EmitElementwiseAt(builder, map, index_of,
                               llvm::DenseMap<Value*, Value*>());
    }
    const ir::Block& body = *map.region(0);
    llvm::SmallPtrSet<const Op*, 16> slice = Slice(map, k);
    transforms::CloneMap clone;
    for (size_t d = 0; d < at.size(); ++d) clone.values[body.args[d]] = at[d];
    for (const auto& inner : body.ops)
      if (slice.contains(inner.get()))
        transforms::CloneOp(builder, *inner, clone);
    return clone.Lookup(body.terminator()->operands[k]);
  }

  // A scalar map over one dim fewer than the map `member`, in its block,
  // whose results the member reads, only at its own points; or null.
  static Op* ProducerToCopy(const Op& member) {
    if (member.kind != OpKind::Map) return nullptr;
    const ir::Block& body = *member.region(0);
    for (const auto& inner : body.ops)
      for (const Value* operand : inner->operands) {
        Op* producer = operand->def;
        if (producer == nullptr || producer->parent != member.parent ||
            !transforms::IsScalarMap(*producer) ||
            !AddsOneSmallDim(*producer, member))
          continue;
        bool point_reads = true;
        for (const auto& read : body.ops)
          for (const Value* value : read->operands)
            if (value->def == producer)
              point_reads &= IsPointRead(*read, value, body);
        if (point_reads) return producer;
      }
    return nullptr;
  }

  // Replaces `member` by a map over its dims that computes `group`'s body
  // and then its own, reading the group's values as scalars.
  void CopyInto(const Op& group, Op& member) {
    std::vector<ir::Type> types;
    for (const Value* result : member.results) types.push_back(result->type);
    Op* copy = nullptr;
    builder_.SetLoc(member.loc);
    transforms::InsertAt(
        builder_, *member.parent, transforms::IndexOf(member), [&] {
          copy = builder_.Create(OpKind::Map, {}, types);
          copy->dims = member.dims;
          ir::Block* body =
              builder_.AddRegion(copy, ir::IndexTypes(member.dims));
          ir::InsertionGuard guard(builder_);
          builder_.SetInsertionBlock(body);
          llvm::DenseMap<const ir::Dim*, Value*> index_of;
          for (size_t k = 0; k < member.dims.size(); ++k)
            index_of[member.dims[k]] = body->args[k];
          std::vector<Value*> group_values;
          EmitMember(group, index_of, llvm::DenseMap<Value*, Value*>(),
                     group_values);
          llvm::DenseMap<Value*, Value*> scalars;
          for (size_t k = 0; k < group.results.size(); ++k)
            scalars[group.results[k]] = group_values[k];
          std::vector<Value*> yields;
          EmitMember(member, index_of, scalars, yields);
          builder_.Yield(yields);
        });
    llvm::DenseMap<Value*, Value*> replacements;
    for (size_t k = 0; k < member.results.size(); ++k) {
      copy->results[k]->name = member.results[k]->name;
      replacements[member.results[k]] = copy->results[k];
    }
    transforms::ReplaceUses(function_, replacements);
    transforms::EraseOp(member);
  }

  // The scalar of the elementwise op (or to_index) `op` at one point
  // (indices by dim): its array operands read there, or replaced by
  // `scalars`.
  static Value* EmitElementwiseAt(
      ir::Builder& builder, const Op& op,
      const llvm::DenseMap<const ir::Dim*, Value*>& index_of,
      const llvm::DenseMap<Value*, Value*>& scalars) {
    std::vector<Value*> operands;
    for (Value* operand : op.operands) {
      auto it = scalars.find(operand);
      if (operand->type.IsScalar()) {
        operands.push_back(operand);
      } else if (it != scalars.end()) {
        operands.push_back(it->second);
      } else {
        std::vector<Value*> at;
        for (const ir::Dim* dim : operand->type.dims)
          at.push_back(index_of.at(dim));
        operands.push_back(builder.Gather(operand, at));
      }
    }
    Op* scalar = builder.Create(op.kind, std::move(operands),
                                {op.results[0]->type.WithDims({})});
    scalar->dims = op.dims;  // to_index's dim
    scalar->loc = op.loc;
    return scalar->results[0];
  }

  // Emits `member`'s body at one point of the merged map (indices by dim),
  // its reads of the group's results replaced by their scalars; appends
  // its yielded values to `yields`.
  void EmitMember(const Op& member,
                  const llvm::DenseMap<const ir::Dim*, Value*>& index_of,
                  const llvm::DenseMap<Value*, Value*>& scalars,
                  std::vector<Value*>& yields) {
    if (member.kind != OpKind::Map) {
      yields.push_back(EmitElementwiseAt(builder_, member, index_of, scalars));
      return;
    }
    const ir::Block& body = *member.region(0);
    transforms::CloneMap map;
    for (size_t k = 0; k < member.dims.size(); ++k)
      map.values[body.args[k]] = index_of.at(member.dims[k]);
    for (const auto& inner : body.ops) {
      if (inner->kind == OpKind::Yield) {
        for (Value* value : inner->operands)
          yields.push_back(map.Lookup(value));
        break;
      }
      if (inner->kind == OpKind::Gather) {
        auto it = scalars.find(inner->operands[0]);
        if (it != scalars.end()) {
          map.values[inner->results[0]] = it->second;
          continue;
        }
      }
      transforms::CloneOp(builder_, *inner, map);
    }
  }

  Op* Merge(Op& group, Op& member, size_t at) {
    ir::Block& block = *group.parent;
    std::vector<const ir::Dim*> dims = LoopDims(group);
    std::vector<ir::Type> types;
    for (const Op* op : {&group, &member})
      for (const Value* result : op->results) types.push_back(result->type);
    Op* merged = nullptr;
    builder_.SetLoc(group.loc);
    transforms::InsertAt(builder_, block, at, [&] {
      merged = builder_.Create(OpKind::Map, {}, types);
      merged->dims = dims;
      ir::Block* body = builder_.AddRegion(merged, ir::IndexTypes(dims));
      ir::InsertionGuard guard(builder_);
      builder_.SetInsertionBlock(body);
      llvm::DenseMap<const ir::Dim*, Value*> index_of;
      for (size_t k = 0; k < dims.size(); ++k)
        index_of[dims[k]] = body->args[k];
      std::vector<Value*> yields;
      EmitMember(group, index_of, llvm::DenseMap<Value*, Value*>(), yields);
      llvm::DenseMap<Value*, Value*> scalars;
      for (size_t k = 0; k < group.results.size(); ++k)
        scalars[group.results[k]] = yields[k];
      EmitMember(member, index_of, scalars, yields);
      builder_.Yield(yields);
    });
    llvm::DenseMap<Value*, Value*> replacements;
    size_t k = 0;
    for (Op* op : {&group, &member})
      for (Value* result : op->results) {
        merged->results[k]->name = result->name;
        replacements[result] = merged->results[k++];
      }
    transforms::ReplaceUses(function_, replacements);
    transforms::EraseOp(member);
    transforms::EraseOp(group);
    return merged;
  }

  ir::Function& function_;
  ir::Builder builder_;
  bool changed_ = false;
};

}  // namespace

bool FuseMaps(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions) {
    // A merge can make a later copy worth it (Note [Shifted reads]: the
    // merged map shares more with the next member), so the walk repeats
    // while it changes something, a few times at most.
    for (int round = 0; round < kRoundsMax; ++round) {
      MapFuser fuser(*function);
      fuser.Block(*function->body);
      if (!fuser.changed()) break;
      changed = true;
    }
  }
  return changed;
}

}  // namespace delta::opt

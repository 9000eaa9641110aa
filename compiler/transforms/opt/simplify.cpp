// Peephole simplifications: each rule returns the value an op equals.
#include "compiler/transforms/opt/simplify.h"

#include <vector>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

bool IsIotaOf(const Value* index) {
  const Op* def = index->def;
  return def && def->kind == OpKind::Iota &&
         def->dims[0] == index->type.index_dim;
}

bool IsOpOf(const Value* value, OpKind kind) {
  return value->def && value->def->kind == kind;
}

// The value that `op` always equals, or null.
Value* SimplerValue(const Op& op) {
  if (op.results.size() != 1 || !op.regions.empty()) return nullptr;
  Value* result = nullptr;
  switch (op.kind) {
    case OpKind::Broadcast:
    case OpKind::Convert:
    // The optimizer runs after AD, so stop_gradient has done its work.
    case OpKind::StopGradient:
      result = op.operands[0];
      break;
    case OpKind::Rename:
      if (op.dims[0] == op.dims[1]) result = op.operands[0];
      break;
    case OpKind::Reduce:
      if (op.dims.empty()) result = op.operands[0];
      break;
    case OpKind::Gather: {
      bool all_iota = true;
      for (size_t i = 1; i < op.operands.size(); ++i)
        all_iota &= IsIotaOf(op.operands[i]);
      if (all_iota) result = op.operands[0];
      // An iota read at an index is that index.
      if (IsOpOf(op.operands[0], OpKind::Iota) && op.operands.size() == 2)
        result = op.operands[1];
      break;
    }
    case OpKind::Select:
      if (op.operands[1] == op.operands[2]) result = op.operands[1];
      break;
    case OpKind::Neg:
    case OpKind::Not:
      // -(-x) is x for every float, NaN and -0.0 included.
      if (IsOpOf(op.operands[0], op.kind))
        result = op.operands[0]->def->operands[0];
      break;
    default:
      break;
  }
  // Each rule is an identity only where the types agree (a broadcast to
  // new dims, a real conversion).
  if (result && result->type != op.results[0]->type) return nullptr;
  return result;
}

bool ReplaceSimplerOps(ir::Function& function) {
  llvm::DenseMap<Value*, Value*> replacements;
  std::vector<Op*> replaced;
  transforms::WalkOps(*function.body, [&](Op& op) {
    for (Value*& operand : op.operands) {
      auto it = replacements.find(operand);
      if (it != replacements.end()) operand = it->second;
    }
    if (Value* simpler = SimplerValue(op)) {
      replacements[op.results[0]] = simpler;
      replaced.push_back(&op);
    }
  });
  transforms::ReplaceUses(function, replacements);
  for (Op* op : replaced) transforms::EraseOp(*op);
  return !replaced.empty();
}

// A point read of a one-hot sum: gather(scatter_add(v, i..), j..), the
// read's indices and result scalars, is v's element at j if every j
// equals its i (an index array read at j), else 0, when the read names
// every dim of v and of the index arrays (so that at most one element
// lands there). Reverse mode makes such sums for each constant-index read
// (`c[k: 0]`) and for the arg-extremum of `min(x, k)` (an index per row);
// read this way inside a map or a reduction, the full-size array dies.
bool ReadScatteredPoints(ir::Function& function) {
  std::vector<Op*> reads;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (op.kind != OpKind::Gather || !op.results[0]->type.IsScalar() ||
        !IsOpOf(op.operands[0], OpKind::ScatterAdd))
      return;
    const Op& scatter = *op.operands[0]->def;
    const Value* values = scatter.operands[0];
    if (!ir::IsFloat(values->type.elem) && !ir::IsInteger(values->type.elem))
      return;
    ir::DimList read_dims;
    for (size_t k = 1; k < op.operands.size(); ++k) {
      if (!op.operands[k]->type.IsScalar()) return;
      read_dims.Insert(op.operands[k]->type.index_dim);
    }
    // One-hot: every value lands at one point, which the read names.
    if (!read_dims.ContainsAll(values->type.dims)) return;
    for (size_t k = 1; k < scatter.operands.size(); ++k)
      if (!read_dims.ContainsAll(scatter.operands[k]->type.dims) ||
          values->type.dims.Contains(scatter.operands[k]->type.index_dim))
        return;
    reads.push_back(&op);
  });
  ir::Builder builder(&function);
  llvm::DenseMap<Value*, Value*> replacements;
  for (Op* read : reads) {
    const Op& scatter = *read->operands[0]->def;
    Value* values = scatter.operands[0];
    // The read's index for each dim it reads.
    llvm::DenseMap<const ir::Dim*, Value*> at;
    for (size_t k = 1; k < read->operands.size(); ++k)
      at[read->operands[k]->type.index_dim] = read->operands[k];
    builder.SetLoc(read->loc);
    Value* result = nullptr;
    transforms::InsertAt(
        builder, *read->parent, transforms::IndexOf(*read), [&] {
          // An array read at the read's point; a scalar is itself.
          auto at_point = [&](Value* array) {
            if (array->type.IsScalar()) return array;
            std::vector<Value*> indices;
            for (const ir::Dim* dim : array->type.dims)
              indices.push_back(at[dim]);
            return builder.Gather(array, indices);
          };
          Value* hit = nullptr;
          for (size_t k = 1; k < scatter.operands.size(); ++k) {
            Value* index = scatter.operands[k];
            Value* same = builder.Binary(OpKind::Eq, at[index->type.index_dim],
                                         at_point(index));
            hit = hit ? builder.Binary(OpKind::And, hit, same) : same;
          }
          Value* value = at_point(values);
          Value* zero = ir::IsFloat(values->type.elem)
                            ? builder.FloatConst(values->type.elem, 0.0)
                            : builder.IntConst(values->type.elem, 0);
          result = builder.Select(hit, value, zero);
        });
    replacements[read->results[0]] = result;
  }
  transforms::ReplaceUses(function, replacements);
  for (Op* read : reads) transforms::EraseOp(*read);
  return !reads.empty();
}

// gather(gather(x, i..), j..) with scalar indices i is gather(x, i.., j..):
// a slice read at a point is a point read, and the slice need not exist.
// An array index i[e..] of the slice (x[cams: cam_of] with cam_of over
// obs) is read at j's indices of its dims e, when j has them all: the
// slice (a copy of x's columns for every observation) then need not be
// materialized either.
bool ComposeGathers(ir::Function& function) {
  std::vector<Op*> reads;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (op.kind != OpKind::Gather || !IsOpOf(op.operands[0], OpKind::Gather))
      return;
    ir::DimList read_dims;
    for (size_t k = 1; k < op.operands.size(); ++k) {
      if (!op.operands[k]->type.IsScalar()) return;
      read_dims.Insert(op.operands[k]->type.index_dim);
    }
    const Op& slice = *op.operands[0]->def;
    for (size_t k = 1; k < slice.operands.size(); ++k)
      if (!read_dims.ContainsAll(slice.operands[k]->type.dims)) return;
    reads.push_back(&op);
  });
  ir::Builder builder(&function);
  for (Op* read : reads) {
    const Op& slice = *read->operands[0]->def;
    llvm::DenseMap<const ir::Dim*, Value*> at;
    for (size_t k = 1; k < read->operands.size(); ++k)
      at[read->operands[k]->type.index_dim] = read->operands[k];
    std::vector<Value*> operands = {slice.operands[0]};
    ir::DimList sliced;  // the dims of x that the slice indexes
    builder.SetLoc(read->loc);
    auto compose = [&] {
      for (size_t k = 1; k < slice.operands.size(); ++k) {
        Value* index = slice.operands[k];
        sliced.Insert(index->type.index_dim);
        if (index->type.IsScalar()) {
          operands.push_back(index);
          continue;
        }
        std::vector<Value*> indices;
        for (const ir::Dim* dim : index->type.dims) indices.push_back(at[dim]);
        operands.push_back(builder.Gather(index, indices));
      }
    };
    transforms::InsertAt(builder, *read->parent, transforms::IndexOf(*read),
                         compose);
    // The read's indices of x's own dims (an array index's dims may be
    // some of them too: x[c: labels] with x over [c, batch] and labels
    // over batch reads x at (labels[b], b)).
    const ir::DimList& x_dims = slice.operands[0]->type.dims;
    for (size_t k = 1; k < read->operands.size(); ++k) {
      const ir::Dim* dim = read->operands[k]->type.index_dim;
      if (x_dims.Contains(dim) && !sliced.Contains(dim))
        operands.push_back(read->operands[k]);
    }
    read->operands = operands;
  }
  return !reads.empty();
}

// gather(broadcast(x), i..) with scalar indices that cover the dims the
// broadcast adds reads x at the indices of its own dims (or is x, when
// none are). Reverse mode broadcasts adjoints up to an operand's dims;
// when several reductions read that broadcast, fusion cannot take it in,
// and it would be materialized whole.
bool ReadThroughBroadcasts(ir::Function& function) {
  std::vector<Op*> reads;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (op.kind != OpKind::Gather || !IsOpOf(op.operands[0], OpKind::Broadcast))
      return;
    const Value* source = op.operands[0]->def->operands[0];
    ir::DimList indexed;
    for (size_t k = 1; k < op.operands.size(); ++k) {
      if (!op.operands[k]->type.IsScalar()) return;
      indexed.Insert(op.operands[k]->type.index_dim);
    }
    if (indexed.ContainsAll(op.operands[0]->type.dims.Minus(source->type.dims)))
      reads.push_back(&op);
  });
  llvm::DenseMap<Value*, Value*> whole;
  for (Op* read : reads) {
    Value* source = read->operands[0]->def->operands[0];
    std::vector<Value*> operands = {source};
    for (size_t k = 1; k < read->operands.size(); ++k)
      if (source->type.dims.Contains(read->operands[k]->type.index_dim))
        operands.push_back(read->operands[k]);
    if (operands.size() > 1)
      read->operands = operands;
    else
      whole[read->results[0]] = source;
  }
  transforms::ReplaceUses(function, whole);
  for (auto& [read, source] : whole) transforms::EraseOp(*read->def);
  return !reads.empty();
}

// Replaces each `if` on a constant by the ops of the branch it takes.
bool InlineConstantIfs(ir::Function& function, ir::Block& block) {
  bool changed = false;
  for (size_t i = 0; i < block.ops.size(); ++i) {
    Op& op = *block.ops[i];
    for (auto& region : op.regions)
      changed |= InlineConstantIfs(function, *region);
    if (op.kind != OpKind::If) continue;
    const Op* condition = op.operands[0]->def;
    if (!condition || condition->kind != OpKind::Const) continue;
    ir::Block& taken = *op.regions[condition->int_value ? 0 : 1];
    std::vector<Value*> yielded = taken.terminator()->operands;
    taken.ops.pop_back();
    auto owned = std::move(block.ops[i]);
    block.ops.erase(block.ops.begin() + static_cast<long>(i));
    for (size_t k = 0; k < taken.ops.size(); ++k) {
      taken.ops[k]->parent = &block;
      block.ops.insert(block.ops.begin() + static_cast<long>(i + k),
                       std::move(taken.ops[k]));
    }
    llvm::DenseMap<Value*, Value*> replacements;
    for (size_t k = 0; k < owned->results.size(); ++k)
      replacements[owned->results[k]] = yielded[k];
    transforms::ReplaceUses(function, replacements);
    changed = true;
    --i;  // look at the first moved op again: it may be an if itself
  }
  return changed;
}

}  // namespace

bool Simplify(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions) {
    changed |= InlineConstantIfs(*function, *function->body);
    changed |= ReplaceSimplerOps(*function);
    changed |= ReadScatteredPoints(*function);
    // A composed read may read a gather again (a slice of a slice).
    while (ComposeGathers(*function)) changed = true;
    changed |= ReadThroughBroadcasts(*function);
  }
  return changed;
}

}  // namespace delta::opt

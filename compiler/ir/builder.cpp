// Op creation with result-type inference.
#include "compiler/ir/builder.h"

#include <cassert>
#include <cstdint>

namespace delta::ir {

Builder::Builder(Function* function)
    : function_(function), block_(function->body.get()) {}

Op* Builder::Create(OpKind kind, std::vector<Value*> operands,
                    std::vector<Type> result_types) {
  auto op = std::make_unique<Op>(kind);
  op->operands = std::move(operands);
  op->loc = loc_;
  op->parent = block_;
  for (size_t i = 0; i < result_types.size(); ++i) {
    Value* value = function_->NewValue(std::move(result_types[i]));
    value->def = op.get();
    value->index = static_cast<unsigned>(i);
    op->results.push_back(value);
  }
  block_->ops.push_back(std::move(op));
  return block_->ops.back().get();
}

Block* Builder::AddRegion(Op* op, const std::vector<Type>& arg_types) {
  auto block = std::make_unique<Block>();
  block->parent = op;
  block->function = function_;
  for (size_t i = 0; i < arg_types.size(); ++i) {
    Value* arg = function_->NewValue(arg_types[i]);
    arg->block = block.get();
    arg->index = static_cast<unsigned>(i);
    block->args.push_back(arg);
  }
  op->regions.push_back(std::move(block));
  return op->regions.back().get();
}

void Builder::Yield(std::vector<Value*> values) {
  Create(OpKind::Yield, std::move(values), {});
}

void Builder::Return(std::vector<Value*> values) {
  Create(OpKind::Return, std::move(values), {});
}

Value* Builder::FloatConst(ElemKind kind, double value) {
  Op* op = Create(OpKind::Const, {}, {Type{kind, nullptr, {}}});
  op->float_value = value;
  // The integer view of a float constant saturates (no UB out of range).
  if (value != value) {
    op->int_value = 0;
  } else if (value >= 9.2233720368547758e18) {
    op->int_value = INT64_MAX;
  } else if (value <= -9.2233720368547758e18) {
    op->int_value = INT64_MIN;
  } else {
    op->int_value = static_cast<int64_t>(value);
  }
  return op->result();
}

Value* Builder::IntConst(ElemKind kind, int64_t value) {
  Op* op = Create(OpKind::Const, {}, {Type{kind, nullptr, {}}});
  op->int_value = value;
  op->float_value = static_cast<double>(value);
  return op->result();
}

Value* Builder::BoolConst(bool value) {
  return IntConst(ElemKind::Bool, value ? 1 : 0);
}

Value* Builder::Unary(OpKind kind, Value* x) {
  assert(IsElementwiseUnary(kind) && kind != OpKind::Convert);
  return Create(kind, {x}, {x->type})->result();
}

Value* Builder::Convert(Value* x, ElemKind to, const Dim* index_dim) {
  Type type{to, index_dim, x->type.dims};
  return Create(OpKind::Convert, {x}, {type})->result();
}

Value* Builder::Binary(OpKind kind, Value* a, Value* b) {
  assert(IsElementwiseBinary(kind));
  Type type = a->type.WithDims(a->type.dims.Union(b->type.dims));
  if (HasFlag(kind, kCompare)) {
    type.elem = ElemKind::Bool;
    type.index_dim = nullptr;
  }
  return Create(kind, {a, b}, {type})->result();
}

Value* Builder::Select(Value* condition, Value* a, Value* b) {
  Type type = a->type.WithDims(
      a->type.dims.Union(b->type.dims).Union(condition->type.dims));
  return Create(OpKind::Select, {condition, a, b}, {type})->result();
}

Value* Builder::Size(const Dim* dim) {
  Op* op = Create(OpKind::Size, {}, {Type{ElemKind::I64, nullptr, {}}});
  op->dims = {dim};
  return op->result();
}

Value* Builder::Iota(const Dim* dim) {
  Op* op = Create(OpKind::Iota, {}, {Type{ElemKind::Index, dim, {dim}}});
  op->dims = {dim};
  return op->result();
}

Value* Builder::ToIndex(const Dim* dim, Value* k) {
  Op* op =
      Create(OpKind::ToIndex, {k}, {Type{ElemKind::Index, dim, k->type.dims}});
  op->dims = {dim};
  return op->result();
}

Value* Builder::Broadcast(Value* x, const DimList& dims) {
  if (x->type.dims.ContainsAll(dims)) return x;
  Op* op = Create(OpKind::Broadcast, {x},
                  {x->type.WithDims(x->type.dims.Union(dims))});
  op->dims.assign(dims.begin(), dims.end());
  return op->result();
}

Value* Builder::Rename(Value* x, const Dim* from, const Dim* to) {
  DimList dims = x->type.dims.Minus({from});
  dims.Insert(to);
  Op* op = Create(OpKind::Rename, {x}, {x->type.WithDims(dims)});
  op->dims = {from, to};
  return op->result();
}

Value* Builder::Gather(Value* x, const std::vector<Value*>& indices) {
  DimList removed;
  DimList added;
  for (Value* index : indices) {
    removed.Insert(index->type.index_dim);
    added = added.Union(index->type.dims);
  }
  std::vector<Value*> operands = {x};
  operands.insert(operands.end(), indices.begin(), indices.end());
  Type type = x->type.WithDims(x->type.dims.Minus(removed).Union(added));
  return Create(OpKind::Gather, std::move(operands), {type})->result();
}

Value* Builder::ScatterAdd(Value* values, const std::vector<Value*>& indices,
                           const Type& target) {
  std::vector<Value*> operands = {values};
  operands.insert(operands.end(), indices.begin(), indices.end());
  return Create(OpKind::ScatterAdd, std::move(operands), {target})->result();
}

Value* Builder::Reduce(ReduceKind kind, Value* x, const DimList& dims) {
  Type type = x->type.WithDims(x->type.dims.Minus(dims));
  if (IsArgExtremum(kind)) {
    assert(dims.size() == 1);
    type.elem = ElemKind::Index;
    type.index_dim = dims[0];
  }
  Op* op = Create(OpKind::Reduce, {x}, {type});
  op->reduce = kind;
  op->dims.assign(dims.begin(), dims.end());
  return op->result();
}

Value* Builder::Cumsum(Value* x, const Dim* dim) {
  Op* op = Create(OpKind::Cumsum, {x}, {x->type});
  op->dims = {dim};
  return op->result();
}

Value* Builder::DimDef(Dim* dim, Value* size) {
  Op* op = Create(OpKind::DimDef, {size}, {});
  op->dims = {dim};
  dim->size = size;
  return size;
}

}  // namespace delta::ir

// Builds IR: creates ops at an insertion point and infers their result types,
// so that lowering and passes read as short lists of calls.
#pragma once

#include <vector>

#include "compiler/ir/ir.h"

namespace delta::ir {

class Builder {
 public:
  explicit Builder(Function* function);

  Function* function() const { return function_; }
  Block* block() const { return block_; }
  void SetInsertionBlock(Block* block) { block_ = block; }
  void SetLoc(Loc loc) { loc_ = std::move(loc); }
  const Loc& loc() const { return loc_; }

  // The generic form: an op with these operands and result types.
  Op* Create(OpKind kind, std::vector<Value*> operands,
             std::vector<Type> result_types);
  // A region of `op` whose arguments have these types.
  Block* AddRegion(Op* op, const std::vector<Type>& arg_types);
  void Yield(std::vector<Value*> values);
  void Return(std::vector<Value*> values);

  Value* FloatConst(ElemKind kind, double value);
  Value* IntConst(ElemKind kind, int64_t value);
  Value* BoolConst(bool value);
  Value* Unary(OpKind kind, Value* x);
  Value* Convert(Value* x, ElemKind to, const Dim* index_dim = nullptr);
  Value* Binary(OpKind kind, Value* a, Value* b);
  Value* Select(Value* condition, Value* a, Value* b);
  Value* Size(const Dim* dim);
  Value* Iota(const Dim* dim);
  Value* ToIndex(const Dim* dim, Value* k);
  Value* Broadcast(Value* x, const DimList& dims);
  Value* Rename(Value* x, const Dim* from, const Dim* to);
  Value* Gather(Value* x, const std::vector<Value*>& indices);
  // The adjoint of Gather: adds `values` into zeros of type `target` at the
  // positions the indices give.
  Value* ScatterAdd(Value* values, const std::vector<Value*>& indices,
                    const Type& target);
  Value* Reduce(ReduceKind kind, Value* x, const DimList& dims);
  Value* Cumsum(Value* x, const Dim* dim);
  Value* DimDef(Dim* dim, Value* size);

 private:
  Function* function_;
  Block* block_;
  Loc loc_;
};

// Restores the builder's insertion block when it goes out of scope.
class InsertionGuard {
 public:
  explicit InsertionGuard(Builder& builder)
      : builder_(builder), block_(builder.block()) {}
  ~InsertionGuard() { builder_.SetInsertionBlock(block_); }
  InsertionGuard(const InsertionGuard&) = delete;
  InsertionGuard& operator=(const InsertionGuard&) = delete;

 private:
  Builder& builder_;
  Block* block_;
};

}  // namespace delta::ir

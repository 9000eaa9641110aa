// The forward-mode emitter (docs/internals/forward_mode.md), internal to the
// AD library: forward.cpp has the emitter's core, which clones the primal's
// ops in order and applies the tangent rules of single ops, and
// forward_regions.cpp the ops whose tangents flow through regions and calls
// (maps, fused reductions, loops, whiles, ifs, calls, custom reductions).
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/Support/Error.h>

#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/transforms/rewrite.h"

namespace delta::ad::forward {

using ir::Block;
using ir::ElemKind;
using ir::Function;
using ir::Op;
using ir::OpKind;
using ir::ReduceKind;
using ir::Type;
using ir::Value;

// "internal error: forward mode: MESSAGE", an AdError of kind Internal, at
// the op concerned (`loc`) if there is one.
llvm::Error InternalError(const std::string& message, ir::Loc loc = {});

inline bool HasFloatElem(const Value* value) {
  return ir::IsFloat(value->type.elem);
}

// Builds one derivative function. A missing tangent means zero: no op is
// emitted for it until a region yield or the return needs a value.
class Emitter {
 public:
  Emitter(const Function& primal, Function& jvp)
      : primal_(primal), jvp_(jvp), builder_(&jvp) {}

  llvm::Error Run();

 private:
  Value* Primal(const Value* value) const {
    return map_.Lookup(const_cast<Value*>(value));
  }
  Value* Tangent(const Value* value) const {
    auto it = tangents_.find(value);
    return it == tangents_.end() ? nullptr : it->second;
  }
  // Records the tangent of a primal value (null: none), lifted to the type
  // of the value's copy so that a tangent always has its primal's type.
  void SetTangent(const Value* primal, Value* tangent);
  Value* Zero(const Type& type);
  Value* Fit(Value* value, const Type& type) {
    return builder_.Broadcast(value, type.dims);
  }
  // The tangent of `primal`, zeros if it has none.
  Value* TangentOrZero(const Value* primal);

  Value* Binary(OpKind kind, Value* a, Value* b) {
    return builder_.Binary(kind, a, b);
  }

  llvm::Error EmitBlock(const Block& block);
  llvm::Error EmitOp(const Op& op);
  Value* RuleTangent(const Op& op);
  Value* AddTerm(Value* sum, Value* term, const std::vector<Value*>& dx);
  Value* ReduceTangent(const Op& op, Value* x, Value* dx);
  Value* AtExtremum(ReduceKind kind, Value* x, Value* dx,
                    const ir::DimList& reduced);
  Value* ProdTangent(Value* x, Value* dx, const ir::DimList& reduced);
  llvm::Error EmitFusedReduce(const Op& op);
  Block* AddRegionLike(Op* op, const Block& from);
  llvm::Error EmitMap(const Op& op);
  llvm::Error EmitLoop(const Op& op);
  llvm::Error EmitLoopCarrying(const Op& op, const std::vector<bool>& carried,
                               std::vector<bool>& needed);
  llvm::Error EmitIf(const Op& op);
  llvm::Error EmitCall(const Op& op);
  llvm::Error EmitReduceCustom(const Op& op);

  const Function& primal_;
  Function& jvp_;
  ir::Builder builder_;
  transforms::CloneMap map_;
  llvm::DenseMap<const Value*, Value*> tangents_;
  // The copies of the primal's local dims; their sizes are set where the
  // copied `dim` op runs.
  llvm::DenseMap<const ir::Dim*, ir::Dim*> local_dims_;
};

}  // namespace delta::ad::forward

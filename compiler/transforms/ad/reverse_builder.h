// The reverse-mode builder (docs/internals/ad.md), internal to the AD
// library: reverse.cpp has the sweeps and the rules for single ops,
// reverse_loops.cpp the loops' tapes and their backward sweeps.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/Error.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/transforms/ad/ad_error.h"
#include "compiler/transforms/rewrite.h"

namespace delta::ad::reverse {

using ir::Block;
using ir::Builder;
using ir::Dim;
using ir::DimList;
using ir::ElemKind;
using ir::Function;
using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;
using transforms::CloneMap;

inline bool IsFloatValue(const Value* value) {
  return ir::IsFloat(value->type.elem);
}

// "reverse-mode AD cannot differentiate WHAT yet", an AdError at `op`.
llvm::Error Unsupported(const Op& op, const std::string& what);

// Values used inside `op`'s regions but defined outside them.
std::vector<const Value*> CapturesOf(const Op& op);

std::optional<std::vector<const Op*>> RowReads(const Block& body,
                                               const Value* capture,
                                               bool is_loop);

// What the forward sweep of a loop or while kept for the backward sweep.
// See Note [Residual tape].

struct Tape {
  const Dim* steps = nullptr;  // one position per iteration
  std::vector<Value*> states;  // the state before each iteration
  // Values of the body's ops, stacked over `steps`: the backward sweep
  // reads them instead of computing them again.
  llvm::DenseMap<const Value*, Value*> residuals;
  // Their keys in the order they were kept: the backward sweep reads them in
  // this order, so the derived IR is the same on every run (the map's order
  // is the addresses').
  std::vector<const Value*> residual_order;
  void Keep(const Value* value, Value* kept) {
    if (residuals.insert({value, kept}).second)
      residual_order.push_back(value);
    else
      residuals[value] = kept;
  }
  // The tapes of loops in the body, their values stacked over `steps`.
  std::vector<std::pair<const Op*, Tape>> nested;
  Value* lo = nullptr;  // a range loop's first iterator value
  // A loop over a dim: the iterator is an index of this dim. The tape uses
  // a fresh dim `steps` of the same size, since the state may have the
  // loop's dim already.
  const Dim* iterator_dim = nullptr;
};

class ReverseBuilder {
 public:
  explicit ReverseBuilder(Function& derived) : fn_(derived), b_(&derived) {}

  llvm::Error Run(const Function& primal);

 private:
  // --- Activity ------------------------------------------------------------
  void ComputeActivity(const Function& primal);
  bool Varied(const Value* value) const { return varied_.contains(value); }

  // --- Forward sweep -------------------------------------------------------
  llvm::Error Forward(const Op& op);
  llvm::Error ForwardLoop(const Op& op);
  llvm::Error ForwardWhile(const Op& op);
  // Emits the forward ops of a loop body into the scan `scan` (whose region
  // is the insertion block) and yields `yields`, then the residuals, which
  // become extra stacked results of `scan` recorded in `tape`.
  llvm::Error ForwardScanBody(const Block& body, Op* scan,
                              std::vector<Value*> yields, Tape& tape);
  // The dim of a tape's steps, max(count, 0) long. Inside another loop's
  // scan, a count known before that scan is defined before it, so that the
  // scan can stack this loop's tape.
  Dim* StepsDim(const std::string& name, Value* count);
  // `value` where the outermost scan being built starts (made again there
  // if it is arithmetic on sizes and constants), or null.
  Value* BeforeOuterScan(Value* value);
  // A tape kept by an enclosing scan, read at its position `step`.
  Tape ReadTape(const Tape& stacked, Value* step);
  // Makes `scan` the outermost scan being built, if there is none yet,
  // until the returned guard goes out of scope.
  [[nodiscard]] auto EnterScan(Op* scan) {
    if (!outer_scan_) outer_scan_ = scan;
    return llvm::make_scope_exit([this, scan] {
      if (outer_scan_ == scan) outer_scan_ = nullptr;
    });
  }
  // Runs `emit` with the insertion point just before the outermost scan.
  void EmitBeforeOuterScan(llvm::function_ref<void()> emit);
  // Reads `op`'s results (and, for a loop, its tape) from the tape of the
  // loop whose body it is in, at position `step`; false if it kept none.
  bool ReadFromTape(const Op& op, const Tape& tape, Value* step);
  // The scan that is being built around the insertion point, outermost.
  Op* outer_scan_ = nullptr;
  Value* P(const Value* value) {
    return forward_.Lookup(const_cast<Value*>(value));
  }

  // --- Backward sweep ------------------------------------------------------
  // Emits the forward ops of `block` (its arguments already mapped in
  // forward_), seeds the terminator's operands with `seeds`, runs the
  // backward sweep and returns the adjoints of `wanted` (null for zero).
  // With a tape, the ops whose values it kept are read from it at
  // position `step` instead.
  llvm::Expected<std::vector<Value*>> ReverseBlock(
      const Block& block, const std::vector<Value*>& seeds,
      const std::vector<const Value*>& wanted, const Tape* tape = nullptr,
      Value* step = nullptr);
  llvm::Error Backward(const Op& op);
  llvm::Error BackwardLoop(const Op& op, const Block& body, const Tape& tape);
  llvm::Error BackwardIf(const Op& op);
  llvm::Error BackwardCall(const Op& op);
  llvm::Error BackwardReduceCustom(const Op& op);
  // The combiner of a reduce.custom applied to a and b (already at a point).
  Value* Apply(const Block& combiner, Value* a, Value* b);
  // `body` emitted once per point of `dims` (a map over them; just `body`
  // when there are none), given the index of each dim. Its value of type
  // `type` (null: zeros) becomes a result over `dims` too.
  llvm::Expected<Value*> PerPoint(
      const DimList& dims, const Type& type,
      llvm::function_ref<llvm::Expected<Value*>(const std::vector<Value*>&)>
          body);

  // --- Adjoints ------------------------------------------------------------
  Value* Adjoint(const Value* value) {
    auto it = adjoint_.find(value);
    return it == adjoint_.end() ? nullptr : it->second;
  }
  void Accumulate(const Value* value, Value* contribution);
  Value* Zero(const Type& type);
  Value* Scalar(ElemKind kind, double value) {
    return b_.FloatConst(kind, value);
  }
  Type ForwardType(const Type& type) { return forward_.Lookup(type); }

  Function& fn_;
  Builder b_;
  CloneMap forward_;
  llvm::DenseMap<const Value*, Value*> adjoint_;
  llvm::DenseMap<const Op*, Tape> tapes_;
  llvm::DenseSet<const Value*> varied_;
};

}  // namespace delta::ad::reverse

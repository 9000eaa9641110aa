// The interpreter's evaluator and the element access its ops share,
// internal to delta_interpreter: interpreter.cpp runs calls and blocks and
// dispatches ops, tensor.cpp reads and writes tensors by dim name, and
// elementwise.cpp, reductions.cpp, indexing.cpp, regions.cpp and io.cpp
// run the ops (docs/internals/interpreter.md).
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/codegen/interpreter/interpreter.h"

namespace delta::interpreter {

using ir::Block;
using ir::Dim;
using ir::DimList;
using ir::ElemKind;
using ir::Function;
using ir::Loc;
using ir::Module;
using ir::Op;
using ir::OpKind;
using ir::PrintItem;
using ir::ReduceKind;
using ir::Type;
using ir::Value;
using llvm::Error;
using llvm::Expected;

// Coordinates fixed for some dims (a point of a map, a reduction, ...).
using Point = std::vector<std::pair<const Dim*, int64_t>>;
// Renames for Extract: the dim of the source read along a dim of the target.
using DimMap = llvm::DenseMap<const Dim*, const Dim*>;

// "FILE:LINE:COL: error: MESSAGE" (without a valid `loc`, "error: MESSAGE"),
// the interpreter's run-time error.
Error LocatedError(const Loc& loc, const std::string& message);
// A call that runs without being inlined (-O0), for the chain of calls of
// the errors inside it (Note [Call chains]); calls nest on one thread.
class ActiveCall {
 public:
  explicit ActiveCall(ir::CallSite site);
  ~ActiveCall();
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;
};
// A located error for IR that the interpreter does not expect.
Error InternalError(const Op& op, const std::string& message);

// Row-major strides of a shape.
std::vector<int64_t> StridesOf(const std::vector<int64_t>& shape);

// Visits every point of `shape` in row-major order, keeping the offset
// `sum(coordinate * stride)` of one strided tensor.
class Walk {
 public:
  Walk(const std::vector<int64_t>& shape, std::vector<int64_t> strides)
      : shape_(shape), strides_(std::move(strides)), coords_(shape.size()) {
    for (int64_t size : shape_)
      if (size == 0) done_ = true;
  }
  bool done() const { return done_; }
  int64_t offset() const { return offset_; }
  const std::vector<int64_t>& coords() const { return coords_; }
  void Next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      ++coords_[d];
      offset_ += strides_[d];
      if (coords_[d] < shape_[d]) return;
      offset_ -= strides_[d] * shape_[d];
      coords_[d] = 0;
    }
    done_ = true;
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> coords_;
  int64_t offset_ = 0;
  bool done_ = false;
};

Point PointOf(const DimList& dims, const std::vector<int64_t>& coords);
std::optional<int64_t> Lookup(const Point& point, const Dim* dim);
void CopyElement(Tensor& to, int64_t to_offset, const Tensor& from,
                 int64_t from_offset);

// A tensor of `type` and `shape`, filled with zeros; an error if the shape
// is negative or too large.
Expected<Tensor> Allocate(const Type& type, std::vector<int64_t> shape,
                          const Loc& loc);

// `tensor` read at `point` along the dims that `want` lacks and broadcast
// along the dims of `want` that it lacks; `source_of` (if given) names the
// dim of `tensor` read along a dim of `want` (renames, calls).
Expected<Tensor> Extract(const Tensor& tensor, const Point& point,
                         const Type& want, std::vector<int64_t> want_shape,
                         const DimMap* source_of, const Loc& loc);

// Writes `piece` into `into` at `point` (the inverse of Extract).
Error Insert(Tensor& into, const Tensor& piece, const Point& point,
             const Loc& loc);

// Runs one function call: its values and the sizes of its local dims.
class Evaluator {
 public:
  explicit Evaluator(Interpreter& interpreter) : interpreter_(interpreter) {}

  Expected<std::vector<Tensor>> Call(const Function& function,
                                     std::vector<Tensor> args);

 private:
  // The extent of `dim` here: of this process's block for a sharded dim.
  Expected<int64_t> DimSize(const Dim* dim, const Loc& loc);
  // The size of the whole dim (what `size` gives).
  Expected<int64_t> GlobalDimSize(const Dim* dim, const Loc& loc);
  Expected<std::vector<int64_t>> ShapeOf(const DimList& dims, const Loc& loc);
  Expected<Tensor> New(const Type& type, const Loc& loc);
  // `tensor` broadcast to `type` (sizes from this frame), read at `point`.
  Expected<Tensor> ExtractAs(const Tensor& tensor, const Type& type,
                             const Loc& loc, const Point& point = {});
  const Tensor& Get(const Value* value) { return values_[value]; }
  // The element kind whose precision `elem`'s arithmetic uses: F64 for F32
  // under InterpreterOptions::f32_as_f64, otherwise `elem` itself.
  ElemKind Precision(ElemKind elem) const {
    return elem == ElemKind::F32 && interpreter_.options_.f32_as_f64
               ? ElemKind::F64
               : elem;
  }
  Expected<std::vector<Tensor>> RunBlock(const Block& block,
                                         std::vector<Tensor> args);
  Expected<Tensor> RunScalarRegion(const Op& op, const Block& block,
                                   std::vector<Tensor> args);

  Error RunOp(const Op& op);
  // Every array `op` computes is within DELTA_MAX_ELEMENTS (runtime/format.h),
  // checked before it runs, as compiled code does.
  Error CheckResultSizes(const Op& op);
  Error RunUnary(const Op& op);
  Error RunBinary(const Op& op);
  Error RunOther(const Op& op);
  Error RunConvert(const Op& op);
  Error RunTernary(const Op& op);  // select
  Error RunConst(const Op& op);
  Error RunToIndex(const Op& op);
  Error RunRename(const Op& op);
  Error RunGather(const Op& op);
  Error RunScatterAdd(const Op& op);
  Error RunReduce(const Op& op);
  Error RunReduceCustom(const Op& op);
  Error RunCumsum(const Op& op);
  Error RunMap(const Op& op);
  Error RunLoop(const Op& op);
  Error RunWhile(const Op& op);
  Error RunIf(const Op& op);
  Error RunCall(const Op& op);
  Error RunPrint(const Op& op);
  // allreduce, exscan, shard_offset (distributed.cpp).
  Error RunCollective(const Op& op);
  // `tensor`, which holds this process's block of its sharded dim, whole
  // on the root process (its block elsewhere, which nothing reads).
  Expected<Tensor> Gathered(const Tensor& tensor, const Loc& loc);
  Error RunNpy(const Op& op);
  Error SetResults(const Op& op, std::vector<Tensor> results);

  Interpreter& interpreter_;
  const Function* function_ = nullptr;  // the function this call runs
  // Node-based, so that a reference to a value stays valid while regions
  // add values (a loop holds its bounds while running its body).
  std::unordered_map<const Value*, Tensor> values_;
  llvm::DenseMap<const Dim*, int64_t> dim_sizes_;
};

}  // namespace delta::interpreter

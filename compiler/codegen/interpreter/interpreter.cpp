// Executes IR op by op on dense tensors, with the semantics of ops.def and
// docs/internals/ir.md; see docs/internals/interpreter.md for the design.
// This file holds the Interpreter, the evaluator's frame (values and dim
// sizes of one call), blocks and regions, and the dispatch of ops to the
// files that run them.
#include <cstring>
#include <new>
#include <utility>

#include "compiler/codegen/interpreter/evaluator.h"
#include "runtime/args.h"
#include "runtime/distributed.h"
#include "runtime/format.h"

namespace delta::interpreter {

namespace {

// The language has no recursion; this only stops malformed IR.
constexpr int kMaxCallDepth = 1000;

// A parameter's kind for delta_parse_args (main's are never indices).
int32_t RuntimeKind(ElemKind elem) {
  switch (elem) {
    case ElemKind::F32:
      return DELTA_ELEM_F32;
    case ElemKind::F64:
      return DELTA_ELEM_F64;
    case ElemKind::I32:
      return DELTA_ELEM_I32;
    case ElemKind::Bool:
      return DELTA_ELEM_BOOL;
    case ElemKind::I64:
    case ElemKind::Index:
      break;
  }
  return DELTA_ELEM_I64;
}

// The value that delta_parse_args wrote to `slot` (runtime/args.h).
Tensor SlotValue(ElemKind elem, uint64_t slot) {
  switch (elem) {
    case ElemKind::F32: {
      float value = 0;
      std::memcpy(&value, &slot, sizeof value);
      return Tensor::Float(elem, value);
    }
    case ElemKind::F64: {
      double value = 0;
      std::memcpy(&value, &slot, sizeof value);
      return Tensor::Float(elem, value);
    }
    case ElemKind::I32: {
      int32_t value = 0;
      std::memcpy(&value, &slot, sizeof value);
      return Tensor::Int(elem, value);
    }
    case ElemKind::Bool: {
      unsigned char value = 0;
      std::memcpy(&value, &slot, sizeof value);
      return Tensor::Bool(value != 0);
    }
    case ElemKind::I64:
    case ElemKind::Index:
      break;
  }
  int64_t value = 0;
  std::memcpy(&value, &slot, sizeof value);
  return Tensor::Int(ElemKind::I64, value);
}

// The running calls that were not inlined, outermost first.
thread_local std::vector<ir::CallSite> active_calls;

}  // namespace

ActiveCall::ActiveCall(ir::CallSite site) {
  active_calls.push_back(std::move(site));
}

ActiveCall::~ActiveCall() { active_calls.pop_back(); }

Error LocatedError(const Loc& loc, const std::string& message) {
  std::string prefix = "error: ";
  if (loc.IsValid())
    prefix = loc.file + ":" + std::to_string(loc.line) + ":" +
             std::to_string(loc.column) + ": error: ";
  // The chain of calls follows on its own lines (Note [Call chains]).
  std::vector<ir::CallSite> innermost_first(active_calls.rbegin(),
                                            active_calls.rend());
  std::string chain = ir::CallChainText(loc, innermost_first);
  if (!chain.empty()) chain = "\n" + chain.substr(0, chain.size() - 1);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 prefix + message + chain);
}

Error InternalError(const Op& op, const std::string& message) {
  return LocatedError(
      op.loc, "internal error: " + OpMnemonic(op.kind).str() + ": " + message);
}

Interpreter::Interpreter(const Module& module, llvm::raw_ostream& out,
                         InterpreterOptions options)
    : module_(module), out_(out), options_(options) {}

Error RunMain(const Module& module, llvm::raw_ostream& out) {
  Expected<int> status = RunMain(module, out, {"main"});
  if (!status) return status.takeError();
  if (*status != 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "error: main needs arguments");
  return Error::success();
}

Expected<int> RunMain(const Module& module, llvm::raw_ostream& out,
                      const std::vector<std::string>& args) {
  const Function* main = module.FindFunction("main");
  if (!main)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "error: the module has no main function");
  // One slot per parameter (runtime/args.h); paths stay with the runtime.
  std::vector<const char*> names;
  std::vector<int32_t> kinds;
  for (const ir::ProgramParam& param : module.main_params) {
    names.push_back(param.name.c_str());
    kinds.push_back(param.elem ? RuntimeKind(*param.elem) : DELTA_ARG_PATH);
  }
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  std::vector<uint64_t> slots(names.size());
  out.flush();
  if (delta_parse_args(static_cast<int32_t>(args.size()), argv.data(),
                       static_cast<int64_t>(names.size()), names.data(),
                       kinds.data(), slots.data()) != 0)
    return 1;
  std::vector<Tensor> values;
  for (size_t i = 0; i < module.main_params.size(); ++i) {
    if (!module.main_params[i].elem) continue;
    values.push_back(SlotValue(*module.main_params[i].elem, slots[i]));
  }
  // Sizes read from files (ir::FileExtent), main's last parameters.
  if (!module.main_extents.empty()) {
    std::vector<int64_t> path_params, axes, sizes(module.main_extents.size());
    std::vector<int32_t> lines, columns;
    for (const ir::FileExtent& extent : module.main_extents) {
      path_params.push_back(extent.path_param);
      axes.push_back(extent.axis);
      lines.push_back(static_cast<int32_t>(extent.loc.line));
      columns.push_back(static_cast<int32_t>(extent.loc.column));
    }
    if (delta_npy_extents(static_cast<int64_t>(sizes.size()),
                          path_params.data(), axes.data(),
                          module.main_extents.front().loc.file.c_str(),
                          lines.data(), columns.data(), sizes.data()) != 0)
      return 1;
    for (int64_t size : sizes)
      values.push_back(Tensor::Int(ElemKind::I64, size));
  }
  Interpreter interpreter(module, out);
  auto results = interpreter.Call(*main, std::move(values));
  out.flush();
  if (!results) return results.takeError();
  return 0;
}

Expected<int64_t> Evaluator::DimSize(const Dim* dim, const Loc& loc) {
  Expected<int64_t> global = GlobalDimSize(dim, loc);
  if (!global || !dim->sharded) return global;
  return delta_shard_extent(*global);
}

Expected<int64_t> Evaluator::GlobalDimSize(const Dim* dim, const Loc& loc) {
  if (dim->constant) return *dim->constant;
  if (dim->global_constant) return *dim->global_constant;
  auto it = dim_sizes_.find(dim);
  if (it != dim_sizes_.end()) return it->second;
  auto value = values_.find(dim->size);
  if (dim->size && value != values_.end() &&
      value->second.elem == ElemKind::I64 && value->second.ints.size() == 1)
    return value->second.ints[0];
  return LocatedError(loc, "internal error: the size of dim " + dim->name +
                               " is not known here");
}

Expected<std::vector<int64_t>> Evaluator::ShapeOf(const DimList& dims,
                                                  const Loc& loc) {
  std::vector<int64_t> shape;
  for (const Dim* dim : dims) {
    Expected<int64_t> size = DimSize(dim, loc);
    if (!size) return size.takeError();
    shape.push_back(*size);
  }
  return shape;
}

Expected<Tensor> Evaluator::New(const Type& type, const Loc& loc) {
  Expected<std::vector<int64_t>> shape = ShapeOf(type.dims, loc);
  if (!shape) return shape.takeError();
  return Allocate(type, std::move(*shape), loc);
}

Expected<Tensor> Evaluator::ExtractAs(const Tensor& tensor, const Type& type,
                                      const Loc& loc, const Point& point) {
  Expected<std::vector<int64_t>> shape = ShapeOf(type.dims, loc);
  if (!shape) return shape.takeError();
  return Extract(tensor, point, type, std::move(*shape), nullptr, loc);
}

Expected<std::vector<Tensor>> Interpreter::Call(const Function& function,
                                                std::vector<Tensor> args,
                                                const Loc& loc) {
  // The interpreter recurses on the host's stack: a chain of calls deeper
  // than this is a located error (compiled code runs it).
  if (call_depth_ >= kMaxCallDepth)
    return LocatedError(
        loc, "calls nest deeper than " + std::to_string(kMaxCallDepth) +
                 " in the interpreter (compiled code has no such limit)");
  ++call_depth_;
  Evaluator evaluator(*this);
  auto results = evaluator.Call(function, std::move(args));
  --call_depth_;
  return results;
}

Expected<std::vector<Tensor>> Evaluator::Call(const Function& function,
                                              std::vector<Tensor> args) {
  function_ = &function;
  size_t sizes = function.size_params.size();
  if (args.size() != sizes + function.params.size() ||
      function.dims.size() < sizes)
    return LocatedError(
        {}, "@" + function.name + " takes " + std::to_string(sizes) +
                " sizes and " + std::to_string(function.params.size()) +
                " arguments, given " + std::to_string(args.size()) + " in all");
  for (size_t k = 0; k < sizes; ++k) {
    const Tensor& size = args[k];
    if (size.elem != ElemKind::I64 || size.ints.size() != 1)
      return LocatedError({}, "the size of " + function.dims[k]->name +
                                  " must be an i64 scalar");
    if (size.ints[0] < 0)
      return LocatedError({}, "size " + std::to_string(size.ints[0]) +
                                  " of dim " + function.dims[k]->name +
                                  " is negative");
    dim_sizes_[function.dims[k]] = size.ints[0];
    values_[function.size_params[k]] = size;
  }
  std::vector<Tensor> params;
  for (size_t i = 0; i < function.params.size(); ++i) {
    // Checks the argument's dims and sizes against the parameter's type.
    Expected<Tensor> param =
        ExtractAs(args[sizes + i], function.params[i]->type, {});
    if (!param) return param.takeError();
    params.push_back(std::move(*param));
  }
  auto results = RunBlock(*function.body, std::move(params));
  if (!results) return results.takeError();
  if (results->size() != function.result_types.size())
    return LocatedError({}, "internal error: @" + function.name +
                                " returns the wrong number of values");
  return results;
}

Expected<std::vector<Tensor>> Evaluator::RunBlock(const Block& block,
                                                  std::vector<Tensor> args) {
  if (args.size() != block.args.size())
    return LocatedError({}, "internal error: a block takes " +
                                std::to_string(block.args.size()) +
                                " arguments, given " +
                                std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    values_[block.args[i]] = std::move(args[i]);
  const Op* terminator = block.terminator();
  if (!terminator ||
      (terminator->kind != OpKind::Yield && terminator->kind != OpKind::Return))
    return LocatedError({}, "internal error: a block without terminator");
  for (const auto& op : block.ops) {
    if (op.get() == terminator) break;
    // The host running out of memory is the program's run-time error, at
    // the innermost op that was running (as in compiled code).
    try {
      if (Error error = RunOp(*op)) return std::move(error);
    } catch (const std::bad_alloc&) {
      return LocatedError(op->loc, "out of memory running this operation");
    }
  }
  interpreter_.executed_kinds_.insert(terminator->kind);
  std::vector<Tensor> results;
  for (const Value* value : terminator->operands) {
    if (!values_.count(value))
      return InternalError(*terminator, "a value is used before it is defined");
    results.push_back(values_[value]);
  }
  // A region's values die with it; forgetting them bounds the memory of
  // long loops.
  if (block.parent) {
    for (const Value* arg : block.args) values_.erase(arg);
    for (const auto& op : block.ops)
      for (const Value* result : op->results) values_.erase(result);
  }
  return results;
}

Expected<Tensor> Evaluator::RunScalarRegion(const Op& op, const Block& block,
                                            std::vector<Tensor> args) {
  auto results = RunBlock(block, std::move(args));
  if (!results) return results.takeError();
  if (results->size() != 1)
    return InternalError(op, "the region must yield one value");
  return std::move((*results)[0]);
}

Error Evaluator::SetResults(const Op& op, std::vector<Tensor> results) {
  if (results.size() != op.results.size())
    return InternalError(op, "wrong number of results");
  for (size_t i = 0; i < results.size(); ++i)
    values_[op.results[i]] = std::move(results[i]);
  return Error::success();
}

Error Evaluator::RunOp(const Op& op) {
  interpreter_.executed_kinds_.insert(op.kind);
  for (const Value* operand : op.operands)
    if (!values_.count(operand))
      return InternalError(op, "an operand is used before it is defined");
  if (Error error = CheckResultSizes(op)) return error;
  switch (op.kind) {
#define DELTA_OP(Name, mnemonic, Arity, ...) \
  case OpKind::Name:                         \
    return Run##Arity(op);
#include "compiler/ir/ops.def"
  }
  return InternalError(op, "unknown op");
}

Error Evaluator::CheckResultSizes(const Op& op) {
  for (const Value* result : op.results) {
    const Type& type = result->type;
    if (type.dims.empty()) continue;
    std::vector<int64_t> shape;
    for (const Dim* dim : type.dims) {
      Expected<int64_t> size = DimSize(dim, op.loc);
      if (!size) {  // left to the op, which reports it
        llvm::consumeError(size.takeError());
        return Error::success();
      }
      shape.push_back(*size);
    }
    int64_t count = 0;
    if (delta_element_count(static_cast<int64_t>(shape.size()), shape.data(),
                            &count) != 0)
      return LocatedError(op.loc, "an array of type " + TypeString(type) +
                                      " would exceed the limit of " +
                                      DELTA_MAX_ELEMENTS_TEXT " elements");
  }
  return Error::success();
}

Error Evaluator::RunOther(const Op& op) {
  switch (op.kind) {
    case OpKind::Const:
      return RunConst(op);
    case OpKind::Size:
    case OpKind::Iota: {
      if (op.dims.size() != 1) return InternalError(op, "needs one dim");
      if (op.kind == OpKind::Size) {
        Expected<int64_t> global = GlobalDimSize(op.dims[0], op.loc);
        if (!global) return global.takeError();
        return SetResults(op, {Tensor::Int(ElemKind::I64, *global)});
      }
      Expected<int64_t> size = DimSize(op.dims[0], op.loc);
      if (!size) return size.takeError();
      Expected<Tensor> iota = New(op.results[0]->type, op.loc);
      if (!iota) return iota.takeError();
      for (int64_t i = 0; i < *size; ++i) iota->ints[i] = i;
      return SetResults(op, {std::move(*iota)});
    }
    case OpKind::ToIndex:
      return RunToIndex(op);
    case OpKind::Broadcast: {
      Expected<Tensor> result =
          ExtractAs(Get(op.operands[0]), op.results[0]->type, op.loc);
      if (!result) return result.takeError();
      return SetResults(op, {std::move(*result)});
    }
    case OpKind::Rename:
      return RunRename(op);
    case OpKind::Gather:
      return RunGather(op);
    case OpKind::ScatterAdd:
      return RunScatterAdd(op);
    case OpKind::Reduce:
      return RunReduce(op);
    case OpKind::ReduceCustom:
      return RunReduceCustom(op);
    case OpKind::Cumsum:
      return RunCumsum(op);
    case OpKind::Map:
      return RunMap(op);
    case OpKind::Loop:
      return RunLoop(op);
    case OpKind::While:
      return RunWhile(op);
    case OpKind::If:
      return RunIf(op);
    case OpKind::Call:
      return RunCall(op);
    case OpKind::DimDef: {
      if (op.dims.size() != 1 || op.operands.size() != 1)
        return InternalError(op, "needs one dim and its size");
      const Tensor& size = Get(op.operands[0]);
      if (size.elem != ElemKind::I64 || size.ints.size() != 1)
        return InternalError(op, "the size must be an i64 scalar");
      if (size.ints[0] < 0)
        return LocatedError(op.loc, "size " + std::to_string(size.ints[0]) +
                                        " of dim " + op.dims[0]->name +
                                        " is negative");
      dim_sizes_[op.dims[0]] = size.ints[0];
      return Error::success();
    }
    case OpKind::Print:
      return RunPrint(op);
    case OpKind::Allreduce:
    case OpKind::Exscan:
    case OpKind::ShardOffset:
      return RunCollective(op);
    case OpKind::ReadNpy:
    case OpKind::WriteNpy:
      return RunNpy(op);
    case OpKind::Yield:
    case OpKind::Return:
      return InternalError(op, "a terminator in the middle of a block");
      // RunOp sends elementwise ops to RunUnary, RunBinary and RunTernary;
      // listing them here keeps this switch exhaustive, so that a new op in
      // ops.def is a compile error until it is handled.
#define DELTA_OP_Unary(Name) case OpKind::Name:
#define DELTA_OP_Binary(Name) case OpKind::Name:
#define DELTA_OP_Ternary(Name) case OpKind::Name:
#define DELTA_OP_Other(Name)
#define DELTA_OP(Name, mnemonic, Arity, ...) DELTA_OP_##Arity(Name)
#include "compiler/ir/ops.def"
#undef DELTA_OP_Unary
#undef DELTA_OP_Binary
#undef DELTA_OP_Ternary
#undef DELTA_OP_Other
      return InternalError(op, "not an elementwise op");
  }
  return InternalError(op, "unknown op");
}

}  // namespace delta::interpreter

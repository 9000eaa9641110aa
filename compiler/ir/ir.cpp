// Basic IR utilities: op names, value and dim creation.
#include "compiler/ir/ir.h"

#include <algorithm>

namespace delta::ir {
namespace {

const OpInfo kOpTable[] = {
#define DELTA_OP(Name, mnemonic, Arity, Elements, Derivative, Flags)         \
  {mnemonic, OpArity::Arity, OpElements::Elements, OpDerivative::Derivative, \
   Flags},
#include "compiler/ir/ops.def"
};

}  // namespace

const OpInfo& InfoOf(OpKind kind) {
  return kOpTable[static_cast<size_t>(kind)];
}

llvm::StringRef ElemName(ElemKind kind) {
  switch (kind) {
    case ElemKind::F32:
      return "f32";
    case ElemKind::F64:
      return "f64";
    case ElemKind::I32:
      return "i32";
    case ElemKind::I64:
      return "i64";
    case ElemKind::Bool:
      return "bool";
    case ElemKind::Index:
      return "index";
  }
  return "?";
}

llvm::StringRef ReduceName(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Prod:
      return "prod";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
    case ReduceKind::Argmax:
      return "argmax";
    case ReduceKind::Argmin:
      return "argmin";
  }
  return "?";
}

std::string TypeString(const Type& type) {
  std::string result = type.elem == ElemKind::Index
                           ? "index<" + type.index_dim->name + ">"
                           : ElemName(type.elem).str();
  if (!type.dims.empty()) {
    result += "[";
    for (size_t i = 0; i < type.dims.size(); ++i)
      result += (i ? ", " : "") + type.dims[i]->name;
    result += "]";
  }
  return result;
}

Value* Function::NewValue(Type type, std::string name) {
  values_.push_back(std::make_unique<Value>());
  Value* value = values_.back().get();
  value->type = std::move(type);
  value->name = std::move(name);
  return value;
}

Value* Function::AddParam(Type type, std::string name) {
  Value* value = NewValue(std::move(type), name);
  value->block = body.get();
  value->index = static_cast<unsigned>(body->args.size());
  body->args.push_back(value);
  params.push_back(value);
  param_names.push_back(std::move(name));
  return value;
}

Dim* Function::NewDim(std::string name, std::optional<int64_t> constant,
                      Value* size) {
  owned_dims_.push_back(std::make_unique<Dim>());
  Dim* dim = owned_dims_.back().get();
  dim->name = std::move(name);
  dim->order = module->NextDimOrder();
  dim->constant = constant;
  dim->size = size;
  dims.push_back(dim);
  return dim;
}

Dim* Function::NewOuterDim(std::string name, std::optional<int64_t> constant,
                           Value* size) {
  Dim* dim = NewDim(std::move(name), constant, size);
  dim->order = module->NextOuterDimOrder();
  return dim;
}

Dim* Function::CopyDim(const Dim& dim, std::string name) {
  Dim* copy = dim.order < 0
                  ? NewOuterDim(std::move(name), dim.constant, nullptr)
                  : NewDim(std::move(name), dim.constant, nullptr);
  copy->sharded = dim.sharded;
  copy->global_constant = dim.global_constant;
  return copy;
}

// Note [Call chains]: calls are inlined before code is generated, so a
// failing op no longer knows whose body it came from; inline_calls appends
// each call site it inlines through to the copied ops' locations, and both
// the interpreter and compiled code print this text after the error. At
// -O0 calls stay calls: each one is pushed on a stack of running calls
// (the interpreter's ActiveCall, the runtime's delta_enter_call) and the
// chain is read from that stack; the text is the same.
namespace {

std::string AtText(const std::string& file, unsigned line, unsigned column) {
  return " at " + file + ":" + std::to_string(line) + ":" +
         std::to_string(column) + "\n";
}

}  // namespace

std::string CalledFromText(const CallSite& site) {
  return "  called from " + site.caller +
         AtText(site.file, site.line, site.column);
}

CallSite SiteOfCall(const Op& call, const Function& caller) {
  // A call that was itself inlined names its original caller.
  const std::vector<CallSite>* outer = call.loc.inlined_at.get();
  return {call.callee ? call.callee->name : "",
          outer ? outer->front().callee : caller.name, call.loc.file,
          call.loc.line, call.loc.column};
}

std::string CallChainText(const Loc& loc, llvm::ArrayRef<CallSite> active) {
  std::vector<CallSite> sites;
  if (loc.inlined_at) sites = *loc.inlined_at;
  sites.insert(sites.end(), active.begin(), active.end());
  if (sites.empty()) return "";
  std::string text =
      "  in " + sites.front().callee + AtText(loc.file, loc.line, loc.column);
  bool shown = false;
  for (const CallSite& site : sites) {
    if (site.line == 0) continue;  // a call the compiler made
    text += CalledFromText(site);
    shown = true;
  }
  return shown ? text : "";
}

Function* Module::AddFunction(std::string name) {
  functions.push_back(std::make_unique<Function>());
  Function* function = functions.back().get();
  function->name = std::move(name);
  function->module = this;
  function->body = std::make_unique<Block>();
  function->body->function = function;
  return function;
}

bool Module::IsSharded() const {
  for (const auto& dim : dims)
    if (dim->sharded) return true;
  return false;
}

Function* Module::FindFunction(llvm::StringRef name) const {
  for (const auto& function : functions)
    if (function->name == name) return function.get();
  return nullptr;
}

Dim* Module::AddDim(std::string name, int64_t size) {
  dims.push_back(std::make_unique<Dim>());
  Dim* dim = dims.back().get();
  dim->name = std::move(name);
  dim->order = NextDimOrder();
  dim->constant = size;
  return dim;
}

}  // namespace delta::ir

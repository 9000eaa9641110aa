// The AD pass: prepares each primal (clone, inline, demap) and hands it to
// forward or reverse mode. See docs/internals/ad.md.
#include "compiler/transforms/ad/differentiate.h"

#include <llvm/ADT/DenseSet.h>

#include "compiler/ir/builder.h"
#include "compiler/transforms/ad/forward.h"
#include "compiler/transforms/ad/reverse.h"
#include "compiler/transforms/batch/demap.h"
#include "compiler/transforms/opt/inline_calls.h"
#include "compiler/transforms/rewrite.h"

namespace delta::ad {
namespace {

using ir::Function;
using ir::Op;
using ir::OpKind;

bool NeedsBody(const Function& function) {
  return function.derivative && function.body->ops.empty();
}

// Whether `function` or anything it calls is a derivative still to fill.
bool DependsOnUnfilled(const Function& function,
                       llvm::DenseSet<const Function*>& seen) {
  if (!seen.insert(&function).second) return false;
  if (NeedsBody(function)) return true;
  bool depends = false;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (op.kind == OpKind::Call && op.callee)
      depends = depends || DependsOnUnfilled(*op.callee, seen);
  });
  return depends;
}

// Calls that AD keeps as calls: functions with a @vjp rule (reverse mode
// calls the rule) and checkpointed calls (recomputed in the backward sweep).
bool KeepsCall(const Op& op, bool reverse) {
  return reverse && (op.checkpoint || op.callee->custom_vjp);
}

// A copy of `derived`'s primal with the same signature, with every call
// inlined except those AD keeps: `call @primal` in a fresh function, then
// inlining until no call is left to inline.
Function* PreparePrimal(ir::Module& module, Function& derived, bool reverse) {
  Function& primal = *derived.derivative->primal;
  Function* copy = module.AddFunction(derived.name + ".primal");
  transforms::CloneMap map;
  for (size_t k = 0; k < primal.size_params.size(); ++k) {
    ir::Value* size = copy->NewValue(primal.size_params[k]->type,
                                     primal.size_params[k]->name);
    copy->size_params.push_back(size);
    map.dims[primal.dims[k]] =
        copy->NewDim(primal.dims[k]->name, primal.dims[k]->constant, size);
  }
  ir::Builder builder(copy);
  std::vector<ir::Value*> args;
  for (size_t i = 0; i < primal.params.size(); ++i) {
    ir::Value* param = copy->NewValue(map.Lookup(primal.params[i]->type),
                                      primal.params[i]->name);
    param->block = copy->body.get();
    param->index = static_cast<unsigned>(i);
    copy->body->args.push_back(param);
    copy->params.push_back(param);
    args.push_back(param);
  }
  copy->param_names = primal.param_names;
  for (const ir::Type& type : primal.result_types)
    copy->result_types.push_back(map.Lookup(type));
  Op* call = builder.Create(OpKind::Call, args, copy->result_types);
  call->callee = &primal;
  for (size_t k = 0; k < primal.size_params.size(); ++k)
    call->dims.push_back(copy->dims[k]);
  builder.Return(
      std::vector<ir::Value*>(call->results.begin(), call->results.end()));
  // Inline until only the calls AD keeps are left (there is no recursion).
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<Op*> calls;
    transforms::WalkOps(*copy->body, [&](Op& op) {
      if (op.kind == OpKind::Call && op.callee &&
          !op.callee->body->ops.empty() && !KeepsCall(op, reverse))
        calls.push_back(&op);
    });
    for (Op* inner : calls) {
      opt::InlineCall(*copy, *inner);
      changed = true;
    }
  }
  return copy;
}

void RemoveFunction(ir::Module& module, const Function* function) {
  auto& functions = module.functions;
  for (auto it = functions.begin(); it != functions.end(); ++it)
    if (it->get() == function) {
      functions.erase(it);
      return;
    }
}

llvm::Error Fill(ir::Module& module, Function& derived) {
  bool reverse = derived.derivative->mode != ir::Derivative::Mode::Jvp;
  Function* primal = PreparePrimal(module, derived, reverse);
  llvm::Error error = llvm::Error::success();
  if (reverse) {
    batch::DemapFunction(*primal);
    error = BuildReverse(*primal, derived);
  } else {
    error = BuildJvp(*primal, derived);
  }
  RemoveFunction(module, primal);
  return error;
}

}  // namespace

llvm::Error Differentiate(ir::Module& module) {
  // Filling one may create others (the pullback of a checkpointed call), so
  // repeat until none is left or none can make progress.
  for (;;) {
    std::vector<Function*> pending;
    for (auto& function : module.functions)
      if (NeedsBody(*function)) pending.push_back(function.get());
    if (pending.empty()) return llvm::Error::success();
    bool progress = false;
    for (Function* derived : pending) {
      llvm::DenseSet<const Function*> seen;
      if (DependsOnUnfilled(*derived->derivative->primal, seen)) continue;
      if (llvm::Error error = Fill(module, *derived)) return error;
      progress = true;
    }
    if (!progress)
      return llvm::make_error<AdError>(
          AdError::Kind::Internal, ir::Loc{},
          "internal error: derivative functions depend on each other in a "
          "cycle");
  }
}

}  // namespace delta::ad

// Inlines calls of non-recursive functions (the language has no recursion;
// a cycle is left alone rather than unrolled).
#include "compiler/transforms/opt/inline_calls.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Function;
using ir::Op;
using ir::OpKind;

// Each pass over the calls inlines one level; a call tree deeper than this
// is left as calls (code size, not correctness).
constexpr int kMaxRounds = 64;

std::vector<Op*> CallsIn(Function& function) {
  std::vector<Op*> calls;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (op.kind == OpKind::Call && op.callee) calls.push_back(&op);
  });
  return calls;
}

// Functions that can reach themselves through calls.
llvm::DenseSet<const Function*> FindRecursive(ir::Module& module) {
  llvm::DenseMap<const Function*, std::vector<const Function*>> callees;
  for (auto& function : module.functions)
    for (Op* call : CallsIn(*function))
      callees[function.get()].push_back(call->callee);
  llvm::DenseSet<const Function*> recursive;
  for (auto& function : module.functions) {
    llvm::DenseSet<const Function*> seen;
    std::vector<const Function*> stack = callees[function.get()];
    while (!stack.empty()) {
      const Function* next = stack.back();
      stack.pop_back();
      if (next == function.get()) {
        recursive.insert(next);
        break;
      }
      if (seen.insert(next).second)
        for (const Function* callee : callees[next]) stack.push_back(callee);
    }
  }
  return recursive;
}

// A derivative function's body is empty until the AD pass fills it.
bool HasBody(const Function& function) {
  const Op* last = function.body->terminator();
  return last && last->kind == OpKind::Return;
}

// A name for a copy of a local dim that no dim of `function` has yet.
std::string FreshDimName(const Function& function, const std::string& name) {
  auto taken = [&](const std::string& candidate) {
    for (const ir::Dim* dim : function.dims)
      if (dim->name == candidate) return true;
    return false;
  };
  if (!taken(name)) return name;
  for (int i = 1;; ++i)
    if (!taken(name + "." + std::to_string(i)))
      return name + "." + std::to_string(i);
}

}  // namespace

void InlineCall(Function& caller, Op& call) {
  Function& callee = *call.callee;
  ir::Builder builder(&caller);
  builder.SetLoc(call.loc);
  transforms::CloneMap map;
  std::vector<std::pair<const ir::Dim*, ir::Dim*>> local_dims;
  for (size_t k = 0; k < callee.dims.size(); ++k) {
    const ir::Dim* dim = callee.dims[k];
    if (k < callee.size_params.size()) {
      map.dims[dim] = call.dims[k];
    } else {
      ir::Dim* fresh = caller.CopyDim(*dim, FreshDimName(caller, dim->name));
      map.dims[dim] = fresh;
      local_dims.push_back({dim, fresh});
    }
  }
  for (size_t i = 0; i < callee.params.size(); ++i)
    map.values[callee.params[i]] = call.operands[i];
  std::vector<ir::Value*> returned;
  ir::Block& block = *call.parent;
  // The copies' locations go on through this call (Note [Call chains]);
  // a call that was itself inlined names its original caller. Ops that
  // shared a chain share the longer one.
  using Chain = std::vector<ir::CallSite>;
  const Chain* outer = call.loc.inlined_at.get();
  ir::CallSite site = ir::SiteOfCall(call, caller);
  llvm::DenseMap<const Chain*, std::shared_ptr<const Chain>> extended;
  auto extend_chain = [&](Op& op) {
    if (!op.loc.IsValid()) return;
    std::shared_ptr<const Chain>& chain = extended[op.loc.inlined_at.get()];
    if (!chain) {
      Chain longer = op.loc.inlined_at ? *op.loc.inlined_at : Chain{};
      longer.push_back(site);
      if (outer) longer.insert(longer.end(), outer->begin(), outer->end());
      chain = std::make_shared<const Chain>(std::move(longer));
    }
    op.loc.inlined_at = chain;
  };
  transforms::InsertAt(builder, block, transforms::IndexOf(call), [&] {
    for (size_t k = 0; k < callee.size_params.size(); ++k)
      map.values[callee.size_params[k]] = builder.Size(call.dims[k]);
    for (const auto& op : callee.body->ops) {
      if (op->kind == OpKind::Return) {
        for (ir::Value* value : op->operands)
          returned.push_back(map.Lookup(value));
        break;
      }
      Op* copy = transforms::CloneOp(builder, *op, map);
      extend_chain(*copy);
      for (auto& region : copy->regions)
        transforms::WalkOps(*region, extend_chain);
    }
  });
  for (auto [dim, fresh] : local_dims)
    if (dim->size) fresh->size = map.Lookup(dim->size);
  llvm::DenseMap<ir::Value*, ir::Value*> replacements;
  for (size_t i = 0; i < call.results.size(); ++i) {
    returned[i]->name = call.results[i]->name.empty() ? returned[i]->name
                                                      : call.results[i]->name;
    replacements[call.results[i]] = returned[i];
  }
  transforms::ReplaceUses(caller, replacements);
  transforms::EraseOp(call);
}

bool InlineCalls(ir::Module& module) {
  llvm::DenseSet<const Function*> recursive = FindRecursive(module);
  llvm::DenseSet<const Function*> inlined;
  bool changed = false;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed_this_round = false;
    for (auto& function : module.functions) {
      for (Op* call : CallsIn(*function)) {
        if (recursive.contains(call->callee) || !HasBody(*call->callee))
          continue;
        inlined.insert(call->callee);
        InlineCall(*function, *call);
        changed_this_round = true;
      }
    }
    if (!changed_this_round) break;
    changed = true;
  }
  // Drop what is now unreachable, keeping what a user can call: a function
  // goes when it was inlined everywhere or is a lambda, and no function that
  // stays calls it or derives from it (the primal of an inlined jvp, say).
  auto removable = [&](const Function* function) {
    return (inlined.contains(function) || function->anonymous) &&
           !function->is_export && function->name != "main";
  };
  llvm::DenseSet<const Function*> kept;
  std::vector<Function*> work;
  for (auto& function : module.functions)
    if (!removable(function.get()) && kept.insert(function.get()).second)
      work.push_back(function.get());
  while (!work.empty()) {
    Function* function = work.back();
    work.pop_back();
    std::vector<Function*> used;
    for (Op* call : CallsIn(*function)) used.push_back(call->callee);
    if (function->derivative) used.push_back(function->derivative->primal);
    used.push_back(function->custom_vjp);
    for (Function* next : used)
      if (next && kept.insert(next).second) work.push_back(next);
  }
  std::erase_if(module.functions, [&](const auto& function) {
    return !kept.contains(function.get());
  });
  return changed;
}

}  // namespace delta::opt

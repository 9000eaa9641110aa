// DCE by a backward walk with user counts: an op removed late in a block
// makes its operands' producers, met next, dead in the same walk.
#include "compiler/transforms/opt/eliminate_dead_code.h"

#include <llvm/ADT/DenseSet.h>

#include <algorithm>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

// Functions whose calls can be dropped when unused: nothing in them has
// effects but calls of such functions. There is no recursion, so a fixed
// point from "none is pure" is reached in at most depth-of-calls rounds.
llvm::DenseSet<const ir::Function*> FindPureFunctions(ir::Module& module) {
  llvm::DenseSet<const ir::Function*> pure;
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& function : module.functions) {
      if (pure.contains(function.get())) continue;
      bool is_pure = true;
      transforms::WalkOps(*function->body, [&](Op& op) {
        bool effects = op.kind == OpKind::Call ? !pure.contains(op.callee)
                                               : transforms::HasEffects(op);
        if (effects && op.kind != OpKind::Return && op.kind != OpKind::Yield)
          is_pure = false;
      });
      if (is_pure) grew = pure.insert(function.get()).second;
    }
  }
  return pure;
}

class Eliminator {
 public:
  Eliminator(ir::Function& function,
             const llvm::DenseSet<const ir::Function*>& pure)
      : pure_(pure), users_(transforms::CountUsers(function)) {}

  bool changed() const { return changed_; }

  void Block(ir::Block& block) {
    for (size_t i = block.ops.size(); i-- > 0;) {
      Op& op = *block.ops[i];
      DropUnusedResults(op);
      for (auto& region : op.regions) Block(*region);
      if (IsUsed(op) || HasEffects(op)) continue;
      ForgetUses(op);
      block.ops.erase(block.ops.begin() + static_cast<long>(i));
      changed_ = true;
    }
  }

 private:
  bool IsUsed(const Op& op) const {
    if (op.kind == OpKind::Yield || op.kind == OpKind::Return) return true;
    return std::any_of(op.results.begin(), op.results.end(),
                       [&](const Value* result) { return Users(result) > 0; });
  }

  unsigned Users(const Value* value) const {
    auto it = users_.find(value);
    return it == users_.end() ? 0 : it->second;
  }

  bool HasEffects(const Op& op) const {
    bool effects = op.kind == OpKind::Call ? !pure_.contains(op.callee)
                                           : transforms::HasEffects(op);
    if (effects) return true;
    for (const auto& region : op.regions)
      for (const auto& inner : region->ops)
        if (inner->kind != OpKind::Yield && HasEffects(*inner)) return true;
    return false;
  }

  // The op (and what is nested in it) no longer uses its operands.
  void ForgetUses(Op& op) {
    auto forget = [&](Op& user) {
      for (size_t i = 0; i < user.operands.size(); ++i) {
        Value* operand = user.operands[i];
        if (std::find(user.operands.begin(), user.operands.begin() + i,
                      operand) == user.operands.begin() + i)
          --users_[operand];
      }
    };
    forget(op);
    for (auto& region : op.regions) transforms::WalkOps(*region, forget);
  }

  // Removes operand `index` of `user`, keeping the user counts right.
  void RemoveOperand(Op& user, size_t index) {
    Value* operand = user.operands[index];
    user.operands.erase(user.operands.begin() + static_cast<long>(index));
    if (std::find(user.operands.begin(), user.operands.end(), operand) ==
        user.operands.end())
      --users_[operand];
  }

  void RemoveResult(Op& op, size_t index) {
    op.results.erase(op.results.begin() + static_cast<long>(index));
    for (size_t i = 0; i < op.results.size(); ++i)
      op.results[i]->index = static_cast<unsigned>(i);
    changed_ = true;
  }

  void DropUnusedResults(Op& op) {
    switch (op.kind) {
      case OpKind::Map:
      case OpKind::If:
        for (size_t i = op.results.size(); i-- > 0;) {
          if (Users(op.results[i]) > 0) continue;
          for (auto& region : op.regions)
            RemoveOperand(*region->terminator(), i);
          RemoveResult(op, i);
        }
        return;
      case OpKind::Loop:
        DropUnusedLoopResults(op);
        return;
      default:
        return;
    }
  }

  // Which state of `loop` is needed: state whose result is used, or that
  // feeds (through the body) an effect, a stacked output or needed state.
  std::vector<bool> NeededState(const Op& loop) {
    const ir::Block& body = *loop.regions[0];
    const Op& yield = *body.terminator();
    size_t state_count = loop.operands.size() - 2;
    std::vector<bool> needed(state_count);
    for (size_t i = 0; i < state_count; ++i)
      needed[i] = Users(loop.results[i]) > 0;
    for (bool grew = true; grew;) {
      grew = false;
      llvm::DenseSet<const Value*> live;
      for (size_t i = 0; i < yield.operands.size(); ++i)
        if (i >= state_count || needed[i]) live.insert(yield.operands[i]);
      for (size_t k = body.ops.size() - 1; k-- > 0;) {
        const Op& op = *body.ops[k];
        bool is_live =
            HasEffects(op) ||
            std::any_of(op.results.begin(), op.results.end(),
                        [&](const Value* v) { return live.contains(v); });
        if (!is_live) continue;
        live.insert(op.operands.begin(), op.operands.end());
        for (const auto& region : op.regions)
          transforms::WalkOps(*region, [&](Op& inner) {
            live.insert(inner.operands.begin(), inner.operands.end());
          });
      }
      for (size_t i = 0; i < state_count; ++i) {
        if (!needed[i] && live.contains(body.args[i + 1])) {
          needed[i] = true;
          grew = true;
        }
      }
    }
    return needed;
  }

  void DropUnusedLoopResults(Op& loop) {
    ir::Block& body = *loop.regions[0];
    Op& yield = *body.terminator();
    size_t state_count = loop.operands.size() - 2;
    // Stacked outputs (a scan) feed nothing else in the loop.
    for (size_t i = loop.results.size(); i-- > state_count;) {
      if (Users(loop.results[i]) > 0) continue;
      RemoveOperand(yield, i);
      RemoveResult(loop, i);
    }
    std::vector<bool> needed = NeededState(loop);
    for (size_t i = state_count; i-- > 0;) {
      if (needed[i]) continue;
      // Ops of the body that still read the state are dead now, and the
      // walk of the body that follows removes them.
      RemoveOperand(yield, i);
      RemoveOperand(loop, i + 2);
      body.args.erase(body.args.begin() + static_cast<long>(i + 1));
      for (size_t k = 0; k < body.args.size(); ++k)
        body.args[k]->index = static_cast<unsigned>(k);
      RemoveResult(loop, i);
    }
  }

  const llvm::DenseSet<const ir::Function*>& pure_;
  transforms::UserCounts users_;
  bool changed_ = false;
};

}  // namespace

bool EliminateDeadCode(ir::Module& module) {
  llvm::DenseSet<const ir::Function*> pure = FindPureFunctions(module);
  bool changed = false;
  for (auto& function : module.functions) {
    Eliminator eliminator(*function, pure);
    eliminator.Block(*function->body);
    changed |= eliminator.changed();
  }
  return changed;
}

}  // namespace delta::opt

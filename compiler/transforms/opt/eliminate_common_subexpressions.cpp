// CSE with a scoped table: a region sees the ops of the blocks around it,
// and what it defines is forgotten when it ends.
#include "compiler/transforms/opt/eliminate_common_subexpressions.h"

#include <bit>
#include <cstdint>
#include <map>
#include <vector>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

// Everything that makes two ops compute the same thing, as a flat list.
using Key = std::vector<uint64_t>;

uint64_t Bits(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer);
}

bool IsMergeable(const Op& op) {
  if (!op.regions.empty() || op.results.empty()) return false;
  switch (op.kind) {
    case OpKind::Print:
    case OpKind::ReadNpy:
    case OpKind::WriteNpy:
    case OpKind::Call:
    case OpKind::DimDef:
    case OpKind::While:
    case OpKind::Yield:
    case OpKind::Return:
      return false;
    default:
      return true;
  }
}

Key KeyOf(const Op& op) {
  Key key = {static_cast<uint64_t>(op.kind), static_cast<uint64_t>(op.reduce),
             std::bit_cast<uint64_t>(op.float_value),
             static_cast<uint64_t>(op.int_value), op.operands.size()};
  for (const Value* operand : op.operands) key.push_back(Bits(operand));
  key.push_back(op.dims.size());
  for (const ir::Dim* dim : op.dims) key.push_back(Bits(dim));
  for (const Value* result : op.results) {
    key.push_back(static_cast<uint64_t>(result->type.elem));
    key.push_back(Bits(result->type.index_dim));
    key.push_back(result->type.dims.size());
    for (const ir::Dim* dim : result->type.dims) key.push_back(Bits(dim));
  }
  return key;
}

class Eliminator {
 public:
  explicit Eliminator(ir::Function& function) : function_(function) {}

  bool Run() {
    Block(*function_.body);
    transforms::ReplaceUses(function_, replacements_);
    for (Op* op : duplicates_) transforms::EraseOp(*op);
    return !duplicates_.empty();
  }

 private:
  void Block(ir::Block& block) {
    std::vector<std::map<Key, Op*>::iterator> scope;
    for (auto& owned : block.ops) {
      Op& op = *owned;
      for (Value*& operand : op.operands) {
        auto it = replacements_.find(operand);
        if (it != replacements_.end()) operand = it->second;
      }
      for (auto& region : op.regions) Block(*region);
      if (!IsMergeable(op)) continue;
      auto [it, inserted] = table_.try_emplace(KeyOf(op), &op);
      if (inserted) {
        scope.push_back(it);
        continue;
      }
      for (size_t i = 0; i < op.results.size(); ++i)
        replacements_[op.results[i]] = it->second->results[i];
      duplicates_.push_back(&op);
    }
    for (auto it : scope) table_.erase(it);
  }

  ir::Function& function_;
  std::map<Key, Op*> table_;
  llvm::DenseMap<Value*, Value*> replacements_;
  std::vector<Op*> duplicates_;
};

}  // namespace

bool EliminateCommonSubexpressions(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions)
    changed |= Eliminator(*function).Run();
  return changed;
}

}  // namespace delta::opt

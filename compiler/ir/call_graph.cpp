// FindCallCycle: a depth-first search over functions without recursion.
#include "compiler/ir/call_graph.h"

#include <llvm/ADT/DenseMap.h>

namespace delta::ir {
namespace {

// The call ops of `function`, in nested regions too.
std::vector<const Op*> CallsIn(const Function& function) {
  std::vector<const Op*> calls;
  if (!function.body) return calls;
  std::vector<const Block*> blocks = {function.body.get()};
  while (!blocks.empty()) {
    const Block* block = blocks.back();
    blocks.pop_back();
    for (const auto& op : block->ops) {
      if (op->kind == OpKind::Call && op->callee) calls.push_back(op.get());
      for (const auto& region : op->regions) blocks.push_back(region.get());
    }
  }
  return calls;
}

}  // namespace

std::vector<const Op*> FindCallCycle(const Module& module) {
  enum class Mark { None, Active, Done };
  llvm::DenseMap<const Function*, Mark> marks;
  struct Frame {
    const Function* function;
    std::vector<const Op*> calls;
    size_t taken = 0;
  };
  for (const auto& root : module.functions) {
    if (marks[root.get()] != Mark::None) continue;
    marks[root.get()] = Mark::Active;
    std::vector<Frame> stack;
    stack.push_back({root.get(), CallsIn(*root)});
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.taken == frame.calls.size()) {
        marks[frame.function] = Mark::Done;
        stack.pop_back();
        continue;
      }
      const Op* call = frame.calls[frame.taken++];
      Mark& mark = marks[call->callee];
      if (mark == Mark::Done) continue;
      if (mark == Mark::None) {
        mark = Mark::Active;
        stack.push_back({call->callee, CallsIn(*call->callee)});
        continue;
      }
      // The frames from the callee's to the top, each by the call it took.
      std::vector<const Op*> cycle;
      bool on_cycle = false;
      for (const Frame& f : stack) {
        on_cycle = on_cycle || f.function == call->callee;
        if (on_cycle) cycle.push_back(f.calls[f.taken - 1]);
      }
      return cycle;
    }
  }
  return {};
}

}  // namespace delta::ir

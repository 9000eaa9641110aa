// The recursion check: a function or module-level let that reaches itself
// through calls and uses is an error (Delta has no recursion), found by an
// iterative depth-first search over one module's functions and lets.
#include <llvm/ADT/STLExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {

void Checker::CheckRecursion(ModuleInfo* module) {
  // Depth-first search for cycles among this module's functions and
  // module-level lets (a let is evaluated per use, so one that reaches
  // itself through a function never ends). Iterative: a chain of calls may
  // be as long as the program.
  using Node = llvm::PointerUnion<FnInfo*, ast::LetDecl*>;
  auto successors = [&](Node node) {
    std::vector<Node> next;
    if (auto* fn = llvm::dyn_cast<FnInfo*>(node)) {
      next.assign(fn->callees.begin(), fn->callees.end());
      next.insert(next.end(), fn->lets_used.begin(), fn->lets_used.end());
    } else {
      auto it = let_uses_.find(llvm::cast<ast::LetDecl*>(node));
      if (it != let_uses_.end()) next = it->second;
    }
    return next;
  };
  auto name_of = [](Node node) {
    if (auto* fn = llvm::dyn_cast<FnInfo*>(node))
      return fn->decl->name.name.str();
    const ast::Pattern* pattern = llvm::cast<ast::LetDecl*>(node)->pattern;
    return pattern->kind == ast::Pattern::Kind::Name ? pattern->name.name.str()
                                                     : std::string("(…)");
  };
  enum class Mark { None, Active, Done };
  llvm::DenseMap<Node, Mark> marks;
  struct Frame {
    Node node;
    std::vector<Node> next;
    size_t taken = 0;
  };
  auto search = [&](Node root) {
    if (marks[root] != Mark::None) return;
    marks[root] = Mark::Active;
    std::vector<Frame> stack;
    stack.push_back({root, successors(root)});
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.taken == frame.next.size()) {
        marks[frame.node] = Mark::Done;
        stack.pop_back();
        continue;
      }
      Node target = frame.next[frame.taken++];
      Mark& mark = marks[target];
      if (mark == Mark::None) {
        mark = Mark::Active;
        stack.push_back({target, successors(target)});
        continue;
      }
      if (mark == Mark::Done) continue;
      // A cycle: the frames from `target` to the top. A let on it is
      // reported as depending on itself; a cycle of functions alone at
      // the function that closes it (which is then done, as before).
      size_t first = 0;
      while (stack[first].node != target) ++first;
      std::vector<Node> cycle;
      for (size_t i = first; i < stack.size(); ++i)
        cycle.push_back(stack[i].node);
      auto let_at = llvm::find_if(
          cycle, [](Node node) { return llvm::isa<ast::LetDecl*>(node); });
      ast::LetDecl* let = nullptr;
      std::string path;
      if (let_at != cycle.end()) {
        // Named from the let: `c -> f -> c`.
        std::rotate(cycle.begin(), let_at, cycle.end());
        let = llvm::cast<ast::LetDecl*>(cycle.front());
        for (Node node : cycle) path += name_of(node) + " -> ";
        path += name_of(cycle.front());
      }
      if (let) {
        if (lets_reported_.insert(let).second)
          Error(DiagKind::Recursion, let->pattern->span,
                "this constant depends on itself (" + path + ")");
        continue;
      }
      FnInfo* fn = llvm::cast<FnInfo*>(frame.node);
      if (marks[frame.node] != Mark::Active) continue;
      Error(DiagKind::Recursion, fn->decl->name.span,
            "`" + fn->decl->name.name.str() +
                "` is recursive; Delta functions cannot call themselves "
                "(use loop or while)");
      // Report this function once: its other edges are not searched.
      frame.taken = frame.next.size();
      marks[frame.node] = Mark::Done;
    }
  };
  for (FnInfo& fn : program_.functions)
    if (fn.module == module) search(&fn);
  for (ast::Decl* decl : module->ast->decls)
    if (auto* let = llvm::dyn_cast<ast::LetDecl>(decl)) search(let);
}

}  // namespace delta::sema

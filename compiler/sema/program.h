// A checked program: the typed ASTs of the main module and its imports, with
// every symbol, type and call fact that semantic analysis recorded. Lowering
// reads it; nothing changes it after checking.
#pragma once

#include <llvm/Support/SourceMgr.h>

#include <deque>

#include "compiler/sema/symbols.h"
#include "compiler/sema/types.h"
#include "compiler/syntax/ast.h"

namespace delta::sema {

// Everything a checked program owns.
class Program {
 public:
  explicit Program(llvm::SourceMgr& sources) : sources(sources) {}
  llvm::SourceMgr& sources;
  ast::Arena arena;
  TypeContext types;
  std::deque<Symbol> symbols;
  std::deque<Scope> scopes;
  std::deque<FnInfo> functions;
  std::deque<StructInfo> structs;
  std::deque<Callable> callables;
  std::deque<CallInfo> calls;
  std::deque<TypeParamInfo> type_params;
  std::deque<ModuleInfo> modules;  // imported modules first, main last
  ModuleInfo* main_module = nullptr;
};

}  // namespace delta::sema

// A compact S-expression rendering of the AST, for tests and debugging
// (e.g. a future `dlc --dump-ast`).
#pragma once

#include <string>

#include "compiler/syntax/ast.h"

namespace delta::ast {

// One line per declaration.
std::string Dump(const Module& module);
std::string Dump(const Decl* decl);
std::string Dump(const Stmt* stmt);
std::string Dump(const Expr* expr);
std::string Dump(const TypeExpr* type);
std::string Dump(const Pattern* pattern);

}  // namespace delta::ast

// How the formatter spells operators, literal suffixes and dotted names,
// and how tightly operators bind (language.md 4.1).
#pragma once

#include <string>
#include <vector>

#include "compiler/syntax/ast.h"

namespace delta::format {

const char* OpText(ast::BinaryOp op);

// Binding strength, loosest first.
enum Prec { kLowest, kOr, kAnd, kCompare, kAdd, kMul, kUnary, kPow, kPostfix };

Prec PrecOf(ast::BinaryOp op);
Prec PrecOf(const ast::Expr* expr);

// `if`, `loop`, `for` and blocks: they end an expression statement early.
bool IsBlockLike(const ast::Expr* expr);

const char* SuffixText(ast::LitSuffix suffix);

// `names` joined by `separator`, each with its module (`cfg.n`).
std::string JoinIdents(const std::vector<ast::Ident>& names,
                       const char* separator);

// Types, patterns and lambda parameters never break across lines.
std::string Type(const ast::TypeExpr* type);
std::string Pattern(const ast::Pattern* pattern);
// A struct's brackets, `[T: float, i, o]`, or nothing.
std::string StructParams(const ast::StructDecl& decl);
std::string LambdaParams(const std::vector<ast::Param>& params);
// `value` as a literal, escaped.
std::string StringLiteral(const std::string& value);

}  // namespace delta::format

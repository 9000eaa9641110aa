// Type checking of blocks, statements and patterns: let bindings with
// their annotations, dim declarations, and where a block's dims end.
#include <llvm/ADT/STLExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {

namespace {

// `npy_extent(…)` where no declaration hides the name.
ast::CallExpr* AsFileExtent(ast::Expr* expr, const Scope* scope) {
  auto* call = llvm::dyn_cast<ast::CallExpr>(expr);
  auto* callee = call ? llvm::dyn_cast<ast::NameExpr>(call->callee) : nullptr;
  if (!callee || callee->name.name != "npy_extent" ||
      scope->Lookup(callee->name.name))
    return nullptr;
  return call;
}

}  // namespace

// `dim n = npy_extent(data, 0);` in main: the size is read from the file
// that main's `path` parameter `data` names, before main runs
// (docs/language/io.md); the axis is an integer literal.
void Checker::CheckFileExtent(ast::CallExpr* call, Context& context) {
  call->type = types().Scalar(ScalarKind::I64);
  if (!context.in_main) {
    Error(DiagKind::PrintOutsideMain, call->callee->span,
          "npy_extent is allowed only in the body of main; functions are "
          "pure");
    return;
  }
  // Its size is a parameter of main's own function, which a lambda (lowered
  // to a function of its own when transformed) does not see.
  if (context.in_lambda) {
    Error(DiagKind::PrintOutsideMain, call->callee->span,
          "npy_extent is allowed only in main's own body, not in a lambda; "
          "declare the dim before the lambda");
    return;
  }
  auto* path = call->args.size() == 2
                   ? llvm::dyn_cast<ast::NameExpr>(call->args[0].value)
                   : nullptr;
  const Symbol* symbol =
      path ? context.scope->Lookup(path->name.name) : nullptr;
  auto* axis = call->args.size() == 2
                   ? llvm::dyn_cast<ast::IntLitExpr>(call->args[1].value)
                   : nullptr;
  if (!symbol || symbol->kind != Symbol::Kind::Value || symbol->path_arg < 0 ||
      !axis || call->args[0].label || call->args[1].label) {
    Error(DiagKind::BadBuiltinUse, call->span,
          "npy_extent(file, axis) takes a `path` parameter of main and an "
          "integer literal");
    return;
  }
  path->symbol = const_cast<Symbol*>(symbol);
  path->type = types().Unit();
  axis->type = types().Scalar(ScalarKind::I64);
}

const Type* Checker::CheckBlock(ast::BlockExpr* block, Context& context) {
  Context inner = context;
  for (ast::Stmt* stmt : block->stmts) CheckStmt(stmt, inner);
  const Type* type = types().Unit();
  if (block->result) type = CheckExpr(block->result, inner);
  // A dim declared in this block ends with it; its value cannot keep it.
  DimSet result_dims = AllDims(Resolve(type));
  for (ast::Stmt* stmt : block->stmts) {
    auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt);
    if (dim && dim->symbol && result_dims.Contains(dim->symbol->dim)) {
      Error(DiagKind::DimEscapes, block->result->span,
            "this value has dim `" + dim->name.name.str() +
                "`, which is declared inside the block and ends with it; "
                "reduce over it, or declare the dim outside")
          .Note(dim->name.span, "declared here");
      type = types().Error();
      break;
    }
  }
  block->type = type;
  Record(&block->type);
  return type;
}

void Checker::BindPattern(ast::Pattern* pattern, const Type* type,
                          Context& context) {
  type = Resolve(type);
  pattern->type = type;
  Record(&pattern->type);
  switch (pattern->kind) {
    case ast::Pattern::Kind::Wildcard:
      return;
    case ast::Pattern::Kind::Name: {
      Symbol* symbol = NewSymbol(Symbol::Kind::Value, pattern->name.name,
                                 pattern->name.span);
      symbol->type = type;
      Record(&symbol->type);
      pattern->symbol = symbol;
      context.scope = Bind(context.scope, symbol, context);
      return;
    }
    case ast::Pattern::Kind::Tuple: {
      if (!type->IsError() &&
          (type->kind != Type::Kind::Tuple ||
           type->elements.size() != pattern->elements.size())) {
        Error(DiagKind::PatternMismatch, pattern->span,
              "this pattern has " + std::to_string(pattern->elements.size()) +
                  " element(s) but the value has type " + TypeString(type));
        type = types().Error();
      }
      for (size_t i = 0; i < pattern->elements.size(); ++i)
        BindPattern(pattern->elements[i],
                    type->IsError() ? type : type->elements[i], context);
      return;
    }
  }
}

void Checker::CheckStmt(ast::Stmt* stmt, Context& context) {
  LitVarId first = StatementStart();
  if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt)) {
    const Type* annotated =
        let->annotation ? ResolveTypeExpr(let->annotation, context.scope)
                        : nullptr;
    if (annotated) ExpectStruct(let->value, annotated);
    const Type* type = CheckExpr(let->value, context);
    if (let->annotation) {
      Expect(annotated, type, let->value->span, "", let->value);
      type = annotated;
    }
    EndStatement(first);
    BindPattern(let->pattern, type, context);
    NoteLetBindings(let->pattern);
    return;
  }
  if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt)) {
    std::optional<int64_t> constant;
    if (const DimInfo* named = DimSizedAs(dim->size, context.scope)) {
      constant = named->constant_size;
    } else if (auto* call = AsFileExtent(dim->size, context.scope)) {
      CheckFileExtent(call, context);
    } else {
      Expect(types().Scalar(ScalarKind::I64), CheckExpr(dim->size, context),
             dim->size->span, "a dim size is an i64");
      constant = ConstantInt(dim->size, context.scope);
    }
    EndStatement(first);
    if (const Symbol* existing = context.scope->Lookup(dim->name.name);
        existing && existing->kind != Symbol::Kind::Builtin) {
      Error(DiagKind::DimReusesName, dim->name.span,
            "dim `" + dim->name.name.str() +
                "` reuses a name that is already visible")
          .Note(existing->span,
                "`" + dim->name.name.str() + "` is declared here");
      return;
    }
    DimInfo info;
    info.kind = DimInfo::Kind::Local;
    info.name = dim->name.name;
    info.span = dim->name.span;
    if (constant && *constant >= 0) info.constant_size = constant;
    Symbol* symbol =
        NewSymbol(Symbol::Kind::Dim, dim->name.name, dim->name.span);
    symbol->dim = types().NewDim(info);
    dim->symbol = symbol;
    Scope* scope = NewScope(context.scope);
    scope->Add(symbol);
    context.scope = scope;
    return;
  }
  auto* expr_stmt = llvm::cast<ast::ExprStmt>(stmt);
  const Type* value = Resolve(CheckExpr(expr_stmt->expr, context));
  EndStatement(first);
  // Functions are pure: a value nobody reads was computed for nothing.
  if (!value->IsError() && value != types().Unit())
    Error(DiagKind::UnusedValue, expr_stmt->expr->span,
          "the value of this expression (" + TypeString(value) +
              ") is discarded, and computing it has no effect; remove it, "
              "or keep it with let _ = …;");
}

void Checker::NoteLetBindings(const ast::Pattern* pattern) {
  if (pattern->kind == ast::Pattern::Kind::Tuple) {
    for (const ast::Pattern* element : pattern->elements)
      NoteLetBindings(element);
  } else if (pattern->symbol && !pattern->name.name.starts_with("_")) {
    let_bindings_.push_back(pattern->symbol);
  }
}

void Checker::ReportUnusedBindings() {
  for (const Symbol* symbol : let_bindings_)
    if (!used_values_.contains(symbol))
      Error(DiagKind::UnusedBinding, symbol->span,
            "`" + symbol->name.str() +
                "` is never used; remove the let, or name it _" +
                symbol->name.str() + " to keep it");
  let_bindings_.clear();
}

}  // namespace delta::sema

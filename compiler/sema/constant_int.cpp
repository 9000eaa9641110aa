// Compile-time evaluation of i64 expressions (the sizes of module-level
// dims): literals, arithmetic without overflow, constant dims and lets,
// size(d) and to_i64; anything else is not a constant.
#include "compiler/sema/checker.h"

namespace delta::sema {

std::optional<int64_t> Checker::ConstantInt(ast::Expr* expr,
                                            const Scope* scope) {
  using K = ast::Expr::Kind;
  switch (expr->kind) {
    case K::IntLit: {
      uint64_t value = llvm::cast<ast::IntLitExpr>(expr)->value;
      if (value > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(value);
    }
    case K::Unary: {
      auto* unary = llvm::cast<ast::UnaryExpr>(expr);
      if (unary->op != ast::UnaryOp::Neg) return std::nullopt;
      auto value = ConstantInt(unary->operand, scope);
      if (!value || *value == INT64_MIN) return std::nullopt;
      return -*value;
    }
    case K::Binary: {
      auto* binary = llvm::cast<ast::BinaryExpr>(expr);
      auto lhs = ConstantInt(binary->lhs, scope);
      auto rhs = ConstantInt(binary->rhs, scope);
      if (!lhs || !rhs) return std::nullopt;
      int64_t result = 0;
      switch (binary->op) {
        case ast::BinaryOp::Add:
          if (__builtin_add_overflow(*lhs, *rhs, &result)) return std::nullopt;
          return result;
        case ast::BinaryOp::Sub:
          if (__builtin_sub_overflow(*lhs, *rhs, &result)) return std::nullopt;
          return result;
        case ast::BinaryOp::Mul:
          if (__builtin_mul_overflow(*lhs, *rhs, &result)) return std::nullopt;
          return result;
        case ast::BinaryOp::Div:
          if (*rhs == 0 || (*lhs == INT64_MIN && *rhs == -1))
            return std::nullopt;
          return *lhs / *rhs;
        case ast::BinaryOp::Rem:
          if (*rhs == 0 || (*lhs == INT64_MIN && *rhs == -1))
            return std::nullopt;
          return *lhs % *rhs;
        default:
          return std::nullopt;
      }
    }
    case K::Name: {
      const Symbol* symbol =
          scope->Lookup(llvm::cast<ast::NameExpr>(expr)->name.name);
      if (!symbol) return std::nullopt;
      if (symbol->kind == Symbol::Kind::Dim) return symbol->dim->constant_size;
      if (symbol->module_let &&
          symbol->module_let->pattern->kind == ast::Pattern::Kind::Name &&
          !lets_in_progress_.contains(symbol->module_let)) {
        lets_in_progress_.insert(symbol->module_let);
        auto value = ConstantInt(symbol->module_let->value, scope);
        lets_in_progress_.erase(symbol->module_let);
        return value;
      }
      return std::nullopt;
    }
    case K::Field: {
      // `cfg.n`, a dim of an imported module, stands for its size.
      auto ref = DimRefOf(expr, scope);
      const Symbol* dim = ref ? LookupDim(*ref, scope) : nullptr;
      if (!dim) return std::nullopt;
      return dim->dim->constant_size;
    }
    case K::Call: {
      auto* call = llvm::cast<ast::CallExpr>(expr);
      auto* callee = llvm::dyn_cast<ast::NameExpr>(call->callee);
      if (!callee || call->args.size() != 1) return std::nullopt;
      const Symbol* symbol = scope->Lookup(callee->name.name);
      if (!symbol || symbol->kind != Symbol::Kind::Builtin) return std::nullopt;
      if (symbol->builtin == Builtin::Size) {
        auto ref = DimRefOf(call->args[0].value, scope);
        const Symbol* dim = ref ? LookupDim(*ref, scope) : nullptr;
        if (!dim) return std::nullopt;
        return dim->dim->constant_size;
      }
      if (symbol->builtin == Builtin::ToI64)
        return ConstantInt(call->args[0].value, scope);
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace delta::sema

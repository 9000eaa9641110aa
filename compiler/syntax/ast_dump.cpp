// Renders the AST as S-expressions: `(+ a (* b c))`, `(let x f32 1)`.
#include "compiler/syntax/ast_dump.h"

#include <llvm/Support/raw_ostream.h>

namespace delta::ast {
namespace {

const char* OpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::Rem:
      return "%";
    case BinaryOp::Pow:
      return "^";
    case BinaryOp::Eq:
      return "==";
    case BinaryOp::Ne:
      return "!=";
    case BinaryOp::Lt:
      return "<";
    case BinaryOp::Le:
      return "<=";
    case BinaryOp::Gt:
      return ">";
    case BinaryOp::Ge:
      return ">=";
    case BinaryOp::And:
      return "&&";
    case BinaryOp::Or:
      return "||";
  }
  return "?";
}

const char* SuffixName(LitSuffix suffix) {
  switch (suffix) {
    case LitSuffix::None:
      return "";
    case LitSuffix::F32:
      return "f32";
    case LitSuffix::F64:
      return "f64";
    case LitSuffix::I32:
      return "i32";
    case LitSuffix::I64:
      return "i64";
  }
  return "?";
}

std::string Join(const std::vector<Ident>& names, const char* separator) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += separator;
    if (!names[i].module.empty()) out += names[i].module.str() + ".";
    out += names[i].name.str();
  }
  return out;
}

std::string Params(const std::vector<Param>& params) {
  std::string out = "(";
  for (size_t i = 0; i < params.size(); ++i) {
    if (i > 0) out += " ";
    out += params[i].name.name.str();
    if (params[i].type != nullptr) out += ":" + Dump(params[i].type);
  }
  return out + ")";
}

}  // namespace

std::string Dump(const TypeExpr* type) {
  if (type == nullptr) return "<null>";
  std::string out;
  if (type->kind == TypeExpr::Kind::Named) {
    out = Join(type->path, ".");
  } else if (type->kind == TypeExpr::Kind::Function) {
    out = "fn(";
    for (size_t i = 0; i < type->elements.size(); ++i)
      out += (i > 0 ? ", " : "") + Dump(type->elements[i]);
    out += ") -> " + Dump(type->result);
  } else {
    out = "(";
    for (size_t i = 0; i < type->elements.size(); ++i) {
      if (i > 0) out += ", ";
      out += Dump(type->elements[i]);
    }
    out += type->elements.size() == 1 ? ",)" : ")";
  }
  for (const DimList& dims : type->brackets) out += "[" + Join(dims, ",") + "]";
  return out;
}

std::string Dump(const Pattern* pattern) {
  if (pattern == nullptr) return "<null>";
  switch (pattern->kind) {
    case Pattern::Kind::Name:
      return pattern->name.name.str();
    case Pattern::Kind::Wildcard:
      return "_";
    case Pattern::Kind::Tuple: {
      std::string out = "(pat";
      for (const Pattern* element : pattern->elements) {
        out += " " + Dump(element);
      }
      return out + ")";
    }
  }
  return "?";
}

std::string Dump(const Expr* expr) {
  if (expr == nullptr) return "<null>";
  std::string out;
  switch (expr->kind) {
    case Expr::Kind::IntLit: {
      auto* e = llvm::cast<IntLitExpr>(expr);
      return std::to_string(e->value) + SuffixName(e->suffix);
    }
    case Expr::Kind::FloatLit: {
      auto* e = llvm::cast<FloatLitExpr>(expr);
      return e->text + SuffixName(e->suffix);
    }
    case Expr::Kind::BoolLit:
      return llvm::cast<BoolLitExpr>(expr)->value ? "true" : "false";
    case Expr::Kind::StringLit: {
      llvm::raw_string_ostream os(out);
      os << '"';
      os.write_escaped(llvm::cast<StringLitExpr>(expr)->value);
      os << '"';
      return out;
    }
    case Expr::Kind::Name:
      return llvm::cast<NameExpr>(expr)->name.name.str();
    case Expr::Kind::Unary: {
      auto* e = llvm::cast<UnaryExpr>(expr);
      return std::string(e->op == UnaryOp::Neg ? "(neg " : "(not ") +
             Dump(e->operand) + ")";
    }
    case Expr::Kind::Binary: {
      auto* e = llvm::cast<BinaryExpr>(expr);
      return std::string("(") + OpName(e->op) + " " + Dump(e->lhs) + " " +
             Dump(e->rhs) + ")";
    }
    case Expr::Kind::Call: {
      auto* e = llvm::cast<CallExpr>(expr);
      out = "(call " + Dump(e->callee);
      for (const Arg& arg : e->args) {
        out += " ";
        if (arg.label) out += arg.label->name.str() + ":";
        out += Dump(arg.value);
      }
      return out + ")";
    }
    case Expr::Kind::Index: {
      auto* e = llvm::cast<IndexExpr>(expr);
      out = "(index " + Dump(e->base);
      for (const IndexEntry& entry : e->entries) {
        out += " ";
        if (entry.dim) out += Join({*entry.dim}, "") + ":";
        out += Dump(entry.value);
      }
      return out + ")";
    }
    case Expr::Kind::Field: {
      auto* e = llvm::cast<FieldExpr>(expr);
      return "(. " + Dump(e->base) + " " + e->field.name.str() + ")";
    }
    case Expr::Kind::TupleIndex: {
      auto* e = llvm::cast<TupleIndexExpr>(expr);
      return "(. " + Dump(e->base) + " " + std::to_string(e->index) + ")";
    }
    case Expr::Kind::Tuple: {
      out = "(tuple";
      for (const Expr* e : llvm::cast<TupleExpr>(expr)->elements) {
        out += " " + Dump(e);
      }
      return out + ")";
    }
    case Expr::Kind::StructLit: {
      auto* e = llvm::cast<StructLitExpr>(expr);
      out = "(struct " + Join(e->path, ".");
      for (const FieldInit& field : e->fields) {
        out += " (" + field.name.name.str() + " " + Dump(field.value) + ")";
      }
      if (e->base != nullptr) out += " (.. " + Dump(e->base) + ")";
      return out + ")";
    }
    case Expr::Kind::ArrayLit: {
      auto* e = llvm::cast<ArrayLitExpr>(expr);
      out = "(array " + e->dim.name.str();
      for (const Expr* element : e->elements) out += " " + Dump(element);
      return out + ")";
    }
    case Expr::Kind::Block: {
      auto* e = llvm::cast<BlockExpr>(expr);
      out = "(block";
      for (const Stmt* stmt : e->stmts) out += " " + Dump(stmt);
      if (e->result != nullptr) out += " " + Dump(e->result);
      return out + ")";
    }
    case Expr::Kind::If: {
      auto* e = llvm::cast<IfExpr>(expr);
      out = "(if " + Dump(e->condition) + " " + Dump(e->then_block);
      if (e->else_branch != nullptr) out += " " + Dump(e->else_branch);
      return out + ")";
    }
    case Expr::Kind::Loop: {
      auto* e = llvm::cast<LoopExpr>(expr);
      std::string head = Dump(e->state) + " " + Dump(e->init) + " ";
      switch (e->form) {
        case LoopExpr::Form::ForDim:
          return "(loop-for " + head + Dump(e->iterator) + " " +
                 Dump(e->domain) + " " + Dump(e->body) + ")";
        case LoopExpr::Form::ForRange:
          return "(loop-range " + head + Dump(e->iterator) + " " +
                 Dump(e->range_lo) + " " + Dump(e->range_hi) + " " +
                 Dump(e->body) + ")";
        case LoopExpr::Form::While:
          return "(loop-while " + head + Dump(e->condition) + " " +
                 Dump(e->body) + ")";
      }
      return "?";
    }
    case Expr::Kind::For: {
      auto* e = llvm::cast<ForExpr>(expr);
      out = "(for";
      for (const ForBinding& binding : e->bindings) {
        out += " (" + Dump(binding.variable) + " " + Dump(binding.domain) + ")";
      }
      return out + " " + Dump(e->body) + ")";
    }
    case Expr::Kind::Lambda: {
      auto* e = llvm::cast<LambdaExpr>(expr);
      out = "(lambda " + Params(e->params);
      if (e->result_type != nullptr) out += " -> " + Dump(e->result_type);
      return out + " " + Dump(e->body) + ")";
    }
  }
  return "?";
}

std::string Dump(const Stmt* stmt) {
  if (stmt == nullptr) return "<null>";
  if (auto* let = llvm::dyn_cast<LetStmt>(stmt)) {
    std::string out = "(let " + Dump(let->pattern);
    if (let->annotation != nullptr) out += " : " + Dump(let->annotation);
    return out + " " + Dump(let->value) + ")";
  }
  if (auto* dim = llvm::dyn_cast<DimStmt>(stmt)) {
    return "(dim " + dim->name.name.str() + " " + Dump(dim->size) + ")";
  }
  auto* e = llvm::cast<ExprStmt>(stmt);
  return "(stmt " + Dump(e->expr) + (e->has_semicolon ? ";)" : ")");
}

std::string Dump(const Decl* decl) {
  if (decl == nullptr) return "<null>";
  switch (decl->kind) {
    case Decl::Kind::Dim: {
      auto* d = llvm::cast<DimDecl>(decl);
      return "(dim " + d->name.name.str() + " " + Dump(d->size) + ")";
    }
    case Decl::Kind::Struct: {
      auto* d = llvm::cast<StructDecl>(decl);
      std::string out = "(struct " + d->name.name.str();
      if (!d->size_params.empty()) out += "[" + Join(d->size_params, ",") + "]";
      for (const TypeParamDecl& param : d->type_params)
        out += "[" + param.name.name.str() + ":" + param.bound.name.str() + "]";
      for (const FieldDecl& field : d->fields) {
        out += " (" + field.name.name.str() + " " + Dump(field.type) + ")";
      }
      return out + ")";
    }
    case Decl::Kind::Fn: {
      auto* d = llvm::cast<FnDecl>(decl);
      std::string out = "(fn ";
      for (const Attribute& attribute : d->attributes) {
        out += "@" + attribute.name.name.str();
        if (!attribute.args.empty()) {
          out += "(";
          for (size_t i = 0; i < attribute.args.size(); ++i) {
            if (i > 0) out += " ";
            out += Dump(attribute.args[i]);
          }
          out += ")";
        }
        out += " ";
      }
      if (d->is_export) out += "export ";
      out += d->name.name.str();
      if (!d->size_params.empty()) out += "[" + Join(d->size_params, ",") + "]";
      for (const TypeParamDecl& param : d->type_params)
        out += "[" + param.name.name.str() + ":" + param.bound.name.str() + "]";
      out += Params(d->params);
      if (d->result_type != nullptr) out += " -> " + Dump(d->result_type);
      return out + " " + Dump(d->body) + ")";
    }
    case Decl::Kind::Import: {
      auto* d = llvm::cast<ImportDecl>(decl);
      std::string out = "(import " + d->module.name.str();
      if (d->alias) out += " as " + d->alias->name.str();
      return out + ")";
    }
    case Decl::Kind::Let: {
      auto* d = llvm::cast<LetDecl>(decl);
      std::string out = "(let " + Dump(d->pattern);
      if (d->annotation != nullptr) out += " : " + Dump(d->annotation);
      return out + " " + Dump(d->value) + ")";
    }
  }
  return "?";
}

std::string Dump(const Module& module) {
  std::string out;
  for (const Decl* decl : module.decls) out += Dump(decl) + "\n";
  return out;
}

}  // namespace delta::ast

// Spellings and binding strengths of the formatter (spelling.h).
#include "compiler/format/spelling.h"

namespace delta::format {

const char* OpText(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Add:
      return "+";
    case ast::BinaryOp::Sub:
      return "-";
    case ast::BinaryOp::Mul:
      return "*";
    case ast::BinaryOp::Div:
      return "/";
    case ast::BinaryOp::Rem:
      return "%";
    case ast::BinaryOp::Pow:
      return "^";
    case ast::BinaryOp::Eq:
      return "==";
    case ast::BinaryOp::Ne:
      return "!=";
    case ast::BinaryOp::Lt:
      return "<";
    case ast::BinaryOp::Le:
      return "<=";
    case ast::BinaryOp::Gt:
      return ">";
    case ast::BinaryOp::Ge:
      return ">=";
    case ast::BinaryOp::And:
      return "&&";
    case ast::BinaryOp::Or:
      return "||";
  }
  return "?";
}

Prec PrecOf(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Or:
      return kOr;
    case ast::BinaryOp::And:
      return kAnd;
    case ast::BinaryOp::Add:
    case ast::BinaryOp::Sub:
      return kAdd;
    case ast::BinaryOp::Mul:
    case ast::BinaryOp::Div:
    case ast::BinaryOp::Rem:
      return kMul;
    case ast::BinaryOp::Pow:
      return kPow;
    default:
      return kCompare;
  }
}

Prec PrecOf(const ast::Expr* expr) {
  if (auto* binary = llvm::dyn_cast<ast::BinaryExpr>(expr))
    return PrecOf(binary->op);
  if (llvm::isa<ast::UnaryExpr>(expr)) return kUnary;
  if (llvm::isa<ast::LambdaExpr>(expr)) return kLowest;
  return kPostfix;
}

bool IsBlockLike(const ast::Expr* expr) {
  return llvm::isa<ast::IfExpr, ast::LoopExpr, ast::ForExpr, ast::BlockExpr>(
      expr);
}

const char* SuffixText(ast::LitSuffix suffix) {
  switch (suffix) {
    case ast::LitSuffix::None:
      return "";
    case ast::LitSuffix::F32:
      return "f32";
    case ast::LitSuffix::F64:
      return "f64";
    case ast::LitSuffix::I32:
      return "i32";
    case ast::LitSuffix::I64:
      return "i64";
  }
  return "";
}

std::string JoinIdents(const std::vector<ast::Ident>& names,
                       const char* separator) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += i ? separator : "";
    // `cfg.n`, a dim of an imported module in a type.
    if (!names[i].module.empty()) out += names[i].module.str() + ".";
    out += names[i].name.str();
  }
  return out;
}

std::string Type(const ast::TypeExpr* type) {
  std::string out;
  if (type->kind == ast::TypeExpr::Kind::Named) {
    out = JoinIdents(type->path, ".");
  } else if (type->kind == ast::TypeExpr::Kind::Function) {
    out = "fn(";
    for (size_t i = 0; i < type->elements.size(); ++i)
      out += (i ? ", " : "") + Type(type->elements[i]);
    out += ") -> " + Type(type->result);
  } else {
    out = "(";
    for (size_t i = 0; i < type->elements.size(); ++i)
      out += (i ? ", " : "") + Type(type->elements[i]);
    out += type->elements.size() == 1 ? ",)" : ")";
  }
  for (const ast::DimList& dims : type->brackets)
    out += "[" + JoinIdents(dims, ", ") + "]";
  return out;
}

std::string Pattern(const ast::Pattern* pattern) {
  switch (pattern->kind) {
    case ast::Pattern::Kind::Name:
      return pattern->name.name.str();
    case ast::Pattern::Kind::Wildcard:
      return "_";
    case ast::Pattern::Kind::Tuple: {
      std::string out = "(";
      for (size_t i = 0; i < pattern->elements.size(); ++i)
        out += (i ? ", " : "") + Pattern(pattern->elements[i]);
      return out + (pattern->elements.size() == 1 ? ",)" : ")");
    }
  }
  return "";
}

std::string StructParams(const ast::StructDecl& decl) {
  // `T: float` first, as a struct type writes its float argument first.
  std::string out;
  for (const ast::TypeParamDecl& param : decl.type_params)
    out += (out.empty() ? "" : ", ") + param.name.name.str() + ": " +
           param.bound.name.str();
  for (const ast::Ident& param : decl.size_params)
    out += (out.empty() ? "" : ", ") + param.name.str();
  return out.empty() ? "" : "[" + out + "]";
}

std::string LambdaParams(const std::vector<ast::Param>& params) {
  std::string out;
  for (size_t i = 0; i < params.size(); ++i) {
    out += (i ? ", " : "") + params[i].name.name.str();
    if (params[i].type) out += ": " + Type(params[i].type);
  }
  return out;
}

std::string StringLiteral(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

}  // namespace delta::format

// The canonical pretty-printer of `dlc fmt`: prints the AST back as source,
// with the comments that the lexer dropped put back in place. One class,
// Printer, holds it whole: every layout decision (Note [Canonical style])
// depends on the same state, where the last printed item ended and which
// comments are still to place, so its parts do not stand alone.
#include "compiler/format/printer.h"

#include <map>
#include <tuple>

#include "compiler/format/comments.h"

namespace delta::format {
namespace {

// Note [Canonical style]
// Two-space indentation; one declaration or statement per line; spaces
// around binary operators and after commas; a block stays on one line
// (`{ x * x }`) when it has no statements, its result fits on a line and no
// comment is inside it, and otherwise takes one line per item. Blank lines
// between items are kept, at most one. Parentheses are printed only where
// precedence or the grammar needs them, so the output does not depend on
// how the input was parenthesized. Comments are kept: one that follows code
// on its line stays at the end of that line; any other comes out on its own
// line before the next declaration or statement (a comment in the middle of
// an expression therefore moves to the line after it). Every decision
// depends only on the AST and where comments are, so formatting is
// idempotent.

constexpr size_t kInlineBlockWidth = 60;

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

// Binding strength, loosest first (language.md 4.1).
enum Prec { kLowest, kOr, kAnd, kCompare, kAdd, kMul, kUnary, kPow, kPostfix };

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

std::string Indent(int indent) { return std::string(size_t(indent), ' '); }

class Printer {
 public:
  Printer(llvm::StringRef source, std::vector<Comment> comments)
      : source_(source), comments_(std::move(comments)) {}

  std::string Module(const ast::Module& module) {
    std::string out;
    last_end_ = source_.begin();
    bool first = true;
    for (const ast::Decl* decl : module.decls) {
      std::string comments = CommentsBefore(decl->span.begin, 0, first);
      if (!comments.empty()) first = false;
      out += comments;
      if (!first && BlankLineBefore(decl->span.begin)) out += "\n";
      out += Decl(decl);
      last_end_ = decl->span.end;
      out += TrailingComment();
      out += "\n";
      first = false;
    }
    out += CommentsBefore(source_.end(), 0, first);
    return out;
  }

 private:
  // --- Comments ----------------------------------------------------------

  bool BlankLineBefore(const char* pos) const {
    if (!last_end_ || pos < last_end_) return false;
    return llvm::StringRef(last_end_, size_t(pos - last_end_)).count('\n') >= 2;
  }

  // Comments that start before `pos`, each on its own line.
  std::string CommentsBefore(const char* pos, int indent, bool first) {
    std::string out;
    while (next_ < comments_.size() && comments_[next_].begin < pos) {
      const Comment& comment = comments_[next_++];
      if (!first && BlankLineBefore(comment.begin)) out += "\n";
      out += Indent(indent) + comment.text().str() + "\n";
      if (comment.end > last_end_) last_end_ = comment.end;
      first = false;
    }
    return out;
  }

  // A comment that follows the last item on its line.
  std::string TrailingComment() {
    if (next_ >= comments_.size()) return "";
    const Comment& comment = comments_[next_];
    if (comment.begin < last_end_) return "";
    if (llvm::StringRef(last_end_, size_t(comment.begin - last_end_))
            .contains('\n'))
      return "";
    ++next_;
    last_end_ = comment.end;
    return " " + comment.text().str();
  }

  bool HasCommentIn(Span span) const {
    for (size_t i = next_; i < comments_.size(); ++i) {
      if (comments_[i].begin >= span.end) return false;
      if (comments_[i].begin >= span.begin) return true;
    }
    return false;
  }

  // --- Declarations --------------------------------------------------------

  std::string Decl(const ast::Decl* decl) {
    switch (decl->kind) {
      case ast::Decl::Kind::Dim: {
        auto* d = llvm::cast<ast::DimDecl>(decl);
        return "dim " + d->name.name.str() + " = " + Expr(d->size, 0) + ";";
      }
      case ast::Decl::Kind::Struct:
        return Struct(llvm::cast<ast::StructDecl>(decl));
      case ast::Decl::Kind::Fn:
        return Fn(llvm::cast<ast::FnDecl>(decl));
      case ast::Decl::Kind::Import: {
        auto* d = llvm::cast<ast::ImportDecl>(decl);
        std::string out = "import " + d->module.name.str();
        if (d->alias) out += " as " + d->alias->name.str();
        return out + ";";
      }
      case ast::Decl::Kind::Let: {
        auto* d = llvm::cast<ast::LetDecl>(decl);
        return Let(d->pattern, d->annotation, d->value, 0);
      }
    }
    return "";
  }

  std::string SizeParams(const std::vector<ast::Ident>& params) {
    return params.empty() ? "" : "[" + JoinIdents(params, ", ") + "]";
  }

  std::string Struct(const ast::StructDecl* decl) {
    std::string head =
        "struct " + decl->name.name.str() + SizeParams(decl->size_params);
    if (decl->fields.empty()) return head + " {}";
    std::vector<std::string> fields;
    size_t width = head.size() + 4;
    for (const ast::FieldDecl& field : decl->fields) {
      fields.push_back(field.name.name.str() + ": " + Type(field.type));
      width += fields.back().size() + 2;
    }
    if (width <= 80 && !HasCommentIn(decl->span)) {
      std::string out = head + " { ";
      for (size_t i = 0; i < fields.size(); ++i)
        out += (i ? ", " : "") + fields[i];
      return out + " }";
    }
    std::string out = head + " {\n";
    last_end_ = decl->span.begin;
    for (size_t i = 0; i < fields.size(); ++i) {
      out += CommentsBefore(decl->fields[i].name.span.begin, 2, i == 0);
      out += "  " + fields[i] + ",";
      last_end_ = decl->fields[i].type->span.end;
      out += TrailingComment() + "\n";
    }
    out += CommentsBefore(decl->span.end, 2, false);
    return out + "}";
  }

  std::string Params(const std::vector<ast::Param>& params) {
    std::string out;
    for (size_t i = 0; i < params.size(); ++i) {
      out += (i ? ", " : "") + params[i].name.name.str();
      if (params[i].type) out += ": " + Type(params[i].type);
    }
    return out;
  }

  std::string Fn(const ast::FnDecl* decl) {
    std::string out;
    for (const ast::Attribute& attribute : decl->attributes) {
      out += "@" + attribute.name.name.str();
      if (!attribute.args.empty()) {
        out += "(";
        for (size_t i = 0; i < attribute.args.size(); ++i)
          out += (i ? ", " : "") + Expr(attribute.args[i], 0);
        out += ")";
      }
      out += "\n";
    }
    if (decl->is_export) out += "export ";
    std::string brackets = JoinIdents(decl->size_params, ", ");
    for (const ast::TypeParamDecl& param : decl->type_params)
      brackets += (brackets.empty() ? "" : ", ") + param.name.name.str() +
                  ": " + param.bound.name.str();
    out += "fn " + decl->name.name.str() +
           (brackets.empty() ? "" : "[" + brackets + "]") + "(" +
           Params(decl->params) + ")";
    if (decl->result_type) out += " -> " + Type(decl->result_type);
    return out + " " + Block(decl->body, 0);
  }

  std::string Let(const ast::Pattern* pattern, const ast::TypeExpr* annotation,
                  const ast::Expr* value, int indent) {
    std::string out = "let " + Pattern(pattern);
    if (annotation) out += ": " + Type(annotation);
    return out + " = " + Expr(value, indent) + ";";
  }

  // --- Types and patterns --------------------------------------------------

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

  // --- Blocks and statements -----------------------------------------------

  bool FitsInline(const ast::BlockExpr* block, const std::string& result) {
    return block->stmts.empty() && result.size() <= kInlineBlockWidth &&
           result.find('\n') == std::string::npos;
  }

  // `indent` is the indentation of the line on which the block opens.
  // See Note [Formatting blocks once].
  std::string Block(const ast::BlockExpr* block, int indent) {
    BlockKey key{block, indent, no_struct_, next_};
    if (auto it = blocks_.find(key); it != blocks_.end()) {
      next_ = it->second.next;
      last_end_ = it->second.last_end;
      return it->second.text;
    }
    std::string text = FormatBlock(block, indent);
    blocks_[key] = {text, next_, last_end_};
    return text;
  }

  std::string FormatBlock(const ast::BlockExpr* block, int indent) {
    if (block->stmts.empty() && !block->result && !HasCommentIn(block->span))
      return "{}";
    if (block->stmts.empty() && block->result && !HasCommentIn(block->span)) {
      size_t saved_next = next_;
      std::string result = Expr(block->result, indent);
      if (FitsInline(block, result)) return "{ " + result + " }";
      next_ = saved_next;
    }
    int inner = indent + 2;
    std::string out = "{\n";
    last_end_ = block->span.begin;
    bool first = true;
    auto item = [&](const Node& node, const std::string& text) {
      std::string line = CommentsBefore(node.span.begin, inner, first);
      if (!line.empty()) first = false;
      if (!first && BlankLineBefore(node.span.begin)) line += "\n";
      line += Indent(inner) + text;
      last_end_ = node.span.end;
      line += TrailingComment();
      out += line + "\n";
      first = false;
    };
    for (const ast::Stmt* stmt : block->stmts) item(*stmt, Stmt(stmt, inner));
    if (block->result)
      item(*block->result, StatementExpr(block->result, inner));
    // Comments before the closing brace.
    out += CommentsBefore(block->span.end - 1, inner, first);
    return out + Indent(indent) + "}";
  }

  // An expression that starts a statement: if it begins with `if`, `loop`
  // or `for` but continues past it, the parser would end it early.
  std::string StatementExpr(const ast::Expr* expr, int indent) {
    std::string text = Expr(expr, indent);
    if (!IsBlockLike(expr) && LeftmostIsBlockLike(expr))
      return "(" + text + ")";
    return text;
  }

  static bool LeftmostIsBlockLike(const ast::Expr* expr) {
    while (true) {
      if (IsBlockLike(expr)) return true;
      if (auto* e = llvm::dyn_cast<ast::BinaryExpr>(expr)) {
        expr = e->lhs;
      } else if (auto* e = llvm::dyn_cast<ast::CallExpr>(expr)) {
        expr = e->callee;
      } else if (auto* e = llvm::dyn_cast<ast::IndexExpr>(expr)) {
        expr = e->base;
      } else if (auto* e = llvm::dyn_cast<ast::FieldExpr>(expr)) {
        expr = e->base;
      } else if (auto* e = llvm::dyn_cast<ast::TupleIndexExpr>(expr)) {
        expr = e->base;
      } else {
        return false;
      }
    }
  }

  std::string Stmt(const ast::Stmt* stmt, int indent) {
    if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt))
      return Let(let->pattern, let->annotation, let->value, indent);
    if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt))
      return "dim " + dim->name.name.str() + " = " + Expr(dim->size, indent) +
             ";";
    auto* e = llvm::cast<ast::ExprStmt>(stmt);
    return StatementExpr(e->expr, indent) + (e->has_semicolon ? ";" : "");
  }

  // --- Expressions ---------------------------------------------------------

  // An operand that must bind at least as tightly as `min`.
  std::string Operand(const ast::Expr* expr, Prec min, int indent) {
    std::string text = Expr(expr, indent);
    bool needs_parens = PrecOf(expr) < min || IsBlockLike(expr) ||
                        llvm::isa<ast::LambdaExpr>(expr);
    return needs_parens ? "(" + text + ")" : text;
  }

  // Where a struct literal would be read as the block that follows (the
  // condition of `if`/`while`, a domain, a range), it is parenthesized.
  std::string NoStruct(const ast::Expr* expr, int indent) {
    bool saved = no_struct_;
    no_struct_ = true;
    std::string text = Expr(expr, indent);
    no_struct_ = saved;
    return text;
  }

  std::string Args(const std::vector<ast::Arg>& args, int indent) {
    bool saved = no_struct_;
    no_struct_ = false;
    std::string out;
    for (size_t i = 0; i < args.size(); ++i) {
      out += i ? ", " : "";
      if (args[i].label) out += args[i].label->name.str() + ": ";
      out += Expr(args[i].value, indent);
    }
    no_struct_ = saved;
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

  std::string Expr(const ast::Expr* expr, int indent) {
    switch (expr->kind) {
      case ast::Expr::Kind::IntLit: {
        auto* e = llvm::cast<ast::IntLitExpr>(expr);
        return std::to_string(e->value) + SuffixText(e->suffix);
      }
      case ast::Expr::Kind::FloatLit: {
        auto* e = llvm::cast<ast::FloatLitExpr>(expr);
        return e->text + SuffixText(e->suffix);
      }
      case ast::Expr::Kind::BoolLit:
        return llvm::cast<ast::BoolLitExpr>(expr)->value ? "true" : "false";
      case ast::Expr::Kind::StringLit:
        return StringLiteral(llvm::cast<ast::StringLitExpr>(expr)->value);
      case ast::Expr::Kind::Name:
        return llvm::cast<ast::NameExpr>(expr)->name.name.str();
      case ast::Expr::Kind::Unary: {
        auto* e = llvm::cast<ast::UnaryExpr>(expr);
        // `-x ^ 2.0` is `-(x ^ 2.0)`: a power needs no parentheses here.
        return std::string(e->op == ast::UnaryOp::Neg ? "-" : "!") +
               Operand(e->operand, kUnary, indent);
      }
      case ast::Expr::Kind::Binary: {
        auto* e = llvm::cast<ast::BinaryExpr>(expr);
        Prec prec = PrecOf(e->op);
        std::string lhs, rhs;
        if (prec == kPow) {  // right-associative; the right side is unary
          lhs = Operand(e->lhs, kPostfix, indent);
          rhs = Operand(e->rhs, kUnary, indent);
        } else if (prec == kCompare) {  // non-associative
          lhs = Operand(e->lhs, Prec(kCompare + 1), indent);
          rhs = Operand(e->rhs, Prec(kCompare + 1), indent);
        } else {
          lhs = Operand(e->lhs, prec, indent);
          rhs = Operand(e->rhs, Prec(prec + 1), indent);
        }
        return lhs + " " + OpText(e->op) + " " + rhs;
      }
      case ast::Expr::Kind::Call: {
        auto* e = llvm::cast<ast::CallExpr>(expr);
        return Operand(e->callee, kPostfix, indent) + "(" +
               Args(e->args, indent) + ")";
      }
      case ast::Expr::Kind::Index: {
        auto* e = llvm::cast<ast::IndexExpr>(expr);
        std::string out = Operand(e->base, kPostfix, indent) + "[";
        bool saved = no_struct_;
        no_struct_ = false;
        for (size_t i = 0; i < e->entries.size(); ++i) {
          out += i ? ", " : "";
          if (e->entries[i].dim)
            out += JoinIdents({*e->entries[i].dim}, "") + ": ";
          out += Expr(e->entries[i].value, indent);
        }
        no_struct_ = saved;
        return out + "]";
      }
      case ast::Expr::Kind::Field: {
        auto* e = llvm::cast<ast::FieldExpr>(expr);
        return Operand(e->base, kPostfix, indent) + "." + e->field.name.str();
      }
      case ast::Expr::Kind::TupleIndex: {
        auto* e = llvm::cast<ast::TupleIndexExpr>(expr);
        return Operand(e->base, kPostfix, indent) + "." +
               std::to_string(e->index);
      }
      case ast::Expr::Kind::Tuple: {
        auto* e = llvm::cast<ast::TupleExpr>(expr);
        bool saved = no_struct_;
        no_struct_ = false;
        std::string out = "(";
        for (size_t i = 0; i < e->elements.size(); ++i)
          out += (i ? ", " : "") + Expr(e->elements[i], indent);
        no_struct_ = saved;
        return out + (e->elements.size() == 1 ? ",)" : ")");
      }
      case ast::Expr::Kind::StructLit: {
        auto* e = llvm::cast<ast::StructLitExpr>(expr);
        bool parens = no_struct_;
        no_struct_ = false;
        std::string out = JoinIdents(e->path, ".") + " {";
        for (size_t i = 0; i < e->fields.size(); ++i)
          out += (i ? ", " : " ") + e->fields[i].name.name.str() + ": " +
                 Expr(e->fields[i].value, indent);
        if (e->base)
          out += (e->fields.empty() ? " .." : ", ..") + Expr(e->base, indent);
        out += e->fields.empty() && !e->base ? "}" : " }";
        no_struct_ = parens;
        return parens ? "(" + out + ")" : out;
      }
      case ast::Expr::Kind::ArrayLit: {
        auto* e = llvm::cast<ast::ArrayLitExpr>(expr);
        bool saved = no_struct_;
        no_struct_ = false;
        std::string out = "[" + e->dim.name.str() + ": ";
        for (size_t i = 0; i < e->elements.size(); ++i)
          out += (i ? ", " : "") + Expr(e->elements[i], indent);
        no_struct_ = saved;
        return out + "]";
      }
      case ast::Expr::Kind::Block:
        return Block(llvm::cast<ast::BlockExpr>(expr), indent);
      case ast::Expr::Kind::If: {
        auto* e = llvm::cast<ast::IfExpr>(expr);
        std::string out = "if " + NoStruct(e->condition, indent) + " " +
                          Block(e->then_block, indent);
        if (e->else_branch) out += " else " + Expr(e->else_branch, indent);
        return out;
      }
      case ast::Expr::Kind::Loop: {
        auto* e = llvm::cast<ast::LoopExpr>(expr);
        std::string out =
            "loop " + Pattern(e->state) + " = " + NoStruct(e->init, indent);
        switch (e->form) {
          case ast::LoopExpr::Form::ForDim:
            out += " for " + Pattern(e->iterator) + " in " +
                   NoStruct(e->domain, indent);
            break;
          case ast::LoopExpr::Form::ForRange:
            out += " for " + Pattern(e->iterator) + " in " +
                   RangeBound(e->range_lo, indent) + ".." +
                   RangeBound(e->range_hi, indent);
            break;
          case ast::LoopExpr::Form::While:
            out += " while " + NoStruct(e->condition, indent);
            break;
        }
        return out + " " + Block(e->body, indent);
      }
      case ast::Expr::Kind::For: {
        auto* e = llvm::cast<ast::ForExpr>(expr);
        std::string out = "for ";
        for (size_t i = 0; i < e->bindings.size(); ++i)
          out += (i ? ", " : "") + Pattern(e->bindings[i].variable) + " in " +
                 NoStruct(e->bindings[i].domain, indent);
        return out + " " + Block(e->body, indent);
      }
      case ast::Expr::Kind::Lambda: {
        auto* e = llvm::cast<ast::LambdaExpr>(expr);
        std::string out =
            e->params.empty() ? "||" : "|" + Params(e->params) + "|";
        if (e->result_type) out += " -> " + Type(e->result_type);
        return out + " " + Expr(e->body, indent);
      }
    }
    return "";
  }

  // A bound of `lo..hi`: `..` binds looser than `||`, so only a lambda needs
  // parentheses.
  std::string RangeBound(const ast::Expr* expr, int indent) {
    std::string text = NoStruct(expr, indent);
    return llvm::isa<ast::LambdaExpr>(expr) ? "(" + text + ")" : text;
  }

  using Node = ast::Node;

  llvm::StringRef source_;
  std::vector<Comment> comments_;
  size_t next_ = 0;  // the first comment not printed yet
  const char* last_end_ = nullptr;
  bool no_struct_ = false;

  // Note [Formatting blocks once]
  // A block holding only a result is first formatted on one line and, when
  // that does not fit, again one item per line one level deeper; nested
  // such blocks would be formatted 2^depth times (40 levels took 25 s).
  // A block's text depends only on the block, its indentation, no_struct_
  // and the first pending comment (a block's formatting sets last_end_
  // before reading it), so it is computed once per such key, and the
  // comment cursor and last_end_ it leaves are replayed: O(depth^2) blocks.
  using BlockKey = std::tuple<const ast::BlockExpr*, int, bool, size_t>;
  struct FormattedBlock {
    std::string text;
    size_t next;
    const char* last_end;
  };
  std::map<BlockKey, FormattedBlock> blocks_;
};

}  // namespace

std::string PrintModule(llvm::StringRef source, const ast::Module& module) {
  Printer printer(source, CollectComments(source));
  return printer.Module(module);
}

}  // namespace delta::format

// The canonical pretty-printer of `dlc fmt`: turns the AST into a layout
// document (doc.h) that doc.cpp fits in the line width, with the comments
// that the lexer dropped put back in place. One class, Printer, holds it
// whole: every decision (Note [Canonical style]) depends on the same state,
// its place among the comments (comment_cursor.h), so its parts do not
// stand alone.
#include "compiler/format/printer.h"

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "compiler/format/comment_cursor.h"
#include "compiler/format/doc.h"
#include "compiler/format/spelling.h"

namespace delta::format {
namespace {

// Note [Canonical style]
// Two-space indentation; one declaration or statement per line; spaces
// around binary operators and after commas. Lines keep to the width where
// they can: a list that does not fit (arguments, parameters, fields,
// elements) takes one item per line with a trailing comma, as in rustfmt,
// and an operator chain breaks before its operators. A block stays on one
// line (`{ x * x }`) when it has no statements, its result is at most
// kInlineBlockWidth wide, fits and holds no comment, and otherwise takes one
// line per item. Blank lines between items are kept, at most one.
// Parentheses are printed only where precedence or the grammar needs them,
// so the output does not depend on how the input was parenthesized.
// Comments are kept: one that follows code on its line stays at the end of
// that line (see Doc::TrailingComment for aligned runs); one inside a list
// stays in it; any other comes out on its own line before the next item
// (one in the middle of an expression therefore moves after it). Every
// decision depends only on the AST and where comments are, so formatting
// is idempotent.

constexpr size_t kInlineBlockWidth = 60;
constexpr size_t kInlineIfWidth = 80;
constexpr size_t kShortElementWidth = 10;  // rustfmt's threshold

class Printer {
 public:
  explicit Printer(llvm::StringRef source) : source_(source), cursor_(source) {}

  Doc Module(const ast::Module& module) {
    std::vector<LineItem> lines;
    cursor_.set_last_end(source_.begin());
    for (const ast::Decl* decl : module.decls) {
      CommentLines(decl->span.begin, lines);
      bool blank = !lines.empty() && cursor_.BlankLineBefore(decl->span.begin);
      Doc line = Decl(decl);
      cursor_.set_last_end(decl->span.end);
      lines.push_back({blank, line + cursor_.TakeTrailing(source_.end())});
    }
    CommentLines(source_.end(), lines);
    Doc out;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) out += Doc::HardLine();
      if (lines[i].blank_before) out += Doc::HardLine();
      out += lines[i].doc;
    }
    return lines.empty() ? out : out + Doc::HardLine();
  }

 private:
  // A line of a module or block: an item or a comment on its own line.
  struct LineItem {
    bool blank_before;
    Doc doc;
  };

  // --- Comments ----------------------------------------------------------

  // Comments that start before `pos`, each a line of their own.
  void CommentLines(const char* pos, std::vector<LineItem>& lines) {
    while (const Comment* comment = cursor_.NextBefore(pos)) {
      bool blank = !lines.empty() && cursor_.BlankLineBefore(comment->begin);
      lines.push_back({blank, Doc(cursor_.Take().text().str())});
    }
  }

  // Comments that start before `pos` inside a list or an operator chain,
  // each followed by a line break.
  Doc OwnLineComments(const char* pos) {
    Doc out;
    while (cursor_.NextBefore(pos))
      out += Doc(cursor_.Take().text().str()) + Doc::HardLine();
    return out;
  }

  // --- Lists -----------------------------------------------------------------

  enum class Comma { IfBroken, Always, Never };  // after the last item

  struct ListItem {
    Span span;
    std::function<Doc()> print;
  };

  // `open item, item close` on one line if it fits, else (rustfmt's
  // vertical layout) one item per line, indented, with a trailing comma.
  // `spaced`: a space inside the brackets on one line (`S { a: 1 }`).
  // `close` is where the closing bracket is in the source: comments
  // before it stay inside the list.
  // `hug_last`: when the list does not fit, it may stay open on its line
  // with only its last item broken (`f(a, |x| {`).
  Doc List(Doc open, const std::vector<ListItem>& items, const char* close,
           Doc close_text, Comma comma = Comma::IfBroken, bool spaced = false,
           bool hug_last = false) {
    bool saved = no_struct_;
    no_struct_ = false;
    Doc inner = spaced ? Doc::Line() : Doc::SoftLine();
    Doc hugged;
    bool last_breaks = false;
    for (size_t i = 0; i < items.size(); ++i) {
      bool last = i + 1 == items.size();
      inner += OwnLineComments(items[i].span.begin);
      Doc item = items[i].print();
      Doc broken = last && hug_last ? item.LastGroupBroken() : Doc();
      if (!broken.empty()) {
        hugged = inner + broken;
        last_breaks = item.WillBreak();
      }
      // An item sure to span lines breaks the list, unless it is the last
      // and may hug.
      if (broken.empty() && item.WillBreak()) inner += Doc::BreakParent();
      inner += item;
      size_t comments_after_item = cursor_.placed();
      cursor_.set_last_end(items[i].span.end);
      if (!last || comma == Comma::Always) {
        inner += ",";
      } else if (comma == Comma::IfBroken) {
        inner += Doc::IfBreak(",");
      }
      inner += cursor_.TakeTrailing(last ? close : items[i + 1].span.begin);
      if (!last) inner += Doc::Line();
      // The hugged form has no room for a comment after the last item:
      // without it, a last item sure to span lines breaks the list too.
      if (last && (cursor_.placed() != comments_after_item ||
                   cursor_.HasCommentIn({items[i].span.end, close}))) {
        hugged = {};
        if (last_breaks) inner += Doc::BreakParent();
      }
    }
    // Comments before the closing bracket, each on a line of its own.
    Doc closing;
    while (cursor_.NextBefore(close))
      closing += Doc::HardLine() + cursor_.Take().text().str();
    inner += closing;
    no_struct_ = saved;
    Doc end = (spaced && closing.empty() ? Doc::Line() : Doc::SoftLine()) +
              close_text;
    // Hugged, the last item's broken lines are not indented by the list.
    if (!hugged.empty()) hugged = open + hugged + end;
    return Doc::HuggingGroup(open + Doc::Nest(2, inner) + end, hugged,
                             last_breaks);
  }

  // Arguments that may stay open on the call's line when broken: a lambda
  // with a block body, a `for`, `loop` or block, a struct literal.
  static bool Huggable(const ast::Expr* expr) {
    if (auto* lambda = llvm::dyn_cast<ast::LambdaExpr>(expr))
      expr = lambda->body;
    return llvm::isa<ast::ForExpr, ast::LoopExpr, ast::BlockExpr,
                     ast::StructLitExpr>(expr);
  }

  // `label: value` (`feat: 3`, `wrt: x`), or `value` without a label.
  ListItem LabeledItem(const ast::Ident* label, std::string label_text,
                       const ast::Expr* value) {
    const char* begin = label ? label->span.begin : value->span.begin;
    return {{begin, value->span.end}, [this, label_text, value] {
              Doc head = label_text.empty() ? Doc() : Doc(label_text + ": ");
              return head + Expr(value);
            }};
  }

  std::vector<ListItem> ExprItems(const std::vector<ast::Expr*>& exprs) {
    std::vector<ListItem> items;
    for (const ast::Expr* expr : exprs)
      items.push_back({expr->span, [this, expr] { return Expr(expr); }});
    return items;
  }

  // --- Declarations --------------------------------------------------------

  Doc Decl(const ast::Decl* decl) {
    switch (decl->kind) {
      case ast::Decl::Kind::Dim: {
        auto* d = llvm::cast<ast::DimDecl>(decl);
        // `@shard dim batch = N;` on one line.
        return Attributes(d->attributes, " ") + "dim " + d->name.name.str() +
               " = " + Expr(d->size) + ";";
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
        return Let(d->pattern, d->annotation, d->value);
      }
    }
    return {};
  }

  Doc Struct(const ast::StructDecl* decl) {
    std::string head = "struct " + decl->name.name.str() + StructParams(*decl);
    if (decl->fields.empty()) return head + " {}";
    std::vector<ListItem> items;
    for (const ast::FieldDecl& field : decl->fields)
      items.push_back({{field.name.span.begin, field.type->span.end}, [&] {
                         return Doc(field.name.name.str() + ": " +
                                    Type(field.type));
                       }});
    return List(head + " {", items, decl->span.end - 1, "}", Comma::IfBroken,
                /*spaced=*/true);
  }

  std::vector<ListItem> ParamItems(const std::vector<ast::Param>& params) {
    std::vector<ListItem> items;
    for (const ast::Param& param : params)
      items.push_back({param.span, [&] {
                         std::string out = param.name.name.str();
                         if (param.type) out += ": " + Type(param.type);
                         return Doc(out);
                       }});
    return items;
  }

  // Each attribute followed by `after` (a space, or a line break).
  Doc Attributes(const std::vector<ast::Attribute>& attributes, Doc after) {
    Doc out;
    for (const ast::Attribute& attribute : attributes) {
      out += "@" + attribute.name.name.str();
      if (!attribute.args.empty())
        out += List("(", ExprItems(attribute.args),
                    attribute.args.back()->span.end, ")");
      out += after;
    }
    return out;
  }

  Doc Fn(const ast::FnDecl* decl) {
    Doc out = Attributes(decl->attributes, Doc::HardLine());
    if (decl->is_export) out += "export ";
    std::string brackets = JoinIdents(decl->size_params, ", ");
    for (const ast::TypeParamDecl& param : decl->type_params)
      brackets += (brackets.empty() ? "" : ", ") + param.name.name.str() +
                  ": " + param.bound.name.str();
    out += "fn " + decl->name.name.str() +
           (brackets.empty() ? "" : "[" + brackets + "]");
    const char* close = decl->result_type ? decl->result_type->span.begin
                                          : decl->body->span.begin;
    out += List("(", ParamItems(decl->params), close, ")");
    if (decl->result_type) out += " -> " + Type(decl->result_type);
    return out + " " + Block(decl->body);
  }

  Doc Let(const ast::Pattern* pattern, const ast::TypeExpr* annotation,
          const ast::Expr* value) {
    std::string out = "let " + Pattern(pattern);
    if (annotation) out += ": " + Type(annotation);
    return out + " =" + Doc::Rhs(Expr(value)) + ";";
  }

  // --- Blocks and statements -----------------------------------------------

  // A block that may stay on one line: only a result, no comment, and (as
  // Prettier does for objects) not written with its result on a line of
  // its own, so that a short function body written on three lines keeps
  // them and a one-line block stays one line.
  bool MayInline(const ast::BlockExpr* block) const {
    return block->stmts.empty() && block->result &&
           !cursor_.HasCommentIn(block->span) &&
           !llvm::StringRef(
                block->span.begin,
                size_t(block->result->span.begin - block->span.begin))
                .contains('\n');
  }

  // `{ result }`, breaking with the group around it.
  Doc InlineBlock(const ast::BlockExpr* block) {
    Doc result = Expr(block->result);
    return "{" + Doc::Nest(2, Doc::Line() + result) + Doc::Line() + "}";
  }

  Doc Block(const ast::BlockExpr* block) {
    if (block->stmts.empty() && !block->result &&
        !cursor_.HasCommentIn(block->span))
      return "{}";
    if (MayInline(block))
      return Doc::Group(InlineBlock(block), kInlineBlockWidth + 4);
    return BrokenBlock(block);
  }

  // `if a { x } else if b { y } else { z }` on one line if all of it fits,
  // else with every block broken (rustfmt); broken too if any block must
  // be or the source broke a line before an `else`.
  Doc IfChain(const ast::IfExpr* expr) {
    Doc out;
    bool broken = false;
    auto block = [&](const ast::BlockExpr* block) {
      if (MayInline(block)) return InlineBlock(block);
      broken = true;
      return Block(block);
    };
    for (const ast::IfExpr* link = expr; link;) {
      out += "if " + NoStruct(link->condition) + " ";
      out += block(link->then_block);
      const ast::Expr* next = link->else_branch;
      if (!next) break;
      broken =
          broken ||
          llvm::StringRef(link->then_block->span.end,
                          size_t(next->span.begin - link->then_block->span.end))
              .contains('\n');
      out += " else ";
      link = llvm::dyn_cast<ast::IfExpr>(next);
      if (!link) out += block(llvm::cast<ast::BlockExpr>(next));
    }
    if (broken) out += Doc::BreakParent();
    return Doc::Group(out, kInlineIfWidth);
  }

  Doc BrokenBlock(const ast::BlockExpr* block) {
    std::vector<LineItem> lines;
    const char* close = block->span.end - 1;
    // A comment after the `{` stays on its line (`fn main() { // why`).
    const char* first = !block->stmts.empty() ? block->stmts[0]->span.begin
                        : block->result       ? block->result->span.begin
                                              : close;
    cursor_.set_last_end(block->span.begin + 1);
    Doc open = "{" + cursor_.TakeTrailing(first);
    auto item = [&](const Node& node, Doc doc) {
      cursor_.set_last_end(node.span.end);
      lines.push_back({false, doc + cursor_.TakeTrailing(close)});
    };
    auto blank_before = [&](const Node& node) {
      CommentLines(node.span.begin, lines);
      return !lines.empty() && cursor_.BlankLineBefore(node.span.begin);
    };
    for (const ast::Stmt* stmt : block->stmts) {
      bool blank = blank_before(*stmt);
      item(*stmt, Stmt(stmt));
      lines.back().blank_before = blank;
    }
    if (block->result) {
      bool blank = blank_before(*block->result);
      item(*block->result, Expr(block->result));
      lines.back().blank_before = blank;
    }
    CommentLines(close, lines);
    Doc inner;
    for (const LineItem& line : lines) {
      if (line.blank_before) inner += Doc::HardLine();
      inner += Doc::HardLine() + line.doc;
    }
    return Doc::Group(open + Doc::Nest(2, inner) + Doc::HardLine() + "}");
  }

  Doc Stmt(const ast::Stmt* stmt) {
    if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt))
      return Let(let->pattern, let->annotation, let->value);
    if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt))
      return "dim " + dim->name.name.str() + " = " + Expr(dim->size) + ";";
    auto* e = llvm::cast<ast::ExprStmt>(stmt);
    return Expr(e->expr) + (e->has_semicolon ? ";" : "");
  }

  // --- Expressions ---------------------------------------------------------

  // An operand that must bind at least as tightly as `min`. An `if`,
  // `loop`, `for` or block operand is always parenthesized: one that began
  // a statement would end it there, so an expression statement never
  // starts with one it does not consist of.
  Doc Operand(const ast::Expr* expr, Prec min) {
    Doc text = Expr(expr);
    bool needs_parens = PrecOf(expr) < min || IsBlockLike(expr) ||
                        llvm::isa<ast::LambdaExpr>(expr);
    return needs_parens ? "(" + text + ")" : text;
  }

  // Where a struct literal would be read as the block that follows (the
  // condition of `if`/`while`, a domain, a range), it is parenthesized.
  Doc NoStruct(const ast::Expr* expr) {
    bool saved = no_struct_;
    no_struct_ = true;
    Doc text = Expr(expr);
    no_struct_ = saved;
    return text;
  }

  // `a + b - c` as one group that breaks before each operator (rustfmt):
  // the operands of a left-associative chain of one precedence.
  Doc Binary(const ast::BinaryExpr* expr) {
    Prec prec = PrecOf(expr->op);
    // Each operand is printed in its own statement: comments are taken in
    // source order, and the operands of `+` are evaluated in any order.
    if (prec == kPow) {  // right-associative; the right side is unary
      Doc lhs = Operand(expr->lhs, kPostfix);
      return lhs + " ^ " + Operand(expr->rhs, kUnary);
    }
    std::vector<const ast::BinaryExpr*> chain = {expr};
    while (prec != kCompare) {
      auto* lhs = llvm::dyn_cast<ast::BinaryExpr>(chain.back()->lhs);
      if (!lhs || PrecOf(lhs->op) != prec) break;
      chain.push_back(lhs);
    }
    std::reverse(chain.begin(), chain.end());
    // Comparisons are non-associative: both sides bind tighter.
    Prec left = prec == kCompare ? Prec(kCompare + 1) : prec;
    Doc out = Operand(chain.front()->lhs, left);
    // A tighter chain first (`a * b + c`) breaks one level deeper than
    // this one, as the later operands' chains do.
    if (llvm::isa<ast::BinaryExpr>(chain.front()->lhs)) out = Doc::Nest(2, out);
    Doc rest;
    for (const ast::BinaryExpr* link : chain) {
      cursor_.set_last_end(link->lhs->span.end);
      rest += cursor_.TakeTrailing(link->rhs->span.begin);
      rest += Doc::Line();
      rest += OwnLineComments(link->rhs->span.begin);
      rest += OpText(link->op) + std::string(" ");
      rest += Operand(link->rhs, Prec(prec + 1));
    }
    // An operand sure to span lines breaks the chain (as in a list), so
    // that the layout does not depend on whether it was written broken.
    if (out.WillBreak() || rest.WillBreak()) rest += Doc::BreakParent();
    return Doc::Group(out + Doc::Nest(2, rest));
  }

  Doc Expr(const ast::Expr* expr) {
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
        return (e->op == ast::UnaryOp::Neg ? "-" : "!") +
               Operand(e->operand, kUnary);
      }
      case ast::Expr::Kind::Binary:
        return Binary(llvm::cast<ast::BinaryExpr>(expr));
      case ast::Expr::Kind::Call: {
        auto* e = llvm::cast<ast::CallExpr>(expr);
        Doc callee = Operand(e->callee, kPostfix);
        std::vector<ListItem> items;
        for (const ast::Arg& arg : e->args)
          items.push_back(LabeledItem(arg.label ? &*arg.label : nullptr,
                                      arg.label ? arg.label->name.str() : "",
                                      arg.value));
        bool hug = !e->args.empty() && Huggable(e->args.back().value);
        return callee + List("(", items, e->span.end - 1, ")", Comma::IfBroken,
                             /*spaced=*/false, hug);
      }
      case ast::Expr::Kind::Index: {
        auto* e = llvm::cast<ast::IndexExpr>(expr);
        Doc base = Operand(e->base, kPostfix);
        std::vector<ListItem> items;
        for (const ast::IndexEntry& entry : e->entries)
          items.push_back(LabeledItem(
              entry.dim ? &*entry.dim : nullptr,
              entry.dim ? JoinIdents({*entry.dim}, "") : "", entry.value));
        return base + List("[", items, e->span.end - 1, "]");
      }
      case ast::Expr::Kind::Field: {
        auto* e = llvm::cast<ast::FieldExpr>(expr);
        return Operand(e->base, kPostfix) + "." + e->field.name.str();
      }
      case ast::Expr::Kind::TupleIndex: {
        auto* e = llvm::cast<ast::TupleIndexExpr>(expr);
        // `(0).5`, not `0.5`, a float.
        Doc base = Operand(e->base, kPostfix);
        if (llvm::isa<ast::IntLitExpr>(e->base)) base = "(" + base + ")";
        return base + "." + std::to_string(e->index);
      }
      case ast::Expr::Kind::Tuple: {
        auto* e = llvm::cast<ast::TupleExpr>(expr);
        if (e->elements.empty()) return "()";
        return List("(", ExprItems(e->elements), e->span.end - 1, ")",
                    e->elements.size() == 1 ? Comma::Always : Comma::IfBroken);
      }
      case ast::Expr::Kind::StructLit:
        return StructLit(llvm::cast<ast::StructLitExpr>(expr));
      case ast::Expr::Kind::ArrayLit: {
        auto* e = llvm::cast<ast::ArrayLitExpr>(expr);
        // `[d: a, b]`; broken, `[d:` then one element per line.
        Doc open =
            "[" + e->dim.name.str() + ":" + Doc::IfBreak(Doc(), Doc(" "));
        if (Doc filled = ShortElements(e); !filled.empty())
          return Doc::Group(open + Doc::Nest(2, Doc::SoftLine() + filled) +
                            Doc::SoftLine() + "]");
        return List(open, ExprItems(e->elements), e->span.end - 1, "]");
      }
      case ast::Expr::Kind::Block:
        return Block(llvm::cast<ast::BlockExpr>(expr));
      case ast::Expr::Kind::If:
        return IfChain(llvm::cast<ast::IfExpr>(expr));
      case ast::Expr::Kind::Loop:
        return Loop(llvm::cast<ast::LoopExpr>(expr));
      case ast::Expr::Kind::For: {
        auto* e = llvm::cast<ast::ForExpr>(expr);
        Doc out = "for ";
        for (size_t i = 0; i < e->bindings.size(); ++i)
          out += (i ? ", " : "") + Pattern(e->bindings[i].variable) + " in " +
                 NoStruct(e->bindings[i].domain);
        return out + " " + Block(e->body);
      }
      case ast::Expr::Kind::Lambda: {
        auto* e = llvm::cast<ast::LambdaExpr>(expr);
        std::string out =
            e->params.empty() ? "||" : "|" + LambdaParams(e->params) + "|";
        if (e->result_type) out += " -> " + Type(e->result_type);
        return out + " " + Expr(e->body);
      }
    }
    return {};
  }

  // The elements of an array literal of short numbers and names (at most
  // kShortElementWidth each) filling lines as rustfmt's mixed layout does
  // (`[d: 1.0, 2.0, ...` then as many per line as fit), or nothing.
  Doc ShortElements(const ast::ArrayLitExpr* e) {
    if (cursor_.HasCommentIn(e->span)) return {};
    std::vector<Doc> items;
    for (size_t i = 0; i < e->elements.size(); ++i) {
      const ast::Expr* element = e->elements[i];
      if (auto* unary = llvm::dyn_cast<ast::UnaryExpr>(element))
        element = unary->operand;
      if (!llvm::isa<ast::IntLitExpr, ast::FloatLitExpr, ast::BoolLitExpr,
                     ast::NameExpr>(element))
        return {};
      Doc item = Expr(e->elements[i]);
      if (item.Width() > kShortElementWidth) return {};
      bool last = i + 1 == e->elements.size();
      items.push_back(last ? item : item + ",");
    }
    // The trailing comma is the list's: Fill prints its items flat.
    return Doc::Fill(std::move(items)) + Doc::IfBreak(",");
  }

  Doc StructLit(const ast::StructLitExpr* e) {
    bool parens = no_struct_;
    std::string path = JoinIdents(e->path, ".");
    if (e->fields.empty() && !e->base) return path + " {}";
    std::vector<ListItem> items;
    for (const ast::FieldInit& field : e->fields)
      items.push_back(
          {{field.name.span.begin, field.value->span.end}, [this, &field] {
             return field.name.name.str() + ": " + Expr(field.value);
           }});
    if (e->base)
      items.push_back(
          {e->base->span, [this, e] { return ".." + Expr(e->base); }});
    Doc out = List(path + " {", items, e->span.end - 1, "}",
                   e->base ? Comma::Never : Comma::IfBroken, /*spaced=*/true);
    return parens ? "(" + out + ")" : out;
  }

  Doc Loop(const ast::LoopExpr* e) {
    Doc out = "loop " + Pattern(e->state) + " = " + NoStruct(e->init);
    switch (e->form) {
      case ast::LoopExpr::Form::ForDim:
        out += " for " + Pattern(e->iterator) + " in " + NoStruct(e->domain);
        break;
      case ast::LoopExpr::Form::ForRange:
        out += " for " + Pattern(e->iterator) + " in " +
               RangeBound(e->range_lo) + "..";
        out += RangeBound(e->range_hi);
        break;
      case ast::LoopExpr::Form::While:
        out += " while " + NoStruct(e->condition);
        break;
    }
    return out + " " + Block(e->body);
  }

  // A bound of `lo..hi`: `..` binds looser than `||`, so only a lambda needs
  // parentheses.
  Doc RangeBound(const ast::Expr* expr) {
    Doc text = NoStruct(expr);
    return llvm::isa<ast::LambdaExpr>(expr) ? "(" + text + ")" : text;
  }

  using Node = ast::Node;

  llvm::StringRef source_;
  CommentCursor cursor_;
  bool no_struct_ = false;
};

}  // namespace

std::string PrintModule(llvm::StringRef source, const ast::Module& module,
                        size_t width) {
  Printer printer(source);
  return Render(printer.Module(module), width);
}

}  // namespace delta::format

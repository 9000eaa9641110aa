// ParseModule and the parser's support code: the token feed, syntax error
// messages, AST builders shared by grammar rules, and the nesting limit.
#include "compiler/syntax/parse.h"

#include <llvm/Support/Path.h>

#include <algorithm>
#include <array>

#include "compiler/syntax/parser.gen.h"

namespace delta {
namespace syntax {
namespace {

// See Note [Nesting limit] in docs/internals/syntax.md.
constexpr uint32_t kMaxDepth = 256;
constexpr unsigned kMaxSyntaxErrors = 20;

using Kind = Parser::symbol_kind;
using SymbolKind = Parser::symbol_kind_type;

// Bison numbers tokens in declaration order after its three reserved
// symbols; parser.y declares them in the order of DELTA_TOKENS.
constexpr int kFirstTokenSymbol = Kind::S_Ident - 1;
static_assert(Kind::S_Pipe - kFirstTokenSymbol ==
              static_cast<int>(TokenKind::Pipe));

constexpr Parser::token_kind_type kParserTokens[] = {
#define DELTA_PARSER_TOKEN(Name, Spelling) Parser::token::TOK_##Name,
    DELTA_TOKENS(DELTA_PARSER_TOKEN)
#undef DELTA_PARSER_TOKEN
};

bool IsComparison(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Eq:
    case ast::BinaryOp::Ne:
    case ast::BinaryOp::Lt:
    case ast::BinaryOp::Le:
    case ast::BinaryOp::Gt:
    case ast::BinaryOp::Ge:
      return true;
    default:
      return false;
  }
}

// How a token kind is named in "expected ..." lists.
std::string Expected(SymbolKind kind) {
  if (kind == Kind::S_YYEOF) return "end of file";
  if (kind >= Kind::S_Ident && kind <= Kind::S_Pipe) {
    return TokenSpelling(static_cast<TokenKind>(kind - kFirstTokenSymbol))
        .str();
  }
  return Parser::symbol_name(kind);
}

// How the offending token is named: in the user's own spelling.
std::string Found(const Parser::symbol_type& token) {
  SymbolKind kind = token.kind();
  Span span = token.location;
  llvm::StringRef text(span.begin, span.end - span.begin);
  if (text.size() > 24) text = text.take_front(24);
  switch (kind) {
    case Kind::S_YYEOF:
      return "end of file";
    case Kind::S_Ident:
      return "identifier '" + text.str() + "'";
    case Kind::S_IntLit:
    case Kind::S_FloatLit:
      return "number '" + text.str() + "'";
    case Kind::S_StringLit:
      return "string literal";
    default:
      return "'" + text.str() + "'";
  }
}

// Turns Bison's list of acceptable tokens into what a person would say:
// after an operand, operators are always possible and not worth listing;
// the many tokens that can start an expression, statement or declaration
// are named as such.
std::vector<std::string> DescribeExpected(std::vector<SymbolKind> expected) {
  auto has = [&](SymbolKind kind) {
    return std::find(expected.begin(), expected.end(), kind) != expected.end();
  };
  auto remove = [&](std::initializer_list<SymbolKind> kinds) {
    for (SymbolKind kind : kinds) {
      expected.erase(std::remove(expected.begin(), expected.end(), kind),
                     expected.end());
    }
  };
  std::vector<std::string> words;
  if (has(Kind::S_KwFn) && has(Kind::S_KwStruct)) {
    remove({Kind::S_KwFn, Kind::S_KwExport, Kind::S_KwStruct, Kind::S_KwDim,
            Kind::S_KwLet, Kind::S_KwImport, Kind::S_At, Kind::S_YYEOF,
            Kind::S_Semi});
    words.push_back("declaration");
  }
  if (has(Kind::S_Star) && has(Kind::S_Plus)) {
    remove({Kind::S_Plus, Kind::S_Minus, Kind::S_Star, Kind::S_Slash,
            Kind::S_Percent, Kind::S_Caret, Kind::S_EqEq, Kind::S_NotEq,
            Kind::S_Less, Kind::S_LessEq, Kind::S_Greater, Kind::S_GreaterEq,
            Kind::S_AndAnd, Kind::S_OrOr, Kind::S_LParen, Kind::S_LBracket,
            Kind::S_Dot});
    if (has(Kind::S_Semi) || has(Kind::S_Comma) || has(Kind::S_RParen) ||
        has(Kind::S_RBracket) || has(Kind::S_RBrace)) {
      remove({Kind::S_LBrace});
    }
    if (expected.empty()) words.push_back("operator");
  }
  // After a type or a name, `.` and `[` could continue it; when a closing
  // token is also possible, that is what is missing.
  if (has(Kind::S_Comma) || has(Kind::S_RParen) || has(Kind::S_RBracket) ||
      has(Kind::S_RBrace) || has(Kind::S_Semi)) {
    remove({Kind::S_Dot, Kind::S_LBracket});
  }
  if (has(Kind::S_Ident) && has(Kind::S_IntLit) && has(Kind::S_LParen)) {
    bool statement = has(Kind::S_KwLet);
    remove({Kind::S_Ident, Kind::S_IntLit, Kind::S_FloatLit, Kind::S_StringLit,
            Kind::S_KwTrue, Kind::S_KwFalse, Kind::S_LParen, Kind::S_LBrace,
            Kind::S_LBracket, Kind::S_KwIf, Kind::S_KwLoop, Kind::S_KwFor,
            Kind::S_Minus, Kind::S_Bang, Kind::S_Pipe, Kind::S_OrOr,
            Kind::S_KwLet, Kind::S_KwDim});
    words.insert(words.begin(), statement ? "statement" : "expression");
  }
  for (SymbolKind kind : expected) words.push_back(Expected(kind));
  return words;
}

}  // namespace

// ---------------------------------------------------------------------------
// The token feed and error reporting.

Parser::symbol_type yylex(ParseContext& ctx) {
  Token token = ctx.NextToken();
  Span span = token.span;
  switch (token.kind) {
    case TokenKind::Ident:
      return Parser::make_Ident(
          ast::Ident{llvm::StringRef(span.begin, span.end - span.begin), span},
          span);
    case TokenKind::IntLit:
      return Parser::make_IntLit(IntToken{token.int_value, token.suffix}, span);
    case TokenKind::FloatLit:
      return Parser::make_FloatLit(
          FloatToken{std::move(token.text), token.suffix}, span);
    case TokenKind::StringLit:
      return Parser::make_StringLit(std::move(token.text), span);
    default:
      return Parser::symbol_type(kParserTokens[static_cast<int>(token.kind)],
                                 span);
  }
}

void Parser::report_syntax_error(const context& yyctx) const {
  if (ctx.stopped()) return;
  std::array<SymbolKind, YYNTOKENS> buffer;
  int count = yyctx.expected_tokens(buffer.data(), YYNTOKENS);
  std::vector<std::string> words =
      DescribeExpected({buffer.begin(), buffer.begin() + count});
  std::string found = Found(yyctx.lookahead());
  std::string message;
  if (std::string habit = ctx.HabitMessage(); !habit.empty()) {
    message = habit + " (found " + found + ")";
  } else if (words.empty() || words.size() > 5) {
    message = "unexpected " + found;
  } else {
    message = "expected ";
    for (size_t i = 0; i < words.size(); ++i) {
      if (i > 0) message += i + 1 == words.size() ? " or " : ", ";
      message += words[i];
    }
    // A missing `;` is the most common mistake: name the statement that
    // it should end, found by looking down the parse stack.
    if (words.size() == 1 && words[0] == "';'") {
      for (int i = 0; i < static_cast<int>(yystack_.size()); ++i) {
        SymbolKind kind = yystack_[i].kind();
        if (kind == Kind::S_LBrace || kind == Kind::S_LParen ||
            kind == Kind::S_LBracket || kind == Kind::S_Semi ||
            kind == Kind::S_RBrace) {
          break;
        }
        if (kind == Kind::S_KwLet) message += " after let statement";
        if (kind == Kind::S_KwDim) message += " after dim declaration";
        if (kind == Kind::S_KwImport) message += " after import";
        if (kind == Kind::S_KwLet || kind == Kind::S_KwDim ||
            kind == Kind::S_KwImport) {
          break;
        }
      }
    }
    message += ", found " + found;
  }
  ctx.SyntaxError(yyctx.location(), std::move(message));
}

void Parser::error(const location_type& location, const std::string& message) {
  ctx.SyntaxError(location, message);
}

ParseContext::ParseContext(const char* begin, const char* end,
                           ast::Arena& arena, DiagnosticEngine& diags,
                           ast::Module& module)
    : begin_(begin),
      end_(end),
      arena_(arena),
      diags_(diags),
      module_(module),
      lexer_(begin, end, diags) {}

Token ParseContext::NextToken() {
  if (stopped()) {
    Token end;
    end.span = {end_, end_};
    return end;
  }
  previous_[0] = std::move(previous_[1]);
  previous_[1] = std::move(lookahead_);
  lookahead_ = lexer_.Next();
  return lookahead_;
}

std::string ParseContext::HabitMessage() const {
  auto is_word = [](const Token& token, llvm::StringRef word) {
    return token.kind == TokenKind::Ident &&
           llvm::StringRef(token.span.begin,
                           token.span.end - token.span.begin) == word;
  };
  if (is_word(previous_[1], "mut") && previous_[0].kind == TokenKind::KwLet)
    return "Delta has no mutation: a `let` binding never changes (no "
           "`mut`); bind a new value with another `let`, or carry changing "
           "state with `loop`";
  if (is_word(previous_[1], "return"))
    return "Delta has no `return`: a function's value is the last "
           "expression of its body, written without `;`";
  // `x = e` or `v[i] = e`: an `=` after what ends an expression.
  TokenKind before = previous_[1].kind;
  if (lookahead_.kind == TokenKind::Eq &&
      (before == TokenKind::Ident || before == TokenKind::RBracket ||
       before == TokenKind::RParen))
    return "Delta has no assignment: `=` appears only in `let`, `dim` and "
           "`loop`; bind a new value with `let x = …;`, update state with "
           "`loop`, or compare with `==`";
  return "";
}

bool ParseContext::stopped() const {
  return syntax_errors_ >= kMaxSyntaxErrors ||
         lexer_.error_count() >= Lexer::kMaxErrors;
}

void ParseContext::SyntaxError(Span span, std::string message) {
  Report(DiagKind::SyntaxError, span, std::move(message));
}

std::optional<ast::Ident> ParseContext::DimLabel(ast::Expr* label) {
  if (auto* name = llvm::dyn_cast<ast::NameExpr>(label)) return name->name;
  if (auto* field = llvm::dyn_cast<ast::FieldExpr>(label))
    if (auto* module = llvm::dyn_cast<ast::NameExpr>(field->base)) {
      ast::Ident ident = field->field;
      ident.module = module->name.name;
      ident.span = label->span;
      return ident;
    }
  SyntaxError(label->span,
              "expected a dim name before ':' in an index, e.g. x[feat: 0]");
  return std::nullopt;
}

void ParseContext::Report(DiagKind kind, Span span, std::string message) {
  if (stopped()) return;
  ++syntax_errors_;
  diags_.Report(kind, span, std::move(message));
}

// ---------------------------------------------------------------------------
// Nesting depth.

uint32_t ParseContext::DepthOf(const ast::Node* node) const {
  if (node == nullptr) return 0;
  auto it = depth_.find(node);
  return it == depth_.end() ? 1 : it->second;
}

bool ParseContext::TooDeep(ast::Node* node, uint32_t child_depth) {
  uint32_t depth = child_depth + 1;
  if (depth <= kMaxDepth) {
    depth_[node] = depth;
    return false;
  }
  if (!reported_too_deep_) {
    reported_too_deep_ = true;
    Report(DiagKind::TooDeep, node->span,
           "this is nested too deeply (more than " + std::to_string(kMaxDepth) +
               " levels); split it up with `let` bindings");
  }
  return true;
}

ast::Expr* ParseContext::Finish(ast::Expr* expr) {
  uint32_t depth = 0;
  auto at_least = [&](const ast::Node* child) {
    depth = std::max(depth, DepthOf(child));
  };
  switch (expr->kind) {
    case ast::Expr::Kind::Unary:
      at_least(llvm::cast<ast::UnaryExpr>(expr)->operand);
      break;
    case ast::Expr::Kind::Binary: {
      auto* binary = llvm::cast<ast::BinaryExpr>(expr);
      at_least(binary->lhs);
      at_least(binary->rhs);
      break;
    }
    case ast::Expr::Kind::Call: {
      auto* call = llvm::cast<ast::CallExpr>(expr);
      at_least(call->callee);
      for (const ast::Arg& arg : call->args) at_least(arg.value);
      break;
    }
    case ast::Expr::Kind::Index: {
      auto* index = llvm::cast<ast::IndexExpr>(expr);
      at_least(index->base);
      for (const ast::IndexEntry& entry : index->entries) {
        at_least(entry.value);
      }
      break;
    }
    case ast::Expr::Kind::Field:
      at_least(llvm::cast<ast::FieldExpr>(expr)->base);
      break;
    case ast::Expr::Kind::TupleIndex:
      at_least(llvm::cast<ast::TupleIndexExpr>(expr)->base);
      break;
    case ast::Expr::Kind::Tuple:
      for (ast::Expr* e : llvm::cast<ast::TupleExpr>(expr)->elements) {
        at_least(e);
      }
      break;
    case ast::Expr::Kind::StructLit: {
      auto* literal = llvm::cast<ast::StructLitExpr>(expr);
      for (const ast::FieldInit& field : literal->fields) {
        at_least(field.value);
      }
      at_least(literal->base);
      break;
    }
    case ast::Expr::Kind::ArrayLit:
      for (ast::Expr* e : llvm::cast<ast::ArrayLitExpr>(expr)->elements) {
        at_least(e);
      }
      break;
    case ast::Expr::Kind::Block: {
      auto* block = llvm::cast<ast::BlockExpr>(expr);
      for (const ast::Stmt* stmt : block->stmts) at_least(stmt);
      at_least(block->result);
      break;
    }
    case ast::Expr::Kind::If: {
      auto* if_expr = llvm::cast<ast::IfExpr>(expr);
      at_least(if_expr->condition);
      at_least(if_expr->then_block);
      at_least(if_expr->else_branch);
      break;
    }
    case ast::Expr::Kind::Loop: {
      auto* loop = llvm::cast<ast::LoopExpr>(expr);
      const ast::Node* children[] = {
          loop->state,    loop->init,     loop->iterator,  loop->domain,
          loop->range_lo, loop->range_hi, loop->condition, loop->body};
      for (const ast::Node* child : children) at_least(child);
      break;
    }
    case ast::Expr::Kind::For: {
      auto* comprehension = llvm::cast<ast::ForExpr>(expr);
      for (const ast::ForBinding& binding : comprehension->bindings) {
        at_least(binding.variable);
        at_least(binding.domain);
      }
      at_least(comprehension->body);
      break;
    }
    case ast::Expr::Kind::Lambda: {
      auto* lambda = llvm::cast<ast::LambdaExpr>(expr);
      for (const ast::Param& param : lambda->params) at_least(param.type);
      at_least(lambda->result_type);
      at_least(lambda->body);
      break;
    }
    default:
      break;
  }
  if (!TooDeep(expr, depth)) return expr;
  return New<ast::TupleExpr>(expr->span);
}

ast::BlockExpr* ParseContext::Finish(ast::BlockExpr* block) {
  ast::Expr* result = Finish(static_cast<ast::Expr*>(block));
  if (result == block) return block;
  return New<ast::BlockExpr>(block->span);
}

ast::TypeExpr* ParseContext::Finish(ast::TypeExpr* type) {
  uint32_t depth = 0;
  for (const ast::TypeExpr* element : type->elements) {
    depth = std::max(depth, DepthOf(element));
  }
  if (!TooDeep(type, depth)) return type;
  auto* unit = New<ast::TypeExpr>(type->span);
  unit->kind = ast::TypeExpr::Kind::Tuple;
  return unit;
}

ast::Pattern* ParseContext::Finish(ast::Pattern* pattern) {
  uint32_t depth = 0;
  for (const ast::Pattern* element : pattern->elements) {
    depth = std::max(depth, DepthOf(element));
  }
  if (!TooDeep(pattern, depth)) return pattern;
  auto* wildcard = New<ast::Pattern>(pattern->span);
  wildcard->kind = ast::Pattern::Kind::Wildcard;
  return wildcard;
}

ast::Stmt* ParseContext::Finish(ast::Stmt* stmt) {
  uint32_t depth = 0;
  if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt)) {
    depth = std::max(
        {DepthOf(let->pattern), DepthOf(let->annotation), DepthOf(let->value)});
  } else if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt)) {
    depth = DepthOf(dim->size);
  } else {
    depth = DepthOf(llvm::cast<ast::ExprStmt>(stmt)->expr);
  }
  if (!TooDeep(stmt, depth)) return stmt;
  auto* replacement = New<ast::ExprStmt>(stmt->span);
  replacement->expr = New<ast::TupleExpr>(stmt->span);
  replacement->has_semicolon = true;
  return replacement;
}

// ---------------------------------------------------------------------------
// Builders shared by several rules.

ast::Expr* ParseContext::IntLit(const IntToken& token, Span span) {
  auto* e = New<ast::IntLitExpr>(span);
  e->value = token.value;
  e->suffix = token.suffix;
  return Finish(e);
}

ast::Expr* ParseContext::FloatLit(const FloatToken& token, Span span) {
  auto* e = New<ast::FloatLitExpr>(span);
  e->text = token.text;
  e->suffix = token.suffix;
  return Finish(e);
}

ast::Expr* ParseContext::Name(const ast::Ident& name) {
  auto* e = New<ast::NameExpr>(name.span);
  e->name = name;
  return Finish(e);
}

ast::Expr* ParseContext::Parenthesized(ast::Expr* inner) {
  parenthesized_.insert(inner);
  return inner;
}

ast::Expr* ParseContext::Unary(ast::UnaryOp op, Span op_span,
                               ast::Expr* operand, Span span) {
  auto* e = New<ast::UnaryExpr>(span);
  e->op = op;
  e->op_span = op_span;
  e->operand = operand;
  return Finish(e);
}

ast::Expr* ParseContext::Binary(ast::BinaryOp op, ast::Expr* lhs, Span op_span,
                                ast::Expr* rhs, Span span) {
  if (IsComparison(op)) {
    auto* left = llvm::dyn_cast<ast::BinaryExpr>(lhs);
    if (left != nullptr && IsComparison(left->op) &&
        !parenthesized_.contains(lhs)) {
      Report(DiagKind::NonAssociative, op_span,
             "comparison operators cannot be chained; parenthesize one "
             "comparison or join two with '&&'");
    }
  }
  auto* e = New<ast::BinaryExpr>(span);
  e->op = op;
  e->op_span = op_span;
  e->lhs = lhs;
  e->rhs = rhs;
  return Finish(e);
}

ast::Expr* ParseContext::Call(ast::Expr* callee, std::vector<ast::Arg> args,
                              Span span) {
  auto* e = New<ast::CallExpr>(span);
  e->callee = callee;
  e->args = std::move(args);
  return Finish(e);
}

ast::Expr* ParseContext::Index(ast::Expr* base,
                               std::vector<ast::IndexEntry> entries,
                               Span span) {
  auto* e = New<ast::IndexExpr>(span);
  e->base = base;
  e->entries = std::move(entries);
  return Finish(e);
}

ast::Expr* ParseContext::Field(ast::Expr* base, const ast::Ident& field,
                               Span span) {
  auto* e = New<ast::FieldExpr>(span);
  e->base = base;
  e->field = field;
  return Finish(e);
}

ast::Expr* ParseContext::TupleIndex(ast::Expr* base, const IntToken& index,
                                    Span index_span, Span span) {
  auto* e = New<ast::TupleIndexExpr>(span);
  e->base = base;
  e->index_span = index_span;
  if (index.value > UINT32_MAX) {
    Report(DiagKind::InvalidNumber, index_span, "tuple index is too large");
  } else {
    e->index = static_cast<uint32_t>(index.value);
  }
  return Finish(e);
}

ast::Expr* ParseContext::StructLit(ast::Expr* name, StructBody body,
                                   Span brace_span, Span span) {
  // The grammar accepts any postfix expression before `{` (see Note
  // [Struct literal names]); only `Name` and `module.Name` are names.
  std::vector<ast::Ident> path;
  ast::Expr* part = name;
  while (!parenthesized_.contains(part)) {
    if (auto* field = llvm::dyn_cast<ast::FieldExpr>(part)) {
      path.push_back(field->field);
      part = field->base;
      continue;
    }
    if (auto* leaf = llvm::dyn_cast<ast::NameExpr>(part)) {
      path.push_back(leaf->name);
      part = nullptr;
    }
    break;
  }
  if (part != nullptr) {
    Report(DiagKind::SyntaxError, {brace_span.begin, brace_span.begin + 1},
           "expected ';' or an operator, found '{'; a struct literal needs "
           "a struct name before '{'");
    return name;
  }
  std::reverse(path.begin(), path.end());
  auto* e = New<ast::StructLitExpr>(span);
  e->path = std::move(path);
  e->fields = std::move(body.fields);
  e->base = body.base;
  return Finish(e);
}

ast::BlockExpr* ParseContext::Block(std::vector<ast::Stmt*> stmts,
                                    ast::Expr* result, Span span) {
  // An if/loop/for written last without `;` is the block's value.
  if (result == nullptr && !stmts.empty()) {
    auto* last = llvm::dyn_cast<ast::ExprStmt>(stmts.back());
    if (last != nullptr && !last->has_semicolon) {
      result = last->expr;
      stmts.pop_back();
    }
  }
  auto* block = New<ast::BlockExpr>(span);
  block->stmts = std::move(stmts);
  block->result = result;
  return Finish(block);
}

Domain ParseContext::Range(ast::Expr* lo, ast::Expr* hi, Span span) {
  Domain domain;
  domain.lo = lo;
  domain.hi = hi;
  domain.span = span;
  return domain;
}

Domain ParseContext::ChainedRange(const Domain& range, Span op_span,
                                  ast::Expr* /*hi*/, Span span) {
  Report(DiagKind::NonAssociative, op_span,
         "'..' cannot be chained: a range has one start and one end");
  Domain domain = range;
  domain.span = span;
  return domain;
}

ast::ForBinding ParseContext::Binding(ast::Pattern* variable,
                                      const Domain& domain) {
  ast::ForBinding binding;
  binding.variable = variable;
  binding.domain = domain.dim;
  if (domain.dim == nullptr) {
    Report(DiagKind::SyntaxError, domain.span,
           "a comprehension iterates over a dim, not a range; use "
           "`loop ... for k in lo..hi` for a range");
    binding.domain = domain.lo;
  }
  return binding;
}

void ParseContext::MisplacedStruct(Span literal) {
  Report(DiagKind::StructLiteralNotAllowed, literal,
         "a struct literal is not allowed in a condition or domain; put it "
         "in parentheses: `(Name { ... })`");
}

ast::Expr* ParseContext::ArrayLitWithoutDim(std::vector<ast::Expr*> elements,
                                            Span span) {
  Report(DiagKind::ArrayLiteralWithoutDim, span,
         "an array literal names the dim its elements run over: `[k: a, b]` "
         "with `dim k = " +
             std::to_string(elements.size()) + ";`");
  auto* literal = New<ast::ArrayLitExpr>(span);
  literal->elements = std::move(elements);
  return Finish(literal);
}

ast::Pattern* ParseContext::NamePattern(const ast::Ident& name) {
  auto* pattern = New<ast::Pattern>(name.span);
  if (name.name == "_") {
    pattern->kind = ast::Pattern::Kind::Wildcard;
  } else {
    pattern->name = name;
  }
  return Finish(pattern);
}

void ParseContext::AddDecl(ast::Decl* decl) { module_.decls.push_back(decl); }

}  // namespace syntax

namespace {

// The arena owns only Nodes; wrapping the module in one gives it the
// arena's lifetime without a second ownership scheme.
class ModuleNode : public ast::Node {
 public:
  ast::Module module;
};

}  // namespace

ast::Module* ParseModule(llvm::SourceMgr& sources, unsigned buffer_id,
                         ast::Arena& arena, DiagnosticEngine& diags) {
  ast::Module& module = arena.New<ModuleNode>()->module;
  const llvm::MemoryBuffer* buffer = sources.getMemoryBuffer(buffer_id);
  module.path = buffer->getBufferIdentifier().str();
  module.name = llvm::sys::path::stem(module.path).str();
  syntax::ParseContext context(buffer->getBufferStart(), buffer->getBufferEnd(),
                               arena, diags, module);
  syntax::Parser parser(context);
  parser.parse();
  return &module;
}

}  // namespace delta

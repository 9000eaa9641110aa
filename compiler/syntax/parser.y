// The grammar of Delta's surface syntax (Bison input); the actions build the
// AST through ParseContext (parse.cpp). Design notes: docs/internals/syntax.md.

%require "3.8"
%language "c++"
%skeleton "lalr1.cc"

%define api.namespace {delta::syntax}
%define api.parser.class {Parser}
%define api.value.type variant
%define api.token.constructor
%define api.token.prefix {TOK_}
%define api.location.type {delta::Span}
%define parse.error custom
%define parse.lac full
%define parse.assert
%locations
%expect 0

%parse-param {ParseContext& ctx}
%lex-param {ParseContext& ctx}

%code requires {
#include <string>
#include <vector>

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>

#include "compiler/base/span.h"
#include "compiler/diagnostics/diagnostics.h"
#include "compiler/syntax/ast.h"
#include "compiler/syntax/lexer.h"

namespace delta::syntax {

struct IntToken {
  uint64_t value = 0;
  ast::LitSuffix suffix = ast::LitSuffix::None;
};

struct FloatToken {
  std::string text;
  ast::LitSuffix suffix = ast::LitSuffix::None;
};

// The domain of a comprehension binding or of `loop ... for`: a dim
// expression, or the range `lo..hi`.
struct Domain {
  ast::Expr* dim = nullptr;
  ast::Expr* lo = nullptr;
  ast::Expr* hi = nullptr;
  Span span;
};

struct StructBody {
  std::vector<ast::FieldInit> fields;
  ast::Expr* base = nullptr;
};

// Everything the grammar's actions need: the lexer, the arena, error
// reporting with its limits, and the node builders that several rules
// share. Implemented in parse.cpp.
class ParseContext {
 public:
  ParseContext(const char* begin, const char* end, ast::Arena& arena,
               DiagnosticEngine& diags, ast::Module& module);

  Token NextToken();
  // What a syntax error at the lookahead means when it comes from a habit
  // of other languages (`let mut x`, `return e`, `x = e`); empty otherwise.
  std::string HabitMessage() const;
  // True once too many errors were reported: the lexer then reports the end
  // of the input so that the parser stops.
  bool stopped() const;
  void SyntaxError(Span span, std::string message);
  void Report(DiagKind kind, Span span, std::string message);
  // The dim before `:` in `x[d: i]`: `d`, or `cfg.n` for a dim of an
  // imported module (parsed as an expression, so that `x[cfg.n]` and
  // `x[cfg.n: i]` share their prefix).
  std::optional<ast::Ident> DimLabel(ast::Expr* label);
  // An empty span at the start of the buffer.
  Span StartSpan() const { return {begin_, begin_}; }
  DiagnosticEngine& diags() { return diags_; }

  template <typename T>
  T* New(Span span) {
    T* node = arena_.New<T>();
    node->span = span;
    return node;
  }

  // Each Finish records a new node's nesting depth and replaces a node
  // deeper than kMaxDepth by a leaf, so that no consumer of the AST can
  // overflow its stack (see Note [Nesting limit]).
  ast::Expr* Finish(ast::Expr* expr);
  ast::BlockExpr* Finish(ast::BlockExpr* block);
  ast::TypeExpr* Finish(ast::TypeExpr* type);
  ast::Pattern* Finish(ast::Pattern* pattern);
  ast::Stmt* Finish(ast::Stmt* stmt);

  ast::Expr* IntLit(const IntToken& token, Span span);
  ast::Expr* FloatLit(const FloatToken& token, Span span);
  ast::Expr* Name(const ast::Ident& name);
  ast::Expr* Parenthesized(ast::Expr* inner);
  ast::Expr* Unary(ast::UnaryOp op, Span op_span, ast::Expr* operand,
                   Span span);
  ast::Expr* Binary(ast::BinaryOp op, ast::Expr* lhs, Span op_span,
                    ast::Expr* rhs, Span span);
  ast::Expr* Call(ast::Expr* callee, std::vector<ast::Arg> args, Span span);
  ast::Expr* Index(ast::Expr* base, std::vector<ast::IndexEntry> entries,
                   Span span);
  ast::Expr* Field(ast::Expr* base, const ast::Ident& field, Span span);
  ast::Expr* TupleIndex(ast::Expr* base, const IntToken& index,
                        Span index_span, Span span);
  ast::Expr* StructLit(ast::Expr* name, StructBody body, Span brace_span,
                       Span span);
  ast::BlockExpr* Block(std::vector<ast::Stmt*> stmts, ast::Expr* result,
                        Span span);
  Domain Range(ast::Expr* lo, ast::Expr* hi, Span span);
  Domain ChainedRange(const Domain& range, Span op_span, ast::Expr* hi,
                      Span span);
  ast::ForBinding Binding(ast::Pattern* variable, const Domain& domain);
  void MisplacedStruct(Span literal);
  // `[a, b]`: reports that an array literal names its dim (E0116) and
  // returns the literal with no dim, so that sema checks its elements.
  ast::Expr* ArrayLitWithoutDim(std::vector<ast::Expr*> elements, Span span);
  ast::Pattern* NamePattern(const ast::Ident& name);
  void AddDecl(ast::Decl* decl);

 private:
  uint32_t DepthOf(const ast::Node* node) const;
  bool TooDeep(ast::Node* node, uint32_t child_depth);

  const char* begin_;
  const char* end_;
  ast::Arena& arena_;
  DiagnosticEngine& diags_;
  ast::Module& module_;
  Lexer lexer_;
  unsigned syntax_errors_ = 0;
  bool reported_too_deep_ = false;
  // The two tokens before the lookahead, for messages about habits from
  // other languages (`let mut`, `return`).
  std::array<Token, 2> previous_{};
  Token lookahead_;
  llvm::DenseMap<const ast::Node*, uint32_t> depth_;
  llvm::DenseSet<const ast::Expr*> parenthesized_;
};

}  // namespace delta::syntax

// A rule's span runs from its first to its last non-empty symbol, so that
// an empty prefix (no attributes before `fn`) does not drag in the
// whitespace before the rule.
#define YYLLOC_DEFAULT(Current, Rhs, N)                       \
  do {                                                        \
    const char* yy_begin = nullptr;                           \
    const char* yy_end = nullptr;                             \
    for (int yy_i = 1; yy_i <= (N); ++yy_i) {                 \
      const ::delta::Span& yy_l = (Rhs)[yy_i].location;       \
      if (yy_l.begin != yy_l.end) {                           \
        if (yy_begin == nullptr) yy_begin = yy_l.begin;       \
        yy_end = yy_l.end;                                    \
      }                                                       \
    }                                                         \
    if (yy_begin == nullptr) {                                \
      yy_begin = yy_end = (Rhs)[0].location.end;              \
    }                                                         \
    (Current).begin = yy_begin;                               \
    (Current).end = yy_end;                                   \
  } while (false)
}

%code provides {
namespace delta::syntax {
Parser::symbol_type yylex(ParseContext& ctx);
}  // namespace delta::syntax
}

%token End 0 "end of file"
%token <ast::Ident> Ident "identifier"
%token <IntToken> IntLit "integer literal"
%token <FloatToken> FloatLit "float literal"
%token <std::string> StringLit "string literal"
%token KwFn "fn" KwExport "export" KwStruct "struct" KwDim "dim" KwLet "let"
       KwLoop "loop" KwFor "for" KwIn "in" KwWhile "while" KwIf "if"
       KwElse "else" KwImport "import" KwAs "as" KwTrue "true"
       KwFalse "false"
%token Plus "+" Minus "-" Star "*" Slash "/" Percent "%" Caret "^"
       EqEq "==" NotEq "!=" Less "<" LessEq "<=" Greater ">"
       GreaterEq ">=" AndAnd "&&" OrOr "||" Bang "!" Eq "=" Arrow "->"
       Colon ":" Comma "," Dot "." DotDot ".." Semi ";" LParen "("
       RParen ")" LBracket "[" RBracket "]" LBrace "{" RBrace "}" At "@"
       Pipe "|"

// Loosest first. Comparisons are %left rather than %nonassoc so that a
// chain reaches Binary(), which reports E0111 at the second operator
// instead of a bare syntax error.
%left "||"
%left "&&"
%left "==" "!=" "<" "<=" ">" ">="
%left "+" "-"
%left "*" "/" "%"
%precedence UNARY
%right "^"

%type <ast::Expr*> expr nb_expr bin ns_bin nb_bin post ns_post nb_post
%type <ast::Expr*> primary nb_primary block_like if_expr loop_expr for_expr
%type <ast::Expr*> lambda
%type <ast::BlockExpr*> block cond_block
%type <std::vector<ast::Stmt*>> stmt_list
%type <ast::Stmt*> stmt
%type <std::vector<ast::Expr*>> expr_list opt_expr_list
%type <std::vector<ast::Arg>> call_args arg_list
%type <ast::Arg> arg
%type <std::vector<ast::IndexEntry>> index_entries index_list
%type <ast::IndexEntry> index_entry
%type <StructBody> struct_body
%type <std::vector<ast::FieldInit>> field_init_list
%type <ast::FieldInit> field_init
%type <Domain> domain range
%type <std::vector<ast::ForBinding>> for_bindings
%type <ast::ForBinding> for_binding
%type <ast::Pattern*> pattern
%type <std::vector<ast::Pattern*>> pattern_list
%type <ast::TypeExpr*> type type_atom array_type function_type opt_annotation opt_result
%type <std::vector<ast::TypeExpr*>> type_list
%type <std::vector<ast::Ident>> path
%type <std::vector<ast::Ident>> dim_ref_list opt_dim_ref_list
%type <ast::Ident> dim_ref
%type <ast::FnBrackets> opt_fn_brackets fn_bracket_list
%type <std::vector<ast::Param>> lambda_params lambda_param_list param_list opt_params
%type <ast::Param> lambda_param param
%type <std::vector<ast::FieldDecl>> field_decls field_decl_list
%type <ast::FieldDecl> field_decl
%type <std::vector<ast::Attribute>> attributes
%type <ast::Attribute> attribute
%type <bool> opt_export

%initial-action {
  // Empty rules at the very start take their span from here.
  @$ = ctx.StartSpan();
}

%%

module: decls ;

// Declarations are added to the module as soon as they are reduced, so that
// an unrecoverable error still leaves the module with what came before.
decls
  : %empty
  | decls decl
  | decls ";"
  | decls error
  ;

decl
  : attributes "dim" Ident "=" expr ";" {
      auto* d = ctx.New<ast::DimDecl>(@$);
      d->attributes = std::move($1);
      d->name = $3;
      d->size = $5;
      ctx.AddDecl(d);
    }
  | "struct" Ident opt_fn_brackets "{" field_decls "}" {
      auto* d = ctx.New<ast::StructDecl>(@$);
      d->name = $2;
      d->size_params = std::move($3.size_params);
      d->type_params = std::move($3.type_params);
      d->fields = std::move($5);
      ctx.AddDecl(d);
    }
  | "struct" Ident opt_fn_brackets "{" error "}" {
      auto* d = ctx.New<ast::StructDecl>(@$);
      d->name = $2;
      d->size_params = std::move($3.size_params);
      d->type_params = std::move($3.type_params);
      ctx.AddDecl(d);
    }
  | attributes opt_export "fn" Ident opt_fn_brackets "(" opt_params ")"
    opt_result block {
      auto* d = ctx.New<ast::FnDecl>(@$);
      d->attributes = std::move($1);
      d->is_export = $2;
      d->name = $4;
      d->size_params = std::move($5.size_params);
      d->type_params = std::move($5.type_params);
      d->params = std::move($7);
      d->result_type = $9;
      d->body = $10;
      ctx.AddDecl(d);
    }
  | attributes opt_export "fn" Ident opt_fn_brackets "(" error ")"
    opt_result block {
      auto* d = ctx.New<ast::FnDecl>(@$);
      d->attributes = std::move($1);
      d->is_export = $2;
      d->name = $4;
      d->size_params = std::move($5.size_params);
      d->type_params = std::move($5.type_params);
      d->result_type = $9;
      d->body = $10;
      ctx.AddDecl(d);
    }
  | "import" Ident ";" {
      auto* d = ctx.New<ast::ImportDecl>(@$);
      d->module = $2;
      ctx.AddDecl(d);
    }
  | "import" Ident "as" Ident ";" {
      auto* d = ctx.New<ast::ImportDecl>(@$);
      d->module = $2;
      d->alias = $4;
      ctx.AddDecl(d);
    }
  | "let" pattern opt_annotation "=" expr ";" {
      auto* d = ctx.New<ast::LetDecl>(@$);
      d->pattern = $2;
      d->annotation = $3;
      d->value = $5;
      ctx.AddDecl(d);
    }
  ;

attributes
  : %empty {}
  | attributes attribute { $$ = std::move($1); $$.push_back($2); }
  ;

attribute
  : "@" Ident { $$.name = $2; $$.span = @$; }
  | "@" Ident "(" opt_expr_list ")" {
      $$.name = $2;
      $$.args = std::move($4);
      $$.span = @$;
    }
  ;

opt_export
  : %empty { $$ = false; }
  | "export" { $$ = true; }
  ;

// A function's brackets: size parameters and `P: space` type parameters.
opt_fn_brackets
  : %empty {}
  | "[" "]" {}
  | "[" fn_bracket_list opt_comma "]" { $$ = std::move($2); }
  ;

fn_bracket_list
  : Ident { $$.size_params.push_back($1); }
  | Ident ":" Ident { $$.type_params.push_back({$1, $3}); }
  | fn_bracket_list "," Ident {
      $$ = std::move($1);
      $$.size_params.push_back($3);
    }
  | fn_bracket_list "," Ident ":" Ident {
      $$ = std::move($1);
      $$.type_params.push_back({$3, $5});
    }
  ;

opt_params
  : %empty {}
  | param_list opt_comma { $$ = std::move($1); }
  ;

param_list
  : param { $$.push_back($1); }
  | param_list "," param { $$ = std::move($1); $$.push_back($3); }
  ;

param
  : Ident ":" type { $$.name = $1; $$.type = $3; $$.span = @$; }
  ;

opt_result
  : %empty { $$ = nullptr; }
  | "->" type { $$ = $2; }
  ;

field_decls
  : %empty {}
  | field_decl_list opt_comma { $$ = std::move($1); }
  ;

field_decl_list
  : field_decl { $$.push_back($1); }
  | field_decl_list "," field_decl { $$ = std::move($1); $$.push_back($3); }
  ;

field_decl
  : Ident ":" type { $$.name = $1; $$.type = $3; }
  ;

opt_comma: %empty | "," ;

// ---------------------------------------------------------------------------
// Types.

// A dim in a type: `n`, or `cfg.n`, a dim of the imported module `cfg`.
dim_ref
  : Ident { $$ = $1; }
  | Ident "." Ident { $$ = $3; $$.module = $1.name; $$.span = @$; }
  ;

opt_dim_ref_list
  : %empty {}
  | dim_ref_list opt_comma { $$ = std::move($1); }
  ;

dim_ref_list
  : dim_ref { $$.push_back($1); }
  | dim_ref_list "," dim_ref { $$ = std::move($1); $$.push_back($3); }
  ;

type
  : array_type { $$ = $1; }
  | function_type { $$ = $1; }
  ;

array_type
  : type_atom { $$ = $1; }
  | array_type "[" opt_dim_ref_list "]" {
      $1->brackets.push_back(std::move($3));
      $1->span = @$;
      $$ = $1;
    }
  ;

// A function type, for a parameter that takes a function:
// `fn(f32[d], f32) -> f32[d]`; `elements` are the parameter types. Its
// result extends as far as possible, so it takes no `[…]` of its own.
function_type
  : "fn" "(" ")" "->" type {
      auto* t = ctx.New<ast::TypeExpr>(@$);
      t->kind = ast::TypeExpr::Kind::Function;
      t->result = $5;
      $$ = ctx.Finish(t);
    }
  | "fn" "(" type_list opt_comma ")" "->" type {
      auto* t = ctx.New<ast::TypeExpr>(@$);
      t->kind = ast::TypeExpr::Kind::Function;
      t->elements = std::move($3);
      t->result = $7;
      $$ = ctx.Finish(t);
    }
  ;

type_atom
  : path {
      auto* t = ctx.New<ast::TypeExpr>(@$);
      t->path = std::move($1);
      $$ = ctx.Finish(t);
    }
  | "(" ")" {
      auto* t = ctx.New<ast::TypeExpr>(@$);
      t->kind = ast::TypeExpr::Kind::Tuple;
      $$ = ctx.Finish(t);
    }
  | "(" type ")" { $2->span = @$; $$ = $2; }
  | "(" type "," ")" {
      auto* t = ctx.New<ast::TypeExpr>(@$);
      t->kind = ast::TypeExpr::Kind::Tuple;
      t->elements.push_back($2);
      $$ = ctx.Finish(t);
    }
  | "(" type "," type_list opt_comma ")" {
      auto* t = ctx.New<ast::TypeExpr>(@$);
      t->kind = ast::TypeExpr::Kind::Tuple;
      t->elements.push_back($2);
      t->elements.insert(t->elements.end(), $4.begin(), $4.end());
      $$ = ctx.Finish(t);
    }
  ;

type_list
  : type { $$.push_back($1); }
  | type_list "," type { $$ = std::move($1); $$.push_back($3); }
  ;

path
  : Ident { $$.push_back($1); }
  | path "." Ident { $$ = std::move($1); $$.push_back($3); }
  ;

opt_annotation
  : %empty { $$ = nullptr; }
  | ":" type { $$ = $2; }
  ;

// ---------------------------------------------------------------------------
// Patterns.

pattern
  : Ident { $$ = ctx.NamePattern($1); }
  | "(" ")" {
      auto* p = ctx.New<ast::Pattern>(@$);
      p->kind = ast::Pattern::Kind::Tuple;
      $$ = ctx.Finish(p);
    }
  | "(" pattern ")" { $$ = $2; }
  | "(" pattern "," ")" {
      auto* p = ctx.New<ast::Pattern>(@$);
      p->kind = ast::Pattern::Kind::Tuple;
      p->elements.push_back($2);
      $$ = ctx.Finish(p);
    }
  | "(" pattern "," pattern_list opt_comma ")" {
      auto* p = ctx.New<ast::Pattern>(@$);
      p->kind = ast::Pattern::Kind::Tuple;
      p->elements.push_back($2);
      p->elements.insert(p->elements.end(), $4.begin(), $4.end());
      $$ = ctx.Finish(p);
    }
  ;

pattern_list
  : pattern { $$.push_back($1); }
  | pattern_list "," pattern { $$ = std::move($1); $$.push_back($3); }
  ;

// ---------------------------------------------------------------------------
// Blocks and statements. See Note [Statement-level if] in
// docs/internals/syntax.md: a statement that starts with `if`, `loop` or
// `for` is parsed by `block_like`, and every other expression statement by
// the `nb_` ("no block-like start") variant of the expression grammar, so
// the two never compete for the same tokens.

block
  : "{" "}" { $$ = ctx.Block({}, nullptr, @$); }
  | "{" stmt_list "}" { $$ = ctx.Block(std::move($2), nullptr, @$); }
  | "{" stmt_list nb_expr "}" { $$ = ctx.Block(std::move($2), $3, @$); }
  | "{" nb_expr "}" { $$ = ctx.Block({}, $2, @$); }
  ;

stmt_list
  : stmt { if ($1) $$.push_back($1); }
  | stmt_list stmt { $$ = std::move($1); if ($2) $$.push_back($2); }
  ;

stmt
  : "let" pattern opt_annotation "=" expr ";" {
      auto* s = ctx.New<ast::LetStmt>(@$);
      s->pattern = $2;
      s->annotation = $3;
      s->value = $5;
      $$ = ctx.Finish(s);
    }
  | "dim" Ident "=" expr ";" {
      auto* s = ctx.New<ast::DimStmt>(@$);
      s->name = $2;
      s->size = $4;
      $$ = ctx.Finish(s);
    }
  | nb_expr ";" {
      auto* s = ctx.New<ast::ExprStmt>(@$);
      s->expr = $1;
      s->has_semicolon = true;
      $$ = ctx.Finish(s);
    }
  | block_like {
      auto* s = ctx.New<ast::ExprStmt>(@$);
      s->expr = $1;
      $$ = ctx.Finish(s);
    }
  | block_like ";" {
      auto* s = ctx.New<ast::ExprStmt>(@$);
      s->expr = $1;
      s->has_semicolon = true;
      $$ = ctx.Finish(s);
    }
  // Resynchronize after an error at a `;` or at the start of the next
  // statement (a missing `;` before `let` loses nothing after it).
  | error ";" { $$ = nullptr; }
  | error { $$ = nullptr; }
  ;

// A block that follows a condition or domain. `if c S { f: 1 } { ... }`
// almost always means a struct literal in the condition; say so (E0112)
// instead of failing at the `:`.
cond_block
  : block { $$ = $1; }
  | "{" field_init_list opt_comma "}" block {
      ctx.MisplacedStruct({@1.begin, @4.end});
      $$ = $5;
    }
  | "{" field_init_list "," ".." expr opt_comma "}" block {
      ctx.MisplacedStruct({@1.begin, @7.end});
      $$ = $8;
    }
  | "{" ".." expr opt_comma "}" block {
      ctx.MisplacedStruct({@1.begin, @5.end});
      $$ = $6;
    }
  ;

block_like
  : if_expr { $$ = $1; }
  | loop_expr { $$ = $1; }
  | for_expr { $$ = $1; }
  ;

if_expr
  : "if" ns_bin cond_block {
      auto* e = ctx.New<ast::IfExpr>(@$);
      e->condition = $2;
      e->then_block = $3;
      $$ = ctx.Finish(e);
    }
  | "if" ns_bin cond_block "else" block {
      auto* e = ctx.New<ast::IfExpr>(@$);
      e->condition = $2;
      e->then_block = $3;
      e->else_branch = $5;
      $$ = ctx.Finish(e);
    }
  | "if" ns_bin cond_block "else" if_expr {
      auto* e = ctx.New<ast::IfExpr>(@$);
      e->condition = $2;
      e->then_block = $3;
      e->else_branch = $5;
      $$ = ctx.Finish(e);
    }
  ;

loop_expr
  : "loop" pattern "=" expr "for" pattern "in" domain cond_block {
      auto* e = ctx.New<ast::LoopExpr>(@$);
      e->state = $2;
      e->init = $4;
      e->iterator = $6;
      if ($8.dim != nullptr) {
        e->form = ast::LoopExpr::Form::ForDim;
        e->domain = $8.dim;
      } else {
        e->form = ast::LoopExpr::Form::ForRange;
        e->range_lo = $8.lo;
        e->range_hi = $8.hi;
      }
      e->body = $9;
      $$ = ctx.Finish(e);
    }
  | "loop" pattern "=" expr "while" ns_bin cond_block {
      auto* e = ctx.New<ast::LoopExpr>(@$);
      e->form = ast::LoopExpr::Form::While;
      e->state = $2;
      e->init = $4;
      e->condition = $6;
      e->body = $7;
      $$ = ctx.Finish(e);
    }
  ;

for_expr
  : "for" for_bindings opt_comma cond_block {
      auto* e = ctx.New<ast::ForExpr>(@$);
      e->bindings = std::move($2);
      e->body = $4;
      $$ = ctx.Finish(e);
    }
  ;

for_bindings
  : for_binding { $$.push_back($1); }
  | for_bindings "," for_binding { $$ = std::move($1); $$.push_back($3); }
  ;

for_binding
  : pattern "in" domain { $$ = ctx.Binding($1, $3); }
  ;

// `..` is parsed only here, where a struct literal cannot appear either.
domain
  : ns_bin { $$.dim = $1; $$.span = @$; }
  | range { $$ = $1; }
  ;

range
  : ns_bin ".." ns_bin { $$ = ctx.Range($1, $3, @$); }
  | range ".." ns_bin { $$ = ctx.ChainedRange($1, @2, $3, @$); }
  ;

// ---------------------------------------------------------------------------
// Expressions, in three variants that differ only at their left edge or in
// struct literals (see Note [Expression variants]):
//   expr / bin / post       anywhere else;
//   ns_bin / ns_post        no struct literal: conditions and domains;
//   nb_expr / nb_bin / nb_post   not starting with if/loop/for: statements.

expr
  : lambda { $$ = $1; }
  | bin { $$ = $1; }
  ;

nb_expr
  : lambda { $$ = $1; }
  | nb_bin { $$ = $1; }
  ;

lambda
  : "|" lambda_params "|" expr {
      auto* e = ctx.New<ast::LambdaExpr>(@$);
      e->params = std::move($2);
      e->body = $4;
      $$ = ctx.Finish(e);
    }
  | "||" expr {
      auto* e = ctx.New<ast::LambdaExpr>(@$);
      e->body = $2;
      $$ = ctx.Finish(e);
    }
  | "|" lambda_params "|" "->" type block {
      auto* e = ctx.New<ast::LambdaExpr>(@$);
      e->params = std::move($2);
      e->result_type = $5;
      e->body = $6;
      $$ = ctx.Finish(e);
    }
  | "||" "->" type block {
      auto* e = ctx.New<ast::LambdaExpr>(@$);
      e->result_type = $3;
      e->body = $4;
      $$ = ctx.Finish(e);
    }
  ;

lambda_params
  : %empty {}
  | lambda_param_list opt_comma { $$ = std::move($1); }
  ;

lambda_param_list
  : lambda_param { $$.push_back($1); }
  | lambda_param_list "," lambda_param {
      $$ = std::move($1);
      $$.push_back($3);
    }
  ;

lambda_param
  : Ident { $$.name = $1; $$.span = @$; }
  | Ident ":" type { $$.name = $1; $$.type = $3; $$.span = @$; }
  ;

bin
  : post { $$ = $1; }
  | "-" bin %prec UNARY { $$ = ctx.Unary(ast::UnaryOp::Neg, @1, $2, @$); }
  | "!" bin %prec UNARY { $$ = ctx.Unary(ast::UnaryOp::Not, @1, $2, @$); }
  | bin "^" bin { $$ = ctx.Binary(ast::BinaryOp::Pow, $1, @2, $3, @$); }
  | bin "*" bin { $$ = ctx.Binary(ast::BinaryOp::Mul, $1, @2, $3, @$); }
  | bin "/" bin { $$ = ctx.Binary(ast::BinaryOp::Div, $1, @2, $3, @$); }
  | bin "%" bin { $$ = ctx.Binary(ast::BinaryOp::Rem, $1, @2, $3, @$); }
  | bin "+" bin { $$ = ctx.Binary(ast::BinaryOp::Add, $1, @2, $3, @$); }
  | bin "-" bin { $$ = ctx.Binary(ast::BinaryOp::Sub, $1, @2, $3, @$); }
  | bin "==" bin { $$ = ctx.Binary(ast::BinaryOp::Eq, $1, @2, $3, @$); }
  | bin "!=" bin { $$ = ctx.Binary(ast::BinaryOp::Ne, $1, @2, $3, @$); }
  | bin "<" bin { $$ = ctx.Binary(ast::BinaryOp::Lt, $1, @2, $3, @$); }
  | bin "<=" bin { $$ = ctx.Binary(ast::BinaryOp::Le, $1, @2, $3, @$); }
  | bin ">" bin { $$ = ctx.Binary(ast::BinaryOp::Gt, $1, @2, $3, @$); }
  | bin ">=" bin { $$ = ctx.Binary(ast::BinaryOp::Ge, $1, @2, $3, @$); }
  | bin "&&" bin { $$ = ctx.Binary(ast::BinaryOp::And, $1, @2, $3, @$); }
  | bin "||" bin { $$ = ctx.Binary(ast::BinaryOp::Or, $1, @2, $3, @$); }
  ;

ns_bin
  : ns_post { $$ = $1; }
  | "-" ns_bin %prec UNARY { $$ = ctx.Unary(ast::UnaryOp::Neg, @1, $2, @$); }
  | "!" ns_bin %prec UNARY { $$ = ctx.Unary(ast::UnaryOp::Not, @1, $2, @$); }
  | ns_bin "^" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Pow, $1, @2, $3, @$); }
  | ns_bin "*" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Mul, $1, @2, $3, @$); }
  | ns_bin "/" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Div, $1, @2, $3, @$); }
  | ns_bin "%" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Rem, $1, @2, $3, @$); }
  | ns_bin "+" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Add, $1, @2, $3, @$); }
  | ns_bin "-" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Sub, $1, @2, $3, @$); }
  | ns_bin "==" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Eq, $1, @2, $3, @$); }
  | ns_bin "!=" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Ne, $1, @2, $3, @$); }
  | ns_bin "<" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Lt, $1, @2, $3, @$); }
  | ns_bin "<=" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Le, $1, @2, $3, @$); }
  | ns_bin ">" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Gt, $1, @2, $3, @$); }
  | ns_bin ">=" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Ge, $1, @2, $3, @$); }
  | ns_bin "&&" ns_bin { $$ = ctx.Binary(ast::BinaryOp::And, $1, @2, $3, @$); }
  | ns_bin "||" ns_bin { $$ = ctx.Binary(ast::BinaryOp::Or, $1, @2, $3, @$); }
  ;

// Only the leftmost operand is restricted; the others are ordinary `bin`s.
nb_bin
  : nb_post { $$ = $1; }
  | "-" bin %prec UNARY { $$ = ctx.Unary(ast::UnaryOp::Neg, @1, $2, @$); }
  | "!" bin %prec UNARY { $$ = ctx.Unary(ast::UnaryOp::Not, @1, $2, @$); }
  | nb_bin "^" bin { $$ = ctx.Binary(ast::BinaryOp::Pow, $1, @2, $3, @$); }
  | nb_bin "*" bin { $$ = ctx.Binary(ast::BinaryOp::Mul, $1, @2, $3, @$); }
  | nb_bin "/" bin { $$ = ctx.Binary(ast::BinaryOp::Div, $1, @2, $3, @$); }
  | nb_bin "%" bin { $$ = ctx.Binary(ast::BinaryOp::Rem, $1, @2, $3, @$); }
  | nb_bin "+" bin { $$ = ctx.Binary(ast::BinaryOp::Add, $1, @2, $3, @$); }
  | nb_bin "-" bin { $$ = ctx.Binary(ast::BinaryOp::Sub, $1, @2, $3, @$); }
  | nb_bin "==" bin { $$ = ctx.Binary(ast::BinaryOp::Eq, $1, @2, $3, @$); }
  | nb_bin "!=" bin { $$ = ctx.Binary(ast::BinaryOp::Ne, $1, @2, $3, @$); }
  | nb_bin "<" bin { $$ = ctx.Binary(ast::BinaryOp::Lt, $1, @2, $3, @$); }
  | nb_bin "<=" bin { $$ = ctx.Binary(ast::BinaryOp::Le, $1, @2, $3, @$); }
  | nb_bin ">" bin { $$ = ctx.Binary(ast::BinaryOp::Gt, $1, @2, $3, @$); }
  | nb_bin ">=" bin { $$ = ctx.Binary(ast::BinaryOp::Ge, $1, @2, $3, @$); }
  | nb_bin "&&" bin { $$ = ctx.Binary(ast::BinaryOp::And, $1, @2, $3, @$); }
  | nb_bin "||" bin { $$ = ctx.Binary(ast::BinaryOp::Or, $1, @2, $3, @$); }
  ;

post
  : primary { $$ = $1; }
  | post "(" call_args ")" { $$ = ctx.Call($1, std::move($3), @$); }
  | post "[" index_entries "]" { $$ = ctx.Index($1, std::move($3), @$); }
  | post "." Ident { $$ = ctx.Field($1, $3, @$); }
  | post "." IntLit { $$ = ctx.TupleIndex($1, $3, @3, @$); }
  | post "{" struct_body "}" {
      $$ = ctx.StructLit($1, std::move($3), {@2.begin, @4.end}, @$);
    }
  ;

ns_post
  : primary { $$ = $1; }
  | ns_post "(" call_args ")" { $$ = ctx.Call($1, std::move($3), @$); }
  | ns_post "[" index_entries "]" { $$ = ctx.Index($1, std::move($3), @$); }
  | ns_post "." Ident { $$ = ctx.Field($1, $3, @$); }
  | ns_post "." IntLit { $$ = ctx.TupleIndex($1, $3, @3, @$); }
  ;

nb_post
  : nb_primary { $$ = $1; }
  | nb_post "(" call_args ")" { $$ = ctx.Call($1, std::move($3), @$); }
  | nb_post "[" index_entries "]" { $$ = ctx.Index($1, std::move($3), @$); }
  | nb_post "." Ident { $$ = ctx.Field($1, $3, @$); }
  | nb_post "." IntLit { $$ = ctx.TupleIndex($1, $3, @3, @$); }
  | nb_post "{" struct_body "}" {
      $$ = ctx.StructLit($1, std::move($3), {@2.begin, @4.end}, @$);
    }
  ;

primary
  : nb_primary { $$ = $1; }
  | block_like { $$ = $1; }
  ;

nb_primary
  : IntLit { $$ = ctx.IntLit($1, @$); }
  | FloatLit { $$ = ctx.FloatLit($1, @$); }
  | StringLit {
      auto* e = ctx.New<ast::StringLitExpr>(@$);
      e->value = std::move($1);
      $$ = ctx.Finish(e);
    }
  | "true" {
      auto* e = ctx.New<ast::BoolLitExpr>(@$);
      e->value = true;
      $$ = ctx.Finish(e);
    }
  | "false" { $$ = ctx.Finish(ctx.New<ast::BoolLitExpr>(@$)); }
  | Ident { $$ = ctx.Name($1); }
  | "(" ")" { $$ = ctx.Finish(ctx.New<ast::TupleExpr>(@$)); }
  | "(" expr ")" { $$ = ctx.Parenthesized($2); }
  | "(" expr "," ")" {
      auto* e = ctx.New<ast::TupleExpr>(@$);
      e->elements.push_back($2);
      $$ = ctx.Finish(e);
    }
  | "(" expr "," expr_list opt_comma ")" {
      auto* e = ctx.New<ast::TupleExpr>(@$);
      e->elements.push_back($2);
      e->elements.insert(e->elements.end(), $4.begin(), $4.end());
      $$ = ctx.Finish(e);
    }
  | "[" Ident ":" expr_list opt_comma "]" {
      auto* e = ctx.New<ast::ArrayLitExpr>(@$);
      e->dim = $2;
      e->elements = std::move($4);
      $$ = ctx.Finish(e);
    }
  | "[" expr_list opt_comma "]" { $$ = ctx.ArrayLitWithoutDim($2, @$); }
  | block { $$ = $1; }
  ;

expr_list
  : expr { $$.push_back($1); }
  | expr_list "," expr { $$ = std::move($1); $$.push_back($3); }
  ;

opt_expr_list
  : %empty {}
  | expr_list opt_comma { $$ = std::move($1); }
  ;

call_args
  : %empty {}
  | arg_list opt_comma { $$ = std::move($1); }
  ;

arg_list
  : arg { $$.push_back($1); }
  | arg_list "," arg { $$ = std::move($1); $$.push_back($3); }
  ;

arg
  : expr { $$.value = $1; }
  | Ident ":" expr { $$.label = $1; $$.value = $3; }
  ;

index_entries
  : index_list opt_comma { $$ = std::move($1); }
  ;

index_list
  : index_entry { $$.push_back($1); }
  | index_list "," index_entry { $$ = std::move($1); $$.push_back($3); }
  ;

index_entry
  : expr { $$.value = $1; }
  | expr ":" expr { $$.dim = ctx.DimLabel($1); $$.value = $3; }
  ;

struct_body
  : %empty {}
  | field_init_list opt_comma { $$.fields = std::move($1); }
  | field_init_list "," ".." expr opt_comma {
      $$.fields = std::move($1);
      $$.base = $4;
    }
  | ".." expr opt_comma { $$.base = $2; }
  ;

field_init_list
  : field_init { $$.push_back($1); }
  | field_init_list "," field_init { $$ = std::move($1); $$.push_back($3); }
  ;

field_init
  : Ident ":" expr { $$.name = $1; $$.value = $3; }
  ;

%%

// The abstract syntax tree produced by the parser. Every node carries the span
// of source it came from; semantic analysis fills in the fields marked "sema".
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Casting.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/base/span.h"

namespace delta::sema {
class Type;
struct DimInfo;
struct Symbol;
struct CallInfo;
}  // namespace delta::sema

namespace delta::ast {

// A name as written, pointing into the source buffer.
struct Ident {
  llvm::StringRef name;
  Span span;
  // A dim of an imported module in a type, `cfg.n`: the module's name
  // (`cfg`), with `name` the dim's and `span` the whole reference.
  llvm::StringRef module = {};
};

// Every node is owned by an Arena and referred to by plain pointers.
class Node {
 public:
  virtual ~Node() = default;
  Span span;
};

class Arena {
 public:
  template <typename T, typename... Args>
  T* New(Args&&... args) {
    auto node = std::make_unique<T>(std::forward<Args>(args)...);
    T* raw = node.get();
    nodes_.push_back(std::move(node));
    return raw;
  }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
};

// ---------------------------------------------------------------------------
// Types as written: `f32[a, b]`, `Dense[feat, hidden][batch]`, `(f32, i64)`,
// `()`, `nn.Dense[i, o]`, `d` (an index type).

using DimList = std::vector<Ident>;

class TypeExpr : public Node {
 public:
  enum class Kind { Named, Tuple, Function };
  Kind kind = Kind::Named;
  // Named: the (possibly qualified) name, e.g. {"nn", "Dense"} or {"f32"}.
  std::vector<Ident> path;
  // Tuple: the element types; empty for `()`. Function: the parameter types.
  std::vector<TypeExpr*> elements;
  TypeExpr* result = nullptr;  // Function: `-> T`
  // Each `[...]` suffix in order. For a struct with size parameters (or
  // `T: float`) the first one instantiates it; every other one lifts.
  std::vector<DimList> brackets;
  size_t first_lift = 0;  // sema: the first bracket that lifts

  const sema::Type* type = nullptr;  // sema
};

// ---------------------------------------------------------------------------
// Patterns: `x`, `_`, `(a, (b, _))`.

class Pattern : public Node {
 public:
  enum class Kind { Name, Wildcard, Tuple };
  Kind kind = Kind::Name;
  Ident name;                        // Name
  std::vector<Pattern*> elements;    // Tuple
  const sema::Type* type = nullptr;  // sema
  sema::Symbol* symbol = nullptr;    // sema (Name)
};

// ---------------------------------------------------------------------------
// Expressions.

class Expr : public Node {
 public:
  enum class Kind {
    IntLit,
    FloatLit,
    BoolLit,
    StringLit,
    Name,
    Unary,
    Binary,
    Call,
    Index,
    Field,       // e.field, also nn.dense for module members
    TupleIndex,  // t.0
    Tuple,       // (a, b), (a,), ()
    StructLit,   // Name { f: e, ..base }
    ArrayLit,    // [k: a, b, c]
    Block,
    If,
    Loop,
    For,  // comprehension
    Lambda,
  };
  explicit Expr(Kind kind) : kind(kind) {}
  const Kind kind;
  const sema::Type* type = nullptr;  // sema
};

// A literal's optional suffix: `2.0f64`, `3i32`.
enum class LitSuffix { None, F32, F64, I32, I64 };

class IntLitExpr : public Expr {
 public:
  IntLitExpr() : Expr(Kind::IntLit) {}
  static bool classof(const Expr* e) { return e->kind == Kind::IntLit; }
  // The value; literals that do not fit in 64 bits are a lexer error.
  uint64_t value = 0;
  LitSuffix suffix = LitSuffix::None;
};

class FloatLitExpr : public Expr {
 public:
  FloatLitExpr() : Expr(Kind::FloatLit) {}
  static bool classof(const Expr* e) { return e->kind == Kind::FloatLit; }
  // The literal's digits without `_` and suffix, so that it can be rounded
  // once to its final type (f32 or f64).
  std::string text;
  LitSuffix suffix = LitSuffix::None;
};

class BoolLitExpr : public Expr {
 public:
  BoolLitExpr() : Expr(Kind::BoolLit) {}
  static bool classof(const Expr* e) { return e->kind == Kind::BoolLit; }
  bool value = false;
};

class StringLitExpr : public Expr {
 public:
  StringLitExpr() : Expr(Kind::StringLit) {}
  static bool classof(const Expr* e) { return e->kind == Kind::StringLit; }
  std::string value;  // escapes already decoded
};

class NameExpr : public Expr {
 public:
  NameExpr() : Expr(Kind::Name) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Name; }
  Ident name;
  sema::Symbol* symbol = nullptr;  // sema
};

enum class UnaryOp { Neg, Not };
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Pow,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
};

class UnaryExpr : public Expr {
 public:
  UnaryExpr() : Expr(Kind::Unary) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Unary; }
  UnaryOp op = UnaryOp::Neg;
  Span op_span;
  Expr* operand = nullptr;
};

class BinaryExpr : public Expr {
 public:
  BinaryExpr() : Expr(Kind::Binary) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Binary; }
  BinaryOp op = BinaryOp::Add;
  Span op_span;
  Expr* lhs = nullptr;
  Expr* rhs = nullptr;
};

// An argument of a call, optionally labelled: `wrt: p`, `over: d`.
struct Arg {
  std::optional<Ident> label;
  Expr* value = nullptr;
};

class CallExpr : public Expr {
 public:
  CallExpr() : Expr(Kind::Call) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Call; }
  Expr* callee = nullptr;
  std::vector<Arg> args;
  sema::CallInfo* info = nullptr;  // sema
};

// `e[i, feat: 3]`: indexing, or binding size parameters when `e` is a
// function (`softmax[d: classes]`); sema decides which.
struct IndexEntry {
  std::optional<Ident> dim;  // `feat:` in `x[feat: 3]`
  Expr* value = nullptr;
  const sema::DimInfo* dim_info = nullptr;  // sema: the dim `dim` names
};

class IndexExpr : public Expr {
 public:
  IndexExpr() : Expr(Kind::Index) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Index; }
  Expr* base = nullptr;
  std::vector<IndexEntry> entries;
  bool is_size_binding = false;  // sema
};

class FieldExpr : public Expr {
 public:
  FieldExpr() : Expr(Kind::Field) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Field; }
  Expr* base = nullptr;
  Ident field;
  sema::Symbol* module_member = nullptr;  // sema: set for `nn.dense`
};

class TupleIndexExpr : public Expr {
 public:
  TupleIndexExpr() : Expr(Kind::TupleIndex) {}
  static bool classof(const Expr* e) { return e->kind == Kind::TupleIndex; }
  Expr* base = nullptr;
  uint32_t index = 0;
  Span index_span;
};

class TupleExpr : public Expr {
 public:
  TupleExpr() : Expr(Kind::Tuple) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Tuple; }
  std::vector<Expr*> elements;
};

struct FieldInit {
  Ident name;
  Expr* value = nullptr;
};

class StructLitExpr : public Expr {
 public:
  StructLitExpr() : Expr(Kind::StructLit) {}
  static bool classof(const Expr* e) { return e->kind == Kind::StructLit; }
  std::vector<Ident> path;  // `Dense` or `nn.Dense`
  std::vector<FieldInit> fields;
  Expr* base = nullptr;  // `..p`, or null
};

// `[k: a, b, c]`: an array over dim `k` whose elements are a, b and c, in
// index order (docs/language/array_literals.md).
class ArrayLitExpr : public Expr {
 public:
  ArrayLitExpr() : Expr(Kind::ArrayLit) {}
  static bool classof(const Expr* e) { return e->kind == Kind::ArrayLit; }
  Ident dim;
  std::vector<Expr*> elements;
  const sema::DimInfo* dim_info = nullptr;  // sema
};

// Statements appear only inside blocks.
class Stmt : public Node {
 public:
  enum class Kind { Let, Dim, Expr };
  explicit Stmt(Kind kind) : kind(kind) {}
  const Kind kind;
};

class LetStmt : public Stmt {
 public:
  LetStmt() : Stmt(Kind::Let) {}
  static bool classof(const Stmt* s) { return s->kind == Kind::Let; }
  Pattern* pattern = nullptr;
  TypeExpr* annotation = nullptr;  // optional
  Expr* value = nullptr;
};

class DimStmt : public Stmt {
 public:
  DimStmt() : Stmt(Kind::Dim) {}
  static bool classof(const Stmt* s) { return s->kind == Kind::Dim; }
  Ident name;
  Expr* size = nullptr;            // an i64 expression or a bare dim name
  sema::Symbol* symbol = nullptr;  // sema
};

class ExprStmt : public Stmt {
 public:
  ExprStmt() : Stmt(Kind::Expr) {}
  static bool classof(const Stmt* s) { return s->kind == Kind::Expr; }
  Expr* expr = nullptr;
  bool has_semicolon = false;
};

class BlockExpr : public Expr {
 public:
  BlockExpr() : Expr(Kind::Block) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Block; }
  std::vector<Stmt*> stmts;
  // The final expression, or null when the block ends with `;` (value `()`).
  // An `if`/`loop`/`for` written last without `;` is the result, not a stmt.
  Expr* result = nullptr;
};

class IfExpr : public Expr {
 public:
  IfExpr() : Expr(Kind::If) {}
  static bool classof(const Expr* e) { return e->kind == Kind::If; }
  Expr* condition = nullptr;
  BlockExpr* then_block = nullptr;
  Expr* else_branch = nullptr;  // a BlockExpr, an IfExpr, or null
};

// `loop PATTERN = INIT for i in DOMAIN { body }`,
// `loop PATTERN = INIT for k in lo..hi { body }`,
// `loop PATTERN = INIT while COND { body }`.
class LoopExpr : public Expr {
 public:
  enum class Form { ForDim, ForRange, While };
  LoopExpr() : Expr(Kind::Loop) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Loop; }
  Form form = Form::ForDim;
  Pattern* state = nullptr;
  Expr* init = nullptr;
  Pattern* iterator = nullptr;  // ForDim / ForRange: the loop variable
  Expr* domain = nullptr;       // ForDim: the dim
  Expr* range_lo = nullptr;     // ForRange
  Expr* range_hi = nullptr;     // ForRange
  Expr* condition = nullptr;    // While
  BlockExpr* body = nullptr;
};

// `for i in a, j in b { e }`.
struct ForBinding {
  Pattern* variable = nullptr;
  Expr* domain = nullptr;  // must name a dim
};

class ForExpr : public Expr {
 public:
  ForExpr() : Expr(Kind::For) {}
  static bool classof(const Expr* e) { return e->kind == Kind::For; }
  std::vector<ForBinding> bindings;
  BlockExpr* body = nullptr;
};

struct Param {
  Ident name;
  TypeExpr* type = nullptr;  // optional for lambda parameters
  Span span;
  sema::Symbol* symbol = nullptr;  // sema
};

class LambdaExpr : public Expr {
 public:
  LambdaExpr() : Expr(Kind::Lambda) {}
  static bool classof(const Expr* e) { return e->kind == Kind::Lambda; }
  std::vector<Param> params;
  TypeExpr* result_type = nullptr;  // optional
  Expr* body = nullptr;
};

// ---------------------------------------------------------------------------
// Module-level declarations.

class Decl : public Node {
 public:
  enum class Kind { Dim, Struct, Fn, Import, Let };
  explicit Decl(Kind kind) : kind(kind) {}
  const Kind kind;
};

// `@vjp(logsumexp)` before a function, `@shard` before a dim.
struct Attribute {
  Ident name;
  std::vector<Expr*> args;
  Span span;
};

// `dim feat = 784;`, `@shard dim batch = 60000;`
class DimDecl : public Decl {
 public:
  DimDecl() : Decl(Kind::Dim) {}
  static bool classof(const Decl* d) { return d->kind == Kind::Dim; }
  std::vector<Attribute> attributes;
  Ident name;
  Expr* size = nullptr;
  sema::Symbol* symbol = nullptr;  // sema
};

struct FieldDecl {
  Ident name;
  TypeExpr* type = nullptr;
};

// `P: space` or `T: float` among a function's (or `T: float` among a
// struct's) size parameters: a type parameter (docs/language/generics.md).
struct TypeParamDecl {
  Ident name;
  Ident bound;
};

// `struct Dense[T: float, i, o] { w: T[i, o], b: T[o] }`
class StructDecl : public Decl {
 public:
  StructDecl() : Decl(Kind::Struct) {}
  static bool classof(const Decl* d) { return d->kind == Kind::Struct; }
  Ident name;
  std::vector<Ident> size_params;
  std::vector<TypeParamDecl> type_params;  // `T: float`, at most one
  std::vector<FieldDecl> fields;
  sema::Symbol* symbol = nullptr;  // sema
};

// What a function's brackets declare: `[n, P: space]`.
struct FnBrackets {
  std::vector<Ident> size_params;
  std::vector<TypeParamDecl> type_params;
};

class FnDecl : public Decl {
 public:
  FnDecl() : Decl(Kind::Fn) {}
  static bool classof(const Decl* d) { return d->kind == Kind::Fn; }
  std::vector<Attribute> attributes;
  bool is_export = false;
  Ident name;
  std::vector<Ident> size_params;
  std::vector<TypeParamDecl> type_params;
  std::vector<Param> params;
  TypeExpr* result_type = nullptr;  // null means `()`
  BlockExpr* body = nullptr;
  sema::Symbol* symbol = nullptr;  // sema
};

// `import nn;` or `import nn as n;`
class ImportDecl : public Decl {
 public:
  ImportDecl() : Decl(Kind::Import) {}
  static bool classof(const Decl* d) { return d->kind == Kind::Import; }
  Ident module;
  std::optional<Ident> alias;
  sema::Symbol* symbol = nullptr;  // sema
};

// `let learning_rate = 0.1;` at module level.
class LetDecl : public Decl {
 public:
  LetDecl() : Decl(Kind::Let) {}
  static bool classof(const Decl* d) { return d->kind == Kind::Let; }
  Pattern* pattern = nullptr;
  TypeExpr* annotation = nullptr;  // optional
  Expr* value = nullptr;
};

// One parsed file.
struct Module {
  std::string name;  // the file's stem
  std::string path;
  std::vector<Decl*> decls;
};

}  // namespace delta::ast

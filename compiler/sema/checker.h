// The type checker's shared state and internal interface. Its member
// functions are spread over the check_*.cpp files by topic; nothing outside
// compiler/sema includes this header.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/PointerUnion.h>
#include <llvm/ADT/StringMap.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/diagnostics/diagnostics.h"
#include "compiler/sema/format_type.h"
#include "compiler/sema/program.h"
#include "compiler/sema/sema.h"
#include "compiler/sema/symbols.h"
#include "compiler/sema/types.h"
#include "compiler/syntax/ast.h"

namespace delta::sema {

using DimMap = std::map<const DimInfo*, const DimInfo*>;
// The types that a call binds to a generic function's type parameters.
using TypeParamMap = std::map<const TypeParamInfo*, const Type*>;

// The state of flexible literal types (section 1.1 of the contract).
class LiteralSolver {
 public:
  LitVarId NewVar(bool is_float);
  LitVarId Find(LitVarId var);
  bool IsFloat(LitVarId var) { return vars_[Find(var)].is_float; }
  std::optional<ScalarKind> Value(LitVarId var) {
    return vars_[Find(var)].value;
  }
  // Fixes `var` to `kind`; false if the literal cannot take that type.
  bool Bind(LitVarId var, ScalarKind kind);
  void Merge(LitVarId a, LitVarId b);
  // Gives every still-flexible variable created at or after `first` its
  // default type: i64 for integers, float_default() for floats.
  void DefaultFrom(LitVarId first);
  // f32, or `T` in the body of a function with `[T: float]`.
  ScalarKind float_default() const { return float_default_; }
  void set_float_default(ScalarKind kind) { float_default_ = kind; }
  LitVarId count() const { return static_cast<LitVarId>(vars_.size()); }

 private:
  struct Var {
    bool is_float = false;
    std::optional<ScalarKind> value;
    LitVarId parent = 0;
  };
  std::vector<Var> vars_;
  ScalarKind float_default_ = ScalarKind::F32;
};

// Where an expression is being checked.
struct Context {
  const Scope* scope = nullptr;
  FnInfo* function = nullptr;          // null at module level
  ast::LetDecl* module_let = nullptr;  // the module-level let being checked
  bool in_main = false;
  bool in_lambda = false;  // a lambda's body (main's own or another's)
};

class Checker;

// f32, f64, i32, i64, bool: type names that no declaration may take.
bool IsScalarTypeName(llvm::StringRef name);

// The names of the dims declared by `dim` statements anywhere in `block`.
void CollectLocalDimNames(const ast::BlockExpr* block,
                          std::set<std::string>& names);

// sum, mean, prod, max, min: the builtins that reduce over named dims
// (builtins.cpp).
bool IsReduction(Builtin builtin);

// Leaf and value combinations shared by operators and builtins
// (check_operators.cpp).
const Type* UnifyLeafKinds(Checker& checker, const Type* a, const Type* b);
const Type* RequireFloatLeaf(Checker& checker, const Type* kind);
const Type* CombineLeaves(Checker& checker, ast::BinaryOp op, const Type* a,
                          const Type* b, Span span);
const Type* CombineValues(Checker& checker, ast::BinaryOp op, const Type* a,
                          const Type* b, Span span);
// The element kind shared by every leaf of `value`, or null.
const Type* UniformLeafKind(Checker& checker, const Type* value);
// `value` broadcast over `dims` as by an operator with a leaf over `dims`: a
// struct's lift set takes the dims it lacks (contract 2.4).
const Type* BroadcastValue(Checker& checker, const Type* value,
                           const DimSet& dims, Span span);

// `base[i: k, ...]` (check_index.cpp).
const Type* CheckIndexExpr(Checker& checker, ast::IndexExpr* index,
                           Context& context);

// `[k: a, b, c]` (check_array_lit.cpp).
const Type* CheckArrayLit(Checker& checker, ast::ArrayLitExpr* literal,
                          Context& context);

class Checker {
 public:
  Checker(Program& program, DiagnosticEngine& diags,
          const CheckOptions& options);

  // --- Modules (modules.cpp) and declarations (check_decls.cpp) ------------
  ModuleInfo* LoadModule(const std::string& path, bool is_main);
  ModuleInfo* LoadSource(llvm::StringRef text, llvm::StringRef name);
  void CheckFnSignature(FnInfo* fn);
  void CheckModule(ModuleInfo* module);

  // --- Types (type_ops.cpp) ------------------------------------------------
  const Type* Resolve(const Type* type);
  // Exact match with literal unification. On mismatch, returns false.
  bool Unify(const Type* expected, const Type* actual);
  // Reports a mismatch between an expected and an actual type, with a
  // rename suggestion when only dims differ. `what` is the user's expression.
  void ReportMismatch(Span span, const Type* expected, const Type* actual,
                      llvm::StringRef context, const ast::Expr* what);
  // The hints of a dims-differ error where the value has dim `from` and
  // `to` was expected: a reduction over the wrong dim, or a rename (only
  // when the sizes can match), quoting the user's expression.
  std::string WrongReductionHint(const ast::Expr* what, const DimInfo* from,
                                 const DimInfo* to, const Type* expected);
  std::string RenameHint(const ast::Expr* what, const DimInfo* from,
                         const DimInfo* to);
  // "; … bind it by name, f[T: f64](…)" for a struct instance at another
  // float type than the one expected; "" for other mismatches.
  std::string FloatArgHint(const Type* expected, const Type* actual,
                           const ast::Expr* what);
  // Checks that `actual` equals `expected` exactly; reports if not.
  void Expect(const Type* expected, const Type* actual, Span span,
              llvm::StringRef context, const ast::Expr* what = nullptr);
  const Type* Lift(const Type* type, const DimSet& extra, Span span);
  const Type* Substitute(const Type* type, const DimMap& map);
  // The field types of one struct instance: its size and float arguments
  // in place of the struct's parameters (not lifted by its dims).
  std::vector<const Type*> FieldTypes(const Type* struct_type);
  // The union of the array dims of every leaf.
  DimSet AllDims(const Type* type);
  const Type* Tangent(const Type* type);
  std::string TypeString(const Type* type) {
    return FormatType(type, &literals_);
  }
  std::string DimString(const DimSet& dims) { return FormatDims(dims); }
  std::string SignatureString(const Signature& signature) {
    return FormatSignature(signature, &literals_);
  }
  bool ContainsFunction(const Type* type);
  // Does every leaf of `type` hold floats?
  bool IsFloatValued(const Type* type);
  // Does some leaf of `type` hold floats (so that it has a derivative)?
  bool HasFloatLeaf(const Type* type);
  // The scalar kind shared by every leaf, fixing literals to it if needed.
  const Type* LeafKindOf(const Type* type);
  const Type* ResolveTypeExpr(ast::TypeExpr* type, const Scope* scope);
  const DimInfo* ResolveDimName(const ast::Ident& name, const Scope* scope);
  // The dim an expression names, `n` or `cfg.n` (a dim of an imported
  // module), as an identifier; nullopt for any other expression.
  std::optional<ast::Ident> DimRefOf(const ast::Expr* expr, const Scope* scope);
  // The dim symbol `name` (maybe qualified) names, or null; reports nothing.
  const Symbol* LookupDim(const ast::Ident& name, const Scope* scope);
  // `dim k = n;` and `dim k = cfg.n;`: the size is another dim's. Marks the
  // expression as naming it (for lowering) and returns the dim, or null when
  // `size` names no dim.
  const DimInfo* DimSizedAs(ast::Expr* size, const Scope* scope);

  // --- Expressions (check_expr.cpp, check_stmt.cpp) ------------------------
  const Type* CheckExpr(ast::Expr* expr, Context& context);
  const Type* CheckBlock(ast::BlockExpr* block, Context& context);
  void CheckStmt(ast::Stmt* stmt, Context& context);
  // Unused let bindings (W9003): recorded per statement, reported at the
  // end of each function body.
  void NoteLetBindings(const ast::Pattern* pattern);
  void ReportUnusedBindings();
  void BindPattern(ast::Pattern* pattern, const Type* type, Context& context);
  // Defaults flexible literals at the end of a statement.
  void EndStatement(LitVarId first_var) { literals_.DefaultFrom(first_var); }
  LitVarId StatementStart() const { return literals_.count(); }

  // --- Calls and lifting (check_call.cpp) ----------------------------------
  const Type* CheckCall(ast::CallExpr* call, Context& context);
  // Solves size parameters and extra dims (contract 4.4) for a call of
  // `signature` with arguments of `arg_types`; fills `info`. `struct_literal`
  // marks a struct literal: its arguments are fields, and it lifts over extra
  // dims only where no candidate matches without them.
  const Type* ApplySignature(const Signature& signature,
                             const std::vector<const Type*>& arg_types,
                             const std::vector<Span>& arg_spans,
                             const std::vector<ast::Expr*>& arg_exprs,
                             const DimMap& explicit_bindings,
                             llvm::StringRef callee_name, Span call_span,
                             CallInfo* info, bool struct_literal = false);
  // A function passed for a parameter of function type: checks it against
  // the declared type (with the call's `binding` and float type) and
  // returns what the parameter stands for, bound to its dims; null after an
  // error.
  const Callable* CheckFunctionArgument(const Callable* declared,
                                        const Callable* given,
                                        const DimMap& binding,
                                        std::optional<ScalarKind> float_kind,
                                        Span span, const std::string& what,
                                        const std::string& callee);
  // The signature of a function value; `arg_types` lets an unannotated
  // lambda take its parameter types from its first call.
  const Signature* GetSignature(const Callable* callable,
                                const std::vector<const Type*>* arg_types,
                                Span use);
  std::string CallableName(const Callable* callable) {
    return FormatCallableName(callable);
  }
  // Parameter names, known even before an unannotated lambda is typed.
  std::vector<llvm::StringRef> ParamNames(const Callable* callable);
  // Whether the signature is known without seeing a call's arguments.
  bool HasStaticSignature(const Callable* callable);
  // The signature of a function value when it is already known without
  // checking anything (a declared non-generic function, a typed parameter,
  // a pullback, a lambda checked before); null otherwise.
  const Signature* KnownSignature(const Callable* callable);
  const Callable* FnCallable(FnInfo* fn);

  // --- Generic functions (check_generics.cpp) ------------------------------
  // Checks that every type parameter is bound, to an f32 vector space.
  bool CheckTypeArgs(const Signature& signature, const TypeParamMap& type_args,
                     const std::vector<Span>& arg_spans,
                     const std::string& callee_name, ScalarKind float_kind);
  // What a call makes the float type parameter `T` (nullopt if the callee
  // has none), given the leaf kind its arguments gave it (`float_arg`, null
  // if none); false after an error, reported here.
  bool BindFloatParam(const Signature& signature, const TypeParamMap& type_args,
                      const Type* float_arg, const std::vector<Span>& arg_spans,
                      const std::string& callee_name, Span call_span,
                      std::optional<ScalarKind>* float_kind);
  // `type` with each type parameter of `map` replaced, and the float type
  // parameter `T` (ScalarKind::Float) by `float_kind` if given.
  const Type* SubstituteTypeParams(
      const Type* type, const TypeParamMap& map,
      std::optional<ScalarKind> float_kind = std::nullopt);
  // Reports a float type parameter named other than `T`.
  void CheckFloatParamName(const ast::TypeParamDecl& param);
  // A struct's `[T: float]` (Note [Float type parameters]): declares `T`
  // in the scope of its fields; then checks that some field uses it.
  void DeclareStructFloatParam(StructInfo* info, Scope* scope);
  void CheckStructFloatParamUsed(const StructInfo* info);
  // `f[T: f64]`: binds the float type parameter of the function `callee`
  // in `bound`; false after an error, reported here.
  bool BindFloatByName(const Signature& signature, const Callable* callee,
                       ast::IndexEntry& entry, const Scope* scope,
                       Callable* bound);
  // Reports a type parameter that no parameter's type mentions.
  void CheckTypeParamsUsed(const FnInfo* fn);
  // Reports a generic function named anywhere but as a call's callee.
  bool CheckGenericUse(const FnInfo* fn, const ast::Expr* use);
  Callable* NewCallable(Callable::Kind kind);
  const Type* FunctionType(const Callable* callable) {
    return program_.types.Function(callable);
  }

  // --- Size parameters used together (joint_size_params.cpp) -------------
  // Records the pairs of `fn`'s size parameters that one leaf of `type`
  // carries together.
  void NoteJointSizeParams(FnInfo* fn, const Type* type);
  // The declared function under a function value (through grad, vmap,
  // checkpoint and bindings by name), and the size parameters those
  // bindings fixed.
  FnInfo* CalledFn(const Callable* callable, DimMap* bound);
  // The pairs of dims that must differ for a call of `callable` to be valid:
  // its function's joint size parameters, with names already bound replaced.
  struct DistinctPair {
    const DimInfo* first;
    const DimInfo* second;
    const JointSizeParams* why;  // in the function's own names
  };
  std::vector<DistinctPair> DistinctDims(const Callable* callable);
  // After a call is solved: carries the callee's joint pairs over to the
  // caller's size parameters, and queues the call for CheckJointCalls.
  void RecordJointCall(const CallInfo* info, const Signature& signature,
                       Span span, FnInfo* caller);
  // At the end of a module: propagates pairs to a fixpoint (a callee may
  // come later in the module) and reports calls that bind a pair to one dim.
  void CheckJointCalls(size_t first);

  // --- Builtins and transformations (builtins.cpp, transforms.cpp) ---------
  const Type* CheckBuiltinCall(Builtin builtin, ast::CallExpr* call,
                               Context& context);
  // `T(x)` inside a function with `[T: float]`.
  const Type* CheckFloatParamConversion(ast::CallExpr* call, Context& context);
  const Type* CheckTransform(Builtin builtin, ast::CallExpr* call,
                             Context& context);
  void CheckCustomVjp(FnInfo* rule, const ast::Attribute& attribute,
                      const Scope* scope);

  // --- Helpers (checker.cpp, constant_int.cpp) ----------------------------
  DiagBuilder Error(DiagKind kind, Span span, std::string message) {
    return diags_.Report(kind, span, std::move(message));
  }
  Symbol* NewSymbol(Symbol::Kind kind, llvm::StringRef name, Span span);
  Scope* NewScope(const Scope* parent);
  // A new scope holding one more symbol, after checking the shadowing rules.
  const Scope* Bind(const Scope* scope, Symbol* symbol, Context& context);
  // Reports that `name` is unknown, suggesting a close match.
  void ReportUnknown(const ast::Ident& name, const Scope* scope,
                     llvm::StringRef what);
  // "; did you mean `weight`?" for a misspelt field of `info`, or "".
  std::string FieldHint(const StructInfo* info, llvm::StringRef name);
  std::string SourceText(Span span);
  // Makes `type` visible to later passes once literals are solved.
  void Record(const sema::Type** slot) { slots_.push_back(slot); }
  // Resolves every recorded slot (end of a declaration).
  void ResolveRecorded();
  const Type* TypeOfValueSymbol(const Symbol* symbol);
  // Evaluates a compile-time i64 expression (module dim sizes).
  std::optional<int64_t> ConstantInt(ast::Expr* expr, const Scope* scope);

  Program& program() { return program_; }
  TypeContext& types() { return program_.types; }
  LiteralSolver& literals() { return literals_; }
  // The type written for a struct literal's place (a let's annotation, a
  // function's result, a field of such a literal), or null: it gives the
  // literal's `T` when its fields are bare literals (check_expr.cpp).
  const Type* ExpectedStruct(const ast::Expr* lit) const {
    auto it = expected_structs_.find(lit);
    return it == expected_structs_.end() ? nullptr : it->second;
  }
  void ExpectStruct(const ast::Expr* expr, const Type* type) {
    if (expr && llvm::isa<ast::StructLitExpr>(expr))
      expected_structs_[expr] = Resolve(type);
  }
  const Scope* prelude() const { return prelude_; }

 private:
  void CollectDecls(ModuleInfo* module);
  // Whether `dim`'s attributes make it sharded (`@shard`); reports others.
  bool CheckDimAttributes(const ast::DimDecl& dim);
  const Signature* LambdaSignature(const Callable* callable,
                                   const std::vector<const Type*>* arg_types,
                                   Span use);
  const Signature* DerivedSignature(const Callable* callable,
                                    const std::vector<const Type*>* arg_types,
                                    Span use);
  void CheckFnBody(FnInfo* fn);
  void CheckMainSignature(ast::FnDecl* decl);
  void CheckFileExtent(ast::CallExpr* call, Context& context);
  void CheckStructDecl(StructInfo* info, Scope* scope);
  // After `field` of `info` is resolved: a struct that holds itself,
  // directly or through tuples, arrays or other structs, is an error, and
  // the field that closes the cycle becomes an error type.
  void CheckStructCycle(StructInfo* info, const ast::FieldDecl& field);
  // Declares the size parameters of a struct or function in `scope`.
  std::vector<const DimInfo*> DeclareSizeParams(
      const std::vector<ast::Ident>& names, Scope* scope);
  std::vector<const Type*> DeclareTypeParams(ast::FnDecl* decl, Scope* scope,
                                             bool* float_generic);
  void CheckModuleLet(ast::LetDecl* decl, ModuleInfo* module);
  void CheckRecursion(ModuleInfo* module);  // check_recursion.cpp
  ModuleInfo* ResolveImport(ast::ImportDecl* decl, ModuleInfo* importer);

  Program& program_;
  DiagnosticEngine& diags_;
  const CheckOptions& options_;
  LiteralSolver literals_;
  Scope* prelude_ = nullptr;
  std::vector<const sema::Type**> slots_;
  llvm::DenseMap<FnInfo*, const Callable*> fn_callables_;
  llvm::DenseMap<FnInfo*, const Scope*> signature_scopes_;
  llvm::StringMap<ModuleInfo*> loaded_modules_;  // by real path
  llvm::DenseSet<const ast::LetDecl*> lets_in_progress_;
  llvm::DenseSet<const ast::LetDecl*> lets_done_;
  // What each module-level let's value names: functions and other lets
  // (FnInfo::callees and FnInfo::lets_used are a function's), for the
  // recursion check.
  llvm::DenseMap<const ast::LetDecl*,
                 std::vector<llvm::PointerUnion<FnInfo*, ast::LetDecl*>>>
      let_uses_;
  // Lets already reported as depending on themselves.
  llvm::DenseSet<const ast::LetDecl*> lets_reported_;
  std::vector<std::string> import_stack_;
  // The program's @shard dim, once one is declared (one per program).
  const ast::DimDecl* sharded_dim_ = nullptr;
  // Unsuffixed integer literals, range-checked once their type is known;
  // those written after a unary minus may reach the type's minimum.
  std::vector<const ast::IntLitExpr*> int_literals_;
  llvm::DenseSet<const ast::Expr*> negated_literals_;
  // For W9003: the let bindings of the body being checked, and every value
  // symbol a name has referred to.
  std::vector<const Symbol*> let_bindings_;
  llvm::DenseSet<const Symbol*> used_values_;
  // The callee of the call being checked: the one place where a generic
  // function may be named.
  const ast::Expr* direct_callee_ = nullptr;
  llvm::DenseMap<const ast::Expr*, const Type*> expected_structs_;
  // While a function's parameters are resolved: function types are allowed.
  bool function_types_allowed_ = false;
  // While a signature is resolved: its body's local dim names (E0314).
  std::set<std::string> local_dim_names_;
  // Solved calls of declared functions, for CheckJointCalls: the callee,
  // every size parameter's dim, and where the call is.
  struct JointCall {
    FnInfo* callee = nullptr;
    FnInfo* caller = nullptr;  // null at module level
    DimMap binding;
    Span span;
  };
  std::vector<JointCall> joint_calls_;
};

}  // namespace delta::sema

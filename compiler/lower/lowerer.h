// The lowering's internal state, shared by lower_decls.cpp (functions and
// statements), lower_expr.cpp (expressions) and lower_builtins.cpp.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/ScopeExit.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/diagnostics/diagnostics.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/ir.h"
#include "compiler/sema/program.h"

namespace delta::lower {

// A lowered value: its leaves in flattening order (tuple elements, then
// struct fields, depth first).
using Leaves = std::vector<ir::Value*>;

// Maps sema dims to IR dims where a substitution is in force (struct size
// arguments, a callee's size parameters at a call).
using DimSubst = llvm::DenseMap<const sema::DimInfo*, const ir::Dim*>;

// What a float-generic function's `T` is at a call, from the lowered
// arguments (the leaves of parameters of type `T`); nullopt if none has one.
std::optional<sema::ScalarKind> FloatKindOfArgs(
    const sema::Signature& signature, const std::vector<Leaves>& args);

class Lowerer {
 public:
  Lowerer(const sema::Program& program, DiagnosticEngine& diags);
  std::unique_ptr<ir::Module> Run();

  // --- Declarations and statements (lower_decls.cpp) -----------------------
  ir::Function* FunctionFor(const sema::FnInfo* fn);
  ir::Function* ModuleLetFunction(const sema::Symbol* symbol);
  Leaves Block(const ast::BlockExpr* block);
  void Stmt(const ast::Stmt* stmt);
  void BindPattern(const ast::Pattern* pattern, const Leaves& leaves);

  // --- Types ---------------------------------------------------------------
  std::vector<ir::Type> Flatten(const sema::Type* type,
                                const DimSubst* subst = nullptr);
  ir::Type LeafType(const sema::Type* leaf, const DimSubst* subst = nullptr);
  const ir::Dim* DimOf(const sema::DimInfo* dim,
                       const DimSubst* subst = nullptr);
  ir::DimList DimsOf(const sema::DimSet& dims, const DimSubst* subst = nullptr);
  size_t LeafCount(const sema::Type* type) { return Flatten(type).size(); }

  // --- Expressions (lower_expr.cpp) ----------------------------------------
  Leaves Expr(const ast::Expr* expr);
  Leaves Call(const ast::CallExpr* call);
  // `kind` on matching leaves; a single leaf broadcasts over the other
  // side's leaves (a struct times a scalar).
  Leaves Leafwise(ir::OpKind kind, const Leaves& a, const Leaves& b);
  // `[k: a, b, c]`: a chain of selects on the position along k.
  Leaves ArrayLit(const ast::ArrayLitExpr* literal);
  // A module-level constant is a function of no arguments, called per use.
  Leaves CallModuleLet(const sema::Symbol* symbol);
  // Calls `callable` on lowered arguments, lifted over `info`'s extra dims.
  Leaves CallCallable(const sema::Callable* callable,
                      const std::vector<Leaves>& args,
                      const std::vector<const sema::Type*>& arg_types,
                      const sema::CallInfo* info, const sema::Type* result,
                      Span span);
  // The map of a lifted call (section 4.4).
  Leaves LiftedMap(const sema::Callable* callable,
                   const std::vector<Leaves>& args,
                   const std::vector<const sema::Type*>& arg_types,
                   const sema::CallInfo* info, const sema::Type* result,
                   const DimSubst& sizes, Span span);
  // A lifted call of a function with a @vjp rule becomes a call of a
  // function of its own, whose rule is the rule lifted the same way, so
  // that reverse mode still uses the rule (lower_transforms.cpp).
  // `size_args` are fn's size arguments, in the order of its parameters.
  Leaves CallLiftedWithRule(const sema::Callable* callable,
                            const sema::FnInfo* fn,
                            const std::vector<const sema::DimInfo*>& size_args,
                            const std::vector<Leaves>& args,
                            const std::vector<const sema::Type*>& arg_types,
                            const sema::CallInfo* info,
                            const sema::Type* result, Span span);
  // The call itself, inside any lifting map: arguments have no extra dims;
  // `sizes` binds the callee's size parameters.
  Leaves CallUnlifted(const sema::Callable* callable,
                      const std::vector<Leaves>& args,
                      const std::vector<const sema::Type*>& arg_types,
                      const DimSubst& sizes, Span span,
                      const sema::CallInfo* info = nullptr);
  // A function with parameters of function type, or with type parameters,
  // has no IR function of its own: each call lowers its body in place, with
  // the functions it was passed (docs/language/types.md, "Function types")
  // and its type arguments in force (Note [Generic functions] in
  // sema/check_generics.cpp).
  Leaves InlineCall(const sema::FnInfo* fn, const std::vector<Leaves>& args,
                    const std::vector<const sema::Type*>& arg_types,
                    const DimSubst& sizes, const sema::CallInfo* info);
  // `callable` with every parameter of function type in it replaced by
  // the function the enclosing inlined calls passed.
  const sema::Callable* Bound(const sema::Callable* callable);
  // Broadcasts each leaf to the dims of the matching expected leaf type.
  Leaves BroadcastTo(const Leaves& leaves, const std::vector<ir::Type>& types);

  // --- Builtins (lower_builtins.cpp) ---------------------------------------
  Leaves Builtin(const ast::CallExpr* call, sema::Builtin builtin);

  // --- Transformations (lower_transforms.cpp) ------------------------------
  // A function value as an IR function: a declared function as it is; any
  // other (a lambda, a transformed function) wrapped in a new function whose
  // extra parameters are what its lambdas captured and whose extra size
  // parameters are the enclosing function's dims.
  struct Wrapped {
    ir::Function* function = nullptr;
    std::vector<const sema::Symbol*> captures;
    std::vector<const sema::DimInfo*> dims;
  };
  Wrapped WrapCallable(const sema::Callable* callable, Span span);
  std::vector<ir::Value*> CaptureOperands(const Wrapped& wrapped);
  std::vector<const ir::Dim*> WrappedDims(const Wrapped& wrapped,
                                          const sema::Callable* callable,
                                          const DimSubst& sizes);
  // The derivative function of `primal` for this mode, made once.
  ir::Function* DerivativeOf(ir::Function* primal, ir::Derivative::Mode mode,
                             std::vector<bool> wrt, bool with_value);
  // A call of `callee` with its size parameters bound to `dims`.
  ir::Op* EmitCall(ir::Function* callee,
                   const std::vector<ir::Value*>& operands,
                   const std::vector<const ir::Dim*>& dims);
  Leaves CallDerivative(ir::Function* derived,
                        const std::vector<ir::Value*>& operands,
                        const std::vector<const ir::Dim*>& dims);
  Leaves CallGrad(const sema::Callable* grad, const std::vector<Leaves>& args,
                  const DimSubst& sizes, Span span);
  Leaves CallPullback(const sema::Callable* pullback,
                      const std::vector<Leaves>& args, Span span);
  // A tangent of `type` from its float leaves, with zeros for the others.
  Leaves ExpandTangent(const Leaves& float_leaves, const sema::Type* type,
                       const DimSubst& sizes);
  // jvp(f, …) and vjp(f, …).
  Leaves TransformBuiltin(const ast::CallExpr* call, sema::Builtin builtin);

  // --- Float type parameters -----------------------------------------------
  // Makes `kind` the float type of `T` until the returned guard is
  // destroyed; nullopt or ScalarKind::Float (the caller's own `T`) leave it.
  [[nodiscard]] auto ScopedFloatKind(std::optional<sema::ScalarKind> kind) {
    sema::ScalarKind saved = float_kind_;
    if (kind && *kind != sema::ScalarKind::Float) float_kind_ = *kind;
    return llvm::make_scope_exit([this, saved] { float_kind_ = saved; });
  }
  // The `T` of a call of `callable` (a float-generic function) on `args`.
  std::optional<sema::ScalarKind> ArgFloatKind(
      const sema::Callable* callable, const std::vector<Leaves>& args) {
    if (callable->kind != sema::Callable::Kind::Fn ||
        !callable->fn->signature.float_generic)
      return std::nullopt;
    return FloatKindOfArgs(callable->fn->signature, args);
  }

  // --- Helpers -------------------------------------------------------------
  ir::Builder& builder() { return *builder_; }
  ir::Loc LocOf(Span span);
  void SetLoc(Span span) { builder_->SetLoc(LocOf(span)); }
  void Unsupported(Span span, const std::string& what);
  bool IsFileExtent(const ast::CallExpr* call);
  ir::Value* FileExtent(const ast::CallExpr* call);
  bool failed() const { return failed_; }
  ir::Value* Const(const ir::Type& type, double value);

 private:
  void LowerFunction(const sema::FnInfo* fn, ir::Function* function);
  void DeclareModuleDims();

  const sema::Program& program_;
  DiagnosticEngine& diags_;
  std::unique_ptr<ir::Module> module_;
  bool failed_ = false;

  // Module-wide mappings.
  llvm::DenseMap<const sema::DimInfo*, const ir::Dim*> module_dims_;
  // One IR function per function and float type (Note [Float type
  // parameters] in sema/check_generics.cpp); f32 for a function without `T`.
  std::map<std::pair<const sema::FnInfo*, sema::ScalarKind>, ir::Function*>
      functions_;
  llvm::DenseMap<const sema::Symbol*, ir::Function*> let_functions_;
  std::deque<std::function<void()>> worklist_;  // bodies still to lower

  // The type arguments of the generic calls being inlined, innermost last.
  using TypeArgs =
      std::vector<std::pair<const sema::TypeParamInfo*, const sema::Type*>>;
  TypeArgs type_args_;
  // Function values turned into functions, and what each pullback needs. A
  // lambda inside a generic body is a function per type arguments.
  std::map<std::tuple<const sema::Callable*, TypeArgs, sema::ScalarKind>,
           Wrapped>
      wrapped_;
  // What the float type parameter `T` is in the body being lowered, and
  // what it was where each lambda was written.
  sema::ScalarKind float_kind_ = sema::ScalarKind::F32;
  llvm::DenseMap<const ast::LambdaExpr*, sema::ScalarKind> lambda_float_kinds_;
  struct PullbackInfo {
    Wrapped wrapped;
    std::vector<ir::Value*> operands;  // the primal arguments and captures
    std::vector<const ir::Dim*> dims;
    size_t param_leaves = 0;  // how many operands are primal arguments
    DimSubst sizes;           // the primal's size parameters
    std::vector<const sema::Type*> arg_types;  // of the primal arguments
  };
  llvm::DenseMap<const sema::Callable*, PullbackInfo> pullbacks_;
  int wrapped_count_ = 0;  // names the wrapped functions
  // While calls are inlined: what each parameter of function type stands
  // for, and the callables Bound made.
  llvm::DenseMap<const sema::Callable*, const sema::Callable*> bound_params_;
  std::deque<sema::Callable> bound_callables_;
  int lifted_rules_ = 0;  // names the functions of lifted calls with rules

  // The function being lowered.
  ir::Builder* builder_ = nullptr;
  llvm::DenseMap<const sema::DimInfo*, const ir::Dim*> local_dims_;
  llvm::DenseMap<const sema::Symbol*, Leaves> values_;
  bool in_main_ = false;
};

}  // namespace delta::lower

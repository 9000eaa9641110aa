// What names refer to: symbols, the persistent scopes that hold them, and the
// per-declaration facts (functions, structs, modules, callables) that sema
// records for the later stages.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringMap.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/sema/types.h"
#include "compiler/syntax/ast.h"

namespace delta::sema {

enum class Builtin {
#define DELTA_BUILTIN(Name, spelling) Name,
#include "compiler/sema/builtins.def"
};

struct FnInfo;
struct ModuleInfo;
class Scope;

struct Symbol {
  enum class Kind { Dim, Value, Function, Struct, Module, Builtin, TypeParam };
  Kind kind = Kind::Value;
  llvm::StringRef name;
  Span span;                     // the declaration
  const DimInfo* dim = nullptr;  // Dim
  const Type* type = nullptr;    // Value (may be a Function type), TypeParam
  FnInfo* fn = nullptr;          // Function
  StructInfo* struct_info = nullptr;   // Struct
  ModuleInfo* module = nullptr;        // Module
  sema::Builtin builtin{};             // Builtin
  ast::LetDecl* module_let = nullptr;  // a module-level let, typed on demand
  const ModuleInfo* owner = nullptr;   // the module that declares it
  int path_arg = -1;  // a `path` parameter of main: its position
};

// A scope is a persistent chain: adding a name makes a new scope whose parent
// is the old one, so a lambda that captured a scope never sees later names.
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Symbol* Lookup(llvm::StringRef name) const;
  const Symbol* LookupLocal(llvm::StringRef name) const;
  const Scope* parent() const { return parent_; }
  void Add(const Symbol* symbol) { names_[symbol->name] = symbol; }

 private:
  const Scope* parent_;
  llvm::StringMap<const Symbol*> names_;
};

// The signature of something callable, with its own size parameters.
struct Signature {
  std::vector<const DimInfo*> size_params;
  std::vector<const Type*> type_params;  // TypeParam types, `[P: space]`
  bool float_generic = false;            // has `[T: float]`
  std::vector<llvm::StringRef> param_names;
  std::vector<const Type*> params;
  const Type* result = nullptr;
};

struct StructInfo {
  ast::StructDecl* decl = nullptr;
  const ModuleInfo* module = nullptr;
  std::vector<const DimInfo*> size_params;
  bool float_generic = false;  // has `[T: float]`
  std::vector<llvm::StringRef> field_names;
  // In terms of size_params and, with `T: float`, ScalarKind::Float for `T`
  // (Checker::FieldTypes gives them for one instance).
  std::vector<const Type*> field_types;
  int FieldIndex(llvm::StringRef name) const;
};

// Two size parameters of a function that must name different dims, and
// the type that shows why, for the message.
struct JointSizeParams {
  const DimInfo* first = nullptr;
  const DimInfo* second = nullptr;
  std::string witness;
};

struct FnInfo {
  ast::FnDecl* decl = nullptr;
  const ModuleInfo* module = nullptr;
  Signature signature;
  bool signature_ready = false;
  FnInfo* custom_vjp = nullptr;    // the @vjp rule for this function
  FnInfo* vjp_rule_for = nullptr;  // set on a rule: the function it serves
  std::vector<FnInfo*> callees;    // for the recursion check
  std::vector<ast::LetDecl*> lets_used;  // module-level lets it reads
  std::vector<bool> path_params;         // main: which parameters are `path`s
  // Locals of the body in order, for `dlc check --types --locals`.
  std::vector<const Symbol*> locals;
  // Size parameters that one array of the body carries together (`dot(q, k,
  // e)` is f32[s, t]), directly or through a call: a call may not bind them
  // to one dim (joint_size_params.cpp).
  std::vector<JointSizeParams> joint_size_params;
};

// A compile-time function value.
struct Callable {
  enum class Kind {
    Fn,          // a declared function
    Builtin,     // a builtin used as a value (e.g. passed to reduce)
    Lambda,      // |x| …
    Grad,        // grad / value_and_grad of `inner`
    Vmap,        // vmap(inner, over: dim)
    Checkpoint,  // checkpoint(inner)
    Pullback,    // the pullback returned by vjp
    SizeBound,   // inner with some size parameters bound by name
    Param,       // a parameter of function type: the function a call passes
  };
  Kind kind = Kind::Fn;
  FnInfo* fn = nullptr;
  sema::Builtin builtin{};
  ast::LambdaExpr* lambda = nullptr;
  const Scope* lambda_scope = nullptr;  // what the lambda captured
  FnInfo* lambda_owner = nullptr;
  bool lambda_in_main = false;
  const Callable* inner = nullptr;
  bool with_value = false;        // value_and_grad
  std::vector<unsigned> wrt;      // Grad: differentiated parameters
  bool wrt_is_tuple = false;      // `wrt: (p, q)` gives a tuple
  const DimInfo* over = nullptr;  // Vmap
  std::vector<std::pair<const DimInfo*, const DimInfo*>> bindings;  // SizeBound
  // SizeBound: `f[T: f64]` binds the float type parameter (ScalarKind::Float
  // for the caller's own `T`).
  std::optional<ScalarKind> float_binding;
  llvm::StringRef param_name;  // Param: the parameter's name
  // Known signature (Fn, Pullback, typed lambdas, or after first use).
  mutable std::unique_ptr<Signature> signature;
};

// The result of checking one call: what is called, how its size parameters
// were bound, and which extra dims lift it (section 4.4 of the contract).
struct CallInfo {
  const Callable* callee = nullptr;  // null for builtins
  sema::Builtin builtin{};
  bool is_builtin = false;
  std::vector<const DimInfo*> size_args;  // parallel to size_params
  std::vector<const Type*> type_args;     // parallel to type_params
  // What the callee's `T: float` is at this call: f32, f64, or the
  // caller's own `T` (ScalarKind::Float); unset if it has none.
  std::optional<ScalarKind> float_arg;
  std::vector<DimSet> arg_extra_dims;    // per argument
  DimSet lift_dims;                      // union of the extra dims
  std::vector<const DimInfo*> dim_args;  // builtins: dims named as args
  // Per argument: for a parameter of function type, the function passed
  // (with its own size parameters bound), else null.
  std::vector<const Callable*> function_args;
};

struct ModuleInfo {
  std::string name;
  std::string path;
  ast::Module* ast = nullptr;
  Scope* scope = nullptr;  // the module's top-level names
  bool is_main = false;
  std::vector<ModuleInfo*> imports;
  // Declaration order facts for printing.
  llvm::DenseMap<const ast::Decl*, const Symbol*> decl_symbols;
  llvm::DenseMap<const ast::Decl*, std::vector<const Symbol*>> let_symbols;
};

}  // namespace delta::sema

// Generic functions: `fn norm[P: space](p: P) -> f32` takes any vector space
// of f32 (an f32 array, or a struct or tuple whose leaves are all f32),
// `fn softplus[T: float](x: T) -> T` works at f32 and f64, and so does
// `struct Dense[T: float, i, o]`.
#include <llvm/ADT/STLExtras.h>

#include <functional>

#include "compiler/sema/checker.h"

namespace delta::sema {

// Note [Generic functions]
// A type parameter is checked once, abstractly: inside the body a value of
// type `P` supports only what every f32 vector space supports (`+ - * / ^`
// with another `P` or an f32 scalar, the unary math builtins, `max`, `min`,
// `clamp` and `where` with scalars, `sum`/`mean`/`max`/`min`/`prod` with no
// dim and `dot`, which give an f32). A call binds `P` to the whole type of
// its argument, which is never lifted through `P`. Lowering inlines the body
// at each call with `P` replaced by that type (Lowerer::InlineCall), so
// the IR and AD never see a type parameter. A generic function is therefore
// only ever called: it cannot be a function value, exported, main, or carry
// a @vjp rule.

// Note [Float type parameters]
// `[T: float]` makes a function one definition for f32 and f64. Inside the
// body `T` is a scalar kind of its own (ScalarKind::Float): it combines
// with `T` and with literals, never with a concrete f32 or f64, so the body
// is checked once and is right for both; `T(x)` converts to it. A `P:
// space` beside it is a space of `T`. A call binds `T` from the leaves of
// the arguments whose parameter types have `T` (all must agree; bare
// literals leave it what a literal defaults to: f32, or `T` in a body that
// has one) and records it in CallInfo::float_arg, which is
// the caller's own `T` when a generic function calls another. Lowering
// makes one IR function per float type a function is used at (the f64 one
// named `name.f64`), so float-generic functions keep everything concrete
// ones have: @vjp rules, use as values, grad of them. The float parameter
// is always named `T`, so that messages can name it.
//
// A struct may take `T` too (`struct Dense[T: float, i, o]`): its field
// types hold ScalarKind::Float, and a struct type carries its float
// argument (Type::struct_float: f32, f64, or Float for the enclosing
// function's `T`), which Checker::FieldTypes puts in place of `T` as it
// puts size arguments in place of size parameters. A struct literal is a
// call of a float-generic constructor, and a parameter `Dense[T, i, o]`
// binds the callee's `T` from the argument's float argument. Lowering
// flattens an instance with its float argument as the float kind, so the
// IR sees only f32 and f64 leaves.

namespace {

// Whether `type` has a leaf of the float type parameter `T`, also through a
// `P: space` of `T` or a function type.
bool MentionsFloatParam(const Type* type) {
  switch (type->kind) {
    case Type::Kind::Scalar:
      return type->scalar == ScalarKind::Float;
    case Type::Kind::TypeParam:
      return type->type_param->leaf == ScalarKind::Float;
    case Type::Kind::Tuple:
      return llvm::any_of(type->elements, MentionsFloatParam);
    case Type::Kind::Struct:
      return type->struct_info->float_generic &&
             type->struct_float == ScalarKind::Float;
    case Type::Kind::Function:
      if (const Signature* signature = type->callable->signature.get())
        return llvm::any_of(signature->params, MentionsFloatParam);
      return false;
    default:
      return false;
  }
}

}  // namespace

bool Checker::CheckTypeArgs(const Signature& signature,
                            const TypeParamMap& type_args,
                            const std::vector<Span>& arg_spans,
                            const std::string& callee_name,
                            ScalarKind float_kind) {
  bool ok = true;
  for (const Type* param : signature.type_params) {
    const TypeParamInfo* info = param->type_param;
    auto it = type_args.find(info);
    if (it == type_args.end()) {
      ok = false;  // reported at the declaration (CheckTypeParamsUsed)
      continue;
    }
    ScalarKind leaf =
        info->leaf == ScalarKind::Float ? float_kind : ScalarKind::F32;
    const Type* kind = UniformLeafKind(*this, it->second);
    if (!IsFloatValued(it->second) || !kind ||
        !UnifyLeafKinds(*this, kind, types().Scalar(leaf))) {
      // Point at the first argument that binds this parameter.
      Span span = arg_spans.empty() ? info->span : arg_spans.front();
      for (size_t i = 0; i < signature.params.size(); ++i)
        if (Resolve(signature.params[i])->type_param == info &&
            i < arg_spans.size())
          span = arg_spans[i];
      Error(DiagKind::BadTypeArg, span,
            "`" + info->name.str() + "` of `" + callee_name +
                "` is any vector space of " + ScalarName(leaf).str() +
                " (an array, or a struct or tuple of them), not " +
                TypeString(it->second))
          .Note(info->span, "`" + info->name.str() + "` is declared here");
      ok = false;
    }
  }
  return ok;
}

bool Checker::BindFloatParam(const Signature& signature,
                             const TypeParamMap& type_args,
                             const Type* float_arg,
                             const std::vector<Span>& arg_spans,
                             const std::string& callee_name, Span call_span,
                             std::optional<ScalarKind>* float_kind) {
  *float_kind = std::nullopt;
  // A `P: space` of `T` makes `T` the kind of its leaves.
  for (const auto& [info, type] : type_args) {
    if (info->leaf != ScalarKind::Float) continue;
    const Type* kind = UniformLeafKind(*this, type);
    if (!kind) continue;  // CheckTypeArgs reports it
    const Type* joined =
        float_arg ? UnifyLeafKinds(*this, float_arg, kind) : Resolve(kind);
    if (!joined) {
      Error(DiagKind::BadFloatArg, call_span,
            "the arguments of `" + callee_name + "` make `T` both " +
                TypeString(float_arg) + " and " + TypeString(kind) +
                "; convert one, e.g. with f64(…) or f32(…)");
      return false;
    }
    float_arg = joined;
  }
  if (!float_arg) {
    // No argument tells (`T` only in the result, or in the types of
    // function arguments): `T` is what a float literal would be.
    if (llvm::any_of(signature.params, MentionsFloatParam) ||
        MentionsFloatParam(signature.result))
      *float_kind = literals_.float_default();
    return true;
  }
  float_arg = Resolve(float_arg);
  // Bare literals give no float type: `T` is then what a literal defaults
  // to, f32, or the caller's own `T`.
  if (float_arg->kind == Type::Kind::LitVar &&
      Unify(types().Scalar(literals_.float_default()), float_arg)) {
    *float_kind = literals_.float_default();
    return true;
  }
  if (float_arg->kind == Type::Kind::Scalar && IsFloat(float_arg->scalar)) {
    *float_kind = float_arg->scalar;
    return true;
  }
  // Point at the first argument with a leaf of `T`.
  Span span = call_span;
  for (size_t i = 0; i < signature.params.size() && i < arg_spans.size(); ++i)
    if (MentionsFloatParam(Resolve(signature.params[i]))) {
      span = arg_spans[i];
      break;
    }
  Error(DiagKind::BadFloatArg, span,
        "`T` of `" + callee_name +
            "` is f32 or f64, but the arguments make it " +
            TypeString(float_arg) + "; convert, e.g. with f32(…) or f64(…)");
  return false;
}

void Checker::CheckTypeParamsUsed(const FnInfo* fn) {
  std::function<bool(const Type*, const Type*)> mentions =
      [&](const Type* type, const Type* param) {
        if (type == param) return true;
        return type->kind == Type::Kind::Tuple &&
               llvm::any_of(type->elements,
                            [&](const Type* e) { return mentions(e, param); });
      };
  for (const Type* param : fn->signature.type_params) {
    if (llvm::any_of(fn->signature.params,
                     [&](const Type* p) { return mentions(p, param); }))
      continue;
    Error(DiagKind::BadTypeParam, param->type_param->span,
          "no parameter of `" + fn->decl->name.name.str() + "` has type `" +
              param->type_param->name.str() +
              "`, so a call cannot tell what it is; give it a parameter of "
              "that type, or remove it");
  }
  if (fn->signature.float_generic &&
      !llvm::any_of(fn->signature.params, MentionsFloatParam) &&
      !MentionsFloatParam(fn->signature.result)) {
    Span span = fn->decl->name.span;
    for (const ast::TypeParamDecl& param : fn->decl->type_params)
      if (param.bound.name == "float") span = param.name.span;
    Error(DiagKind::BadFloatParam, span,
          "neither the parameters nor the result of `" +
              fn->decl->name.name.str() +
              "` have `T` in their types, so `T` is never anything; write f32 "
              "or f64 instead, or remove it");
  }
}

void Checker::CheckFloatParamName(const ast::TypeParamDecl& param) {
  if (param.name.name != "T")
    Error(DiagKind::BadFloatParam, param.name.span,
          "the float type parameter is always named `T` (messages and "
          "docs call it that): write `[T: float]` and `T` for `" +
              param.name.name.str() + "`");
}

void Checker::DeclareStructFloatParam(StructInfo* info, Scope* scope) {
  for (const ast::TypeParamDecl& param : info->decl->type_params) {
    if (param.bound.name != "float") {
      Error(DiagKind::BadTypeParam, param.bound.span,
            "a struct takes only a float type parameter, `T: float`; `" +
                param.name.name.str() +
                ": space` is for functions (fn f[P: space](p: P))");
      continue;
    }
    CheckFloatParamName(param);
    if (info->float_generic) {
      Error(DiagKind::BadFloatParam, param.name.span,
            "a struct has at most one float type parameter");
      continue;
    }
    info->float_generic = true;
    Symbol* symbol =
        NewSymbol(Symbol::Kind::TypeParam, param.name.name, param.name.span);
    symbol->type = types().Scalar(ScalarKind::Float);
    scope->Add(symbol);
  }
}

void Checker::CheckStructFloatParamUsed(const StructInfo* info) {
  if (!info->float_generic ||
      llvm::any_of(info->field_types, MentionsFloatParam))
    return;
  Error(DiagKind::BadFloatParam, info->decl->type_params.front().name.span,
        "no field of `" + info->decl->name.name.str() +
            "` has `T` in its type, so `T` is never anything; write f32 or "
            "f64 instead, or remove it");
}

bool Checker::BindFloatByName(const Signature& signature,
                              const Callable* callee, ast::IndexEntry& entry,
                              const Scope* scope, Callable* bound) {
  if (!llvm::any_of(signature.params, MentionsFloatParam) &&
      !MentionsFloatParam(signature.result)) {
    Error(DiagKind::BadSizeBinding, entry.dim->span,
          CallableName(callee) + " has no float type parameter `T`");
    return false;
  }
  // f32, f64, or the caller's own `T`.
  std::optional<ScalarKind> kind;
  if (auto* name = llvm::dyn_cast<ast::NameExpr>(entry.value)) {
    if (name->name.name == "f32") kind = ScalarKind::F32;
    if (name->name.name == "f64") kind = ScalarKind::F64;
    const Symbol* symbol = scope->Lookup(name->name.name);
    if (symbol && symbol->kind == Symbol::Kind::TypeParam &&
        symbol->type->kind == Type::Kind::Scalar)
      kind = ScalarKind::Float;
  }
  if (!kind) {
    Error(DiagKind::BadFloatArg, entry.value->span,
          "`T` of " + CallableName(callee) + " is bound to a float type: " +
              CallableName(callee) + "[T: f64] or [T: f32]");
    return false;
  }
  entry.value->type = types().Unit();
  bound->float_binding = kind;
  return true;
}

const Type* Checker::SubstituteTypeParams(
    const Type* type, const TypeParamMap& map,
    std::optional<ScalarKind> float_kind) {
  if (map.empty() && !float_kind) return type;
  type = Resolve(type);
  switch (type->kind) {
    case Type::Kind::TypeParam: {
      auto it = map.find(type->type_param);
      return it == map.end() ? type : it->second;
    }
    case Type::Kind::Scalar:
      return float_kind && type->scalar == ScalarKind::Float
                 ? types().Scalar(*float_kind, type->dims)
                 : type;
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (const Type* element : type->elements)
        elements.push_back(SubstituteTypeParams(element, map, float_kind));
      return types().Tuple(std::move(elements));
    }
    case Type::Kind::Struct:
      return float_kind && type->struct_float == ScalarKind::Float
                 ? types().Struct(type->struct_info, type->struct_args,
                                  type->dims, *float_kind)
                 : type;
    default:
      return type;
  }
}

bool Checker::CheckGenericUse(const FnInfo* fn, const ast::Expr* use) {
  // A float type parameter alone is fine: see Note [Float type parameters].
  if (use == direct_callee_ ||
      llvm::all_of(fn->decl->type_params, [](const ast::TypeParamDecl& p) {
        return p.bound.name == "float";
      }))
    return true;
  const ast::FnDecl* decl = fn->decl;
  std::string params;
  for (const ast::Param& param : decl->params)
    params += (params.empty() ? "" : ", ") + param.name.name.str();
  Error(DiagKind::BadTypeParam, use->span,
        "`" + decl->name.name.str() +
            "` has a type parameter, so it can only be called, not used as "
            "a value; wrap it in a lambda: |" +
            params + "| " + SourceText(use->span) + "(" + params + ")");
  return false;
}

}  // namespace delta::sema

// Generic functions: `fn norm[P: space](p: P) -> f32` takes any vector space
// of f32 (an f32 array, or a struct or tuple whose leaves are all f32).
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

bool Checker::CheckTypeArgs(const Signature& signature,
                            const TypeParamMap& type_args,
                            const std::vector<Span>& arg_spans,
                            const std::string& callee_name) {
  bool ok = true;
  for (const Type* param : signature.type_params) {
    const TypeParamInfo* info = param->type_param;
    auto it = type_args.find(info);
    if (it == type_args.end()) {
      ok = false;  // reported at the declaration (CheckTypeParamsUsed)
      continue;
    }
    const Type* kind = UniformLeafKind(*this, it->second);
    if (!IsFloatValued(it->second) || !kind ||
        !UnifyLeafKinds(*this, kind, types().Scalar(ScalarKind::F32))) {
      // Point at the first argument that binds this parameter.
      Span span = arg_spans.empty() ? info->span : arg_spans.front();
      for (size_t i = 0; i < signature.params.size(); ++i)
        if (Resolve(signature.params[i])->type_param == info &&
            i < arg_spans.size())
          span = arg_spans[i];
      Error(DiagKind::BadTypeArg, span,
            "`" + info->name.str() + "` of `" + callee_name +
                "` is any vector space of f32 (an f32 array, or a struct or "
                "tuple of them), not " +
                TypeString(it->second))
          .Note(info->span, "`" + info->name.str() + "` is declared here");
      ok = false;
    }
  }
  return ok;
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
}

const Type* Checker::SubstituteTypeParams(const Type* type,
                                          const TypeParamMap& map) {
  if (map.empty()) return type;
  type = Resolve(type);
  switch (type->kind) {
    case Type::Kind::TypeParam: {
      auto it = map.find(type->type_param);
      return it == map.end() ? type : it->second;
    }
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (const Type* element : type->elements)
        elements.push_back(SubstituteTypeParams(element, map));
      return types().Tuple(std::move(elements));
    }
    default:
      return type;
  }
}

bool Checker::CheckGenericUse(const FnInfo* fn, const ast::Expr* use) {
  if (use == direct_callee_ || fn->decl->type_params.empty()) return true;
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

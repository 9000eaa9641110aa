// Type checking of indexing `base[...]`: on an array, which dims the
// indices remove from every leaf and which index dims they add; on a
// function, `f[l: d]` binds its size parameters by name.
#include <llvm/ADT/STLExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {
namespace {

// Removes the indexed dims from every leaf of `type` and adds the index dims.
const Type* IndexInto(Checker& checker, const Type* type, const DimSet& removed,
                      const DimSet& added, Span span) {
  TypeContext& types = checker.types();
  if (type->IsError()) return type;
  if (type->kind == Type::Kind::Tuple) {
    std::vector<const Type*> elements;
    for (const Type* element : type->elements)
      elements.push_back(IndexInto(checker, element, removed, added, span));
    return types.Tuple(std::move(elements));
  }
  if (type->kind == Type::Kind::Function) {
    checker.Error(DiagKind::BadIndex, span, "a function cannot be indexed");
    return types.Error();
  }
  if (!type->dims.ContainsAll(removed)) {
    checker.Error(DiagKind::BadIndex, span,
                  "cannot index " + checker.TypeString(type) + " by dim " +
                      checker.DimString(removed.Minus(type->dims)) +
                      ": it has no such dim");
    return types.Error();
  }
  DimSet dims = type->dims.Minus(removed).Union(added);
  if (type->kind == Type::Kind::Struct) return types.WithDims(type, dims);
  return types.WithDims(type, dims);
}

}  // namespace

const Type* CheckIndexExpr(Checker& checker, ast::IndexExpr* index,
                           Context& context) {
  TypeContext& types = checker.types();
  const Type* base = checker.Resolve(checker.CheckExpr(index->base, context));
  if (base->IsError()) {
    for (ast::IndexEntry& entry : index->entries)
      if (!entry.dim) checker.CheckExpr(entry.value, context);
    return types.Error();
  }
  if (base->kind == Type::Kind::Function) {
    // `f[l: d]` binds size parameters by name.
    index->is_size_binding = true;
    const Signature* signature =
        checker.GetSignature(base->callable, nullptr, index->base->span);
    if (!signature) return types.Error();
    Callable* bound = checker.NewCallable(Callable::Kind::SizeBound);
    bound->inner = base->callable;
    for (ast::IndexEntry& entry : index->entries) {
      if (entry.dim && entry.dim->name == "T" && entry.dim->module.empty()) {
        if (!checker.BindFloatByName(*signature, base->callable, entry,
                                     context.scope, bound))
          return types.Error();
        continue;
      }
      std::optional<ast::Ident> dim_name =
          checker.DimRefOf(entry.value, context.scope);
      if (!entry.dim || !dim_name) {
        checker.Error(DiagKind::BadSizeBinding, entry.value->span,
                      "bind a size parameter by name: " +
                          checker.CallableName(base->callable) + "[" +
                          (signature->size_params.empty()
                               ? std::string("d")
                               : signature->size_params[0]->name.str()) +
                          ": dim]");
        return types.Error();
      }
      const DimInfo* param = nullptr;
      for (const DimInfo* p : signature->size_params)
        if (p->name == entry.dim->name && entry.dim->module.empty()) param = p;
      if (!param) {
        checker.Error(DiagKind::BadSizeBinding, entry.dim->span,
                      checker.CallableName(base->callable) +
                          " has no size parameter `" + entry.dim->name.str() +
                          "`");
        return types.Error();
      }
      const DimInfo* dim = checker.ResolveDimName(*dim_name, context.scope);
      if (!dim) return types.Error();
      entry.value->type = types.Unit();
      bound->bindings.emplace_back(param, dim);
    }
    return checker.FunctionType(bound);
  }

  DimSet removed;
  DimSet added;
  for (ast::IndexEntry& entry : index->entries) {
    const Type* value =
        checker.Resolve(checker.CheckExpr(entry.value, context));
    if (value->IsError()) return types.Error();
    const DimInfo* dim = nullptr;
    if (entry.dim) {
      dim = checker.ResolveDimName(*entry.dim, context.scope);
      if (!dim) return types.Error();
      entry.dim_info = dim;
      bool integer =
          (value->kind == Type::Kind::Scalar && IsInteger(value->scalar)) ||
          (value->kind == Type::Kind::LitVar &&
           !checker.literals().IsFloat(value->var));
      bool own_index =
          value->kind == Type::Kind::Index && value->index_dim == dim;
      if (!integer && !own_index) {
        checker.Error(DiagKind::BadIndex, entry.value->span,
                      "an index into dim `" + dim->name.str() +
                          "` must be an integer or an index of `" +
                          dim->name.str() + "`, not " +
                          checker.TypeString(value));
        return types.Error();
      }
      if (value->kind == Type::Kind::LitVar)
        checker.literals().Bind(value->var, ScalarKind::I64);
      if (auto* literal = llvm::dyn_cast<ast::IntLitExpr>(entry.value);
          literal && dim->constant_size &&
          literal->value >= static_cast<uint64_t>(*dim->constant_size)) {
        checker.Error(DiagKind::ConstantIndexOutOfRange, entry.value->span,
                      "index " + std::to_string(literal->value) +
                          " is out of range for dim `" + dim->name.str() +
                          "` of size " + std::to_string(*dim->constant_size) +
                          "; it will fail at run time");
      }
    } else {
      if (value->kind != Type::Kind::Index) {
        checker.Error(DiagKind::BadIndex, entry.value->span,
                      "an index must have an index type (from `for i in d`) "
                      "or name its dim: x[d: " +
                          checker.SourceText(entry.value->span) + "]; found " +
                          checker.TypeString(value));
        return types.Error();
      }
      dim = value->index_dim;
    }
    if (!removed.Insert(dim)) {
      checker.Error(DiagKind::BadIndex, entry.value->span,
                    "dim `" + dim->name.str() + "` is indexed twice");
      return types.Error();
    }
    added = added.Union(value->dims);
  }
  return IndexInto(checker, base, removed, added, index->span);
}

}  // namespace delta::sema

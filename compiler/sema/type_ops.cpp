// Operations on semantic types: literal unification, matching, lifting,
// substitution of dims, tangent types, printing, and resolving written types.
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {

// --- Literal solver ----------------------------------------------------------

LitVarId LiteralSolver::NewVar(bool is_float) {
  LitVarId id = count();
  vars_.push_back(Var{is_float, std::nullopt, id});
  return id;
}

LitVarId LiteralSolver::Find(LitVarId var) {
  while (vars_[var].parent != var) {
    vars_[var].parent = vars_[vars_[var].parent].parent;
    var = vars_[var].parent;
  }
  return var;
}

bool LiteralSolver::Bind(LitVarId var, ScalarKind kind) {
  Var& root = vars_[Find(var)];
  if (root.value) return *root.value == kind;
  // An integer literal may become a float; a float literal never an integer.
  if (kind == ScalarKind::Bool) return false;
  if (root.is_float && !sema::IsFloat(kind)) return false;
  root.value = kind;
  return true;
}

void LiteralSolver::Merge(LitVarId a, LitVarId b) {
  a = Find(a);
  b = Find(b);
  if (a == b) return;
  vars_[b].parent = a;
  vars_[a].is_float = vars_[a].is_float || vars_[b].is_float;
  if (!vars_[a].value) vars_[a].value = vars_[b].value;
}

void LiteralSolver::DefaultFrom(LitVarId first) {
  for (LitVarId var = first; var < count(); ++var) {
    Var& root = vars_[Find(var)];
    if (!root.value)
      root.value = root.is_float ? float_default_ : ScalarKind::I64;
  }
}

// --- Resolution and matching -------------------------------------------------

const Type* Checker::Resolve(const Type* type) {
  switch (type->kind) {
    case Type::Kind::LitVar:
      if (auto value = literals_.Value(type->var))
        return types().Scalar(*value, type->dims);
      return type;
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      bool changed = false;
      for (const Type* element : type->elements) {
        elements.push_back(Resolve(element));
        changed |= elements.back() != element;
      }
      return changed ? types().Tuple(std::move(elements)) : type;
    }
    default:
      return type;
  }
}

bool Checker::Unify(const Type* expected, const Type* actual) {
  expected = Resolve(expected);
  actual = Resolve(actual);
  if (expected->IsError() || actual->IsError()) return true;
  if (expected->IsLeaf() && actual->IsLeaf()) {
    if (expected->dims != actual->dims) return false;
    using K = Type::Kind;
    if (expected->kind == K::LitVar && actual->kind == K::LitVar) {
      literals_.Merge(expected->var, actual->var);
      return true;
    }
    if (expected->kind == K::LitVar && actual->kind == K::Scalar)
      return literals_.Bind(expected->var, actual->scalar);
    if (expected->kind == K::Scalar && actual->kind == K::LitVar)
      return literals_.Bind(actual->var, expected->scalar);
    if (expected->kind != actual->kind) return false;
    if (expected->kind == K::Index)
      return expected->index_dim == actual->index_dim;
    return expected->scalar == actual->scalar;
  }
  if (expected->kind != actual->kind) return false;
  switch (expected->kind) {
    case Type::Kind::Tuple:
      if (expected->elements.size() != actual->elements.size()) return false;
      for (size_t i = 0; i < expected->elements.size(); ++i)
        if (!Unify(expected->elements[i], actual->elements[i])) return false;
      return true;
    case Type::Kind::Struct:
      return expected->struct_info == actual->struct_info &&
             expected->struct_args == actual->struct_args &&
             expected->struct_float == actual->struct_float &&
             expected->dims == actual->dims;
    case Type::Kind::Function:
      return expected->callable == actual->callable;
    case Type::Kind::TypeParam:
      return expected->type_param == actual->type_param;
    default:
      return false;
  }
}

namespace {

// Finds the first pair of leaves that differ only in their dims.
bool FindDimDifference(const Type* expected, const Type* actual,
                       const Type** expected_leaf, const Type** actual_leaf) {
  if (expected->IsLeaf() && actual->IsLeaf()) {
    if (expected->dims == actual->dims) return false;
    *expected_leaf = expected;
    *actual_leaf = actual;
    return true;
  }
  if (expected->kind == Type::Kind::Struct &&
      actual->kind == Type::Kind::Struct &&
      expected->struct_info == actual->struct_info &&
      expected->dims != actual->dims) {
    *expected_leaf = expected;
    *actual_leaf = actual;
    return true;
  }
  if (expected->kind == Type::Kind::Tuple &&
      actual->kind == Type::Kind::Tuple &&
      expected->elements.size() == actual->elements.size()) {
    for (size_t i = 0; i < expected->elements.size(); ++i)
      if (FindDimDifference(expected->elements[i], actual->elements[i],
                            expected_leaf, actual_leaf))
        return true;
  }
  return false;
}

}  // namespace

namespace {

// The expression a value comes from, as the user would rename it: a block
// with no statements stands for its result (`if c { a } else { b }`).
const ast::Expr* ValueExpr(const ast::Expr* what) {
  while (auto* block = llvm::dyn_cast_or_null<ast::BlockExpr>(what)) {
    if (!block->stmts.empty() || !block->result) break;
    what = block->result;
  }
  return what;
}

}  // namespace

std::string Checker::WrongReductionHint(const ast::Expr* what,
                                        const DimInfo* kept,
                                        const DimInfo* wanted,
                                        const Type* expected) {
  // `sum(w * x, out)` where `f32[out]` was expected: it reduced the dim that
  // should stay and kept the one that should go.
  auto* call = llvm::dyn_cast_or_null<ast::CallExpr>(what);
  if (!call || !call->info || !call->info->is_builtin ||
      !IsReduction(call->info->builtin) || call->args.size() != 2 ||
      call->info->dim_args.size() != 1 || call->info->dim_args[0] != wanted)
    return "";
  const ast::Expr* operand = call->args[0].value;
  const ast::Expr* dim_arg = call->args[1].value;
  if (!operand->type || !dim_arg) return "";
  // The fix is offered only when reducing over `kept` instead gives the
  // expected dims.
  DimSet fixed = AllDims(Resolve(operand->type));
  if (!fixed.Contains(kept)) return "";
  fixed.Erase(kept);
  if (fixed != AllDims(expected)) return "";
  std::string call_text = SourceText(call->span);
  std::string fixed_text =
      SourceText(Span{call->span.begin, dim_arg->span.begin}) +
      kept->name.str() + SourceText(Span{dim_arg->span.end, call->span.end});
  return "; `" + call_text + "` reduces over `" + wanted->name.str() +
         "` and keeps `" + kept->name.str() + "`; reduce over `" +
         kept->name.str() + "` instead: " + fixed_text;
}

std::string Checker::RenameHint(const ast::Expr* what, const DimInfo* from,
                                const DimInfo* to) {
  // A rename cannot help when both sizes are known and differ.
  if (from->constant_size && to->constant_size &&
      *from->constant_size != *to->constant_size)
    return "; `" + from->name.str() + "` has size " +
           std::to_string(*from->constant_size) + " and `" + to->name.str() +
           "` has size " + std::to_string(*to->constant_size) +
           ", so no rename can turn one into the other";
  std::string value = what ? SourceText(what->span) : "";
  if (value.empty() || value.size() > 60 ||
      value.find('\n') != std::string::npos)
    return "; rename the value's dim with rename(…, " + from->name.str() +
           ", " + to->name.str() + ")";
  return "; use rename(" + value + ", " + from->name.str() + ", " +
         to->name.str() + ")";
}

void Checker::ReportMismatch(Span span, const Type* expected,
                             const Type* actual, llvm::StringRef context,
                             const ast::Expr* what) {
  expected = Resolve(expected);
  actual = Resolve(actual);
  if (expected->IsError() || actual->IsError()) return;
  const Type* expected_leaf = nullptr;
  const Type* actual_leaf = nullptr;
  std::string where = context.empty() ? "" : " (" + context.str() + ")";
  if (FindDimDifference(expected, actual, &expected_leaf, &actual_leaf)) {
    std::string message =
        "dims differ: " + TypeString(expected) + " vs " + TypeString(actual);
    DimSet missing = expected_leaf->dims.Minus(actual_leaf->dims);
    DimSet extra = actual_leaf->dims.Minus(expected_leaf->dims);
    if (missing.size() == 1 && extra.size() == 1) {
      what = ValueExpr(what);
      std::string hint =
          WrongReductionHint(what, *extra.begin(), *missing.begin(), expected);
      if (hint.empty())
        hint = RenameHint(what, *extra.begin(), *missing.begin());
      message += hint;
    }
    Error(DiagKind::DimsDiffer, span, message + where);
    return;
  }
  Error(DiagKind::TypeMismatch, span,
        "expected " + TypeString(expected) + ", found " + TypeString(actual) +
            where + FloatArgHint(expected, actual, ValueExpr(what)));
}

std::string Checker::FloatArgHint(const Type* expected, const Type* actual,
                                  const ast::Expr* what) {
  // Only instances of one struct at two float types (`Dense[f64, i, o]`
  // expected, the f32 `Dense[i, o]` found).
  if (expected->kind != Type::Kind::Struct ||
      actual->kind != Type::Kind::Struct ||
      expected->struct_info != actual->struct_info ||
      expected->struct_float == actual->struct_float)
    return "";
  std::string kind = ScalarName(expected->struct_float).str();
  auto* call = llvm::dyn_cast_or_null<ast::CallExpr>(what);
  if (call && call->info && call->info->callee && call->info->float_arg)
    return "; a written type does not choose a call's `T`: bind it by name, " +
           CallableName(call->info->callee) + "[T: " + kind + "](…)";
  return "; the struct's float types differ: build the value at " + kind;
}

void Checker::Expect(const Type* expected, const Type* actual, Span span,
                     llvm::StringRef context, const ast::Expr* what) {
  if (!Unify(expected, actual))
    ReportMismatch(span, expected, actual, context, what);
}

const Type* Checker::Lift(const Type* type, const DimSet& extra, Span span) {
  if (extra.empty() || type->IsError()) return type;
  switch (type->kind) {
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (const Type* element : type->elements)
        elements.push_back(Lift(element, extra, span));
      return types().Tuple(std::move(elements));
    }
    case Type::Kind::Function:
      Error(DiagKind::FunctionValueMisuse, span,
            "a function value cannot be lifted over " + DimString(extra) +
                "; functions cannot be stored in arrays");
      return types().Error();
    case Type::Kind::TypeParam:
      Error(DiagKind::BadTypeParam, span,
            "a value of type parameter `" + type->type_param->name.str() +
                "` cannot be lifted over " + DimString(extra) +
                "; it combines only with itself and f32 scalars");
      return types().Error();
    default:
      if (AllDims(type).Intersects(extra)) {
        Error(DiagKind::DuplicateDim, span,
              "dim " + DimString(AllDims(type).Intersect(extra)) +
                  " would appear twice in " + TypeString(type));
        return types().Error();
      }
      return types().WithDims(type, type->dims.Union(extra));
  }
}

const Type* Checker::Substitute(const Type* type, const DimMap& map) {
  if (map.empty()) return type;
  auto subst_dim = [&](const DimInfo* dim) {
    auto it = map.find(dim);
    return it == map.end() ? dim : it->second;
  };
  auto subst_dims = [&](const DimSet& dims) {
    DimSet result;
    for (const DimInfo* dim : dims) result.Insert(subst_dim(dim));
    return result;
  };
  switch (type->kind) {
    case Type::Kind::Scalar:
      return types().Scalar(type->scalar, subst_dims(type->dims));
    case Type::Kind::LitVar:
      return types().LitVar(type->var, subst_dims(type->dims));
    case Type::Kind::Index:
      return types().Index(subst_dim(type->index_dim), subst_dims(type->dims));
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (const Type* element : type->elements)
        elements.push_back(Substitute(element, map));
      return types().Tuple(std::move(elements));
    }
    case Type::Kind::Struct: {
      std::vector<const DimInfo*> args;
      for (const DimInfo* arg : type->struct_args)
        args.push_back(subst_dim(arg));
      return types().Struct(type->struct_info, std::move(args),
                            subst_dims(type->dims), type->struct_float);
    }
    default:
      return type;
  }
}

std::vector<const Type*> Checker::FieldTypes(const Type* struct_type) {
  const StructInfo* info = struct_type->struct_info;
  DimMap map;
  // A struct named before its declaration is checked has no arguments or
  // field types yet (an error is reported elsewhere).
  for (size_t i = 0;
       i < info->size_params.size() && i < struct_type->struct_args.size(); ++i)
    map[info->size_params[i]] = struct_type->struct_args[i];
  // A float argument that is the caller's own `T` needs no substitution.
  std::optional<ScalarKind> float_kind;
  if (info->float_generic && struct_type->struct_float != ScalarKind::Float)
    float_kind = struct_type->struct_float;
  std::vector<const Type*> fields;
  for (const Type* field : info->field_types)
    fields.push_back(
        SubstituteTypeParams(Substitute(field, map), {}, float_kind));
  return fields;
}

DimSet Checker::AllDims(const Type* type) {
  switch (type->kind) {
    case Type::Kind::Tuple: {
      DimSet dims;
      for (const Type* element : type->elements)
        dims = dims.Union(AllDims(element));
      return dims;
    }
    case Type::Kind::Struct: {
      DimSet dims = type->dims;
      for (const Type* field : FieldTypes(type))
        dims = dims.Union(AllDims(field));
      return dims;
    }
    case Type::Kind::Function:
    case Type::Kind::Error:
      return {};
    default:
      return type->dims;
  }
}

const Type* Checker::Tangent(const Type* type) {
  type = Resolve(type);
  switch (type->kind) {
    case Type::Kind::Scalar:
      return IsFloat(type->scalar) ? type : types().Unit();
    case Type::Kind::LitVar:
      return literals_.IsFloat(type->var) ? type : types().Unit();
    case Type::Kind::Index:
      return types().Unit();
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (const Type* element : type->elements)
        elements.push_back(Tangent(element));
      return types().Tuple(std::move(elements));
    }
    default:
      // A struct's tangent is the same struct (see docs/language/types.md).
      return type;
  }
}

bool Checker::ContainsFunction(const Type* type) {
  if (type->kind == Type::Kind::Function) return true;
  if (type->kind == Type::Kind::Tuple)
    return llvm::any_of(type->elements,
                        [&](const Type* t) { return ContainsFunction(t); });
  return false;
}

bool Checker::IsFloatValued(const Type* type) {
  type = Resolve(type);
  switch (type->kind) {
    case Type::Kind::Error:
      return true;
    case Type::Kind::Scalar:
      return IsFloat(type->scalar);
    case Type::Kind::LitVar:
      return true;  // an integer literal may still become a float
    case Type::Kind::Tuple:
      return llvm::all_of(type->elements,
                          [&](const Type* t) { return IsFloatValued(t); });
    case Type::Kind::Struct:
      return llvm::all_of(type->struct_info->field_types,
                          [&](const Type* t) { return IsFloatValued(t); });
    case Type::Kind::TypeParam:
      return true;
    default:
      return false;
  }
}

bool Checker::HasFloatLeaf(const Type* type) {
  type = Resolve(type);
  switch (type->kind) {
    case Type::Kind::Error:
    case Type::Kind::LitVar:
      return true;
    case Type::Kind::Scalar:
      return IsFloat(type->scalar);
    case Type::Kind::Tuple:
      return llvm::any_of(type->elements,
                          [&](const Type* t) { return HasFloatLeaf(t); });
    case Type::Kind::Struct:
      return llvm::any_of(type->struct_info->field_types,
                          [&](const Type* t) { return HasFloatLeaf(t); });
    case Type::Kind::TypeParam:
      return true;
    default:
      return false;
  }
}

const Type* Checker::LeafKindOf(const Type* type) {
  type = Resolve(type);
  switch (type->kind) {
    case Type::Kind::Scalar:
    case Type::Kind::LitVar:
    case Type::Kind::Index:
      return types().WithDims(type, {});
    case Type::Kind::Tuple:
      for (const Type* element : type->elements)
        if (const Type* kind = LeafKindOf(element)) return kind;
      return nullptr;
    case Type::Kind::Struct:
      for (const Type* field : FieldTypes(type))
        if (const Type* kind = LeafKindOf(field)) return kind;
      return nullptr;
    case Type::Kind::TypeParam:
      return types().Scalar(type->type_param->leaf);
    default:
      return nullptr;
  }
}

// --- Written types -----------------------------------------------------------

std::optional<ast::Ident> Checker::DimRefOf(const ast::Expr* expr,
                                            const Scope* scope) {
  if (auto* name = llvm::dyn_cast<ast::NameExpr>(expr)) return name->name;
  // `cfg.n`: a field of a module name.
  auto* field = llvm::dyn_cast<ast::FieldExpr>(expr);
  auto* base = field ? llvm::dyn_cast<ast::NameExpr>(field->base) : nullptr;
  if (!base) return std::nullopt;
  const Symbol* module = scope->Lookup(base->name.name);
  if (!module || module->kind != Symbol::Kind::Module) return std::nullopt;
  ast::Ident ref = field->field;
  ref.module = base->name.name;
  ref.span = expr->span;
  return ref;
}

const Symbol* Checker::LookupDim(const ast::Ident& name, const Scope* scope) {
  const Symbol* symbol = nullptr;
  if (name.module.empty()) {
    symbol = scope->Lookup(name.name);
  } else if (const Symbol* module = scope->Lookup(name.module);
             module && module->kind == Symbol::Kind::Module && module->module) {
    symbol = module->module->scope->LookupLocal(name.name);
  }
  return symbol && symbol->kind == Symbol::Kind::Dim ? symbol : nullptr;
}

const DimInfo* Checker::DimSizedAs(ast::Expr* size, const Scope* scope) {
  auto ref = DimRefOf(size, scope);
  const Symbol* symbol = ref ? LookupDim(*ref, scope) : nullptr;
  if (!symbol) return nullptr;
  if (auto* name = llvm::dyn_cast<ast::NameExpr>(size))
    name->symbol = const_cast<Symbol*>(symbol);
  else
    llvm::cast<ast::FieldExpr>(size)->module_member =
        const_cast<Symbol*>(symbol);
  size->type = types().Scalar(ScalarKind::I64);
  return symbol->dim;
}

const DimInfo* Checker::ResolveDimName(const ast::Ident& name,
                                       const Scope* scope) {
  if (!name.module.empty()) {
    // A dim of an imported module: `cfg.n`.
    const Symbol* module = scope->Lookup(name.module);
    if (!module || module->kind != Symbol::Kind::Module) {
      ReportUnknown(ast::Ident{name.module, name.span, {}}, scope, "module");
      return nullptr;
    }
    if (!module->module) return nullptr;  // the import was reported
    if (const Symbol* symbol = LookupDim(name, scope)) return symbol->dim;
    Error(DiagKind::UnknownMember, name.span,
          "module `" + name.module.str() + "` has no dim `" + name.name.str() +
              "`");
    return nullptr;
  }
  const Symbol* symbol = scope->Lookup(name.name);
  if (!symbol && local_dim_names_.count(name.name.str())) {
    Error(DiagKind::DimEscapes, name.span,
          "dim `" + name.name.str() +
              "` is declared inside the function, so its parameter and "
              "result types cannot name it; make it a size parameter");
    return nullptr;
  }
  if (!symbol) {
    ReportUnknown(name, scope, "dim");
    return nullptr;
  }
  if (symbol->kind != Symbol::Kind::Dim) {
    Error(DiagKind::NotADim, name.span,
          "`" + name.name.str() + "` is not a dim")
        .Note(symbol->span, "`" + name.name.str() + "` is declared here");
    return nullptr;
  }
  return symbol->dim;
}

namespace {

std::optional<ScalarKind> ScalarFromName(llvm::StringRef name) {
  if (name == "f32") return ScalarKind::F32;
  if (name == "f64") return ScalarKind::F64;
  if (name == "i32") return ScalarKind::I32;
  if (name == "i64") return ScalarKind::I64;
  if (name == "bool") return ScalarKind::Bool;
  return std::nullopt;
}

}  // namespace

const Type* Checker::ResolveTypeExpr(ast::TypeExpr* type_expr,
                                     const Scope* scope) {
  // Each bracket is a list of dims; the caller decides which instantiate.
  auto dims_of = [&](const ast::DimList& list, bool* ok) {
    DimSet dims;
    for (const ast::Ident& name : list) {
      const DimInfo* dim = ResolveDimName(name, scope);
      if (!dim) {
        *ok = false;
        continue;
      }
      if (!dims.Insert(dim)) {
        Error(DiagKind::DuplicateDim, name.span,
              "dim `" + name.name.str() + "` appears twice in this type");
        *ok = false;
      }
    }
    return dims;
  };

  const Type* result = types().Error();
  size_t first_lift = 0;
  bool ok = true;
  if (type_expr->kind == ast::TypeExpr::Kind::Function) {
    if (!function_types_allowed_) {
      Error(DiagKind::FunctionValueMisuse, type_expr->span,
            "a function type is allowed only for a parameter of a function "
            "(fn solve(f: fn(f32) -> f32, x: f32) -> f32); exported functions "
            "and main cannot take one, and values cannot hold one");
      return type_expr->type = types().Error();
    }
    // The parameter's function: calls of it are checked against this
    // signature, and each call of the enclosing function passes one.
    function_types_allowed_ = false;  // no function of functions
    auto signature = std::make_unique<Signature>();
    for (ast::TypeExpr* param : type_expr->elements) {
      signature->params.push_back(ResolveTypeExpr(param, scope));
      signature->param_names.push_back("");
      if (signature->params.back()->IsError()) ok = false;
    }
    signature->result = ResolveTypeExpr(type_expr->result, scope);
    function_types_allowed_ = true;
    if (!ok || signature->result->IsError())
      return type_expr->type = types().Error();
    Callable* param = NewCallable(Callable::Kind::Param);
    param->signature = std::move(signature);
    result = FunctionType(param);
  } else if (type_expr->kind == ast::TypeExpr::Kind::Tuple) {
    std::vector<const Type*> elements;
    for (ast::TypeExpr* element : type_expr->elements) {
      elements.push_back(ResolveTypeExpr(element, scope));
      if (elements.back()->IsError()) ok = false;
    }
    result = types().Tuple(std::move(elements));
  } else {
    const ast::Ident& head = type_expr->path.front();
    const Symbol* symbol = nullptr;
    if (type_expr->path.size() == 1) {
      if (auto scalar = ScalarFromName(head.name)) {
        result = types().Scalar(*scalar);
      } else {
        symbol = scope->Lookup(head.name);
        if (!symbol) {
          ReportUnknown(head, scope, "type");
          return type_expr->type = types().Error();
        }
      }
    } else {
      const Symbol* module = scope->Lookup(head.name);
      if (!module || module->kind != Symbol::Kind::Module) {
        ReportUnknown(head, scope, "module");
        return type_expr->type = types().Error();
      }
      const ast::Ident& member = type_expr->path.back();
      if (!module->module) return type_expr->type = types().Error();
      symbol = module->module->scope->LookupLocal(member.name);
      if (!symbol || (symbol->kind != Symbol::Kind::Struct &&
                      symbol->kind != Symbol::Kind::Dim)) {
        Error(DiagKind::UnknownMember, member.span,
              "module `" + head.name.str() + "` has no struct or dim `" +
                  member.name.str() + "`");
        return type_expr->type = types().Error();
      }
    }
    if (symbol) {
      if (symbol->kind == Symbol::Kind::Dim) {
        result = types().Index(symbol->dim);
      } else if (symbol->kind == Symbol::Kind::TypeParam) {
        result = symbol->type;
      } else if (symbol->kind == Symbol::Kind::Struct) {
        const StructInfo* info = symbol->struct_info;
        std::vector<const DimInfo*> args;
        // `Dense[f64, i, o]`: the float argument of a struct with `T:
        // float` comes first; without one the struct is at f32.
        ScalarKind float_arg = ScalarKind::F32;
        size_t skip = 0;
        if (info->float_generic && !type_expr->brackets.empty() &&
            !type_expr->brackets[0].empty()) {
          const ast::Ident& first = type_expr->brackets[0].front();
          const Symbol* param = scope->Lookup(first.name);
          std::optional<ScalarKind> kind = ScalarFromName(first.name);
          if (!kind && param && param->kind == Symbol::Kind::TypeParam &&
              param->type->kind == Type::Kind::Scalar)
            kind = ScalarKind::Float;  // the enclosing function's `T`
          if (kind && !IsFloat(*kind)) {
            Error(DiagKind::BadFloatArg, first.span,
                  "the float argument of struct `" + head.name.str() +
                      "` is f32, f64 or `T`, not " + first.name.str());
            return type_expr->type = types().Error();
          }
          if (kind) {
            float_arg = *kind;
            skip = 1;
          }
        }
        if (!info->size_params.empty() || skip) {
          if (type_expr->brackets.empty() ||
              type_expr->brackets[0].size() - skip !=
                  info->size_params.size()) {
            std::string names = info->float_generic ? "T" : "";
            for (const DimInfo* p : info->size_params)
              names += (names.empty() ? "" : ", ") + p->name.str();
            Error(DiagKind::WrongTypeArgs, type_expr->span,
                  "struct `" + head.name.str() + "` takes " +
                      std::to_string(info->size_params.size()) +
                      " size argument(s)" +
                      (info->float_generic
                           ? ", after an optional float type (f32 if left out)"
                           : "") +
                      ": " + info->decl->name.name.str() + "[" + names + "]");
            return type_expr->type = types().Error();
          }
          for (size_t i = skip; i < type_expr->brackets[0].size(); ++i) {
            const DimInfo* dim =
                ResolveDimName(type_expr->brackets[0][i], scope);
            if (!dim) return type_expr->type = types().Error();
            args.push_back(dim);
          }
          first_lift = 1;
        }
        result = types().Struct(info, std::move(args), {}, float_arg);
      } else {
        Error(DiagKind::NotAType, head.span,
              "`" + head.name.str() + "` is not a type")
            .Note(symbol->span, "`" + head.name.str() + "` is declared here");
        return type_expr->type = types().Error();
      }
    }
  }
  for (size_t i = first_lift; i < type_expr->brackets.size(); ++i) {
    DimSet dims = dims_of(type_expr->brackets[i], &ok);
    if (!ok) break;
    result = Lift(result, dims, type_expr->span);
  }
  if (!ok) result = types().Error();
  type_expr->first_lift = first_lift;
  return type_expr->type = result;
}

}  // namespace delta::sema

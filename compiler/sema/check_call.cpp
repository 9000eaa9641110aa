// Calls: function values, their signatures, and implicit lifting with size
// parameters solved jointly (section 4.4 of the contract).
#include <llvm/ADT/STLExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {

Callable* Checker::NewCallable(Callable::Kind kind) {
  Callable& callable = program_.callables.emplace_back();
  callable.kind = kind;
  return &callable;
}

const Callable* Checker::FnCallable(FnInfo* fn) {
  auto [it, inserted] = fn_callables_.try_emplace(fn, nullptr);
  if (inserted) {
    Callable* callable = NewCallable(Callable::Kind::Fn);
    callable->fn = fn;
    it->second = callable;
  }
  return it->second;
}

std::vector<llvm::StringRef> Checker::ParamNames(const Callable* callable) {
  switch (callable->kind) {
    case Callable::Kind::Fn: {
      std::vector<llvm::StringRef> names;
      for (const ast::Param& param : callable->fn->decl->params)
        names.push_back(param.name.name);
      return names;
    }
    case Callable::Kind::Lambda: {
      std::vector<llvm::StringRef> names;
      for (const ast::Param& param : callable->lambda->params)
        names.push_back(param.name.name);
      return names;
    }
    case Callable::Kind::Pullback:
      return {"dy"};
    case Callable::Kind::Builtin:
      return {};
    case Callable::Kind::Param:  // unnamed: `fn(f32, f32) -> f32`
      return callable->signature->param_names;
    default:
      return ParamNames(callable->inner);
  }
}

bool Checker::HasStaticSignature(const Callable* callable) {
  switch (callable->kind) {
    case Callable::Kind::Fn:
    case Callable::Kind::Pullback:
    case Callable::Kind::Param:
      return true;
    case Callable::Kind::Lambda:
      return callable->signature != nullptr ||
             llvm::all_of(callable->lambda->params,
                          [](const ast::Param& p) { return p.type; });
    case Callable::Kind::Builtin:
      return false;
    default:
      return HasStaticSignature(callable->inner);
  }
}

const Signature* Checker::LambdaSignature(
    const Callable* callable, const std::vector<const Type*>* arg_types,
    Span use) {
  ast::LambdaExpr* lambda = callable->lambda;
  auto signature = std::make_unique<Signature>();
  bool annotated =
      llvm::all_of(lambda->params, [](const ast::Param& p) { return p.type; });
  if (!annotated) {
    if (!arg_types) {
      Error(DiagKind::BadBuiltinUse, use,
            "cannot tell the parameter types of this lambda here; annotate "
            "them: |x: f32| …")
          .Note(lambda->span, "the lambda");
      return nullptr;
    }
    if (arg_types->size() != lambda->params.size()) {
      Error(DiagKind::ArgCount, use,
            "the lambda takes " + std::to_string(lambda->params.size()) +
                " argument(s) but is given " +
                std::to_string(arg_types->size()));
      return nullptr;
    }
  }
  Context context;
  context.scope = callable->lambda_scope;
  context.function = callable->lambda_owner;
  context.in_main = callable->lambda_in_main;
  context.in_lambda = true;
  for (size_t i = 0; i < lambda->params.size(); ++i) {
    ast::Param& param = lambda->params[i];
    const Type* type = param.type ? ResolveTypeExpr(param.type, context.scope)
                                  : Resolve((*arg_types)[i]);
    if (ContainsFunction(type)) {
      Error(DiagKind::FunctionValueMisuse, param.span,
            "a lambda parameter cannot be a function");
      type = types().Error();
    }
    Symbol* symbol =
        NewSymbol(Symbol::Kind::Value, param.name.name, param.name.span);
    symbol->type = type;
    Record(&symbol->type);
    param.symbol = symbol;
    context.scope = Bind(context.scope, symbol, context);
    signature->param_names.push_back(param.name.name);
    signature->params.push_back(type);
  }
  // Publish the parameters before the body, so that a use inside the body
  // does not start a second inference.
  signature->result = types().Error();
  callable->signature = std::move(signature);
  LitVarId first = StatementStart();
  const Type* result = CheckExpr(lambda->body, context);
  if (lambda->result_type) {
    const Type* declared = ResolveTypeExpr(lambda->result_type, context.scope);
    Expect(declared, result, lambda->body->span, "the lambda's result",
           lambda->body);
    result = declared;
  }
  EndStatement(first);
  callable->signature->result = Resolve(result);
  for (const Type*& param : callable->signature->params) param = Resolve(param);
  return callable->signature.get();
}

const Signature* Checker::DerivedSignature(
    const Callable* callable, const std::vector<const Type*>* arg_types,
    Span use) {
  auto signature = std::make_unique<Signature>();
  switch (callable->kind) {
    case Callable::Kind::Checkpoint: {
      const Signature* inner = GetSignature(callable->inner, arg_types, use);
      if (!inner) return nullptr;
      *signature = *inner;
      break;
    }
    case Callable::Kind::SizeBound: {
      const Signature* inner = GetSignature(callable->inner, arg_types, use);
      if (!inner) return nullptr;
      DimMap map;
      for (auto [param, dim] : callable->bindings) map[param] = dim;
      for (const DimInfo* param : inner->size_params)
        if (!map.count(param)) signature->size_params.push_back(param);
      signature->param_names = inner->param_names;
      for (const Type* param : inner->params)
        signature->params.push_back(SubstituteTypeParams(
            Substitute(param, map), {}, callable->float_binding));
      signature->result = SubstituteTypeParams(Substitute(inner->result, map),
                                               {}, callable->float_binding);
      break;
    }
    case Callable::Kind::Vmap: {
      const DimInfo* over = callable->over;
      std::vector<const Type*> stripped;
      if (arg_types) {
        for (const Type* arg : *arg_types) {
          DimSet dims = AllDims(Resolve(arg));
          dims.Erase(over);
          const Type* resolved = Resolve(arg);
          stripped.push_back(resolved->IsLeaf() ||
                                     resolved->kind == Type::Kind::Struct
                                 ? types().WithDims(resolved,
                                                    [&] {
                                                      DimSet d = resolved->dims;
                                                      d.Erase(over);
                                                      return d;
                                                    }())
                                 : resolved);
        }
      }
      const Signature* inner =
          GetSignature(callable->inner, arg_types ? &stripped : nullptr, use);
      if (!inner) return nullptr;
      for (const Type* type : inner->params) {
        if (AllDims(type).Contains(over)) {
          Error(DiagKind::VmapDimInUse, use,
                "cannot vmap over `" + over->name.str() +
                    "`: the function already uses that dim in " +
                    TypeString(type));
          return nullptr;
        }
      }
      if (AllDims(inner->result).Contains(over)) {
        Error(DiagKind::VmapDimInUse, use,
              "cannot vmap over `" + over->name.str() +
                  "`: the function's result already has that dim");
        return nullptr;
      }
      signature->size_params = inner->size_params;
      signature->param_names = inner->param_names;
      for (const Type* type : inner->params)
        signature->params.push_back(Lift(type, {over}, use));
      signature->result = Lift(inner->result, {over}, use);
      break;
    }
    case Callable::Kind::Grad: {
      const Signature* inner = GetSignature(callable->inner, arg_types, use);
      if (!inner) return nullptr;
      const Type* result = Resolve(inner->result);
      if (result->kind == Type::Kind::LitVar &&
          literals_.IsFloat(result->var) && result->dims.empty()) {
        // A flexible float result is fine: it becomes f32 or f64.
      } else if (!result->IsError() &&
                 !(result->kind == Type::Kind::Scalar &&
                   IsFloat(result->scalar) && result->dims.empty())) {
        Error(DiagKind::GradNotScalar, use,
              CallableName(callable) +
                  " needs a function whose result is a "
                  "float scalar; `" +
                  CallableName(callable->inner) + "` returns " +
                  TypeString(result) +
                  (result->kind == Type::Kind::Scalar && !result->dims.empty()
                       ? "; reduce it first, e.g. with sum(…)"
                       : ""));
        return nullptr;
      }
      std::vector<const Type*> gradients;
      for (unsigned index : callable->wrt) {
        if (index >= inner->params.size()) return nullptr;
        const Type* param = inner->params[index];
        if (!HasFloatLeaf(param)) {
          Error(DiagKind::NotDifferentiable, use,
                "cannot differentiate with respect to `" +
                    inner->param_names[index].str() + "` of type " +
                    TypeString(param) + ": it holds no floats");
          return nullptr;
        }
        gradients.push_back(Tangent(param));
      }
      const Type* gradient =
          callable->wrt_is_tuple ? types().Tuple(gradients) : gradients.front();
      *signature = *inner;
      signature->result = callable->with_value
                              ? types().Tuple({inner->result, gradient})
                              : gradient;
      break;
    }
    default:
      return nullptr;
  }
  callable->signature = std::move(signature);
  return callable->signature.get();
}

const Signature* Checker::KnownSignature(const Callable* callable) {
  switch (callable->kind) {
    case Callable::Kind::Fn: {
      CheckFnSignature(callable->fn);
      const Signature& signature = callable->fn->signature;
      // A generic function's types are in its own parameters.
      bool generic = !signature.size_params.empty() ||
                     !signature.type_params.empty() || signature.float_generic;
      return generic ? nullptr : &signature;
    }
    case Callable::Kind::Lambda:
    case Callable::Kind::Pullback:
    case Callable::Kind::Param:
      return callable->signature.get();
    default:
      return nullptr;
  }
}

const Signature* Checker::GetSignature(
    const Callable* callable, const std::vector<const Type*>* arg_types,
    Span use) {
  switch (callable->kind) {
    case Callable::Kind::Fn:
      CheckFnSignature(callable->fn);
      return &callable->fn->signature;
    case Callable::Kind::Lambda:
      if (callable->signature) return callable->signature.get();
      return LambdaSignature(callable, arg_types, use);
    case Callable::Kind::Pullback:
    case Callable::Kind::Param:
      return callable->signature.get();
    case Callable::Kind::Builtin:
      Error(DiagKind::BadBuiltinUse, use,
            "a builtin cannot be used as a function value; wrap it in a "
            "lambda");
      return nullptr;
    default:
      if (callable->signature) return callable->signature.get();
      return DerivedSignature(callable, arg_types, use);
  }
}

// --- Function arguments
// --------------------------------------------------------

const Callable* Checker::CheckFunctionArgument(
    const Callable* declared, const Callable* given, const DimMap& binding,
    std::optional<ScalarKind> float_kind, Span span, const std::string& what,
    const std::string& callee) {
  // The declared type with the call's dims and float type; an unannotated
  // lambda takes its parameter types from it.
  auto bind = [&](const Type* type) {
    type = Substitute(type, binding);
    return SubstituteTypeParams(type, {}, float_kind);
  };
  std::vector<const Type*> params;
  std::string expected = "fn(";
  for (const Type* param : declared->signature->params) {
    params.push_back(bind(param));
    expected += (params.size() > 1 ? ", " : "") + TypeString(params.back());
  }
  const Type* result = bind(declared->signature->result);
  expected += ") -> " + TypeString(result);
  const Signature* signature = GetSignature(given, &params, span);
  if (!signature) return nullptr;
  CallInfo probe;
  probe.callee = given;
  const Type* gives =
      ApplySignature(*signature, params, std::vector<Span>(params.size(), span),
                     {}, {}, CallableName(given), span, &probe);
  if (gives->IsError()) return nullptr;
  bool same_result = Unify(result, gives);
  if (!probe.lift_dims.empty() || !same_result) {
    // A function that fits only when lifted is passed through a lambda, whose
    // call lifts it (a parameter stands for one function, called as it is).
    std::string fix;
    if (same_result && params.size() == 1)
      fix = "; it fits lifted over " + DimString(probe.lift_dims) +
            ": pass |x| " + CallableName(given) + "(x)";
    Error(DiagKind::TypeMismatch, span,
          what + " of `" + callee + "`: expected " + expected + ", found " +
              SignatureString(*signature) + fix);
    return nullptr;
  }
  if (signature->size_params.empty()) return given;
  // A generic function, bound to the dims this call gives it.
  Callable* bound = NewCallable(Callable::Kind::SizeBound);
  bound->inner = given;
  for (size_t k = 0; k < signature->size_params.size(); ++k)
    bound->bindings.emplace_back(signature->size_params[k], probe.size_args[k]);
  return bound;
}

// --- Lifting -----------------------------------------------------------------

namespace {

// One pair of matching leaves (or struct lift dims): the parameter's dims,
// which may mention size parameters, and the argument's dims.
struct LeafPair {
  DimSet param_dims;
  DimSet arg_dims;
  size_t arg = 0;
};

struct Candidate {
  DimMap binding;
  std::vector<DimSet> extra;  // per argument
};

}  // namespace

const Type* Checker::ApplySignature(const Signature& signature,
                                    const std::vector<const Type*>& arg_types,
                                    const std::vector<Span>& arg_spans,
                                    const std::vector<ast::Expr*>& arg_exprs,
                                    const DimMap& explicit_bindings,
                                    llvm::StringRef callee_name, Span call_span,
                                    CallInfo* info, bool struct_literal) {
  std::string name = callee_name.str();
  // How an argument is named in messages: struct literals have fields.
  auto argument = [&](size_t i) {
    if (struct_literal && i < signature.param_names.size())
      return "field `" + signature.param_names[i].str() + "`";
    return "argument " + std::to_string(i + 1);
  };
  if (arg_types.size() != signature.params.size()) {
    Error(DiagKind::ArgCount, call_span,
          "`" + name + "` takes " + std::to_string(signature.params.size()) +
              " argument(s) but is given " + std::to_string(arg_types.size()));
    return types().Error();
  }
  auto is_size_param = [&](const DimInfo* dim) {
    return llvm::is_contained(signature.size_params, dim);
  };

  // 1. Match the structure, collecting leaf pairs and forced bindings.
  std::vector<LeafPair> pairs;
  struct FunctionArg {
    size_t arg;
    const Callable* declared;
    const Callable* given;
  };
  std::vector<FunctionArg> function_args;
  DimMap forced = explicit_bindings;
  TypeParamMap type_args;
  // The leaf kind the float type parameter `T` takes (no dims), from every
  // leaf of type `T` and every `P: space` of `T`.
  const Type* float_arg = nullptr;
  auto bind_float = [&](const Type* kind) {
    const Type* joined =
        float_arg ? UnifyLeafKinds(*this, float_arg, kind) : Resolve(kind);
    if (joined) float_arg = joined;
    return joined != nullptr;
  };
  bool failed = false;
  std::function<bool(const Type*, const Type*, size_t)> match =
      [&](const Type* param, const Type* arg, size_t i) -> bool {
    param = Resolve(param);
    arg = Resolve(arg);
    if (param->IsError() || arg->IsError()) return true;
    if (param->kind == Type::Kind::TypeParam) {
      // A type parameter takes the argument's whole type, never lifted.
      auto [it, inserted] = type_args.emplace(param->type_param, arg);
      return inserted || Unify(it->second, arg);
    }
    if (param->IsLeaf()) {
      if (!arg->IsLeaf()) return false;
      if (param->kind == Type::Kind::Scalar &&
          param->scalar == ScalarKind::Float) {
        if (!bind_float(types().WithDims(arg, {}))) return false;
      } else if (param->kind == Type::Kind::Index) {
        if (arg->kind != Type::Kind::Index) return false;
        if (is_size_param(param->index_dim)) {
          auto [it, inserted] =
              forced.emplace(param->index_dim, arg->index_dim);
          if (!inserted && it->second != arg->index_dim) return false;
        } else if (param->index_dim != arg->index_dim) {
          return false;
        }
      } else if (!UnifyLeafKinds(*this, types().WithDims(param, {}),
                                 types().WithDims(arg, {}))) {
        return false;
      }
      pairs.push_back({param->dims, arg->dims, i});
      return true;
    }
    if (param->kind != arg->kind) return false;
    switch (param->kind) {
      case Type::Kind::Tuple:
        if (param->elements.size() != arg->elements.size()) return false;
        for (size_t k = 0; k < param->elements.size(); ++k)
          if (!match(param->elements[k], arg->elements[k], i)) return false;
        return true;
      case Type::Kind::Struct:
        if (param->struct_info != arg->struct_info) return false;
        // `Dense[T, i, o]` takes an instance at the call's `T`.
        if (param->struct_float == ScalarKind::Float &&
            param->struct_info->float_generic) {
          if (!bind_float(types().Scalar(arg->struct_float))) return false;
        } else if (param->struct_float != arg->struct_float) {
          return false;
        }
        for (size_t k = 0; k < param->struct_args.size(); ++k) {
          const DimInfo* p = param->struct_args[k];
          const DimInfo* a = arg->struct_args[k];
          if (is_size_param(p)) {
            auto [it, inserted] = forced.emplace(p, a);
            if (!inserted && it->second != a) return false;
          } else if (p != a) {
            return false;
          }
        }
        pairs.push_back({param->dims, arg->dims, i});
        return true;
      case Type::Kind::Function:
        // A parameter of function type takes any function of its type,
        // checked once the size parameters are bound.
        if (param->callable->kind == Callable::Kind::Param) {
          function_args.push_back({i, param->callable, arg->callable});
          return true;
        }
        return param->callable == arg->callable;
      default:
        return false;
    }
  };
  for (size_t i = 0; i < arg_types.size(); ++i) {
    if (!match(signature.params[i], arg_types[i], i)) {
      // A type parameter shows the type an earlier argument gave it.
      const Type* param = SubstituteTypeParams(
          Resolve(signature.params[i]), type_args,
          float_arg && float_arg->kind == Type::Kind::Scalar
              ? std::optional(float_arg->scalar)
              : std::nullopt);
      Error(struct_literal ? DiagKind::TypeMismatch : DiagKind::NoLifting,
            arg_spans[i],
            argument(i) + " of `" + name + "`: expected " + TypeString(param) +
                ", found " + TypeString(arg_types[i]))
          .Note(call_span,
                "`" + name + "` has type " + SignatureString(signature));
      failed = true;
    }
  }
  if (failed) return types().Error();
  // A size parameter that only a function parameter's type mentions (the
  // output dim m of `jacfwd(f: fn(T[n]) -> T[m], x: T[n])`) is bound by
  // the function passed, where its type leaves one dim for it.
  for (const FunctionArg& f : function_args) {
    const Signature* given = KnownSignature(f.given);
    const Signature& declared = *f.declared->signature;
    if (!given || given->params.size() != declared.params.size()) continue;
    std::function<void(const Type*, const Type*)> bind = [&](const Type* param,
                                                             const Type* arg) {
      param = Resolve(param);
      arg = Resolve(arg);
      if (param->kind == Type::Kind::Tuple && arg->kind == Type::Kind::Tuple &&
          param->elements.size() == arg->elements.size()) {
        for (size_t k = 0; k < param->elements.size(); ++k)
          bind(param->elements[k], arg->elements[k]);
      }
      if (!param->IsLeaf() || !arg->IsLeaf()) return;
      DimSet known;
      std::vector<const DimInfo*> unknown;
      for (const DimInfo* dim : param->dims) {
        auto it = forced.find(dim);
        if (it != forced.end())
          known.Insert(it->second);
        else if (is_size_param(dim))
          unknown.push_back(dim);
        else
          known.Insert(dim);
      }
      DimSet rest = arg->dims.Minus(known);
      if (unknown.size() == 1 && rest.size() == 1)
        forced.emplace(unknown[0], rest[0]);
    };
    for (size_t k = 0; k < declared.params.size(); ++k)
      bind(declared.params[k], given->params[k]);
    bind(declared.result, given->result);
  }
  std::optional<ScalarKind> float_kind;
  if (!BindFloatParam(signature, type_args, float_arg, arg_spans, name,
                      call_span, &float_kind))
    return types().Error();
  if (!CheckTypeArgs(signature, type_args, arg_spans, name,
                     float_kind.value_or(ScalarKind::F32)))
    return types().Error();
  // The dims of type arguments are the call's own, like bound dims.
  DimSet type_arg_dims;
  for (const auto& [param, type] : type_args)
    type_arg_dims = type_arg_dims.Union(AllDims(type));
  const Type* result =
      SubstituteTypeParams(signature.result, type_args, float_kind);

  // 2. Candidate dims for each unbound size parameter.
  std::vector<const DimInfo*> unbound;
  for (const DimInfo* param : signature.size_params)
    if (!forced.count(param)) unbound.push_back(param);
  std::vector<std::vector<const DimInfo*>> choices;
  for (const DimInfo* param : unbound) {
    std::optional<DimSet> allowed;
    for (const LeafPair& pair : pairs) {
      if (!pair.param_dims.Contains(param)) continue;
      DimSet fixed;
      for (const DimInfo* dim : pair.param_dims) {
        if (llvm::is_contained(unbound, dim)) continue;
        auto it = forced.find(dim);
        fixed.Insert(it == forced.end() ? dim : it->second);
      }
      DimSet here = pair.arg_dims.Minus(fixed);
      allowed = allowed ? allowed->Intersect(here) : here;
    }
    if (!allowed) {
      Error(DiagKind::UnboundSizeParam, call_span,
            "no argument of `" + name + "` determines its size parameter `" +
                param->name.str() + "`; bind it by name: " + name + "[" +
                param->name.str() + ": d](…)");
      return types().Error();
    }
    choices.emplace_back(allowed->begin(), allowed->end());
  }

  // 3. Try every assignment; keep those that make the call a lifted call
  // and bind no two size parameters that the body uses together to one dim.
  std::vector<DistinctPair> distinct;
  if (info && info->callee) distinct = DistinctDims(info->callee);
  // Candidates that failed only by binding a pair to one dim.
  std::vector<std::pair<const JointSizeParams*, const DimInfo*>> joint_failures;
  std::vector<Candidate> candidates;
  std::string last_failure;
  const ast::Expr* failure_expr = nullptr;
  Span failure_span = call_span;
  const Type* failure_expected = nullptr;
  const Type* failure_actual = nullptr;
  size_t tried = 0;
  DimMap binding = forced;
  auto bound_to = [&](const DimInfo* dim) {
    auto it = binding.find(dim);
    return it == binding.end() ? dim : it->second;
  };
  std::function<void(size_t)> search = [&](size_t k) {
    if (tried > 4096) return;
    if (k < unbound.size()) {
      for (const DimInfo* dim : choices[k]) {
        binding[unbound[k]] = dim;
        search(k + 1);
      }
      binding.erase(unbound[k]);
      return;
    }
    ++tried;
    Candidate candidate;
    candidate.binding = binding;
    candidate.extra.assign(arg_types.size(), DimSet());
    std::vector<bool> seen(arg_types.size(), false);
    DimSet bound;
    for (const LeafPair& pair : pairs) {
      DimSet instantiated;
      for (const DimInfo* dim : pair.param_dims) {
        auto it = binding.find(dim);
        if (!instantiated.Insert(it == binding.end() ? dim : it->second)) {
          last_failure = "two size parameters would name the same dim";
          return;
        }
      }
      if (!pair.arg_dims.ContainsAll(instantiated)) {
        failure_span = arg_spans[pair.arg];
        failure_expr = arg_exprs.empty() ? nullptr : arg_exprs[pair.arg];
        failure_expected = Substitute(signature.params[pair.arg], binding);
        failure_actual = arg_types[pair.arg];
        last_failure = "mismatch";
        return;
      }
      DimSet extra = pair.arg_dims.Minus(instantiated);
      if (!seen[pair.arg]) {
        candidate.extra[pair.arg] = extra;
        seen[pair.arg] = true;
      } else if (candidate.extra[pair.arg] != extra) {
        failure_span = arg_spans[pair.arg];
        last_failure = "the parts of argument " + std::to_string(pair.arg + 1) +
                       " carry different extra dims, so it is not its "
                       "parameter's type lifted over extra dims";
        return;
      }
      bound = bound.Union(instantiated);
    }
    DimSet result_dims = AllDims(Substitute(result, binding));
    bound = bound.Union(type_arg_dims);
    for (size_t i = 0; i < arg_types.size(); ++i) {
      if (candidate.extra[i].Intersects(bound) ||
          candidate.extra[i].Intersects(result_dims)) {
        failure_span = arg_spans[i];
        last_failure =
            argument(i) + " would be lifted over " +
            DimString(candidate.extra[i].Intersect(bound.Union(result_dims))) +
            ", a dim that the call itself uses";
        return;
      }
    }
    for (const DistinctPair& pair : distinct) {
      const DimInfo* dim = bound_to(pair.first);
      if (dim != bound_to(pair.second)) continue;
      joint_failures.push_back({pair.why, dim});
      return;
    }
    candidates.push_back(std::move(candidate));
  };
  search(0);

  if (candidates.empty()) {
    if (!joint_failures.empty()) {
      // Named from the first such candidate, with every dim tried.
      auto [why, dim] = joint_failures.front();
      std::vector<std::string> dims;
      for (auto [other, d] : joint_failures)
        if (other == why && !llvm::is_contained(dims, d->name.str()))
          dims.push_back(d->name.str());
      std::string listed;
      for (size_t i = 0; i < dims.size(); ++i)
        listed += (i ? (i + 1 == dims.size() ? " or " : ", ") : "") +
                  ("`" + dims[i] + "`");
      last_failure = "its size parameters `" + why->first->name.str() +
                     "` and `" + why->second->name.str() + "` would both be " +
                     listed + ", but it uses them together in " + why->witness +
                     "; declare a second dim of the same size (e.g. dim " +
                     dim->name.str() + "2 = " + dim->name.str() +
                     ";) and rename one argument's `" + dim->name.str() +
                     "` to it";
      failure_span = call_span;
    }
    if (last_failure == "mismatch" && unbound.empty()) {
      ReportMismatch(
          failure_span, failure_expected, failure_actual,
          (struct_literal ? "a field of `" : "argument of `") + name + "`",
          failure_expr);
    } else {
      std::string args;
      for (const Type* arg : arg_types)
        args += (args.empty() ? "" : ", ") + TypeString(arg);
      Error(DiagKind::NoLifting, failure_span,
            "cannot call `" + name + "` with (" + args + ")" +
                (last_failure.empty() || last_failure == "mismatch"
                     ? std::string()
                     : ": " + last_failure))
          .Note(call_span,
                "`" + name + "` has type " + SignatureString(signature) +
                    "; each argument must be its parameter's type plus "
                    "extra dims");
    }
    return types().Error();
  }
  if (struct_literal && candidates.size() > 1 &&
      llvm::any_of(candidates, [](const Candidate& c) {
        return llvm::all_of(c.extra, [](const DimSet& e) { return e.empty(); });
      })) {
    // A struct literal lifts only when it must: fields whose dims all match
    // pick the candidate without extra dims.
    llvm::erase_if(candidates, [](const Candidate& c) {
      return llvm::any_of(c.extra, [](const DimSet& e) { return !e.empty(); });
    });
  }
  if (struct_literal && candidates.size() > 1) {
    // A literal cannot bind size parameters by name; it can be built from
    // unlifted fields inside a comprehension.
    auto diag =
        Error(DiagKind::AmbiguousLifting, call_span,
              "ambiguous lifting of the struct literal `" + name +
                  "`: its fields fit " + std::to_string(candidates.size()) +
                  " lifted instantiations; build it from unlifted "
                  "fields in a comprehension over the lifted dims, "
                  "e.g. for k in d { " +
                  name + " { …: x[k], … } }");
    for (const Candidate& c : candidates) {
      DimSet lift;
      for (const DimSet& extra : c.extra) lift = lift.Union(extra);
      diag.Note(call_span,
                "it could be " + TypeString(Lift(Substitute(result, c.binding),
                                                 lift, call_span)));
    }
    return types().Error();
  }
  if (candidates.size() > 1) {
    // The size parameters whose binding differs between candidates; the
    // message names the first.
    std::vector<const DimInfo*> differing;
    for (const DimInfo* p : unbound)
      for (const Candidate& c : candidates)
        if (c.binding.at(p) != candidates[0].binding.at(p) &&
            !llvm::is_contained(differing, p))
          differing.push_back(p);
    if (differing.empty()) differing.push_back(unbound.front());
    const DimInfo* param = differing.front();
    std::vector<std::string> options;
    for (const Candidate& c : candidates) {
      std::string option = c.binding.at(param)->name.str();
      if (!llvm::is_contained(options, option)) options.push_back(option);
    }
    std::string listed;
    for (size_t i = 0; i < options.size(); ++i)
      listed += (i ? (i + 1 == options.size() ? " or " : ", ") : "") +
                ("`" + options[i] + "`");
    // For each candidate, the fewest bindings by name that leave it alone:
    // binding parameters only removes candidates, so the fix is checked.
    auto picking = [&](const Candidate& c) {
      size_t n = std::min<size_t>(differing.size(), 12);
      std::optional<unsigned> best;
      for (unsigned mask = 1; mask < (1u << n); ++mask) {
        if (best && llvm::popcount(mask) >= llvm::popcount(*best)) continue;
        size_t agreeing = 0;
        for (const Candidate& other : candidates) {
          bool agrees = true;
          for (size_t i = 0; i < n; ++i)
            if ((mask >> i & 1) &&
                other.binding.at(differing[i]) != c.binding.at(differing[i]))
              agrees = false;
          agreeing += agrees;
        }
        if (agreeing == 1) best = mask;
      }
      unsigned mask = best.value_or((1u << n) - 1);
      std::string text;
      for (size_t i = 0; i < n; ++i)
        if (mask >> i & 1)
          text += (text.empty() ? "" : ", ") + differing[i]->name.str() + ": " +
                  c.binding.at(differing[i])->name.str();
      return name + "[" + text + "](…)";
    };
    auto bindings = [&](const Candidate& c) {
      std::string text;
      for (const DimInfo* p : differing)
        text += (text.empty() ? "" : ", ") + p->name.str() + " = " +
                c.binding.at(p)->name.str();
      return text;
    };
    auto diag = Error(DiagKind::AmbiguousLifting, call_span,
                      "ambiguous lifting of `" + name + "`: size parameter `" +
                          param->name.str() + "` could be " + listed +
                          "; bind it by name: " + picking(candidates.back()));
    for (const Candidate& c : candidates) {
      DimSet lift;
      for (const DimSet& extra : c.extra) lift = lift.Union(extra);
      diag.Note(call_span,
                "with " + bindings(c) +
                    (lift.empty() ? std::string(", no lifting")
                                  : ", lifted over " + DimString(lift)) +
                    ": " + picking(c));
    }
    return types().Error();
  }

  const Candidate& chosen = candidates.front();
  if (info && !function_args.empty())
    info->function_args.assign(arg_types.size(), nullptr);
  // The declared function types are in the callee's own size parameters,
  // bound here or by name (`rk4[s: d](…)`).
  DimMap function_binding = chosen.binding;
  if (info && info->callee && !function_args.empty())
    CalledFn(info->callee, &function_binding);
  for (const FunctionArg& f : function_args) {
    const Callable* passed =
        CheckFunctionArgument(f.declared, f.given, function_binding, float_kind,
                              arg_spans[f.arg], argument(f.arg), name);
    if (!passed) return types().Error();
    if (info) info->function_args[f.arg] = passed;
  }
  DimSet lift;
  for (const DimSet& extra : chosen.extra) lift = lift.Union(extra);
  if (info) {
    for (const DimInfo* param : signature.size_params)
      info->size_args.push_back(chosen.binding.at(param));
    for (const Type* param : signature.type_params)
      info->type_args.push_back(type_args.at(param->type_param));
    for (const Type*& type_arg : info->type_args) Record(&type_arg);
    info->float_arg = float_kind;
    info->arg_extra_dims = chosen.extra;
    info->lift_dims = lift;
  }
  return Lift(Substitute(result, chosen.binding), lift, call_span);
}

const Type* Checker::CheckCall(ast::CallExpr* call, Context& context) {
  auto check_args = [&]() {
    for (ast::Arg& arg : call->args)
      if (!llvm::isa<ast::StringLitExpr>(arg.value))
        CheckExpr(arg.value, context);
    return types().Error();
  };
  if (auto* name = llvm::dyn_cast<ast::NameExpr>(call->callee)) {
    const Symbol* symbol = context.scope->Lookup(name->name.name);
    if (symbol && symbol->kind == Symbol::Kind::Builtin) {
      name->symbol = const_cast<Symbol*>(symbol);
      name->type = types().Unit();
      return CheckBuiltinCall(symbol->builtin, call, context);
    }
    if (symbol && symbol->kind == Symbol::Kind::TypeParam &&
        symbol->type->kind == Type::Kind::Scalar) {
      name->symbol = const_cast<Symbol*>(symbol);
      name->type = types().Unit();
      return CheckFloatParamConversion(call, context);
    }
    if (symbol && symbol->kind == Symbol::Kind::Dim) {
      // `d(k)`: an index of dim d from an integer.
      name->symbol = const_cast<Symbol*>(symbol);
      name->type = types().Unit();
      if (call->args.size() != 1 || call->args[0].label) {
        Error(DiagKind::ArgCount, call->span,
              "`" + name->name.name.str() + "(k)` takes one integer");
        return check_args();
      }
      const Type* arg = Resolve(CheckExpr(call->args[0].value, context));
      if (arg->IsError()) return arg;
      if (arg->kind == Type::Kind::LitVar) {
        literals_.Bind(arg->var, ScalarKind::I64);
        arg = Resolve(arg);
      }
      if (arg->kind != Type::Kind::Scalar || !IsInteger(arg->scalar)) {
        Error(DiagKind::BadOperand, call->args[0].value->span,
              "`" + name->name.name.str() + "(k)` needs an integer, found " +
                  TypeString(arg));
        return types().Error();
      }
      return types().Index(symbol->dim, arg->dims);
    }
    if (symbol && symbol->kind == Symbol::Kind::Struct) {
      Error(DiagKind::NotCallable, name->span,
            "struct `" + name->name.name.str() + "` is built with " +
                name->name.name.str() + " { field: value, … }, not called");
      return check_args();
    }
  }
  direct_callee_ = call->callee;  // a generic function may be named here
  const Type* callee = Resolve(CheckExpr(call->callee, context));
  if (callee->IsError()) return check_args();
  if (callee->kind != Type::Kind::Function) {
    Error(DiagKind::NotCallable, call->callee->span,
          "this is not a function; it has type " + TypeString(callee));
    return check_args();
  }
  std::vector<const Type*> arg_types;
  std::vector<Span> arg_spans;
  std::vector<ast::Expr*> arg_exprs;
  for (ast::Arg& arg : call->args) {
    if (arg.label)
      Error(DiagKind::UnknownLabel, arg.label->span,
            "`" + CallableName(callee->callable) +
                "` takes no labelled arguments");
    arg_types.push_back(CheckExpr(arg.value, context));
    arg_spans.push_back(arg.value->span);
    arg_exprs.push_back(arg.value);
  }
  const Signature* signature =
      GetSignature(callee->callable, &arg_types, call->callee->span);
  if (!signature) return types().Error();
  CallInfo* info = &program_.calls.emplace_back();
  info->callee = callee->callable;
  call->info = info;
  const Type* result =
      ApplySignature(*signature, arg_types, arg_spans, arg_exprs, {},
                     CallableName(callee->callable), call->span, info);
  if (!result->IsError())
    RecordJointCall(info, *signature, call->span, context.function);
  return result;
}

}  // namespace delta::sema

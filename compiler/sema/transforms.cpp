// Type rules of the transformations (section 6 of the contract): grad,
// value_and_grad, jvp, vjp, vmap, checkpoint, and custom @vjp rules.
#include <llvm/ADT/STLExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {
namespace {

// The positional (unlabelled) arguments of a call.
std::vector<ast::Arg*> Positional(ast::CallExpr* call) {
  std::vector<ast::Arg*> args;
  for (ast::Arg& arg : call->args)
    if (!arg.label) args.push_back(&arg);
  return args;
}

ast::Arg* Labelled(ast::CallExpr* call, llvm::StringRef label) {
  for (ast::Arg& arg : call->args)
    if (arg.label && arg.label->name == label) return &arg;
  return nullptr;
}

}  // namespace

const Type* Checker::CheckTransform(Builtin builtin, ast::CallExpr* call,
                                    Context& context) {
  std::vector<ast::Arg*> args = Positional(call);
  for (ast::Arg& arg : call->args) {
    if (!arg.label) continue;
    bool grad = builtin == Builtin::Grad || builtin == Builtin::ValueAndGrad;
    bool allowed = (grad && arg.label->name == "wrt") ||
                   (builtin == Builtin::Vmap && arg.label->name == "over");
    if (!allowed) {
      Error(DiagKind::UnknownLabel, arg.label->span,
            "this transformation takes no argument `" + arg.label->name.str() +
                ":`" + (grad ? "; did you mean `wrt:`?" : ""));
      return types().Error();
    }
  }
  auto fail_args = [&](const std::string& form) {
    Error(DiagKind::ArgCount, call->span, "wrong arguments; use " + form);
    for (ast::Arg* arg : args) CheckExpr(arg->value, context);
    return types().Error();
  };
  auto function_arg = [&](ast::Expr* expr) -> const Callable* {
    const Type* type = Resolve(CheckExpr(expr, context));
    if (type->IsError()) return nullptr;
    if (type->kind != Type::Kind::Function) {
      Error(DiagKind::NotCallable, expr->span,
            "expected a function here, found " + TypeString(type));
      return nullptr;
    }
    // A function that takes functions is inlined at each call: it has no
    // function of its own to transform.
    DimMap bound;
    if (const FnInfo* fn = CalledFn(type->callable, &bound);
        fn && llvm::any_of(fn->signature.params, [](const Type* param) {
          return param->kind == Type::Kind::Function;
        })) {
      Error(DiagKind::FunctionValueMisuse, expr->span,
            "`" + fn->decl->name.name.str() +
                "` takes a function, so it cannot be transformed itself; "
                "transform a lambda that calls it, e.g. grad(|x| " +
                fn->decl->name.name.str() + "(f, x))");
      return nullptr;
    }
    return type->callable;
  };
  auto record = [&]() {
    CallInfo* info = &program_.calls.emplace_back();
    info->is_builtin = true;
    info->builtin = builtin;
    call->info = info;
    return info;
  };

  switch (builtin) {
    case Builtin::Grad:
    case Builtin::ValueAndGrad: {
      const char* form = builtin == Builtin::Grad
                             ? "grad(f) or grad(f, wrt: p)"
                             : "value_and_grad(f) or value_and_grad(f, wrt: p)";
      if (args.size() != 1) return fail_args(form);
      const Callable* inner = function_arg(args[0]->value);
      if (!inner) return types().Error();
      Callable* grad = NewCallable(Callable::Kind::Grad);
      grad->inner = inner;
      grad->with_value = builtin == Builtin::ValueAndGrad;
      std::vector<llvm::StringRef> names = ParamNames(inner);
      if (ast::Arg* wrt = Labelled(call, "wrt")) {
        std::vector<ast::Expr*> targets;
        if (auto* tuple = llvm::dyn_cast<ast::TupleExpr>(wrt->value)) {
          grad->wrt_is_tuple = true;
          targets = tuple->elements;
        } else {
          targets.push_back(wrt->value);
        }
        for (ast::Expr* target : targets) {
          auto* name = llvm::dyn_cast<ast::NameExpr>(target);
          auto it = name ? llvm::find(names, name->name.name) : names.end();
          if (it == names.end()) {
            std::string listed;
            for (llvm::StringRef n : names)
              listed += (listed.empty() ? "" : ", ") + n.str();
            Error(DiagKind::UnknownWrt, target->span,
                  "wrt: must name parameters of `" + CallableName(inner) +
                      "` (" + listed + ")");
            return types().Error();
          }
          auto index = static_cast<unsigned>(it - names.begin());
          if (llvm::is_contained(grad->wrt, index)) {
            // JAX would return a zero and a gradient; a typo is likelier.
            Error(DiagKind::DuplicateWrt, target->span,
                  "wrt: names `" + name->name.name.str() +
                      "` twice; each parameter can be listed once");
            return types().Error();
          }
          target->type = types().Unit();
          grad->wrt.push_back(index);
        }
      } else {
        if (names.empty()) {
          Error(DiagKind::NotDifferentiable, call->span,
                "`" + CallableName(inner) +
                    "` has no parameter to "
                    "differentiate");
          return types().Error();
        }
        grad->wrt.push_back(0);
      }
      record();
      // Check the signature now when it does not depend on a call.
      if (HasStaticSignature(grad) && !GetSignature(grad, nullptr, call->span))
        return types().Error();
      return FunctionType(grad);
    }
    case Builtin::Vmap: {
      ast::Arg* over = Labelled(call, "over");
      if (args.size() != 1 || !over) return fail_args("vmap(f, over: d)");
      const Callable* inner = function_arg(args[0]->value);
      auto* dim_name = llvm::dyn_cast<ast::NameExpr>(over->value);
      const DimInfo* dim =
          dim_name ? ResolveDimName(dim_name->name, context.scope) : nullptr;
      if (!dim_name)
        Error(DiagKind::NotADim, over->value->span, "over: names a dim");
      if (!inner || !dim) return types().Error();
      dim_name->type = types().Unit();
      Callable* vmap = NewCallable(Callable::Kind::Vmap);
      vmap->inner = inner;
      vmap->over = dim;
      record()->dim_args.push_back(dim);
      if (HasStaticSignature(vmap) && !GetSignature(vmap, nullptr, call->span))
        return types().Error();
      return FunctionType(vmap);
    }
    case Builtin::Checkpoint: {
      if (args.size() != 1) return fail_args("checkpoint(f)");
      const Callable* inner = function_arg(args[0]->value);
      if (!inner) return types().Error();
      Callable* checkpoint = NewCallable(Callable::Kind::Checkpoint);
      checkpoint->inner = inner;
      record();
      return FunctionType(checkpoint);
    }
    case Builtin::Jvp:
    case Builtin::Vjp: {
      bool is_jvp = builtin == Builtin::Jvp;
      if (is_jvp ? args.size() != 3 : args.size() < 1)
        return fail_args(is_jvp ? "jvp(f, (x, y…), (dx, dy…))"
                                : "vjp(f, x, y…)");
      const Callable* f = function_arg(args[0]->value);
      if (!f) {
        for (size_t i = 1; i < args.size(); ++i)
          CheckExpr(args[i]->value, context);
        return types().Error();
      }
      size_t arity = ParamNames(f).size();
      // The primal arguments, spread from a tuple for jvp with several.
      std::vector<const Type*> arg_types;
      std::vector<Span> arg_spans;
      std::vector<ast::Expr*> arg_exprs;
      const Type* tangent_arg = nullptr;
      if (is_jvp) {
        const Type* primals = Resolve(CheckExpr(args[1]->value, context));
        tangent_arg = Resolve(CheckExpr(args[2]->value, context));
        if (primals->IsError() || tangent_arg->IsError())
          return types().Error();
        if (arity == 1) {
          arg_types.push_back(primals);
        } else if (primals->kind == Type::Kind::Tuple &&
                   primals->elements.size() == arity) {
          arg_types = primals->elements;
        } else {
          Error(DiagKind::ArgCount, args[1]->value->span,
                "`" + CallableName(f) + "` takes " + std::to_string(arity) +
                    " arguments: pass the primals as a tuple (x, y, …)");
          return types().Error();
        }
        arg_spans.assign(arg_types.size(), args[1]->value->span);
      } else {
        for (size_t i = 1; i < args.size(); ++i) {
          arg_types.push_back(CheckExpr(args[i]->value, context));
          arg_spans.push_back(args[i]->value->span);
          arg_exprs.push_back(args[i]->value);
        }
      }
      const Signature* signature =
          GetSignature(f, &arg_types, args[0]->value->span);
      if (!signature) return types().Error();
      CallInfo* info = record();
      info->callee = f;
      const Type* output =
          ApplySignature(*signature, arg_types, arg_spans, arg_exprs, {},
                         CallableName(f), call->span, info);
      if (output->IsError()) return output;
      RecordJointCall(info, *signature, call->span, context.function);
      output = Resolve(output);
      if (is_jvp) {
        std::vector<const Type*> tangents;
        for (const Type* arg : arg_types) tangents.push_back(Tangent(arg));
        const Type* expected =
            arity == 1 ? tangents.front() : types().Tuple(tangents);
        Expect(expected, tangent_arg, args[2]->value->span,
               "tangents have the primals' types, with () for integers",
               args[2]->value);
        return types().Tuple({output, Tangent(output)});
      }
      Callable* pullback = NewCallable(Callable::Kind::Pullback);
      pullback->inner = f;
      pullback->signature = std::make_unique<Signature>();
      pullback->signature->param_names = {"dy"};
      pullback->signature->params = {Tangent(output)};
      std::vector<const Type*> cotangents;
      for (const Type* arg : arg_types) cotangents.push_back(Tangent(arg));
      pullback->signature->result = cotangents.size() == 1
                                        ? cotangents.front()
                                        : types().Tuple(cotangents);
      return types().Tuple({output, FunctionType(pullback)});
    }
    default:
      return types().Error();
  }
}

void Checker::CheckCustomVjp(FnInfo* rule, const ast::Attribute& attribute,
                             const Scope* scope) {
  auto* target = attribute.args.size() == 1
                     ? llvm::dyn_cast<ast::NameExpr>(attribute.args[0])
                     : nullptr;
  if (!target) {
    Error(DiagKind::BadCustomVjp, attribute.span,
          "write @vjp(f) with the name of the function the rule is for");
    return;
  }
  const Symbol* symbol = scope->Lookup(target->name.name);
  if (!symbol || symbol->kind != Symbol::Kind::Function) {
    ReportUnknown(target->name, scope, "function");
    return;
  }
  target->symbol = const_cast<Symbol*>(symbol);
  FnInfo* fn = symbol->fn;
  CheckFnSignature(fn);
  if (fn->custom_vjp) {
    Error(DiagKind::BadCustomVjp, attribute.span,
          "`" + target->name.name.str() + "` already has a @vjp rule")
        .Note(fn->custom_vjp->decl->name.span, "the first rule");
    return;
  }
  const Signature& primal = fn->signature;
  const Signature& actual = rule->signature;
  // The rule has f's size parameters (matched by position).
  DimMap map;
  bool ok = primal.size_params.size() == actual.size_params.size();
  if (ok)
    for (size_t i = 0; i < primal.size_params.size(); ++i)
      map[primal.size_params[i]] = actual.size_params[i];
  Signature expected;
  expected.size_params = actual.size_params;
  std::vector<const Type*> cotangents;
  for (size_t i = 0; i < primal.params.size(); ++i) {
    const Type* param = Substitute(primal.params[i], map);
    expected.params.push_back(param);
    cotangents.push_back(Tangent(param));
  }
  const Type* result = Substitute(primal.result, map);
  expected.params.push_back(result);
  expected.params.push_back(Tangent(result));
  expected.result =
      cotangents.size() == 1 ? cotangents.front() : types().Tuple(cotangents);
  ok = ok && expected.params.size() == actual.params.size();
  for (size_t i = 0; ok && i < expected.params.size(); ++i)
    ok = Unify(expected.params[i], actual.params[i]);
  ok = ok && Unify(expected.result, actual.result);
  if (!ok) {
    Error(DiagKind::BadCustomVjp, rule->decl->name.span,
          "a @vjp rule for `" + target->name.name.str() + "` must have type " +
              SignatureString(expected) +
              " (f's parameters, then y and dy; "
              "it returns the parameters' cotangents), but `" +
              rule->decl->name.name.str() + "` has type " +
              SignatureString(actual));
    return;
  }
  fn->custom_vjp = rule;
  rule->vjp_rule_for = fn;
}

}  // namespace delta::sema

// Lowering of transformed calls (grad, value_and_grad, jvp, vjp and its
// pullback, checkpoint): a function value becomes an IR function (closing
// over what a lambda captured), and the call becomes a call of a derivative
// function that the AD pass fills later (docs/internals/ad.md).
#include <algorithm>
#include <functional>

#include "compiler/lower/lowerer.h"
#include "compiler/transforms/ad/forward.h"
#include "compiler/transforms/ad/reverse.h"
#include "compiler/transforms/rewrite.h"

namespace delta::lower {
namespace {

bool Within(Span inner, Span outer) {
  return inner.begin >= outer.begin && inner.begin < outer.end;
}

// Calls `visit` on every name expression in `expr`.
void VisitNames(const ast::Expr* expr,
                const std::function<void(const ast::NameExpr*)>& visit);

void VisitBlock(const ast::BlockExpr* block,
                const std::function<void(const ast::NameExpr*)>& visit) {
  for (const ast::Stmt* stmt : block->stmts) {
    if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt))
      VisitNames(let->value, visit);
    else if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt))
      VisitNames(dim->size, visit);
    else
      VisitNames(llvm::cast<ast::ExprStmt>(stmt)->expr, visit);
  }
  if (block->result) VisitNames(block->result, visit);
}

void VisitNames(const ast::Expr* expr,
                const std::function<void(const ast::NameExpr*)>& visit) {
  if (!expr) return;
  switch (expr->kind) {
    case ast::Expr::Kind::Name:
      visit(llvm::cast<ast::NameExpr>(expr));
      return;
    case ast::Expr::Kind::Unary:
      VisitNames(llvm::cast<ast::UnaryExpr>(expr)->operand, visit);
      return;
    case ast::Expr::Kind::Binary:
      VisitNames(llvm::cast<ast::BinaryExpr>(expr)->lhs, visit);
      VisitNames(llvm::cast<ast::BinaryExpr>(expr)->rhs, visit);
      return;
    case ast::Expr::Kind::Call: {
      auto* call = llvm::cast<ast::CallExpr>(expr);
      VisitNames(call->callee, visit);
      for (const ast::Arg& arg : call->args) VisitNames(arg.value, visit);
      return;
    }
    case ast::Expr::Kind::Index: {
      auto* index = llvm::cast<ast::IndexExpr>(expr);
      VisitNames(index->base, visit);
      for (const ast::IndexEntry& entry : index->entries)
        VisitNames(entry.value, visit);
      return;
    }
    case ast::Expr::Kind::Field:
      VisitNames(llvm::cast<ast::FieldExpr>(expr)->base, visit);
      return;
    case ast::Expr::Kind::TupleIndex:
      VisitNames(llvm::cast<ast::TupleIndexExpr>(expr)->base, visit);
      return;
    case ast::Expr::Kind::Tuple:
      for (const ast::Expr* e : llvm::cast<ast::TupleExpr>(expr)->elements)
        VisitNames(e, visit);
      return;
    case ast::Expr::Kind::StructLit: {
      auto* lit = llvm::cast<ast::StructLitExpr>(expr);
      for (const ast::FieldInit& field : lit->fields)
        VisitNames(field.value, visit);
      VisitNames(lit->base, visit);
      return;
    }
    case ast::Expr::Kind::ArrayLit:
      for (const ast::Expr* e : llvm::cast<ast::ArrayLitExpr>(expr)->elements)
        VisitNames(e, visit);
      return;
    case ast::Expr::Kind::Block:
      VisitBlock(llvm::cast<ast::BlockExpr>(expr), visit);
      return;
    case ast::Expr::Kind::If: {
      auto* if_expr = llvm::cast<ast::IfExpr>(expr);
      VisitNames(if_expr->condition, visit);
      VisitBlock(if_expr->then_block, visit);
      VisitNames(if_expr->else_branch, visit);
      return;
    }
    case ast::Expr::Kind::Loop: {
      auto* loop = llvm::cast<ast::LoopExpr>(expr);
      for (const ast::Expr* e : {loop->init, loop->domain, loop->range_lo,
                                 loop->range_hi, loop->condition})
        VisitNames(e, visit);
      VisitBlock(loop->body, visit);
      return;
    }
    case ast::Expr::Kind::For: {
      auto* for_expr = llvm::cast<ast::ForExpr>(expr);
      VisitBlock(for_expr->body, visit);
      return;
    }
    case ast::Expr::Kind::Lambda:
      VisitNames(llvm::cast<ast::LambdaExpr>(expr)->body, visit);
      return;
    default:
      return;
  }
}

// The lambdas a function value is built from (their captures are its own).
void CollectLambdas(const sema::Callable* callable,
                    std::vector<const sema::Callable*>& lambdas) {
  if (!callable) return;
  if (callable->kind == sema::Callable::Kind::Lambda)
    lambdas.push_back(callable);
  CollectLambdas(callable->inner, lambdas);
}

const sema::Signature* SignatureOf(const sema::Callable* callable) {
  if (callable->kind == sema::Callable::Kind::Fn)
    return &callable->fn->signature;
  return callable->signature.get();
}

}  // namespace

Lowerer::Wrapped Lowerer::WrapCallable(const sema::Callable* callable,
                                       Span span) {
  if (callable->kind == sema::Callable::Kind::Fn) {
    Wrapped wrapped;
    wrapped.function = FunctionFor(callable->fn);
    return wrapped;
  }
  // Inside an inlined call the same lambda may stand for another function
  // each time (it calls a parameter of function type): wrap it anew.
  if (auto it = wrapped_.find({callable, type_args_, float_kind_});
      it != wrapped_.end() && bound_params_.empty())
    return it->second;
  const sema::Signature* signature = SignatureOf(callable);
  if (!signature || callable->kind == sema::Callable::Kind::Pullback) {
    Unsupported(span, "transforming this function value");
    return {};
  }
  Wrapped wrapped;
  // What the lambdas inside capture: values defined outside them.
  std::vector<const sema::Callable*> lambdas;
  CollectLambdas(callable, lambdas);
  // Indexed: a lambda that calls a parameter of function type captures
  // what the function passed for it captures, so the list grows.
  for (size_t l = 0; l < lambdas.size(); ++l) {
    const sema::Callable* lambda = lambdas[l];
    VisitNames(lambda->lambda->body, [&](const ast::NameExpr* name) {
      const sema::Symbol* symbol = name->symbol;
      if (symbol && symbol->type &&
          symbol->type->kind == sema::Type::Kind::Function) {
        std::vector<const sema::Callable*> more;
        CollectLambdas(Bound(symbol->type->callable), more);
        for (const sema::Callable* other : more)
          if (std::find(lambdas.begin(), lambdas.end(), other) == lambdas.end())
            lambdas.push_back(other);
        return;
      }
      if (!symbol || symbol->kind != sema::Symbol::Kind::Value ||
          symbol->module_let || Within(symbol->span, lambda->lambda->span) ||
          !values_.count(symbol) ||
          std::find(wrapped.captures.begin(), wrapped.captures.end(), symbol) !=
              wrapped.captures.end())
        return;
      wrapped.captures.push_back(symbol);
    });
  }
  // Every dim of the enclosing function may appear in the lambda's types.
  // A size parameter of an inlined callee bound to a module dim stays that
  // dim: the function passed for a parameter (`hvp(f, x, v)` with `f` on
  // module dim n) computes on it, not on a copy of the same size.
  // Two of them bound to one dim (an inlined callee's size parameter and
  // the caller's dim it stands for) are one dim inside too.
  DimSubst dims;
  std::vector<std::pair<const sema::DimInfo*, const ir::Dim*>> enclosing(
      local_dims_.begin(), local_dims_.end());
  std::sort(enclosing.begin(), enclosing.end(),
            [](const auto& a, const auto& b) {
              return a.first->order < b.first->order;
            });
  llvm::DenseMap<const ir::Dim*, const sema::DimInfo*> first_of;
  std::vector<std::pair<const sema::DimInfo*, const sema::DimInfo*>> aliases;
  for (auto [dim, ir_dim] : enclosing) {
    bool module_dim = llvm::any_of(
        module_->dims, [&](const auto& d) { return d.get() == ir_dim; });
    if (module_dim) {
      dims[dim] = ir_dim;
    } else if (auto [it, inserted] = first_of.try_emplace(ir_dim, dim);
               !inserted) {
      aliases.push_back({dim, it->second});
    } else {
      wrapped.dims.push_back(dim);
    }
  }

  // The function: size parameters, the signature's parameters, captures.
  ir::Function* function =
      module_->AddFunction("lambda." + std::to_string(wrapped_count_++));
  function->anonymous = true;
  wrapped.function = function;
  auto add_size = [&](const sema::DimInfo* dim) {
    ir::Value* size = function->NewValue(
        ir::Type{ir::ElemKind::I64, nullptr, {}}, dim->name.str());
    function->size_params.push_back(size);
    dims[dim] = function->NewDim(dim->name.str(), dim->constant_size, size);
  };
  for (const sema::DimInfo* dim : signature->size_params) add_size(dim);
  for (const sema::DimInfo* dim : wrapped.dims) add_size(dim);
  for (auto [alias, first] : aliases) dims[alias] = dims[first];
  auto add_param = [&](ir::Type type, const std::string& name) {
    return function->AddParam(std::move(type), name);
  };
  std::vector<Leaves> args;
  for (size_t i = 0; i < signature->params.size(); ++i) {
    Leaves leaves;
    for (ir::Type type : Flatten(signature->params[i], &dims))
      leaves.push_back(
          add_param(std::move(type), signature->param_names[i].str()));
    args.push_back(std::move(leaves));
  }
  std::vector<Leaves> capture_params;
  for (const sema::Symbol* capture : wrapped.captures) {
    Leaves leaves;
    for (ir::Type type : Flatten(capture->type, &dims))
      leaves.push_back(add_param(std::move(type), capture->name.str()));
    capture_params.push_back(std::move(leaves));
  }
  function->result_types = Flatten(signature->result, &dims);
  wrapped_[{callable, type_args_, float_kind_}] = wrapped;

  // Lower the body now, in a state of its own.
  ir::Builder* saved_builder = builder_;
  auto saved_values = values_;
  auto saved_dims = local_dims_;
  ir::Builder builder(function);
  builder_ = &builder;
  local_dims_.clear();
  for (auto [from, to] : dims) local_dims_[from] = to;
  for (size_t c = 0; c < wrapped.captures.size(); ++c)
    values_[wrapped.captures[c]] = capture_params[c];
  std::vector<const sema::Type*> arg_types(signature->params.begin(),
                                           signature->params.end());
  DimSubst sizes;
  for (const sema::DimInfo* dim : signature->size_params)
    sizes[dim] = dims[dim];
  Leaves result = CallUnlifted(callable, args, arg_types, sizes, span);
  SetLoc(span);
  builder.Return(BroadcastTo(result, function->result_types));
  builder_ = saved_builder;
  values_ = std::move(saved_values);
  local_dims_ = std::move(saved_dims);
  return wrapped;
}

std::vector<ir::Value*> Lowerer::CaptureOperands(const Wrapped& wrapped) {
  std::vector<ir::Value*> operands;
  for (const sema::Symbol* capture : wrapped.captures) {
    const Leaves& leaves = values_[capture];
    operands.insert(operands.end(), leaves.begin(), leaves.end());
  }
  return operands;
}

std::vector<const ir::Dim*> Lowerer::WrappedDims(const Wrapped& wrapped,
                                                 const sema::Callable* callable,
                                                 const DimSubst& sizes) {
  std::vector<const ir::Dim*> dims;
  if (const sema::Signature* signature = SignatureOf(callable))
    for (const sema::DimInfo* param : signature->size_params) {
      auto it = sizes.find(param);
      dims.push_back(it == sizes.end() ? DimOf(param) : it->second);
    }
  for (const sema::DimInfo* dim : wrapped.dims) dims.push_back(DimOf(dim));
  return dims;
}

ir::Function* Lowerer::DerivativeOf(ir::Function* primal,
                                    ir::Derivative::Mode mode,
                                    std::vector<bool> wrt, bool with_value) {
  ir::Derivative derivative;
  derivative.mode = mode;
  derivative.primal = primal;
  derivative.wrt = std::move(wrt);
  derivative.with_value = with_value;
  const char* suffix = mode == ir::Derivative::Mode::Jvp   ? ".jvp"
                       : mode == ir::Derivative::Mode::Vjp ? ".vjp"
                                                           : ".grad";
  std::string name = primal->name + suffix;
  // Reuse an identical derivative; otherwise give this one its own name.
  for (int n = 0;; ++n) {
    std::string candidate = n ? name + "." + std::to_string(n) : name;
    ir::Function* existing = module_->FindFunction(candidate);
    if (!existing) {
      ir::Function* function = module_->AddFunction(candidate);
      function->derivative = derivative;
      if (mode == ir::Derivative::Mode::Jvp)
        ad::SetUpJvpSignature(*primal, *function);
      else
        ad::SetUpReverseSignature(*function);
      return function;
    }
    const auto& other = existing->derivative;
    if (other && other->mode == mode && other->primal == primal &&
        other->wrt == derivative.wrt && other->with_value == with_value)
      return existing;
  }
}

ir::Op* Lowerer::EmitCall(ir::Function* callee,
                          const std::vector<ir::Value*>& operands,
                          const std::vector<const ir::Dim*>& dims) {
  // The results in the caller's dims.
  transforms::CloneMap map;
  for (size_t k = 0; k < dims.size(); ++k) map.dims[callee->dims[k]] = dims[k];
  std::vector<ir::Type> types;
  for (const ir::Type& type : callee->result_types)
    types.push_back(map.Lookup(type));
  ir::Op* op = builder_->Create(ir::OpKind::Call, operands, types);
  op->callee = callee;
  op->dims = dims;
  return op;
}

Leaves Lowerer::CallDerivative(ir::Function* derived,
                               const std::vector<ir::Value*>& operands,
                               const std::vector<const ir::Dim*>& dims) {
  ir::Op* op = EmitCall(derived, operands, dims);
  return Leaves(op->results.begin(), op->results.end());
}

Leaves Lowerer::CallGrad(const sema::Callable* grad,
                         const std::vector<Leaves>& args, const DimSubst& sizes,
                         Span span) {
  const sema::Callable* inner = grad->inner;
  // grad of a float-generic function: at the float type of its arguments.
  auto float_scope = ScopedFloatKind(ArgFloatKind(inner, args));
  Wrapped wrapped = WrapCallable(inner, span);
  if (!wrapped.function) return {};
  // The wrt mask over the wrapped function's parameter leaves.
  const sema::Signature* signature = SignatureOf(inner);
  std::vector<bool> wrt;
  std::vector<size_t> float_leaves;  // per parameter
  for (size_t i = 0; i < signature->params.size(); ++i) {
    bool wanted =
        std::find(grad->wrt.begin(), grad->wrt.end(), i) != grad->wrt.end();
    std::vector<ir::Type> leaves = Flatten(signature->params[i], &sizes);
    wrt.insert(wrt.end(), leaves.size(), wanted);
    float_leaves.push_back(llvm::count_if(
        leaves, [](const ir::Type& leaf) { return ir::IsFloat(leaf.elem); }));
  }
  wrt.resize(wrapped.function->params.size(), false);
  ir::Function* derived = DerivativeOf(
      wrapped.function, ir::Derivative::Mode::Gradient, wrt, grad->with_value);
  std::vector<ir::Value*> operands;
  for (const Leaves& arg : args)
    operands.insert(operands.end(), arg.begin(), arg.end());
  std::vector<ir::Value*> captured = CaptureOperands(wrapped);
  operands.insert(operands.end(), captured.begin(), captured.end());
  SetLoc(span);
  Leaves results =
      CallDerivative(derived, operands, WrappedDims(wrapped, inner, sizes));
  // The derivative returns the value's leaves (value_and_grad), then the
  // gradients' float leaves in parameter order; the result lists the
  // gradients in the order `wrt:` names them, each of its tangent type.
  std::vector<Leaves> gradients(signature->params.size());
  size_t next = results.size();
  for (size_t i = signature->params.size(); i-- > 0;) {
    if (std::find(grad->wrt.begin(), grad->wrt.end(), i) == grad->wrt.end())
      continue;
    if (next < float_leaves[i]) return {};  // a failed call
    next -= float_leaves[i];
    gradients[i] =
        ExpandTangent(Leaves(results.begin() + next,
                             results.begin() + next + float_leaves[i]),
                      signature->params[i], sizes);
  }
  Leaves ordered(results.begin(), results.begin() + next);
  for (unsigned param : grad->wrt)
    ordered.insert(ordered.end(), gradients[param].begin(),
                   gradients[param].end());
  return ordered;
}

Leaves Lowerer::ExpandTangent(const Leaves& float_leaves,
                              const sema::Type* type, const DimSubst& sizes) {
  // A struct's tangent is the struct itself (docs/language/types.md), so its
  // other leaves are zeros; elsewhere they are () and have no leaves.
  std::function<void(const sema::Type*, bool)> expand;
  Leaves tangent;
  size_t next = 0;
  expand = [&](const sema::Type* part, bool in_struct) {
    if (part->kind == sema::Type::Kind::Tuple) {
      for (const sema::Type* element : part->elements)
        expand(element, in_struct);
      return;
    }
    in_struct = in_struct || part->kind == sema::Type::Kind::Struct;
    for (const ir::Type& leaf : Flatten(part, &sizes)) {
      if (ir::IsFloat(leaf.elem) && next < float_leaves.size())
        tangent.push_back(float_leaves[next++]);
      else if (in_struct)
        tangent.push_back(Const(leaf, 0));
    }
  };
  expand(type, false);
  return tangent;
}

Leaves Lowerer::CallPullback(const sema::Callable* pullback,
                             const std::vector<Leaves>& args, Span span) {
  auto it = pullbacks_.find(pullback);
  if (it == pullbacks_.end()) {
    Unsupported(span, "this pullback");
    return {};
  }
  const PullbackInfo& info = it->second;
  ir::Function* primal = info.wrapped.function;
  std::vector<bool> wrt(primal->params.size(), false);
  for (size_t i = 0; i < info.param_leaves; ++i) wrt[i] = true;
  ir::Function* derived =
      DerivativeOf(primal, ir::Derivative::Mode::Vjp, wrt, false);
  std::vector<ir::Value*> operands = info.operands;
  // Cotangents of integer leaves (inside a struct) are not passed.
  for (const Leaves& arg : args)
    for (ir::Value* leaf : arg)
      if (ir::IsFloat(leaf->type.elem)) operands.push_back(leaf);
  SetLoc(span);
  Leaves results = CallDerivative(derived, operands, info.dims);
  // The derivative returns the cotangents' float leaves; each argument's
  // cotangent is of its tangent type.
  Leaves cotangents;
  size_t next = 0;
  for (const sema::Type* type : info.arg_types) {
    size_t floats = llvm::count_if(Flatten(type), [](const ir::Type& leaf) {
      return ir::IsFloat(leaf.elem);
    });
    if (next + floats > results.size()) return {};  // a failed call
    Leaves part = ExpandTangent(
        Leaves(results.begin() + next, results.begin() + next + floats), type,
        DimSubst());
    cotangents.insert(cotangents.end(), part.begin(), part.end());
    next += floats;
  }
  return cotangents;
}

namespace {

// What a float-generic function's `T` is, from the (sema) types of its
// arguments; `current` is what the caller's own `T` stands for.
sema::ScalarKind FloatKindOfTypes(const sema::Signature& signature,
                                  const std::vector<const sema::Type*>& types,
                                  sema::ScalarKind current) {
  std::function<std::optional<sema::ScalarKind>(const sema::Type*,
                                                const sema::Type*)>
      walk = [&](const sema::Type* param,
                 const sema::Type* arg) -> std::optional<sema::ScalarKind> {
    if (!param || !arg) return std::nullopt;
    if (param->kind == sema::Type::Kind::Tuple &&
        arg->kind == sema::Type::Kind::Tuple) {
      for (size_t k = 0; k < param->elements.size() && k < arg->elements.size();
           ++k)
        if (auto kind = walk(param->elements[k], arg->elements[k])) return kind;
      return std::nullopt;
    }
    std::optional<sema::ScalarKind> kind;
    if (param->kind == sema::Type::Kind::Scalar &&
        param->scalar == sema::ScalarKind::Float &&
        arg->kind == sema::Type::Kind::Scalar)
      kind = arg->scalar;
    if (param->kind == sema::Type::Kind::Struct &&
        param->struct_info->float_generic &&
        param->struct_float == sema::ScalarKind::Float &&
        arg->kind == sema::Type::Kind::Struct)
      kind = arg->struct_float;  // `Dense[T, i, o]`
    if (kind == sema::ScalarKind::Float) return current;
    return kind;
  };
  for (size_t i = 0; i < signature.params.size() && i < types.size(); ++i)
    if (auto kind = walk(signature.params[i], types[i])) return *kind;
  return current;
}

}  // namespace

Leaves Lowerer::TransformBuiltin(const ast::CallExpr* call,
                                 sema::Builtin builtin) {
  const sema::CallInfo* info = call->info;
  const sema::Type* f_type = call->args[0].value->type;
  if (!info || !f_type || f_type->kind != sema::Type::Kind::Function) return {};
  if (!info->lift_dims.empty()) {
    Unsupported(call->span, "a lifted jvp or vjp");
    return {};
  }
  const sema::Callable* f = Bound(f_type->callable);
  // jvp or vjp of a float-generic function: at its primals' float type.
  std::optional<sema::ScalarKind> kind;
  if (f->kind == sema::Callable::Kind::Fn && f->fn->signature.float_generic) {
    const sema::Signature& signature = f->fn->signature;
    std::vector<const sema::Type*> primal_types;
    for (size_t i = 1; i < call->args.size(); ++i)
      primal_types.push_back(call->args[i].value->type);
    if (builtin == sema::Builtin::Jvp) {
      // jvp(f, primals, tangents): a tuple of primals for several params.
      const sema::Type* primals = call->args[1].value->type;
      primal_types = signature.params.size() == 1 ||
                             primals->kind != sema::Type::Kind::Tuple
                         ? std::vector<const sema::Type*>{primals}
                         : primals->elements;
    }
    kind = FloatKindOfTypes(signature, primal_types, float_kind_);
  }
  auto float_scope = ScopedFloatKind(kind);
  DimSubst sizes;
  if (const sema::Signature* signature = SignatureOf(f))
    for (size_t k = 0;
         k < signature->size_params.size() && k < info->size_args.size(); ++k)
      sizes[signature->size_params[k]] = DimOf(info->size_args[k]);
  Wrapped wrapped = WrapCallable(f, call->span);
  if (!wrapped.function) return {};
  std::vector<const ir::Dim*> dims = WrappedDims(wrapped, f, sizes);
  std::vector<ir::Value*> captured = CaptureOperands(wrapped);

  if (builtin == sema::Builtin::Jvp) {
    Leaves primals = Expr(call->args[1].value);
    // Tangents of integer leaves (inside a struct) are not passed.
    Leaves tangents;
    for (ir::Value* leaf : Expr(call->args[2].value))
      if (ir::IsFloat(leaf->type.elem)) tangents.push_back(leaf);
    SetLoc(call->span);
    std::vector<ir::Value*> operands = primals;
    operands.insert(operands.end(), captured.begin(), captured.end());
    operands.insert(operands.end(), tangents.begin(), tangents.end());
    // Captured values are constants: they take no tangent (not a zero one).
    std::vector<bool> wrt(wrapped.function->params.size(), false);
    std::fill_n(wrt.begin(), std::min(primals.size(), wrt.size()), true);
    ir::Function* derived = DerivativeOf(
        wrapped.function, ir::Derivative::Mode::Jvp, std::move(wrt), false);
    Leaves results = CallDerivative(derived, operands, dims);
    // The primal results, then the output tangent's float leaves: the
    // tangent is of the output's tangent type (a struct keeps its integer
    // fields, as zeros).
    const sema::Type* output = call->type->elements[0];
    size_t primal_leaves = Flatten(output).size();
    if (results.size() < primal_leaves) return {};  // a failed call
    Leaves tangent =
        ExpandTangent(Leaves(results.begin() + primal_leaves, results.end()),
                      output, DimSubst());
    results.resize(primal_leaves);
    results.insert(results.end(), tangent.begin(), tangent.end());
    return results;
  }
  // vjp(f, x…): the primal values now; the pullback remembers the arguments.
  std::vector<ir::Value*> operands;
  std::vector<const sema::Type*> arg_types;
  for (size_t i = 1; i < call->args.size(); ++i) {
    Leaves leaves = Expr(call->args[i].value);
    operands.insert(operands.end(), leaves.begin(), leaves.end());
    arg_types.push_back(call->args[i].value->type);
  }
  size_t param_leaves = operands.size();
  operands.insert(operands.end(), captured.begin(), captured.end());
  SetLoc(call->span);
  ir::Op* primal = EmitCall(wrapped.function, operands, dims);
  const sema::Callable* pullback = call->type->elements[1]->callable;
  PullbackInfo remembered{wrapped,      operands, dims,
                          param_leaves, sizes,    std::move(arg_types)};
  pullbacks_[pullback] = std::move(remembered);
  return Leaves(primal->results.begin(), primal->results.end());
}

}  // namespace delta::lower

namespace delta::lower {

Leaves Lowerer::CallLiftedWithRule(
    const sema::Callable* callable, const sema::FnInfo* fn,
    const std::vector<const sema::DimInfo*>& size_args,
    const std::vector<Leaves>& args,
    const std::vector<const sema::Type*>& arg_types, const sema::CallInfo* info,
    const sema::Type* result, Span span) {
  ir::Function* rule = FunctionFor(fn->custom_vjp);
  // Both new functions take the enclosing function's dims as sizes.
  std::vector<const sema::DimInfo*> outer;
  for (auto [dim, ir_dim] : local_dims_) outer.push_back(dim);
  std::sort(outer.begin(), outer.end(),
            [](const sema::DimInfo* a, const sema::DimInfo* b) {
              return a->order < b->order;
            });
  std::string suffix = ".lifted." + std::to_string(lifted_rules_++);
  ir::Function* lifted = module_->AddFunction(FunctionFor(fn)->name + suffix);
  ir::Function* lifted_rule = module_->AddFunction(rule->name + suffix);
  auto add_sizes = [&](ir::Function* function) {
    DimSubst dims;
    for (const sema::DimInfo* dim : outer) {
      ir::Value* size = function->NewValue(
          ir::Type{ir::ElemKind::I64, nullptr, {}}, dim->name.str());
      function->size_params.push_back(size);
      dims[dim] = function->NewDim(dim->name.str(), dim->constant_size, size);
    }
    return dims;
  };
  auto add_param = [](ir::Function* function, ir::Type type) {
    return function->AddParam(std::move(type));
  };
  DimSubst lifted_dims = add_sizes(lifted);
  DimSubst rule_dims = add_sizes(lifted_rule);

  // The lifted function: the map of the call, in a function of its own.
  std::vector<Leaves> lifted_args;
  for (const sema::Type* type : arg_types) {
    Leaves leaves;
    for (ir::Type leaf : Flatten(type, &lifted_dims))
      leaves.push_back(add_param(lifted, std::move(leaf)));
    lifted_args.push_back(std::move(leaves));
  }
  lifted->result_types = Flatten(result, &lifted_dims);
  lifted->custom_vjp = lifted_rule;
  ir::Builder* saved_builder = builder_;
  auto saved_dims = local_dims_;
  {
    ir::Builder builder(lifted);
    builder_ = &builder;
    local_dims_.clear();
    for (auto [from, to] : lifted_dims) local_dims_[from] = to;
    DimSubst sizes;
    for (size_t k = 0; k < fn->signature.size_params.size(); ++k)
      sizes[fn->signature.size_params[k]] = DimOf(size_args[k]);
    SetLoc(span);
    builder.Return(
        LiftedMap(callable, lifted_args, arg_types, info, result, sizes, span));
  }

  // Its rule: the rule mapped over the same dims, each cotangent summed over
  // the dims its argument did not have.
  {
    ir::Builder builder(lifted_rule);
    builder_ = &builder;
    local_dims_.clear();
    for (auto [from, to] : rule_dims) local_dims_[from] = to;
    std::vector<ir::Value*> x, y, dy;
    std::vector<ir::Type> cotangent_types;
    for (const sema::Type* type : arg_types)
      for (ir::Type leaf : Flatten(type, &rule_dims)) {
        if (ir::IsFloat(leaf.elem)) cotangent_types.push_back(leaf);
        x.push_back(add_param(lifted_rule, std::move(leaf)));
      }
    std::vector<ir::Type> result_types = Flatten(result, &rule_dims);
    for (const ir::Type& leaf : result_types)
      y.push_back(add_param(lifted_rule, leaf));
    for (const ir::Type& leaf : result_types)
      if (ir::IsFloat(leaf.elem)) dy.push_back(add_param(lifted_rule, leaf));
    lifted_rule->result_types = cotangent_types;
    ir::DimList lift = DimsOf(info->lift_dims);
    std::vector<ir::Type> mapped;
    for (const ir::Type& type : cotangent_types)
      mapped.push_back(type.WithDims(type.dims.Union(lift)));
    SetLoc(span);
    ir::Op* map = builder.Create(ir::OpKind::Map, {}, mapped);
    map->dims.assign(lift.begin(), lift.end());
    {
      ir::InsertionGuard guard(builder);
      ir::Block* body = builder.AddRegion(map, ir::IndexTypes(lift));
      builder.SetInsertionBlock(body);
      // Each value at this lane: gathered at the lifted dims it has.
      auto at_lane = [&](ir::Value* value) {
        std::vector<ir::Value*> indices;
        for (size_t k = 0; k < lift.size(); ++k)
          if (value->type.dims.Contains(lift[k]))
            indices.push_back(body->args[k]);
        return indices.empty() ? value : builder.Gather(value, indices);
      };
      std::vector<ir::Value*> operands;
      for (auto* group : {&x, &y, &dy})
        for (ir::Value* value : *group) operands.push_back(at_lane(value));
      std::vector<const ir::Dim*> dims;
      for (size_t k = 0; k < fn->signature.size_params.size(); ++k)
        dims.push_back(DimOf(size_args[k]));
      ir::Op* call = EmitCall(rule, operands, dims);
      builder.Yield(
          std::vector<ir::Value*>(call->results.begin(), call->results.end()));
    }
    std::vector<ir::Value*> cotangents;
    for (size_t j = 0; j < cotangent_types.size(); ++j) {
      ir::Value* value = map->results[j];
      ir::DimList extra = value->type.dims.Minus(cotangent_types[j].dims);
      if (!extra.empty())
        value = builder.Reduce(ir::ReduceKind::Sum, value, extra);
      cotangents.push_back(value);
    }
    builder.Return(cotangents);
  }
  builder_ = saved_builder;
  local_dims_ = std::move(saved_dims);

  // The call of the lifted function.
  std::vector<ir::Value*> operands;
  for (const Leaves& arg : args)
    operands.insert(operands.end(), arg.begin(), arg.end());
  std::vector<const ir::Dim*> dims;
  for (const sema::DimInfo* dim : outer) dims.push_back(DimOf(dim));
  SetLoc(span);
  ir::Op* call = EmitCall(lifted, operands, dims);
  return Leaves(call->results.begin(), call->results.end());
}

}  // namespace delta::lower

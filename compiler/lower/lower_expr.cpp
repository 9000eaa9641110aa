// Lowering of expressions: operators, indexing, structs, control flow,
// comprehensions and calls (with lifting made explicit as `map`).
#include <llvm/ADT/ScopeExit.h>

#include <cstdlib>

#include "compiler/lower/lowerer.h"

namespace delta::lower {
namespace {

// How many leaves a value of `type` has; needs no dims.
size_t CountLeaves(const sema::Type* type) {
  switch (type->kind) {
    case sema::Type::Kind::Tuple: {
      size_t count = 0;
      for (const sema::Type* element : type->elements)
        count += CountLeaves(element);
      return count;
    }
    case sema::Type::Kind::Struct: {
      size_t count = 0;
      for (const sema::Type* field : type->struct_info->field_types)
        count += CountLeaves(field);
      return count;
    }
    case sema::Type::Kind::Function:
    case sema::Type::Kind::Error:
      return 0;
    default:
      return 1;
  }
}

ir::OpKind BinaryOpKind(ast::BinaryOp op) {
  using Op = ast::BinaryOp;
  switch (op) {
    case Op::Add:
      return ir::OpKind::Add;
    case Op::Sub:
      return ir::OpKind::Sub;
    case Op::Mul:
      return ir::OpKind::Mul;
    case Op::Div:
      return ir::OpKind::Div;
    case Op::Rem:
      return ir::OpKind::Rem;
    case Op::Pow:
      return ir::OpKind::Pow;
    case Op::Eq:
      return ir::OpKind::Eq;
    case Op::Ne:
      return ir::OpKind::Ne;
    case Op::Lt:
      return ir::OpKind::Lt;
    case Op::Le:
      return ir::OpKind::Le;
    case Op::Gt:
      return ir::OpKind::Gt;
    case Op::Ge:
      return ir::OpKind::Ge;
    case Op::And:
      return ir::OpKind::And;
    case Op::Or:
      return ir::OpKind::Or;
  }
  return ir::OpKind::Add;
}

Leaves Slice(const Leaves& leaves, size_t begin, size_t count) {
  if (begin + count > leaves.size()) return {};
  return Leaves(leaves.begin() + begin, leaves.begin() + begin + count);
}

// The signature that sema solved a call against.
const sema::Signature* SignatureOf(const sema::Callable* callable) {
  if (callable->kind == sema::Callable::Kind::Fn)
    return &callable->fn->signature;
  return callable->signature.get();
}

}  // namespace

Leaves Lowerer::Expr(const ast::Expr* expr) {
  SetLoc(expr->span);
  ir::Builder& b = *builder_;
  switch (expr->kind) {
    case ast::Expr::Kind::IntLit: {
      auto* lit = llvm::cast<ast::IntLitExpr>(expr);
      ir::Type type = LeafType(expr->type);
      if (ir::IsFloat(type.elem))
        return {b.FloatConst(type.elem, static_cast<double>(lit->value))};
      return {b.IntConst(type.elem, static_cast<int64_t>(lit->value))};
    }
    case ast::Expr::Kind::FloatLit: {
      auto* lit = llvm::cast<ast::FloatLitExpr>(expr);
      ir::Type type = LeafType(expr->type);
      // Round the written digits once, to the literal's own type.
      double value =
          type.elem == ir::ElemKind::F32
              ? static_cast<double>(std::strtof(lit->text.c_str(), nullptr))
              : std::strtod(lit->text.c_str(), nullptr);
      return {b.FloatConst(type.elem, value)};
    }
    case ast::Expr::Kind::BoolLit:
      return {b.BoolConst(llvm::cast<ast::BoolLitExpr>(expr)->value)};
    case ast::Expr::Kind::Lambda:
      // Its body is lowered where it is called, perhaps inside a callee
      // with another `T`: remember the one in force here.
      lambda_float_kinds_[llvm::cast<ast::LambdaExpr>(expr)] = float_kind_;
      return {};
    case ast::Expr::Kind::StringLit:
      return {};
    case ast::Expr::Kind::Name: {
      const sema::Symbol* symbol = llvm::cast<ast::NameExpr>(expr)->symbol;
      if (!symbol || symbol->kind != sema::Symbol::Kind::Value) return {};
      if (symbol->module_let) return CallModuleLet(symbol);
      auto it = values_.find(symbol);
      if (it == values_.end()) return {};
      return it->second;
    }
    case ast::Expr::Kind::Unary: {
      auto* unary = llvm::cast<ast::UnaryExpr>(expr);
      Leaves operand = Expr(unary->operand);
      SetLoc(expr->span);
      ir::OpKind kind =
          unary->op == ast::UnaryOp::Neg ? ir::OpKind::Neg : ir::OpKind::Not;
      Leaves result;
      for (ir::Value* leaf : operand) result.push_back(b.Unary(kind, leaf));
      return result;
    }
    case ast::Expr::Kind::Binary: {
      auto* binary = llvm::cast<ast::BinaryExpr>(expr);
      bool logic =
          binary->op == ast::BinaryOp::And || binary->op == ast::BinaryOp::Or;
      if (logic && expr->type->dims.empty()) {
        // Scalar && and || short-circuit: the right side runs only if needed.
        ir::Value* lhs = Expr(binary->lhs).front();
        SetLoc(expr->span);
        ir::Op* op = b.Create(ir::OpKind::If, {lhs},
                              {ir::Type{ir::ElemKind::Bool, nullptr, {}}});
        ir::InsertionGuard guard(b);
        ir::Block* then_block = b.AddRegion(op, {});
        ir::Block* else_block = b.AddRegion(op, {});
        bool is_and = binary->op == ast::BinaryOp::And;
        b.SetInsertionBlock(is_and ? then_block : else_block);
        b.Yield({Expr(binary->rhs).front()});
        b.SetInsertionBlock(is_and ? else_block : then_block);
        b.Yield({b.BoolConst(!is_and)});
        return {op->result()};
      }
      Leaves lhs = Expr(binary->lhs);
      Leaves rhs = Expr(binary->rhs);
      SetLoc(binary->op_span);
      return Leafwise(BinaryOpKind(binary->op), lhs, rhs);
    }
    case ast::Expr::Kind::Call:
      return Call(llvm::cast<ast::CallExpr>(expr));
    case ast::Expr::Kind::Index: {
      auto* index = llvm::cast<ast::IndexExpr>(expr);
      if (index->is_size_binding) return {};
      Leaves base = Expr(index->base);
      std::vector<ir::Value*> indices;
      for (const ast::IndexEntry& entry : index->entries) {
        ir::Value* value = Expr(entry.value).front();
        SetLoc(entry.value->span);
        if (value->type.elem != ir::ElemKind::Index) {
          // `x[d: k]` with an integer: checked against size(d).
          if (value->type.elem != ir::ElemKind::I64)
            value = b.Convert(value, ir::ElemKind::I64);
          const ir::Dim* target = DimOf(entry.dim_info);
          value = b.ToIndex(target, value);
        }
        indices.push_back(value);
      }
      SetLoc(expr->span);
      Leaves result;
      for (ir::Value* leaf : base) result.push_back(b.Gather(leaf, indices));
      return result;
    }
    case ast::Expr::Kind::Field: {
      auto* field = llvm::cast<ast::FieldExpr>(expr);
      if (field->module_member) {
        if (field->module_member->kind != sema::Symbol::Kind::Value) return {};
        if (field->module_member->module_let)
          return CallModuleLet(field->module_member);
        return {};
      }
      Leaves base = Expr(field->base);
      const sema::Type* type = field->base->type;
      const sema::StructInfo* info = type->struct_info;
      size_t offset = 0;
      int index = info->FieldIndex(field->field.name);
      for (int i = 0; i < index; ++i)
        offset += CountLeaves(info->field_types[i]);
      return Slice(base, offset, CountLeaves(info->field_types[index]));
    }
    case ast::Expr::Kind::TupleIndex: {
      auto* access = llvm::cast<ast::TupleIndexExpr>(expr);
      Leaves base = Expr(access->base);
      const sema::Type* type = access->base->type;
      size_t offset = 0;
      for (uint32_t i = 0; i < access->index; ++i)
        offset += CountLeaves(type->elements[i]);
      return Slice(base, offset, CountLeaves(type->elements[access->index]));
    }
    case ast::Expr::Kind::Tuple: {
      Leaves result;
      for (const ast::Expr* element :
           llvm::cast<ast::TupleExpr>(expr)->elements) {
        Leaves leaves = Expr(element);
        result.insert(result.end(), leaves.begin(), leaves.end());
      }
      return result;
    }
    case ast::Expr::Kind::StructLit: {
      auto* lit = llvm::cast<ast::StructLitExpr>(expr);
      const sema::StructInfo* info = expr->type->struct_info;
      std::vector<Leaves> fields(info->field_names.size());
      std::vector<bool> given(info->field_names.size(), false);
      for (const ast::FieldInit& init : lit->fields) {
        int i = info->FieldIndex(init.name.name);
        fields[i] = Expr(init.value);
        given[i] = true;
      }
      Leaves base;
      if (lit->base) base = Expr(lit->base);
      Leaves result;
      size_t offset = 0;
      for (size_t i = 0; i < fields.size(); ++i) {
        size_t count = CountLeaves(info->field_types[i]);
        Leaves part = given[i] ? fields[i] : Slice(base, offset, count);
        result.insert(result.end(), part.begin(), part.end());
        offset += count;
      }
      SetLoc(expr->span);
      return BroadcastTo(result, Flatten(expr->type));
    }
    case ast::Expr::Kind::ArrayLit:
      return ArrayLit(llvm::cast<ast::ArrayLitExpr>(expr));
    case ast::Expr::Kind::Block:
      return Block(llvm::cast<ast::BlockExpr>(expr));
    case ast::Expr::Kind::If: {
      auto* if_expr = llvm::cast<ast::IfExpr>(expr);
      ir::Value* condition = Expr(if_expr->condition).front();
      SetLoc(expr->span);
      std::vector<ir::Type> types = Flatten(expr->type);
      ir::Op* op = b.Create(ir::OpKind::If, {condition}, types);
      ir::InsertionGuard guard(b);
      b.SetInsertionBlock(b.AddRegion(op, {}));
      b.Yield(BroadcastTo(Block(if_expr->then_block), types));
      b.SetInsertionBlock(b.AddRegion(op, {}));
      Leaves otherwise;
      if (if_expr->else_branch) otherwise = Expr(if_expr->else_branch);
      b.Yield(BroadcastTo(otherwise, types));
      return Leaves(op->results.begin(), op->results.end());
    }
    case ast::Expr::Kind::Loop: {
      auto* loop = llvm::cast<ast::LoopExpr>(expr);
      std::vector<ir::Type> types = Flatten(expr->type);
      Leaves init = BroadcastTo(Expr(loop->init), types);
      SetLoc(expr->span);
      if (loop->form == ast::LoopExpr::Form::While) {
        ir::Op* op = b.Create(ir::OpKind::While, init, types);
        ir::InsertionGuard guard(b);
        ir::Block* cond = b.AddRegion(op, types);
        b.SetInsertionBlock(cond);
        BindPattern(loop->state, Leaves(cond->args.begin(), cond->args.end()));
        b.Yield({Expr(loop->condition).front()});
        ir::Block* body = b.AddRegion(op, types);
        b.SetInsertionBlock(body);
        BindPattern(loop->state, Leaves(body->args.begin(), body->args.end()));
        b.Yield(BroadcastTo(Block(loop->body), types));
        return Leaves(op->results.begin(), op->results.end());
      }
      std::vector<ir::Value*> operands;
      ir::Type iterator{ir::ElemKind::I64, nullptr, {}};
      const ir::Dim* dim = nullptr;
      if (loop->form == ast::LoopExpr::Form::ForRange) {
        operands.push_back(Expr(loop->range_lo).front());
        operands.push_back(Expr(loop->range_hi).front());
      } else {
        dim = DimOf(loop->iterator->type->index_dim);
        operands.push_back(b.IntConst(ir::ElemKind::I64, 0));
        operands.push_back(b.Size(dim));
        iterator = ir::Type{ir::ElemKind::Index, dim, {}};
      }
      operands.insert(operands.end(), init.begin(), init.end());
      SetLoc(expr->span);
      ir::Op* op = b.Create(ir::OpKind::Loop, operands, types);
      if (dim) op->dims = {dim};
      ir::InsertionGuard guard(b);
      std::vector<ir::Type> arg_types = {iterator};
      arg_types.insert(arg_types.end(), types.begin(), types.end());
      ir::Block* body = b.AddRegion(op, arg_types);
      b.SetInsertionBlock(body);
      BindPattern(loop->iterator, {body->args[0]});
      BindPattern(loop->state,
                  Leaves(body->args.begin() + 1, body->args.end()));
      b.Yield(BroadcastTo(Block(loop->body), types));
      return Leaves(op->results.begin(), op->results.end());
    }
    case ast::Expr::Kind::For: {
      auto* for_expr = llvm::cast<ast::ForExpr>(expr);
      ir::DimList dims;
      for (const ast::ForBinding& binding : for_expr->bindings)
        dims.Insert(DimOf(binding.variable->type->index_dim));
      ir::Op* op = b.Create(ir::OpKind::Map, {}, Flatten(expr->type));
      op->dims.assign(dims.begin(), dims.end());
      std::vector<ir::Type> arg_types;
      for (const ir::Dim* dim : dims)
        arg_types.push_back(ir::Type{ir::ElemKind::Index, dim, {}});
      ir::InsertionGuard guard(b);
      ir::Block* body = b.AddRegion(op, arg_types);
      b.SetInsertionBlock(body);
      for (const ast::ForBinding& binding : for_expr->bindings) {
        int position = dims.IndexOf(DimOf(binding.variable->type->index_dim));
        BindPattern(binding.variable, {body->args[position]});
      }
      std::vector<ir::Type> element_types = Flatten(for_expr->body->type);
      b.Yield(BroadcastTo(Block(for_expr->body), element_types));
      return Leaves(op->results.begin(), op->results.end());
    }
  }
  return {};
}

// See Note [Array literals as selects] in docs/internals/lowering.md.
Leaves Lowerer::Leafwise(ir::OpKind kind, const Leaves& a, const Leaves& b) {
  Leaves result;
  size_t count = std::max(a.size(), b.size());
  for (size_t i = 0; i < count; ++i) {
    // A leaf combined with a struct or tuple broadcasts over its leaves.
    ir::Value* x = a.size() == count ? a[i] : a.front();
    ir::Value* y = b.size() == count ? b[i] : b.front();
    result.push_back(builder_->Binary(kind, x, y));
  }
  return result;
}

Leaves Lowerer::ArrayLit(const ast::ArrayLitExpr* literal) {
  ir::Builder& b = *builder_;
  std::vector<Leaves> elements;
  for (const ast::Expr* element : literal->elements)
    elements.push_back(Expr(element));
  SetLoc(literal->span);
  const int64_t count = static_cast<int64_t>(elements.size());
  const ir::Dim* dim = DimOf(literal->dim_info);
  // Over a dim whose size is known only at run time, the literal is built
  // over a dim of its own and renamed, which checks the sizes.
  const ir::Dim* over = dim;
  if (!dim->constant) {
    ir::Value* size = b.IntConst(ir::ElemKind::I64, count);
    ir::Dim* own = b.function()->NewDim(dim->name + "_literal", count, size);
    b.DimDef(own, size);
    over = own;
  }
  Leaves result = elements.back();
  if (count > 1) {
    // position = i64(iota over k); leaf = select(position == i, e_i, …).
    ir::Value* position = b.Convert(b.Iota(over), ir::ElemKind::I64);
    for (int64_t i = count - 1; i-- > 0;) {
      ir::Value* here =
          b.Binary(ir::OpKind::Eq, position, b.IntConst(ir::ElemKind::I64, i));
      for (size_t leaf = 0; leaf < result.size(); ++leaf)
        result[leaf] = b.Select(here, elements[i][leaf], result[leaf]);
    }
  }
  std::vector<ir::Type> types = Flatten(literal->type);
  for (size_t leaf = 0; leaf < result.size() && leaf < types.size(); ++leaf) {
    ir::DimList dims = types[leaf].dims.Minus({dim});
    dims.Insert(over);
    result[leaf] = b.Broadcast(result[leaf], dims);
    if (over != dim) result[leaf] = b.Rename(result[leaf], over, dim);
  }
  return result;
}

Leaves Lowerer::CallModuleLet(const sema::Symbol* symbol) {
  ir::Function* let = ModuleLetFunction(symbol);
  ir::Op* call = builder_->Create(ir::OpKind::Call, {}, let->result_types);
  call->callee = let;
  return Leaves(call->results.begin(), call->results.end());
}

Leaves Lowerer::Call(const ast::CallExpr* call) {
  ir::Builder& b = *builder_;
  if (auto* name = llvm::dyn_cast<ast::NameExpr>(call->callee);
      name && name->symbol) {
    if (name->symbol->kind == sema::Symbol::Kind::Builtin)
      return Builtin(call, name->symbol->builtin);
    // `T(x)`: a conversion to the call's type, as f32(x) is.
    if (name->symbol->kind == sema::Symbol::Kind::TypeParam)
      return Builtin(call, sema::Builtin::ToF32);
    if (name->symbol->kind == sema::Symbol::Kind::Dim) {
      ir::Value* k = Expr(call->args[0].value).front();
      SetLoc(call->span);
      if (k->type.elem != ir::ElemKind::I64)
        k = b.Convert(k, ir::ElemKind::I64);
      return {b.ToIndex(DimOf(name->symbol->dim), k)};
    }
  }
  const sema::Type* callee_type = call->callee->type;
  if (!callee_type || callee_type->kind != sema::Type::Kind::Function ||
      !call->info)
    return {};
  Expr(call->callee);  // a transformed callee may need its arguments lowered
  std::vector<Leaves> args;
  std::vector<const sema::Type*> arg_types;
  for (const ast::Arg& arg : call->args) {
    args.push_back(Expr(arg.value));
    arg_types.push_back(arg.value->type);
  }
  SetLoc(call->span);
  return CallCallable(callee_type->callable, args, arg_types, call->info,
                      call->type, call->span);
}

namespace {

// Whether `fn` has a parameter of function type.
bool TakesFunctions(const sema::FnInfo& fn) {
  return llvm::any_of(fn.signature.params, [](const sema::Type* type) {
    return type->kind == sema::Type::Kind::Function;
  });
}

}  // namespace

Leaves Lowerer::CallCallable(const sema::Callable* callable,
                             const std::vector<Leaves>& args,
                             const std::vector<const sema::Type*>& arg_types,
                             const sema::CallInfo* info,
                             const sema::Type* result, Span span) {
  callable = Bound(callable);
  DimSubst sizes;
  size_t type_depth = type_args_.size();
  auto restore = llvm::make_scope_exit([&] { type_args_.resize(type_depth); });
  // The callee's `T` for the time of the call.
  auto float_scope = ScopedFloatKind(info ? info->float_arg : std::nullopt);
  if (const sema::Signature* signature = SignatureOf(callable)) {
    for (size_t k = 0;
         k < signature->size_params.size() && k < info->size_args.size(); ++k)
      sizes[signature->size_params[k]] = DimOf(info->size_args[k]);
    for (size_t k = 0;
         k < signature->type_params.size() && k < info->type_args.size(); ++k)
      type_args_.emplace_back(signature->type_params[k]->type_param,
                              info->type_args[k]);
  }
  if (info->lift_dims.empty())
    return CallUnlifted(callable, args, arg_types, sizes, span, info);
  // `f[d: k](x)` lifted is f's call too: its rule applies, with the sizes
  // the binding gives (before, the rule was dropped and reverse mode
  // differentiated f's body).
  const sema::Callable* target = callable;
  std::vector<const sema::DimInfo*> size_args = info->size_args;
  if (callable->kind == sema::Callable::Kind::SizeBound &&
      callable->inner->kind == sema::Callable::Kind::Fn) {
    target = callable->inner;
    size_args.clear();
    for (auto [param, dim] : callable->bindings) size_args.push_back(dim);
  }
  if (target->kind == sema::Callable::Kind::Fn && target->fn->custom_vjp)
    return CallLiftedWithRule(callable, target->fn, size_args, args, arg_types,
                              info, result, span);
  return LiftedMap(callable, args, arg_types, info, result, sizes, span);
}

Leaves Lowerer::LiftedMap(const sema::Callable* callable,
                          const std::vector<Leaves>& args,
                          const std::vector<const sema::Type*>& arg_types,
                          const sema::CallInfo* info, const sema::Type* result,
                          const DimSubst& sizes, Span span) {
  // A lifted call: map over the extra dims, indexing each argument at the
  // extra dims it has (section 4.4 of the contract).
  ir::Builder& b = *builder_;
  ir::DimList lift = DimsOf(info->lift_dims);
  std::vector<ir::Type> types = Flatten(result);
  ir::Op* op = b.Create(ir::OpKind::Map, {}, types);
  op->dims.assign(lift.begin(), lift.end());
  ir::InsertionGuard guard(b);
  ir::Block* body = b.AddRegion(op, ir::IndexTypes(lift));
  b.SetInsertionBlock(body);
  std::vector<Leaves> inner_args;
  for (size_t i = 0; i < args.size(); ++i) {
    ir::DimList extra = DimsOf(info->arg_extra_dims[i]);
    std::vector<ir::Value*> indices;
    for (const ir::Dim* dim : extra)
      indices.push_back(body->args[lift.IndexOf(dim)]);
    Leaves leaves;
    for (ir::Value* leaf : args[i])
      leaves.push_back(indices.empty() ? leaf : b.Gather(leaf, indices));
    inner_args.push_back(std::move(leaves));
  }
  Leaves results =
      CallUnlifted(callable, inner_args, arg_types, sizes, span, info);
  std::vector<ir::Type> element_types;
  for (const ir::Type& type : types)
    element_types.push_back(type.WithDims(type.dims.Minus(lift)));
  b.Yield(BroadcastTo(results, element_types));
  return Leaves(op->results.begin(), op->results.end());
}

Leaves Lowerer::CallUnlifted(const sema::Callable* callable,
                             const std::vector<Leaves>& args,
                             const std::vector<const sema::Type*>& arg_types,
                             const DimSubst& sizes, Span span,
                             const sema::CallInfo* info) {
  ir::Builder& b = *builder_;
  callable = Bound(callable);
  switch (callable->kind) {
    case sema::Callable::Kind::Fn: {
      const sema::FnInfo* fn = callable->fn;
      if (TakesFunctions(*fn) || !fn->signature.type_params.empty())
        return InlineCall(fn, args, arg_types, sizes, info);
      // A float-generic function passed as a value may be called where no
      // call of it bound `T` (a parameter of type fn(f64) -> f64): its
      // arguments tell.
      auto float_scope = ScopedFloatKind(ArgFloatKind(callable, args));
      ir::Function* function = FunctionFor(fn);
      std::vector<ir::Value*> operands;
      for (const Leaves& arg : args)
        operands.insert(operands.end(), arg.begin(), arg.end());
      // Arguments may be narrower than the parameters (a literal for an
      // array is impossible, but a scalar where the callee's leaf is lifted
      // is not): broadcast to the parameter types.
      std::vector<ir::Type> param_types;
      for (const sema::Type* param : fn->signature.params)
        for (ir::Type type : Flatten(param, &sizes))
          param_types.push_back(type);
      operands = BroadcastTo(operands, param_types);
      ir::Op* op = b.Create(ir::OpKind::Call, operands,
                            Flatten(fn->signature.result, &sizes));
      op->callee = function;
      for (const sema::DimInfo* param : fn->signature.size_params) {
        auto it = sizes.find(param);
        op->dims.push_back(it == sizes.end() ? DimOf(param) : it->second);
      }
      return Leaves(op->results.begin(), op->results.end());
    }
    case sema::Callable::Kind::SizeBound: {
      DimSubst inner = sizes;
      for (auto [param, dim] : callable->bindings) inner[param] = DimOf(dim);
      // `f[T: f64]`: the callee's `T`, for a result no argument tells.
      auto float_scope = ScopedFloatKind(callable->float_binding);
      return CallUnlifted(callable->inner, args, arg_types, inner, span, info);
    }
    case sema::Callable::Kind::Checkpoint: {
      // Kept as a call through AD and recomputed in the backward sweep.
      auto float_scope = ScopedFloatKind(ArgFloatKind(callable->inner, args));
      Wrapped wrapped = WrapCallable(callable->inner, span);
      if (!wrapped.function) return {};
      std::vector<ir::Value*> operands;
      for (const Leaves& arg : args)
        operands.insert(operands.end(), arg.begin(), arg.end());
      std::vector<ir::Value*> captured = CaptureOperands(wrapped);
      operands.insert(operands.end(), captured.begin(), captured.end());
      ir::Op* op = EmitCall(wrapped.function, operands,
                            WrappedDims(wrapped, callable->inner, sizes));
      op->checkpoint = true;
      return Leaves(op->results.begin(), op->results.end());
    }
    case sema::Callable::Kind::Lambda: {
      const ast::LambdaExpr* lambda = callable->lambda;
      auto it = lambda_float_kinds_.find(lambda);
      auto float_scope = ScopedFloatKind(it == lambda_float_kinds_.end()
                                             ? std::nullopt
                                             : std::optional(it->second));
      for (size_t i = 0; i < lambda->params.size() && i < args.size(); ++i)
        if (lambda->params[i].symbol)
          values_[lambda->params[i].symbol] = args[i];
      return Expr(lambda->body);
    }
    case sema::Callable::Kind::Vmap: {
      // vmap(f, over: d)(args) is f lifted over d.
      const ir::Dim* dim = DimOf(callable->over);
      std::vector<ir::Type> types;
      if (const sema::Signature* signature = SignatureOf(callable))
        types = Flatten(signature->result, &sizes);
      ir::Op* op = b.Create(ir::OpKind::Map, {}, types);
      op->dims = {dim};
      ir::InsertionGuard guard(b);
      ir::Block* body =
          b.AddRegion(op, {ir::Type{ir::ElemKind::Index, dim, {}}});
      b.SetInsertionBlock(body);
      std::vector<Leaves> inner_args;
      for (const Leaves& arg : args) {
        Leaves leaves;
        for (ir::Value* leaf : arg)
          leaves.push_back(leaf->type.dims.Contains(dim)
                               ? b.Gather(leaf, {body->args[0]})
                               : leaf);
        inner_args.push_back(std::move(leaves));
      }
      Leaves results = CallUnlifted(callable->inner, inner_args, arg_types,
                                    sizes, span, info);
      std::vector<ir::Type> element_types;
      for (const ir::Type& type : types)
        element_types.push_back(type.WithDims(type.dims.Minus({dim})));
      b.Yield(BroadcastTo(results, element_types));
      return Leaves(op->results.begin(), op->results.end());
    }
    case sema::Callable::Kind::Grad:
      return CallGrad(callable, args, sizes, span);
    case sema::Callable::Kind::Pullback:
      return CallPullback(callable, args, span);
    case sema::Callable::Kind::Builtin:
      Unsupported(span, "a builtin as a function value");
      return {};
    case sema::Callable::Kind::Param:
      Unsupported(span, "a parameter of function type outside its call");
      return {};
  }
  return {};
}

Leaves Lowerer::InlineCall(const sema::FnInfo* fn,
                           const std::vector<Leaves>& args,
                           const std::vector<const sema::Type*>& arg_types,
                           const DimSubst& sizes, const sema::CallInfo* info) {
  // The callee's dims and parameters, and what its function parameters
  // stand for, are the caller's for the time of the body.
  auto saved_dims = local_dims_;
  auto saved_params = bound_params_;
  for (const sema::DimInfo* param : fn->signature.size_params)
    local_dims_[param] = DimOf(param, &sizes);
  for (size_t i = 0; i < fn->decl->params.size() && i < args.size(); ++i) {
    const sema::Type* type = fn->signature.params[i];
    if (type->kind == sema::Type::Kind::Function) {
      const sema::Callable* passed =
          info && i < info->function_args.size() && info->function_args[i]
              ? info->function_args[i]
              : arg_types[i]->callable;
      bound_params_[type->callable] = Bound(passed);
    } else if (const sema::Symbol* symbol = fn->decl->params[i].symbol) {
      values_[symbol] = args[i];
    }
  }
  Leaves result =
      BroadcastTo(Block(fn->decl->body), Flatten(fn->signature.result, &sizes));
  local_dims_ = std::move(saved_dims);
  bound_params_ = std::move(saved_params);
  return result;
}

const sema::Callable* Lowerer::Bound(const sema::Callable* callable) {
  using Kind = sema::Callable::Kind;
  if (!callable || bound_params_.empty()) return callable;
  if (callable->kind == Kind::Param) {
    auto it = bound_params_.find(callable);
    return it == bound_params_.end() ? callable : it->second;
  }
  // A pullback is known by its own identity (pullbacks_).
  if (!callable->inner || callable->kind == Kind::Pullback) return callable;
  const sema::Callable* inner = Bound(callable->inner);
  if (inner == callable->inner) return callable;
  sema::Callable& copy = bound_callables_.emplace_back();
  copy.kind = callable->kind;
  copy.fn = callable->fn;
  copy.inner = inner;
  copy.with_value = callable->with_value;
  copy.wrt = callable->wrt;
  copy.wrt_is_tuple = callable->wrt_is_tuple;
  copy.over = callable->over;
  copy.bindings = callable->bindings;
  if (callable->signature)
    copy.signature = std::make_unique<sema::Signature>(*callable->signature);
  return &copy;
}

std::optional<sema::ScalarKind> FloatKindOfArgs(
    const sema::Signature& signature, const std::vector<Leaves>& args) {
  // Walks a parameter's type beside its argument's leaves.
  std::function<std::optional<ir::ElemKind>(const sema::Type*, const Leaves&,
                                            size_t&)>
      walk = [&](const sema::Type* type, const Leaves& leaves,
                 size_t& next) -> std::optional<ir::ElemKind> {
    if (type->kind == sema::Type::Kind::Tuple) {
      for (const sema::Type* element : type->elements)
        if (auto kind = walk(element, leaves, next)) return kind;
      return std::nullopt;
    }
    if (type->kind == sema::Type::Kind::Struct) {
      // `Dense[T, i, o]`: its fields' `T` is the function's.
      if (type->struct_info->float_generic &&
          type->struct_float == sema::ScalarKind::Float) {
        for (const sema::Type* field : type->struct_info->field_types)
          if (auto kind = walk(field, leaves, next)) return kind;
      } else {
        next += CountLeaves(type);
      }
      return std::nullopt;
    }
    if (!type->IsLeaf()) {
      // How many leaves a type parameter has is not known here: stop
      // looking in this parameter.
      next = leaves.size();
      return std::nullopt;
    }
    size_t at = next++;
    if (type->kind == sema::Type::Kind::Scalar &&
        type->scalar == sema::ScalarKind::Float && at < leaves.size())
      return leaves[at]->type.elem;
    return std::nullopt;
  };
  for (size_t i = 0; i < signature.params.size() && i < args.size(); ++i) {
    size_t next = 0;
    if (auto kind = walk(signature.params[i], args[i], next))
      return *kind == ir::ElemKind::F64 ? sema::ScalarKind::F64
                                        : sema::ScalarKind::F32;
  }
  return std::nullopt;
}

}  // namespace delta::lower

// Type checking of expressions other than calls (check_call.cpp),
// binary operators (check_operators.cpp) and indexing (check_index.cpp):
// literals, names, unary operators, fields, tuples, struct literals, if,
// loop, for and lambdas.
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/ScopeExit.h>

#include "compiler/sema/checker.h"

namespace delta::sema {

static const Type* CheckStructLit(Checker& checker, ast::StructLitExpr* lit,
                                  Context& context) {
  TypeContext& types = checker.types();
  // Resolve the struct name, possibly qualified by a module.
  const Symbol* symbol = nullptr;
  const ast::Ident& head = lit->path.front();
  if (lit->path.size() == 1) {
    symbol = context.scope->Lookup(head.name);
  } else if (const Symbol* module = context.scope->Lookup(head.name);
             module && module->kind == Symbol::Kind::Module) {
    if (!module->module) return types.Error();  // a failed import
    symbol = module->module->scope->LookupLocal(lit->path.back().name);
  }
  auto check_fields_only = [&]() {
    for (ast::FieldInit& field : lit->fields)
      checker.CheckExpr(field.value, context);
    if (lit->base) checker.CheckExpr(lit->base, context);
    return types.Error();
  };
  if (!symbol) {
    checker.ReportUnknown(lit->path.back(), context.scope, "struct");
    return check_fields_only();
  }
  if (symbol->kind != Symbol::Kind::Struct) {
    checker
        .Error(DiagKind::NotAType, lit->path.back().span,
               "`" + lit->path.back().name.str() + "` is not a struct")
        .Note(symbol->span, "declared here");
    return check_fields_only();
  }
  const StructInfo* info = symbol->struct_info;
  std::vector<ast::Expr*> by_field(info->field_names.size(), nullptr);
  bool ok = true;
  for (ast::FieldInit& field : lit->fields) {
    int i = info->FieldIndex(field.name.name);
    if (i < 0) {
      checker.Error(DiagKind::UnknownField, field.name.span,
                    "struct `" + info->decl->name.name.str() +
                        "` has no field `" + field.name.name.str() + "`" +
                        checker.FieldHint(info, field.name.name));
      ok = false;
    } else if (by_field[i]) {
      checker.Error(DiagKind::DuplicateField, field.name.span,
                    "field `" + field.name.name.str() + "` is given twice");
      ok = false;
    } else {
      by_field[i] = field.value;
    }
  }
  const Type* base = nullptr;
  if (lit->base) {
    base = checker.Resolve(checker.CheckExpr(lit->base, context));
    if (base->IsError()) return check_fields_only();
    if (base->kind != Type::Kind::Struct || base->struct_info != info) {
      checker.Error(DiagKind::TypeMismatch, lit->base->span,
                    "`..` needs a value of struct `" +
                        info->decl->name.name.str() + "`, found " +
                        checker.TypeString(base));
      return check_fields_only();
    }
  }
  for (size_t i = 0; i < by_field.size(); ++i) {
    if (!by_field[i] && !base) {
      checker.Error(DiagKind::MissingField, lit->span,
                    "struct literal leaves out field `" +
                        info->field_names[i].str() +
                        "`; give it, or start "
                        "from another value with `..base`");
      ok = false;
    }
  }
  if (!ok) return check_fields_only();
  // A struct literal is a call of the struct's constructor, lifted alike;
  // `..base` gives the fields left out, with the base's size arguments.
  Signature constructor;
  constructor.size_params = info->size_params;
  constructor.param_names = info->field_names;
  constructor.params = info->field_types;
  // With `T: float`, the fields choose `T` as a call's arguments do.
  constructor.float_generic = info->float_generic;
  constructor.result = types.Struct(
      info,
      std::vector<const DimInfo*>(info->size_params.begin(),
                                  info->size_params.end()),
      {}, info->float_generic ? ScalarKind::Float : ScalarKind::F32);
  DimMap base_args;
  for (size_t i = 0; base && i < info->size_params.size(); ++i)
    base_args[info->size_params[i]] = base->struct_args[i];
  // A written type gives `T` where the fields leave it open (`let d:
  // Dense[f64, i, o] = Dense { w: …0.0…, … }`), here and in nested literals.
  const Type* expected = checker.ExpectedStruct(lit);
  if (!expected || expected->kind != Type::Kind::Struct ||
      expected->struct_info != info || !info->float_generic)
    expected = nullptr;
  ScalarKind saved_default = checker.literals().float_default();
  auto restore_default = llvm::make_scope_exit(
      [&] { checker.literals().set_float_default(saved_default); });
  if (expected) {
    std::vector<const Type*> fields = checker.FieldTypes(expected);
    for (size_t i = 0; i < by_field.size(); ++i)
      checker.ExpectStruct(by_field[i], fields[i]);
  }
  std::vector<const Type*> arg_types;
  std::vector<Span> arg_spans;
  for (size_t i = 0; i < by_field.size(); ++i) {
    if (by_field[i]) {
      arg_types.push_back(checker.CheckExpr(by_field[i], context));
      arg_spans.push_back(by_field[i]->span);
    } else {
      arg_types.push_back(checker.Lift(checker.FieldTypes(base)[i], base->dims,
                                       lit->base->span));
      arg_spans.push_back(lit->base->span);
    }
  }
  if (expected) checker.literals().set_float_default(expected->struct_float);
  return checker.ApplySignature(constructor, arg_types, arg_spans, by_field,
                                base_args, info->decl->name.name, lit->span,
                                nullptr,
                                /*struct_literal=*/true);
}

static const Type* CheckLoop(Checker& checker, ast::LoopExpr* loop,
                             Context& context) {
  TypeContext& types = checker.types();
  const Type* state = checker.CheckExpr(loop->init, context);
  if (checker.ContainsFunction(state)) {
    checker.Error(DiagKind::FunctionValueMisuse, loop->init->span,
                  "loop state cannot hold a function");
    state = types.Error();
  }
  Context body_context = context;
  if (loop->form == ast::LoopExpr::Form::ForRange) {
    const Type* i64 = types.Scalar(ScalarKind::I64);
    checker.Expect(i64, checker.CheckExpr(loop->range_lo, context),
                   loop->range_lo->span, "range bounds are i64");
    checker.Expect(i64, checker.CheckExpr(loop->range_hi, context),
                   loop->range_hi->span, "range bounds are i64");
    checker.BindPattern(loop->iterator, i64, body_context);
  } else if (loop->form == ast::LoopExpr::Form::ForDim) {
    const DimInfo* dim = nullptr;
    if (auto* name = llvm::dyn_cast<ast::NameExpr>(loop->domain)) {
      dim = checker.ResolveDimName(name->name, context.scope);
      name->type = types.Unit();
    } else {
      checker.Error(DiagKind::NotADim, loop->domain->span,
                    "`loop … for i in D` iterates over a dim D or a range "
                    "lo..hi");
    }
    checker.BindPattern(loop->iterator, dim ? types.Index(dim) : types.Error(),
                        body_context);
  }
  checker.BindPattern(loop->state, state, body_context);
  if (loop->form == ast::LoopExpr::Form::While) {
    const Type* condition =
        checker.Resolve(checker.CheckExpr(loop->condition, body_context));
    if (!condition->IsError() && !condition->IsScalarOf(ScalarKind::Bool))
      checker.Error(DiagKind::NotScalarBool, loop->condition->span,
                    "a while condition must be a scalar bool, found " +
                        checker.TypeString(condition));
  }
  const Type* body = checker.CheckBlock(loop->body, body_context);
  Span span = loop->body->result ? loop->body->result->span : loop->body->span;
  checker.Expect(state, body, span,
                 "the loop body must give the state's type; loop state keeps "
                 "one type across iterations",
                 loop->body->result);
  return checker.Resolve(state);
}

const Type* Checker::CheckExpr(ast::Expr* expr, Context& context) {
  const Type* type = types().Error();
  switch (expr->kind) {
    case ast::Expr::Kind::IntLit: {
      auto* lit = llvm::cast<ast::IntLitExpr>(expr);
      switch (lit->suffix) {
        case ast::LitSuffix::I32:
          if (lit->value > INT32_MAX)
            Error(DiagKind::LiteralOutOfRange, expr->span,
                  "integer literal does not fit in i32");
          type = types().Scalar(ScalarKind::I32);
          break;
        case ast::LitSuffix::I64:
          type = types().Scalar(ScalarKind::I64);
          break;
        case ast::LitSuffix::F32:
          type = types().Scalar(ScalarKind::F32);
          break;
        case ast::LitSuffix::F64:
          type = types().Scalar(ScalarKind::F64);
          break;
        case ast::LitSuffix::None:
          type = types().LitVar(literals_.NewVar(/*is_float=*/false));
          int_literals_.push_back(lit);
          break;
      }
      if (lit->suffix == ast::LitSuffix::I64 &&
          lit->value > static_cast<uint64_t>(INT64_MAX))
        Error(DiagKind::LiteralOutOfRange, expr->span,
              "integer literal does not fit in i64");
      break;
    }
    case ast::Expr::Kind::FloatLit: {
      auto* lit = llvm::cast<ast::FloatLitExpr>(expr);
      if (lit->suffix == ast::LitSuffix::F64)
        type = types().Scalar(ScalarKind::F64);
      else if (lit->suffix == ast::LitSuffix::F32)
        type = types().Scalar(ScalarKind::F32);
      else if (lit->suffix == ast::LitSuffix::None)
        type = types().LitVar(literals_.NewVar(/*is_float=*/true));
      else
        Error(DiagKind::InvalidSuffix, expr->span,
              "a float literal cannot have an integer suffix");
      break;
    }
    case ast::Expr::Kind::BoolLit:
      type = types().Scalar(ScalarKind::Bool);
      break;
    case ast::Expr::Kind::StringLit:
      Error(DiagKind::BadBuiltinUse, expr->span,
            "a string literal may appear only as an argument of print");
      break;
    case ast::Expr::Kind::Name: {
      auto* name = llvm::cast<ast::NameExpr>(expr);
      const Symbol* symbol = context.scope->Lookup(name->name.name);
      if (!symbol) {
        ReportUnknown(name->name, context.scope, "name");
        break;
      }
      name->symbol = const_cast<Symbol*>(symbol);
      used_values_.insert(symbol);
      switch (symbol->kind) {
        case Symbol::Kind::Value:
          if (symbol->path_arg >= 0) {
            Error(DiagKind::NotAValue, name->span,
                  "`" + name->name.name.str() +
                      "` is a path from the command line, not a value; it "
                      "can only name the file of read_npy, write_npy or "
                      "npy_extent");
            break;
          }
          if (symbol->module_let && context.function)
            context.function->lets_used.push_back(symbol->module_let);
          else if (symbol->module_let && context.module_let)
            let_uses_[context.module_let].push_back(symbol->module_let);
          type = TypeOfValueSymbol(symbol);
          break;
        case Symbol::Kind::Function:
          if (context.function)
            context.function->callees.push_back(symbol->fn);
          else if (context.module_let)
            let_uses_[context.module_let].push_back(symbol->fn);
          if (CheckGenericUse(symbol->fn, expr))
            type = FunctionType(FnCallable(symbol->fn));
          break;
        case Symbol::Kind::Dim:
          Error(DiagKind::NotAValue, name->span,
                "dim `" + name->name.name.str() +
                    "` is not a value; use size(" + name->name.name.str() +
                    ") for its size");
          break;
        case Symbol::Kind::Builtin:
          Error(DiagKind::NotAValue, name->span,
                "builtin `" + name->name.name.str() +
                    "` can only be called; wrap it in a lambda to pass it "
                    "as a value");
          break;
        case Symbol::Kind::Struct:
          Error(DiagKind::NotAValue, name->span,
                "struct `" + name->name.name.str() +
                    "` is not a value; build one with " +
                    name->name.name.str() + " { … }");
          break;
        case Symbol::Kind::Module:
          Error(DiagKind::NotAValue, name->span,
                "module `" + name->name.name.str() +
                    "` is not a value; use one of its members: " +
                    name->name.name.str() + ".name");
          break;
        case Symbol::Kind::TypeParam:
          Error(
              DiagKind::NotAValue, name->span,
              "type parameter `" + name->name.name.str() + "` is not a value");
          break;
      }
      break;
    }
    case ast::Expr::Kind::Unary: {
      auto* unary = llvm::cast<ast::UnaryExpr>(expr);
      if (unary->op == ast::UnaryOp::Neg &&
          llvm::isa<ast::IntLitExpr>(unary->operand))
        negated_literals_.insert(unary->operand);
      const Type* operand = Resolve(CheckExpr(unary->operand, context));
      if (operand->IsError()) break;
      if (unary->op == ast::UnaryOp::Not) {
        if (operand->kind == Type::Kind::Scalar &&
            operand->scalar == ScalarKind::Bool)
          type = operand;
        else
          Error(DiagKind::BadOperand, unary->op_span,
                "`!` needs a bool, found " + TypeString(operand));
      } else if (operand->IsLeaf() && operand->kind != Type::Kind::Index &&
                 !(operand->kind == Type::Kind::Scalar &&
                   operand->scalar == ScalarKind::Bool)) {
        type = operand;
      } else if (!operand->IsLeaf() && operand->kind != Type::Kind::Function &&
                 IsFloatValued(operand)) {
        type = operand;
      } else {
        Error(DiagKind::BadOperand, unary->op_span,
              "`-` needs a number, found " + TypeString(operand));
      }
      break;
    }
    case ast::Expr::Kind::Binary: {
      auto* binary = llvm::cast<ast::BinaryExpr>(expr);
      const Type* lhs = CheckExpr(binary->lhs, context);
      const Type* rhs = CheckExpr(binary->rhs, context);
      type = CombineValues(*this, binary->op, lhs, rhs, binary->op_span);
      break;
    }
    case ast::Expr::Kind::Call:
      type = CheckCall(llvm::cast<ast::CallExpr>(expr), context);
      break;
    case ast::Expr::Kind::Index:
      type = CheckIndexExpr(*this, llvm::cast<ast::IndexExpr>(expr), context);
      break;
    case ast::Expr::Kind::Field: {
      auto* field = llvm::cast<ast::FieldExpr>(expr);
      if (auto* base_name = llvm::dyn_cast<ast::NameExpr>(field->base)) {
        const Symbol* symbol = context.scope->Lookup(base_name->name.name);
        if (symbol && symbol->kind == Symbol::Kind::Module) {
          base_name->symbol = const_cast<Symbol*>(symbol);
          base_name->type = types().Unit();
          if (!symbol->module) break;  // a failed import, already reported
          const Symbol* member =
              symbol->module->scope->LookupLocal(field->field.name);
          if (!member) {
            Error(DiagKind::UnknownMember, field->field.span,
                  "module `" + symbol->name.str() + "` has no member `" +
                      field->field.name.str() + "`");
            break;
          }
          field->module_member = const_cast<Symbol*>(member);
          if (member->kind == Symbol::Kind::Function) {
            if (CheckGenericUse(member->fn, expr))
              type = FunctionType(FnCallable(member->fn));
          } else if (member->kind == Symbol::Kind::Value) {
            type = TypeOfValueSymbol(member);
          } else {
            Error(DiagKind::NotAValue, field->field.span,
                  "`" + symbol->name.str() + "." + field->field.name.str() +
                      "` is not a value");
          }
          break;
        }
      }
      const Type* base = Resolve(CheckExpr(field->base, context));
      if (base->IsError()) break;
      if (base->kind != Type::Kind::Struct) {
        Error(DiagKind::NotAStruct, field->field.span,
              "field access `." + field->field.name.str() +
                  "` on a value of type " + TypeString(base) +
                  ", which is not a struct");
        break;
      }
      const StructInfo* info = base->struct_info;
      int index = info->FieldIndex(field->field.name);
      if (index < 0) {
        Error(DiagKind::UnknownField, field->field.span,
              "struct `" + info->decl->name.name.str() + "` has no field `" +
                  field->field.name.str() + "`" +
                  FieldHint(info, field->field.name));
        break;
      }
      type = Lift(FieldTypes(base)[index], base->dims, field->span);
      break;
    }
    case ast::Expr::Kind::TupleIndex: {
      auto* access = llvm::cast<ast::TupleIndexExpr>(expr);
      const Type* base = Resolve(CheckExpr(access->base, context));
      if (base->IsError()) break;
      if (base->kind != Type::Kind::Tuple) {
        Error(DiagKind::NotATuple, access->index_span,
              "`." + std::to_string(access->index) + "` needs a tuple, found " +
                  TypeString(base));
        break;
      }
      if (access->index >= base->elements.size()) {
        Error(DiagKind::TupleIndexOutOfRange, access->index_span,
              "tuple " + TypeString(base) + " has no element " +
                  std::to_string(access->index));
        break;
      }
      type = base->elements[access->index];
      break;
    }
    case ast::Expr::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (ast::Expr* element : llvm::cast<ast::TupleExpr>(expr)->elements)
        elements.push_back(CheckExpr(element, context));
      type = types().Tuple(std::move(elements));
      break;
    }
    case ast::Expr::Kind::StructLit:
      type =
          CheckStructLit(*this, llvm::cast<ast::StructLitExpr>(expr), context);
      break;
    case ast::Expr::Kind::ArrayLit:
      type = CheckArrayLit(*this, llvm::cast<ast::ArrayLitExpr>(expr), context);
      break;
    case ast::Expr::Kind::Block:
      type = CheckBlock(llvm::cast<ast::BlockExpr>(expr), context);
      break;
    case ast::Expr::Kind::If: {
      auto* if_expr = llvm::cast<ast::IfExpr>(expr);
      const Type* condition = Resolve(CheckExpr(if_expr->condition, context));
      if (!condition->IsError() && !condition->IsScalarOf(ScalarKind::Bool))
        Error(DiagKind::NotScalarBool, if_expr->condition->span,
              "an if condition must be a scalar bool, found " +
                  TypeString(condition) +
                  "; for a choice per element use where(c, a, b)");
      const Type* then_type = CheckBlock(if_expr->then_block, context);
      if (!if_expr->else_branch) {
        if (!Resolve(then_type)->IsUnit() && !then_type->IsError())
          Error(DiagKind::IfWithoutElse, if_expr->then_block->span,
                "an if without else must not have a value; this branch has "
                "type " +
                    TypeString(then_type));
        type = types().Unit();
        break;
      }
      const Type* else_type = CheckExpr(if_expr->else_branch, context);
      if (ContainsFunction(Resolve(then_type)) ||
          ContainsFunction(Resolve(else_type))) {
        Error(DiagKind::FunctionValueMisuse, if_expr->span,
              "a function cannot be chosen by a run-time if");
        break;
      }
      Expect(then_type, else_type, if_expr->else_branch->span,
             "both branches of an if have one type", if_expr->else_branch);
      type = then_type;
      break;
    }
    case ast::Expr::Kind::Loop:
      type = CheckLoop(*this, llvm::cast<ast::LoopExpr>(expr), context);
      break;
    case ast::Expr::Kind::For: {
      auto* for_expr = llvm::cast<ast::ForExpr>(expr);
      Context body_context = context;
      DimSet dims;
      bool ok = true;
      for (ast::ForBinding& binding : for_expr->bindings) {
        const DimInfo* dim = nullptr;
        if (auto ref = DimRefOf(binding.domain, context.scope)) {
          dim = ResolveDimName(*ref, context.scope);
          binding.domain->type = types().Unit();
        } else {
          Error(DiagKind::NotADim, binding.domain->span,
                "a comprehension ranges over a dim: for i in d { … }");
        }
        if (dim && !dims.Insert(dim)) {
          Error(DiagKind::DuplicateDim, binding.domain->span,
                "dim `" + dim->name.str() + "` is iterated twice");
          dim = nullptr;
        }
        ok &= dim != nullptr;
        BindPattern(binding.variable,
                    dim ? types().Index(dim) : types().Error(), body_context);
      }
      const Type* body = CheckBlock(for_expr->body, body_context);
      if (ContainsFunction(Resolve(body))) {
        Error(DiagKind::FunctionValueMisuse, for_expr->span,
              "a comprehension cannot build an array of functions");
        break;
      }
      type = ok ? Lift(body, dims, for_expr->span) : types().Error();
      break;
    }
    case ast::Expr::Kind::Lambda: {
      auto* lambda = llvm::cast<ast::LambdaExpr>(expr);
      Callable* callable = NewCallable(Callable::Kind::Lambda);
      callable->lambda = lambda;
      callable->lambda_scope = context.scope;
      callable->lambda_owner = context.function;
      callable->lambda_in_main = context.in_main;
      bool annotated = llvm::all_of(lambda->params,
                                    [](const ast::Param& p) { return p.type; });
      if (annotated) GetSignature(callable, nullptr, lambda->span);
      type = FunctionType(callable);
      break;
    }
  }
  expr->type = type;
  Record(&expr->type);
  NoteJointSizeParams(context.function, type);
  return type;
}

}  // namespace delta::sema

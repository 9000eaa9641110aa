// Type checking of expressions, statements and patterns (everything except
// calls, which live in check_call.cpp).
#include <llvm/ADT/STLExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {
namespace {

bool IsArithmetic(ast::BinaryOp op) {
  using Op = ast::BinaryOp;
  return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div ||
         op == Op::Rem || op == Op::Pow;
}

bool IsOrdering(ast::BinaryOp op) {
  using Op = ast::BinaryOp;
  return op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

bool IsEquality(ast::BinaryOp op) {
  return op == ast::BinaryOp::Eq || op == ast::BinaryOp::Ne;
}

const char* OpSpelling(ast::BinaryOp op) {
  using Op = ast::BinaryOp;
  switch (op) {
    case Op::Add:
      return "+";
    case Op::Sub:
      return "-";
    case Op::Mul:
      return "*";
    case Op::Div:
      return "/";
    case Op::Rem:
      return "%";
    case Op::Pow:
      return "^";
    case Op::Eq:
      return "==";
    case Op::Ne:
      return "!=";
    case Op::Lt:
      return "<";
    case Op::Le:
      return "<=";
    case Op::Gt:
      return ">";
    case Op::Ge:
      return ">=";
    case Op::And:
      return "&&";
    case Op::Or:
      return "||";
  }
  return "?";
}

}  // namespace

// The element kind two leaves share once literals are solved, or null.
const Type* UnifyLeafKinds(Checker& checker, const Type* a, const Type* b) {
  a = checker.Resolve(a);
  b = checker.Resolve(b);
  TypeContext& types = checker.types();
  LiteralSolver& literals = checker.literals();
  using K = Type::Kind;
  if (a->kind == K::LitVar && b->kind == K::LitVar) {
    literals.Merge(a->var, b->var);
    return types.LitVar(a->var);
  }
  if (a->kind == K::LitVar && b->kind == K::Scalar)
    return literals.Bind(a->var, b->scalar) ? types.Scalar(b->scalar) : nullptr;
  if (a->kind == K::Scalar && b->kind == K::LitVar)
    return literals.Bind(b->var, a->scalar) ? types.Scalar(a->scalar) : nullptr;
  if (a->kind != b->kind) return nullptr;
  if (a->kind == K::Scalar)
    return a->scalar == b->scalar ? types.Scalar(a->scalar) : nullptr;
  if (a->kind == K::Index)
    return a->index_dim == b->index_dim ? types.Index(a->index_dim) : nullptr;
  return nullptr;
}

// Makes a flexible literal a flexible float (for `^` and float builtins).
const Type* RequireFloatLeaf(Checker& checker, const Type* kind) {
  kind = checker.Resolve(kind);
  if (kind->kind == Type::Kind::LitVar) {
    if (!checker.literals().IsFloat(kind->var)) {
      LitVarId float_var = checker.literals().NewVar(/*is_float=*/true);
      checker.literals().Merge(float_var, kind->var);
    }
    return kind;
  }
  if (kind->kind == Type::Kind::Scalar && IsFloat(kind->scalar)) return kind;
  return nullptr;
}

namespace {

bool IsNumericLeaf(Checker& checker, const Type* kind) {
  kind = checker.Resolve(kind);
  if (kind->kind == Type::Kind::LitVar) return true;
  return kind->kind == Type::Kind::Scalar && kind->scalar != ScalarKind::Bool;
}

}  // namespace

// `a op b` on two leaves: lifted by name, dims combine by union.
const Type* CombineLeaves(Checker& checker, ast::BinaryOp op, const Type* a,
                          const Type* b, Span span) {
  const Type* kind = UnifyLeafKinds(checker, a, b);
  auto fail = [&](const std::string& why) {
    auto diag = checker.Error(DiagKind::BadOperand, span,
                              std::string("cannot apply `") + OpSpelling(op) +
                                  "` to " + checker.TypeString(a) + " and " +
                                  checker.TypeString(b) + why);
    // Suggest the conversion that fits the operands.
    const Type* ra = checker.Resolve(a);
    const Type* rb = checker.Resolve(b);
    if (ra->kind == Type::Kind::Index || rb->kind == Type::Kind::Index)
      diag.Note(span,
                "an index supports == and !=; for arithmetic convert "
                "it with i64(i)");
    else if (ra->kind == Type::Kind::Scalar && rb->kind == Type::Kind::Scalar &&
             ra->scalar != rb->scalar && ra->scalar != ScalarKind::Bool &&
             rb->scalar != ScalarKind::Bool)
      diag.Note(span, "convert one side, e.g. with f64(…) or f32(…)");
    return checker.types().Error();
  };

  if (!kind) return fail("");
  DimSet dims = a->dims.Union(b->dims);
  TypeContext& types = checker.types();
  if (op == ast::BinaryOp::Pow) {
    kind = RequireFloatLeaf(checker, kind);
    if (!kind) return fail("; `^` is floating-point power");
    return types.WithDims(kind, dims);
  }
  if (IsArithmetic(op)) {
    if (!IsNumericLeaf(checker, kind)) return fail("");
    return types.WithDims(checker.Resolve(kind), dims);
  }
  if (IsOrdering(op)) {
    if (!IsNumericLeaf(checker, kind)) return fail("");
    return types.Scalar(ScalarKind::Bool, dims);
  }
  if (IsEquality(op)) return types.Scalar(ScalarKind::Bool, dims);
  // && and ||
  if (!checker.Resolve(kind)->IsScalarOf(ScalarKind::Bool)) return fail("");
  return types.Scalar(ScalarKind::Bool, dims);
}

// Arithmetic on vector spaces (structs and tuples with float leaves).
const Type* CombineValues(Checker& checker, ast::BinaryOp op, const Type* a,
                          const Type* b, Span span) {
  a = checker.Resolve(a);
  b = checker.Resolve(b);
  TypeContext& types = checker.types();
  if (a->IsError() || b->IsError()) return types.Error();
  if (a->IsLeaf() && b->IsLeaf()) return CombineLeaves(checker, op, a, b, span);
  using K = Type::Kind;
  bool vector_op = op == ast::BinaryOp::Add || op == ast::BinaryOp::Sub ||
                   op == ast::BinaryOp::Mul || op == ast::BinaryOp::Div;
  auto fail = [&]() {
    checker.Error(DiagKind::BadOperand, span,
                  std::string("cannot apply `") + OpSpelling(op) + "` to " +
                      checker.TypeString(a) + " and " + checker.TypeString(b));
    return types.Error();
  };
  if (!vector_op || a->kind == K::Function || b->kind == K::Function)
    return fail();
  if (a->kind == K::Tuple && b->kind == K::Tuple) {
    if (a->elements.size() != b->elements.size()) return fail();
    std::vector<const Type*> elements;
    for (size_t i = 0; i < a->elements.size(); ++i)
      elements.push_back(
          CombineValues(checker, op, a->elements[i], b->elements[i], span));
    return types.Tuple(std::move(elements));
  }
  if (a->kind == K::Tuple || b->kind == K::Tuple) {
    const Type* tuple = a->kind == K::Tuple ? a : b;
    const Type* other = a->kind == K::Tuple ? b : a;
    std::vector<const Type*> elements;
    for (const Type* element : tuple->elements)
      elements.push_back(
          a->kind == K::Tuple
              ? CombineValues(checker, op, element, other, span)
              : CombineValues(checker, op, other, element, span));
    return types.Tuple(std::move(elements));
  }
  if (a->kind == K::Struct && b->kind == K::Struct) {
    if (a->struct_info != b->struct_info || a->struct_args != b->struct_args ||
        !checker.IsFloatValued(a))
      return fail();
    return types.WithDims(a, a->dims.Union(b->dims));
  }
  // A struct and a leaf: the leaf broadcasts over every field.
  const Type* structure = a->kind == K::Struct ? a : b;
  const Type* leaf = a->kind == K::Struct ? b : a;
  if (!leaf->IsLeaf() || !checker.IsFloatValued(structure)) return fail();
  // The leaf must fit every field's kind, as with a tuple: a struct with f32
  // and f64 fields times a float literal is an error, not f32 * f64 in IR.
  const Type* leaf_kind = checker.types().WithDims(leaf, {});
  std::vector<const Type*> pending = {structure};
  while (!pending.empty()) {
    const Type* part = checker.Resolve(pending.back());
    pending.pop_back();
    if (part->kind == K::Struct)
      pending.insert(pending.end(), part->struct_info->field_types.begin(),
                     part->struct_info->field_types.end());
    else if (part->kind == K::Tuple)
      pending.insert(pending.end(), part->elements.begin(),
                     part->elements.end());
    else if (part->IsLeaf() &&
             !UnifyLeafKinds(checker, checker.LeafKindOf(part), leaf_kind)) {
      checker
          .Error(DiagKind::BadOperand, span,
                 std::string("cannot apply `") + OpSpelling(op) + "` to " +
                     checker.TypeString(a) + " and " + checker.TypeString(b))
          .Note(span, "the fields of " + checker.TypeString(structure) +
                          " are not all of one type; combine them one by one");
      return types.Error();
    }
  }
  return checker.Lift(structure, leaf->dims, span);
}

const Type* Checker::CheckBlock(ast::BlockExpr* block, Context& context) {
  Context inner = context;
  for (ast::Stmt* stmt : block->stmts) CheckStmt(stmt, inner);
  const Type* type = types().Unit();
  if (block->result) type = CheckExpr(block->result, inner);
  // A dim declared in this block ends with it; its value cannot keep it.
  DimSet result_dims = AllDims(Resolve(type));
  for (ast::Stmt* stmt : block->stmts) {
    auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt);
    if (dim && dim->symbol && result_dims.Contains(dim->symbol->dim)) {
      Error(DiagKind::DimEscapes, block->result->span,
            "this value has dim `" + dim->name.name.str() +
                "`, which is declared inside the block and ends with it; "
                "reduce over it, or declare the dim outside")
          .Note(dim->name.span, "declared here");
      type = types().Error();
      break;
    }
  }
  block->type = type;
  Record(&block->type);
  return type;
}

void Checker::BindPattern(ast::Pattern* pattern, const Type* type,
                          Context& context) {
  type = Resolve(type);
  pattern->type = type;
  Record(&pattern->type);
  switch (pattern->kind) {
    case ast::Pattern::Kind::Wildcard:
      return;
    case ast::Pattern::Kind::Name: {
      Symbol* symbol = NewSymbol(Symbol::Kind::Value, pattern->name.name,
                                 pattern->name.span);
      symbol->type = type;
      Record(&symbol->type);
      pattern->symbol = symbol;
      context.scope = Bind(context.scope, symbol, context);
      return;
    }
    case ast::Pattern::Kind::Tuple: {
      if (!type->IsError() &&
          (type->kind != Type::Kind::Tuple ||
           type->elements.size() != pattern->elements.size())) {
        Error(DiagKind::PatternMismatch, pattern->span,
              "this pattern has " + std::to_string(pattern->elements.size()) +
                  " element(s) but the value has type " + TypeString(type));
        type = types().Error();
      }
      for (size_t i = 0; i < pattern->elements.size(); ++i)
        BindPattern(pattern->elements[i],
                    type->IsError() ? type : type->elements[i], context);
      return;
    }
  }
}

void Checker::CheckStmt(ast::Stmt* stmt, Context& context) {
  LitVarId first = StatementStart();
  if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt)) {
    const Type* type = CheckExpr(let->value, context);
    if (let->annotation) {
      const Type* annotated = ResolveTypeExpr(let->annotation, context.scope);
      Expect(annotated, type, let->value->span, "", let->value);
      type = annotated;
    }
    EndStatement(first);
    BindPattern(let->pattern, type, context);
    return;
  }
  if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt)) {
    std::optional<int64_t> constant;
    auto* name = llvm::dyn_cast<ast::NameExpr>(dim->size);
    const Symbol* named =
        name ? context.scope->Lookup(name->name.name) : nullptr;
    if (named && named->kind == Symbol::Kind::Dim) {
      name->symbol = const_cast<Symbol*>(named);
      name->type = types().Scalar(ScalarKind::I64);
      constant = named->dim->constant_size;
    } else {
      Expect(types().Scalar(ScalarKind::I64), CheckExpr(dim->size, context),
             dim->size->span, "a dim size is an i64");
      constant = ConstantInt(dim->size, context.scope);
    }
    EndStatement(first);
    if (const Symbol* existing = context.scope->Lookup(dim->name.name);
        existing && existing->kind != Symbol::Kind::Builtin) {
      Error(DiagKind::DimReusesName, dim->name.span,
            "dim `" + dim->name.name.str() +
                "` reuses a name that is already visible")
          .Note(existing->span,
                "`" + dim->name.name.str() + "` is declared here");
      return;
    }
    DimInfo info;
    info.kind = DimInfo::Kind::Local;
    info.name = dim->name.name;
    info.span = dim->name.span;
    if (constant && *constant >= 0) info.constant_size = constant;
    Symbol* symbol =
        NewSymbol(Symbol::Kind::Dim, dim->name.name, dim->name.span);
    symbol->dim = types().NewDim(info);
    dim->symbol = symbol;
    Scope* scope = NewScope(context.scope);
    scope->Add(symbol);
    context.scope = scope;
    return;
  }
  auto* expr_stmt = llvm::cast<ast::ExprStmt>(stmt);
  CheckExpr(expr_stmt->expr, context);
  EndStatement(first);
}

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

static const Type* CheckIndexExpr(Checker& checker, ast::IndexExpr* index,
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
      auto* dim_name = llvm::dyn_cast<ast::NameExpr>(entry.value);
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
        if (p->name == entry.dim->name) param = p;
      if (!param) {
        checker.Error(DiagKind::BadSizeBinding, entry.dim->span,
                      checker.CallableName(base->callable) +
                          " has no size parameter `" + entry.dim->name.str() +
                          "`");
        return types.Error();
      }
      const DimInfo* dim =
          checker.ResolveDimName(dim_name->name, context.scope);
      if (!dim) return types.Error();
      dim_name->type = types.Unit();
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
                        "` has no field `" + field.name.name.str() + "`");
      ok = false;
    } else if (by_field[i]) {
      checker.Error(DiagKind::DuplicateField, field.name.span,
                    "field `" + field.name.name.str() + "` is given twice");
      ok = false;
    } else {
      by_field[i] = field.value;
    }
  }
  if (lit->base) {
    const Type* base = checker.Resolve(checker.CheckExpr(lit->base, context));
    if (base->IsError()) return check_fields_only();
    if (base->kind != Type::Kind::Struct || base->struct_info != info) {
      checker.Error(DiagKind::TypeMismatch, lit->base->span,
                    "`..` needs a value of struct `" +
                        info->decl->name.name.str() + "`, found " +
                        checker.TypeString(base));
      return check_fields_only();
    }
    DimMap map;
    for (size_t i = 0; i < info->size_params.size(); ++i)
      map[info->size_params[i]] = base->struct_args[i];
    for (size_t i = 0; i < by_field.size(); ++i) {
      if (!by_field[i]) continue;
      const Type* expected = checker.Lift(
          checker.Substitute(info->field_types[i], map), base->dims, lit->span);
      checker.Expect(expected, checker.CheckExpr(by_field[i], context),
                     by_field[i]->span,
                     "field `" + info->field_names[i].str() + "`", by_field[i]);
    }
    return base;
  }
  for (size_t i = 0; i < by_field.size(); ++i) {
    if (!by_field[i]) {
      checker.Error(DiagKind::MissingField, lit->span,
                    "struct literal leaves out field `" +
                        info->field_names[i].str() +
                        "`; give it, or start "
                        "from another value with `..base`");
      ok = false;
    }
  }
  if (!ok) return check_fields_only();
  // A struct literal is a call of the struct's constructor, lifted alike.
  Signature constructor;
  constructor.size_params = info->size_params;
  constructor.param_names = info->field_names;
  constructor.params = info->field_types;
  constructor.result =
      types.Struct(info, std::vector<const DimInfo*>(info->size_params.begin(),
                                                     info->size_params.end()));
  std::vector<const Type*> arg_types;
  std::vector<Span> arg_spans;
  for (ast::Expr* value : by_field) {
    arg_types.push_back(checker.CheckExpr(value, context));
    arg_spans.push_back(value->span);
  }
  return checker.ApplySignature(constructor, arg_types, arg_spans, by_field, {},
                                info->decl->name.name, lit->span, nullptr,
                                /*exact=*/true);
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
      switch (symbol->kind) {
        case Symbol::Kind::Value:
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
          if (member->kind == Symbol::Kind::Function)
            type = FunctionType(FnCallable(member->fn));
          else if (member->kind == Symbol::Kind::Value)
            type = TypeOfValueSymbol(member);
          else
            Error(DiagKind::NotAValue, field->field.span,
                  "`" + symbol->name.str() + "." + field->field.name.str() +
                      "` is not a value");
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
                  field->field.name.str() + "`");
        break;
      }
      DimMap map;
      for (size_t i = 0; i < info->size_params.size(); ++i)
        map[info->size_params[i]] = base->struct_args[i];
      type = Lift(Substitute(info->field_types[index], map), base->dims,
                  field->span);
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
        if (auto* name = llvm::dyn_cast<ast::NameExpr>(binding.domain)) {
          dim = ResolveDimName(name->name, context.scope);
          name->type = types().Unit();
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
  return type;
}

}  // namespace delta::sema

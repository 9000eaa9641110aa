// Lowering of functions, module constants, blocks and statements.
#include <algorithm>

#include "compiler/lower/lower.h"
#include "compiler/lower/lowerer.h"

namespace delta::lower {

Lowerer::Lowerer(const sema::Program& program, DiagnosticEngine& diags)
    : program_(program), diags_(diags) {}

ir::Loc Lowerer::LocOf(Span span) {
  ir::Loc loc;
  if (!span.IsValid()) return loc;
  llvm::SMLoc start = span.Start();
  unsigned buffer = program_.sources.FindBufferContainingLoc(start);
  if (!buffer) return loc;
  loc.file =
      program_.sources.getMemoryBuffer(buffer)->getBufferIdentifier().str();
  auto [line, column] = program_.sources.getLineAndColumn(start, buffer);
  loc.line = line;
  loc.column = column;
  return loc;
}

void Lowerer::Unsupported(Span span, const std::string& what) {
  diags_.Report(DiagKind::NotSupportedYet, span,
                what + " is not supported by the back end yet");
  failed_ = true;
}

// --- Types -------------------------------------------------------------------

const ir::Dim* Lowerer::DimOf(const sema::DimInfo* dim, const DimSubst* subst) {
  if (subst)
    if (auto it = subst->find(dim); it != subst->end()) return it->second;
  if (auto it = local_dims_.find(dim); it != local_dims_.end())
    return it->second;
  if (auto it = module_dims_.find(dim); it != module_dims_.end())
    return it->second;
  // A dim the lowering has not seen: an internal error, reported politely.
  diags_.Report(DiagKind::NotSupportedYet, dim->span,
                "internal: dim `" + dim->name.str() + "` has no IR form here");
  failed_ = true;
  return module_->AddDim(dim->name.str(), 0);
}

ir::DimList Lowerer::DimsOf(const sema::DimSet& dims, const DimSubst* subst) {
  ir::DimList result;
  for (const sema::DimInfo* dim : dims) result.Insert(DimOf(dim, subst));
  return result;
}

ir::Type Lowerer::LeafType(const sema::Type* leaf, const DimSubst* subst) {
  ir::Type type;
  type.dims = DimsOf(leaf->dims, subst);
  switch (leaf->kind) {
    case sema::Type::Kind::Index:
      type.elem = ir::ElemKind::Index;
      type.index_dim = DimOf(leaf->index_dim, subst);
      break;
    case sema::Type::Kind::Scalar:
      switch (leaf->scalar) {
        case sema::ScalarKind::F32:
          type.elem = ir::ElemKind::F32;
          break;
        case sema::ScalarKind::F64:
          type.elem = ir::ElemKind::F64;
          break;
        case sema::ScalarKind::I32:
          type.elem = ir::ElemKind::I32;
          break;
        case sema::ScalarKind::I64:
          type.elem = ir::ElemKind::I64;
          break;
        case sema::ScalarKind::Bool:
          type.elem = ir::ElemKind::Bool;
          break;
        case sema::ScalarKind::Float:
          type.elem = float_kind_ == sema::ScalarKind::F64 ? ir::ElemKind::F64
                                                           : ir::ElemKind::F32;
          break;
      }
      break;
    default:
      // Literal types are solved before lowering; this is a safe default.
      type.elem = ir::ElemKind::F32;
      break;
  }
  return type;
}

std::vector<ir::Type> Lowerer::Flatten(const sema::Type* type,
                                       const DimSubst* subst) {
  std::vector<ir::Type> leaves;
  switch (type->kind) {
    case sema::Type::Kind::Tuple:
      for (const sema::Type* element : type->elements) {
        auto inner = Flatten(element, subst);
        leaves.insert(leaves.end(), inner.begin(), inner.end());
      }
      break;
    case sema::Type::Kind::Struct: {
      // Fields are written in terms of the struct's size parameters.
      const sema::StructInfo* info = type->struct_info;
      // The fields' `T` is the instance's float argument.
      auto float_scope = ScopedFloatKind(info->float_generic
                                             ? std::optional(type->struct_float)
                                             : std::nullopt);
      DimSubst fields = subst ? *subst : DimSubst();
      for (size_t i = 0; i < info->size_params.size(); ++i)
        fields[info->size_params[i]] = DimOf(type->struct_args[i], subst);
      ir::DimList lift = DimsOf(type->dims, subst);
      for (const sema::Type* field : info->field_types)
        for (ir::Type leaf : Flatten(field, &fields))
          leaves.push_back(leaf.WithDims(leaf.dims.Union(lift)));
      break;
    }
    case sema::Type::Kind::TypeParam:
      // Inside an inlined generic body: the type its call bound.
      for (auto it = type_args_.rbegin(); it != type_args_.rend(); ++it)
        if (it->first == type->type_param) return Flatten(it->second, subst);
      break;
    case sema::Type::Kind::Function:
    case sema::Type::Kind::Error:
      break;
    default:
      leaves.push_back(LeafType(type, subst));
      break;
  }
  return leaves;
}

ir::Value* Lowerer::Const(const ir::Type& type, double value) {
  ir::Value* scalar =
      ir::IsFloat(type.elem)
          ? builder_->FloatConst(type.elem, value)
          : builder_->IntConst(type.elem, static_cast<int64_t>(value));
  return builder_->Broadcast(scalar, type.dims);
}

Leaves Lowerer::BroadcastTo(const Leaves& leaves,
                            const std::vector<ir::Type>& types) {
  Leaves result;
  for (size_t i = 0; i < leaves.size() && i < types.size(); ++i)
    result.push_back(builder_->Broadcast(leaves[i], types[i].dims));
  return result;
}

// --- Declarations ------------------------------------------------------------

void Lowerer::DeclareModuleDims() {
  std::vector<const sema::DimInfo*> dims;
  for (const sema::ModuleInfo& module : program_.modules)
    for (const ast::Decl* decl : module.ast->decls)
      if (auto* dim = llvm::dyn_cast<ast::DimDecl>(decl);
          dim && dim->symbol && dim->symbol->dim->constant_size)
        dims.push_back(dim->symbol->dim);
  std::sort(dims.begin(), dims.end(),
            [](const sema::DimInfo* a, const sema::DimInfo* b) {
              return a->order < b->order;
            });
  for (const sema::DimInfo* dim : dims) {
    ir::Dim* ir_dim = module_->AddDim(dim->name.str(), *dim->constant_size);
    ir_dim->sharded = dim->sharded;
    module_dims_[dim] = ir_dim;
  }
}

namespace {

std::string QualifiedName(const sema::ModuleInfo* module,
                          llvm::StringRef name) {
  if (!module || module->is_main) return name.str();
  return module->name + "." + name.str();
}

}  // namespace

ir::Function* Lowerer::FunctionFor(const sema::FnInfo* fn) {
  // A float-generic function is made at the float type in force: the
  // caller's binding of its `T` (set by CallCallable).
  sema::ScalarKind kind =
      fn->signature.float_generic ? float_kind_ : sema::ScalarKind::F32;
  if (auto it = functions_.find({fn, kind}); it != functions_.end())
    return it->second;
  auto float_scope = ScopedFloatKind(kind);
  ir::Function* function =
      module_->AddFunction(QualifiedName(fn->module, fn->decl->name.name) +
                           (kind == sema::ScalarKind::F64 ? ".f64" : ""));
  function->is_export = fn->decl->is_export && fn->module->is_main;
  functions_[{fn, kind}] = function;
  // The signature: size parameters first, then the flattened parameters.
  DimSubst dims;
  ir::Block* body = function->body.get();
  auto add_arg = [&](ir::Type type, std::string name) {
    ir::Value* value = function->NewValue(std::move(type), std::move(name));
    value->block = body;
    value->index = static_cast<unsigned>(body->args.size());
    body->args.push_back(value);
    return value;
  };
  for (const sema::DimInfo* param : fn->signature.size_params) {
    // Size parameters are values of the function, not block arguments.
    ir::Value* size = function->NewValue(
        ir::Type{ir::ElemKind::I64, nullptr, {}}, param->name.str());
    function->size_params.push_back(size);
    dims[param] = function->NewDim(param->name.str(), std::nullopt, size);
  }
  for (size_t i = 0; i < fn->signature.params.size(); ++i) {
    for (ir::Type type : Flatten(fn->signature.params[i], &dims)) {
      function->params.push_back(
          add_arg(std::move(type), fn->signature.param_names[i].str()));
      function->param_names.push_back(fn->signature.param_names[i].str());
    }
  }
  function->result_types = Flatten(fn->signature.result, &dims);
  if (fn->module->is_main && fn->decl->name.name == "main") {
    // Filled from the command line: one scalar IR parameter each, or a path.
    for (size_t i = 0; i < fn->signature.params.size(); ++i) {
      ir::ProgramParam param{fn->signature.param_names[i].str(), std::nullopt};
      if (!fn->path_params[i])
        param.elem = Flatten(fn->signature.params[i], &dims).front().elem;
      module_->main_params.push_back(std::move(param));
    }
  }
  if (fn->custom_vjp) function->custom_vjp = FunctionFor(fn->custom_vjp);
  worklist_.push_back([this, fn, function, dims, kind]() {
    float_kind_ = kind;
    local_dims_.clear();
    for (auto [from, to] : dims) local_dims_[from] = to;
    LowerFunction(fn, function);
  });
  return function;
}

void Lowerer::LowerFunction(const sema::FnInfo* fn, ir::Function* function) {
  ir::Builder builder(function);
  builder_ = &builder;
  values_.clear();
  in_main_ = fn->module->is_main && fn->decl->name.name == "main";
  size_t next = 0;
  for (const ast::Param& param : fn->decl->params) {
    size_t count = param.symbol ? LeafCount(param.symbol->type) : 0;
    Leaves leaves(function->params.begin() + next,
                  function->params.begin() + next + count);
    next += count;
    if (param.symbol) values_[param.symbol] = leaves;
  }
  Leaves result = Block(fn->decl->body);
  SetLoc(fn->decl->body->span);
  builder.Return(BroadcastTo(result, function->result_types));
  builder_ = nullptr;
}

ir::Function* Lowerer::ModuleLetFunction(const sema::Symbol* symbol) {
  const ast::LetDecl* decl = symbol->module_let;
  auto it = let_functions_.find(symbol);
  if (it != let_functions_.end()) return it->second;
  ir::Function* function =
      module_->AddFunction("let." + QualifiedName(symbol->owner, symbol->name));
  let_functions_[symbol] = function;
  function->result_types = Flatten(symbol->type);
  worklist_.push_back([this, symbol, decl, function]() {
    float_kind_ = sema::ScalarKind::F32;
    local_dims_.clear();
    ir::Builder builder(function);
    builder_ = &builder;
    values_.clear();
    in_main_ = false;
    Leaves all = Expr(decl->value);
    // Pick this symbol's leaves out of the pattern.
    BindPattern(decl->pattern, all);
    SetLoc(decl->value->span);
    builder.Return(BroadcastTo(values_[symbol], function->result_types));
    builder_ = nullptr;
  });
  return function;
}

std::unique_ptr<ir::Module> Lowerer::Run() {
  module_ = std::make_unique<ir::Module>();
  const sema::ModuleInfo* main = program_.main_module;
  if (!main) return nullptr;
  module_->name = main->name;
  DeclareModuleDims();
  for (const ast::Decl* decl : main->ast->decls) {
    auto* fn = llvm::dyn_cast<ast::FnDecl>(decl);
    if (fn && fn->symbol && (fn->is_export || fn->name.name == "main"))
      FunctionFor(fn->symbol->fn);
  }
  while (!worklist_.empty()) {
    auto task = std::move(worklist_.front());
    worklist_.pop_front();
    task();
  }
  if (failed_) return nullptr;
  return std::move(module_);
}

// --- Blocks and statements ---------------------------------------------------

Leaves Lowerer::Block(const ast::BlockExpr* block) {
  for (const ast::Stmt* stmt : block->stmts) Stmt(stmt);
  if (!block->result) return {};
  return Expr(block->result);
}

void Lowerer::Stmt(const ast::Stmt* stmt) {
  if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt)) {
    BindPattern(let->pattern, Expr(let->value));
    return;
  }
  if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt)) {
    if (!dim->symbol) return;
    SetLoc(dim->size->span);
    ir::Value* size = nullptr;
    if (auto* name = llvm::dyn_cast<ast::NameExpr>(dim->size);
        name && name->symbol && name->symbol->kind == sema::Symbol::Kind::Dim)
      size = builder_->Size(DimOf(name->symbol->dim));
    else if (auto* field = llvm::dyn_cast<ast::FieldExpr>(dim->size);
             field && field->module_member &&
             field->module_member->kind == sema::Symbol::Kind::Dim)
      size = builder_->Size(DimOf(field->module_member->dim));  // cfg.n
    else if (auto* call = llvm::dyn_cast<ast::CallExpr>(dim->size);
             call && in_main_ && IsFileExtent(call))
      size = FileExtent(call);
    else
      size = Expr(dim->size).front();
    const sema::DimInfo* info = dim->symbol->dim;
    ir::Dim* ir_dim = builder_->function()->NewDim(info->name.str(),
                                                   info->constant_size, size);
    builder_->DimDef(ir_dim, size);
    local_dims_[info] = ir_dim;
    return;
  }
  Expr(llvm::cast<ast::ExprStmt>(stmt)->expr);
}

// `npy_extent(data, 0)` as sema accepts it in a dim of main: no symbol for
// the callee, main's `path` parameter first.
bool Lowerer::IsFileExtent(const ast::CallExpr* call) {
  auto* callee = llvm::dyn_cast<ast::NameExpr>(call->callee);
  auto* path = call->args.size() == 2
                   ? llvm::dyn_cast<ast::NameExpr>(call->args[0].value)
                   : nullptr;
  return callee && !callee->symbol && callee->name.name == "npy_extent" &&
         path && path->symbol && path->symbol->path_arg >= 0;
}

// A size main takes from a file: one more i64 parameter of main, which the
// program's entry point reads from the file before main runs
// (ir::FileExtent).
ir::Value* Lowerer::FileExtent(const ast::CallExpr* call) {
  auto* path = llvm::cast<ast::NameExpr>(call->args[0].value);
  auto* axis = llvm::cast<ast::IntLitExpr>(call->args[1].value);
  module_->main_extents.push_back({path->symbol->path_arg,
                                   static_cast<int64_t>(axis->value),
                                   LocOf(call->span)});
  return builder_->function()->AddParam(
      ir::Type{ir::ElemKind::I64, nullptr, {}},
      path->name.name.str() + "_extent");
}

void Lowerer::BindPattern(const ast::Pattern* pattern, const Leaves& leaves) {
  switch (pattern->kind) {
    case ast::Pattern::Kind::Wildcard:
      return;
    case ast::Pattern::Kind::Name:
      if (pattern->symbol) {
        for (ir::Value* leaf : leaves)
          if (leaf->name.empty()) leaf->name = pattern->name.name.str();
        values_[pattern->symbol] = leaves;
      }
      return;
    case ast::Pattern::Kind::Tuple: {
      size_t next = 0;
      for (const ast::Pattern* element : pattern->elements) {
        size_t count = LeafCount(element->type);
        if (next + count > leaves.size()) return;
        BindPattern(element, Leaves(leaves.begin() + next,
                                    leaves.begin() + next + count));
        next += count;
      }
      return;
    }
  }
}

std::unique_ptr<ir::Module> LowerProgram(const sema::Program& program,
                                         DiagnosticEngine& diags) {
  return Lowerer(program, diags).Run();
}

}  // namespace delta::lower

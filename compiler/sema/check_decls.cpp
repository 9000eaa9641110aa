// Declarations: collecting a module's top-level names, struct fields (and
// cycles of structs), function signatures and bodies, module-level lets,
// and the order in which CheckModule checks them.
#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/ScopeExit.h>
#include <llvm/Support/FileSystem.h>

#include <functional>

#include "compiler/sema/checker.h"

namespace delta::sema {

void CollectLocalDimNames(const ast::BlockExpr* block,
                          std::set<std::string>& names) {
  std::function<void(const ast::Expr*)> visit = [&](const ast::Expr* expr) {
    if (!expr) return;
    if (auto* inner = llvm::dyn_cast<ast::BlockExpr>(expr)) {
      CollectLocalDimNames(inner, names);
    } else if (auto* if_expr = llvm::dyn_cast<ast::IfExpr>(expr)) {
      CollectLocalDimNames(if_expr->then_block, names);
      visit(if_expr->else_branch);
    } else if (auto* loop = llvm::dyn_cast<ast::LoopExpr>(expr)) {
      CollectLocalDimNames(loop->body, names);
    } else if (auto* for_expr = llvm::dyn_cast<ast::ForExpr>(expr)) {
      CollectLocalDimNames(for_expr->body, names);
    }
  };
  for (const ast::Stmt* stmt : block->stmts) {
    if (auto* dim = llvm::dyn_cast<ast::DimStmt>(stmt))
      names.insert(dim->name.name.str());
    else if (auto* let = llvm::dyn_cast<ast::LetStmt>(stmt))
      visit(let->value);
    else
      visit(llvm::cast<ast::ExprStmt>(stmt)->expr);
  }
  visit(block->result);
}

bool IsScalarTypeName(llvm::StringRef name) {
  return name == "f32" || name == "f64" || name == "i32" || name == "i64" ||
         name == "bool";
}

int StructInfo::FieldIndex(llvm::StringRef name) const {
  for (size_t i = 0; i < field_names.size(); ++i)
    if (field_names[i] == name) return static_cast<int>(i);
  return -1;
}

bool Checker::CheckDimAttributes(const ast::DimDecl& dim) {
  bool sharded = false;
  for (const ast::Attribute& attribute : dim.attributes) {
    if (attribute.name.name != "shard") {
      Error(DiagKind::UnknownAttribute, attribute.name.span,
            "unknown attribute `@" + attribute.name.name.str() +
                "` on a dim; the only one is @shard");
      continue;
    }
    if (!attribute.args.empty()) {
      Error(DiagKind::BadShard, attribute.span,
            "@shard takes no arguments: the processes are those `mpirun` "
            "starts");
      continue;
    }
    if (sharded_dim_ != nullptr && sharded_dim_ != &dim) {
      Error(DiagKind::BadShard, attribute.span,
            "dim `" + dim.name.name.str() +
                "` cannot be sharded too: a program shards one dim")
          .Note(sharded_dim_->name.span,
                "`" + sharded_dim_->name.name.str() + "` is sharded here");
      continue;
    }
    sharded_dim_ = &dim;
    sharded = true;
  }
  return sharded;
}

void Checker::CollectDecls(ModuleInfo* module) {
  Scope* scope = module->scope;
  auto declare = [&](Symbol* symbol, const ast::Decl* decl) {
    if (IsScalarTypeName(symbol->name)) {
      Error(DiagKind::Redefinition, symbol->span,
            "`" + symbol->name.str() + "` is a built-in type name");
      return;
    }
    if (const Symbol* existing = scope->LookupLocal(symbol->name)) {
      Error(DiagKind::Redefinition, symbol->span,
            "`" + symbol->name.str() + "` is declared twice")
          .Note(existing->span, "first declared here");
      return;
    }
    scope->Add(symbol);
    if (decl) module->decl_symbols[decl] = symbol;
  };
  for (ast::Decl* decl : module->ast->decls) {
    if (auto* dim = llvm::dyn_cast<ast::DimDecl>(decl)) {
      Symbol* symbol =
          NewSymbol(Symbol::Kind::Dim, dim->name.name, dim->name.span);
      DimInfo info;
      info.kind = DimInfo::Kind::Module;
      info.name = dim->name.name;
      info.span = dim->name.span;
      info.module = module;
      info.sharded = CheckDimAttributes(*dim);
      symbol->dim = types().NewDim(info);
      symbol->owner = module;
      dim->symbol = symbol;
      declare(symbol, decl);
    } else if (auto* struct_decl = llvm::dyn_cast<ast::StructDecl>(decl)) {
      Symbol* symbol = NewSymbol(Symbol::Kind::Struct, struct_decl->name.name,
                                 struct_decl->name.span);
      StructInfo& info = program_.structs.emplace_back();
      info.decl = struct_decl;
      info.module = module;
      symbol->struct_info = &info;
      symbol->owner = module;
      struct_decl->symbol = symbol;
      declare(symbol, decl);
    } else if (auto* fn = llvm::dyn_cast<ast::FnDecl>(decl)) {
      Symbol* symbol =
          NewSymbol(Symbol::Kind::Function, fn->name.name, fn->name.span);
      FnInfo& info = program_.functions.emplace_back();
      info.decl = fn;
      info.module = module;
      symbol->fn = &info;
      symbol->owner = module;
      fn->symbol = symbol;
      declare(symbol, decl);
    } else if (auto* let = llvm::dyn_cast<ast::LetDecl>(decl)) {
      std::vector<const Symbol*> bound;
      std::function<void(ast::Pattern*)> collect = [&](ast::Pattern* p) {
        if (p->kind == ast::Pattern::Kind::Name) {
          Symbol* symbol =
              NewSymbol(Symbol::Kind::Value, p->name.name, p->name.span);
          symbol->module_let = let;
          symbol->owner = module;
          p->symbol = symbol;
          declare(symbol, nullptr);
          bound.push_back(symbol);
        }
        for (ast::Pattern* element : p->elements) collect(element);
      };
      collect(let->pattern);
      module->let_symbols[decl] = std::move(bound);
    }
  }
}

std::vector<const DimInfo*> Checker::DeclareSizeParams(
    const std::vector<ast::Ident>& names, Scope* scope) {
  std::vector<const DimInfo*> dims;
  for (const ast::Ident& param : names) {
    if (const Symbol* existing = scope->Lookup(param.name);
        existing && existing->kind != Symbol::Kind::Builtin) {
      Error(DiagKind::DimReusesName, param.span,
            "size parameter `" + param.name.str() +
                "` reuses a name that is already visible")
          .Note(existing->span, "`" + param.name.str() + "` is declared here");
    }
    DimInfo dim;
    dim.kind = DimInfo::Kind::SizeParam;
    dim.name = param.name;
    dim.span = param.span;
    Symbol* symbol = NewSymbol(Symbol::Kind::Dim, param.name, param.span);
    symbol->dim = types().NewDim(dim);
    dims.push_back(symbol->dim);
    scope->Add(symbol);
  }
  return dims;
}

// `[P: space]` and `[T: float]`: see Note [Generic functions] and Note
// [Float type parameters] in check_generics.cpp.
std::vector<const Type*> Checker::DeclareTypeParams(ast::FnDecl* decl,
                                                    Scope* scope,
                                                    bool* float_generic) {
  std::vector<const Type*> params;
  // The float parameter first, so that a `P: space` beside it is a space
  // of `T` whatever the order of the brackets.
  const ast::TypeParamDecl* float_param = nullptr;
  for (const ast::TypeParamDecl& param : decl->type_params) {
    if (param.bound.name != "float") continue;
    if (float_param) {
      Error(DiagKind::BadFloatParam, param.name.span,
            "a function has at most one float type parameter; `" +
                param.name.name.str() + "` and `" +
                float_param->name.name.str() +
                "` would both be f32 or f64: use `T` for both")
          .Note(float_param->name.span, "the first is declared here");
      continue;
    }
    CheckFloatParamName(param);
    float_param = &param;
  }
  *float_generic = float_param != nullptr;
  for (const ast::TypeParamDecl& param : decl->type_params) {
    // A second float parameter is declared too (reported above), so that
    // its uses are not unknown names.
    bool is_float = param.bound.name == "float";
    if (!is_float && param.bound.name != "space")
      Error(DiagKind::BadTypeParam, param.bound.span,
            "unknown bound `" + param.bound.name.str() +
                "`; a type parameter is written `" + param.name.name.str() +
                ": space` (any vector space of f32) or `T: float` (f32 or "
                "f64)");
    if (const Symbol* existing = scope->Lookup(param.name.name);
        existing && existing->kind != Symbol::Kind::Builtin) {
      Error(DiagKind::DimReusesName, param.name.span,
            "type parameter `" + param.name.name.str() +
                "` reuses a name that is already visible")
          .Note(existing->span,
                "`" + param.name.name.str() + "` is declared here");
      if (existing->kind == Symbol::Kind::TypeParam) continue;
    }
    TypeParamInfo& info = program_.type_params.emplace_back();
    info.name = param.name.name;
    info.span = param.name.span;
    info.leaf = float_param ? ScalarKind::Float : ScalarKind::F32;
    Symbol* symbol =
        NewSymbol(Symbol::Kind::TypeParam, param.name.name, param.name.span);
    symbol->type =
        is_float ? types().Scalar(ScalarKind::Float) : types().TypeParam(&info);
    scope->Add(symbol);
    if (!is_float) params.push_back(symbol->type);
  }
  if (float_param && (decl->is_export || decl->name.name == "main"))
    Error(DiagKind::BadFloatParam, float_param->name.span,
          "`" + decl->name.name.str() +
              "` is called from outside the program, so its float type is "
              "fixed: write f32 or f64 instead of `T`");
  if (!params.empty() && (decl->is_export || !decl->attributes.empty() ||
                          (decl->name.name == "main")))
    Error(DiagKind::BadTypeParam, decl->name.span,
          "`" + decl->name.name.str() +
              "` has a type parameter, so it can only be called: an export "
              "fn, main or a function with @vjp has concrete types");
  return params;
}

void Checker::CheckStructDecl(StructInfo* info, Scope* scope) {
  for (const ast::FieldDecl& field : info->decl->fields) {
    if (llvm::is_contained(info->field_names, field.name.name)) {
      Error(DiagKind::DuplicateField, field.name.span,
            "field `" + field.name.name.str() + "` is declared twice");
      continue;
    }
    info->field_names.push_back(field.name.name);
    const Type* type = ResolveTypeExpr(field.type, scope);
    if (ContainsFunction(type))
      Error(DiagKind::FunctionValueMisuse, field.type->span,
            "a struct field cannot hold a function");
    info->field_types.push_back(type);
    CheckStructCycle(info, field);
  }
}

void Checker::CheckStructCycle(StructInfo* info, const ast::FieldDecl& field) {
  // The structs a type holds directly (through tuples and lifting).
  auto held = [](const Type* type) {
    std::vector<const StructInfo*> structs;
    std::vector<const Type*> pending = {type};
    while (!pending.empty()) {
      const Type* part = pending.back();
      pending.pop_back();
      if (part->kind == Type::Kind::Tuple)
        pending.insert(pending.end(), part->elements.begin(),
                       part->elements.end());
      else if (part->kind == Type::Kind::Struct && part->struct_info)
        structs.push_back(part->struct_info);
    }
    return structs;
  };
  // The fields resolved so far hold no cycle (each was checked as it was
  // added), so this search ends; it is iterative because a chain of
  // structs may be long. `reached_from` leads back along the fields taken.
  size_t last = info->field_types.size() - 1;
  llvm::DenseMap<const StructInfo*, std::pair<const StructInfo*, size_t>>
      reached_from;
  std::vector<const StructInfo*> pending;
  for (const StructInfo* target : held(info->field_types[last]))
    if (reached_from.try_emplace(target, info, last).second)
      pending.push_back(target);
  while (!pending.empty()) {
    const StructInfo* current = pending.back();
    pending.pop_back();
    if (current != info) {
      for (size_t i = 0; i < current->field_types.size(); ++i)
        for (const StructInfo* target : held(current->field_types[i]))
          if (reached_from.try_emplace(target, current, i).second)
            pending.push_back(target);
      continue;
    }
    std::vector<std::string> steps;
    const StructInfo* at = info;
    do {
      auto [from, index] = reached_from.lookup(at);
      steps.push_back(from->decl->name.name.str() + "." +
                      from->field_names[index].str());
      at = from;
    } while (at != info);
    std::string path;
    for (auto step = steps.rbegin(); step != steps.rend(); ++step)
      path += *step + " -> ";
    std::string name = info->decl->name.name.str();
    Error(DiagKind::RecursiveStruct, field.type->span,
          "struct `" + name + "` contains itself (" + path + name +
              "), so its values would be infinite");
    // Later walks of the type must end.
    info->field_types[last] = types().Error();
    return;
  }
}

void Checker::CheckFnSignature(FnInfo* fn) {
  if (fn->signature_ready) return;
  fn->signature_ready = true;
  ast::FnDecl* decl = fn->decl;
  const Scope* module_scope = fn->module->scope;
  Scope* scope = NewScope(module_scope);
  Signature& signature = fn->signature;
  // Names of the body's local dims, to explain why the signature cannot
  // use them (E0314).
  local_dim_names_.clear();
  if (decl->body) CollectLocalDimNames(decl->body, local_dim_names_);
  signature.size_params = DeclareSizeParams(decl->size_params, scope);
  signature.type_params =
      DeclareTypeParams(decl, scope, &signature.float_generic);
  bool is_main = fn->module->is_main && decl->name.name == "main";
  for (ast::Param& param : decl->params) {
    // A `path` parameter of main is a file name from the command line, no
    // value: its type is () and only read_npy, write_npy and npy_extent
    // accept it (docs/language/io.md).
    bool is_path = is_main && param.type &&
                   param.type->kind == ast::TypeExpr::Kind::Named &&
                   param.type->path.size() == 1 &&
                   param.type->path.front().name == "path" &&
                   param.type->brackets.empty() && !scope->Lookup("path");
    fn->path_params.push_back(is_path);
    if (is_path) {
      param.type->type = types().Unit();
      signature.param_names.push_back(param.name.name);
      signature.params.push_back(types().Unit());
      continue;
    }
    // A parameter may take a function, except in what C or the command line
    // calls (docs/language/types.md, "Function types").
    function_types_allowed_ = !is_main && !decl->is_export;
    const Type* type =
        param.type ? ResolveTypeExpr(param.type, scope) : types().Error();
    function_types_allowed_ = false;
    if (type->kind == Type::Kind::Function &&
        type->callable->kind == Callable::Kind::Param)
      const_cast<Callable*>(type->callable)->param_name = param.name.name;
    signature.param_names.push_back(param.name.name);
    signature.params.push_back(type);
  }
  signature.result = decl->result_type
                         ? ResolveTypeExpr(decl->result_type, scope)
                         : types().Unit();
  local_dim_names_.clear();
  CheckTypeParamsUsed(fn);
  signature_scopes_[fn] = scope;  // the body sees the size parameters
}

// `main`'s parameters come from the command line (docs/language/io.md):
// each is a scalar of a number type or bool, or a `path`; it has no size
// parameters and returns ().
void Checker::CheckMainSignature(ast::FnDecl* decl) {
  const FnInfo* fn = decl->symbol->fn;
  if (!decl->size_params.empty() || !fn->signature.result->IsUnit()) {
    Error(DiagKind::BadMain, decl->name.span,
          "`main` has no size parameters and returns ()");
    return;
  }
  for (size_t i = 0; i < decl->params.size(); ++i) {
    const Type* type = fn->signature.params[i];
    if (fn->path_params[i] || type->IsError() ||
        (type->kind == Type::Kind::Scalar && type->dims.empty()))
      continue;
    const ast::Param& param = decl->params[i];
    Error(DiagKind::BadMain, param.type ? param.type->span : param.name.span,
          "a parameter of `main` comes from the command line: it is an i32, "
          "i64, f32, f64, bool or path, not " +
              TypeString(type));
  }
}

void Checker::CheckFnBody(FnInfo* fn) {
  ast::FnDecl* decl = fn->decl;
  Context context;
  context.function = fn;
  context.in_main = fn->module->is_main && decl->name.name == "main";
  context.scope = signature_scopes_[fn];
  // A float literal no type constrains is a `T` in a float-generic body.
  ScalarKind saved_default = literals_.float_default();
  literals_.set_float_default(fn->signature.float_generic ? ScalarKind::Float
                                                          : ScalarKind::F32);
  auto restore_default = llvm::make_scope_exit(
      [&] { literals_.set_float_default(saved_default); });
  LitVarId first = StatementStart();
  for (size_t i = 0; i < decl->params.size(); ++i) {
    ast::Param& param = decl->params[i];
    Symbol* symbol =
        NewSymbol(Symbol::Kind::Value, param.name.name, param.name.span);
    symbol->type = fn->signature.params[i];
    if (i < fn->path_params.size() && fn->path_params[i])
      symbol->path_arg = static_cast<int>(i);
    param.symbol = symbol;
    if (const Symbol* same = context.scope->LookupLocal(param.name.name);
        same && same->kind == Symbol::Kind::Value) {
      Error(DiagKind::Redefinition, param.name.span,
            "parameter `" + param.name.name.str() + "` is declared twice")
          .Note(same->span, "first declared here");
    }
    context.scope = Bind(context.scope, symbol, context);
  }
  if (!decl->body) return;
  ExpectStruct(decl->body->result, fn->signature.result);
  const Type* body = CheckBlock(decl->body, context);
  Span span = decl->body->result ? decl->body->result->span : decl->body->span;
  Expect(fn->signature.result, body, span,
         "the result of `" + decl->name.name.str() + "`", decl->body->result);
  EndStatement(first);
  ResolveRecorded();
}

void Checker::CheckModuleLet(ast::LetDecl* decl, ModuleInfo* module) {
  if (lets_done_.contains(decl)) return;
  if (lets_in_progress_.contains(decl)) {
    if (lets_reported_.insert(decl).second)
      Error(DiagKind::Recursion, decl->pattern->span,
            "this constant depends on itself");
    return;
  }
  lets_in_progress_.insert(decl);
  Context context;
  context.scope = module->scope;
  context.module_let = decl;
  LitVarId first = StatementStart();
  const Type* type = CheckExpr(decl->value, context);
  if (decl->annotation) {
    const Type* annotated = ResolveTypeExpr(decl->annotation, module->scope);
    Expect(annotated, type, decl->value->span, "", decl->value);
    type = annotated;
  }
  EndStatement(first);
  // The symbols exist already; give them their types.
  std::function<void(ast::Pattern*, const Type*)> assign = [&](ast::Pattern* p,
                                                               const Type* t) {
    t = Resolve(t);
    p->type = t;
    if (p->kind == ast::Pattern::Kind::Name && p->symbol) {
      p->symbol->type = t;
    } else if (p->kind == ast::Pattern::Kind::Tuple) {
      if (t->kind != Type::Kind::Tuple ||
          t->elements.size() != p->elements.size()) {
        if (!t->IsError())
          Error(DiagKind::PatternMismatch, p->span,
                "this pattern has " + std::to_string(p->elements.size()) +
                    " elements but the value is " + TypeString(t));
        for (ast::Pattern* element : p->elements)
          assign(element, types().Error());
        return;
      }
      for (size_t i = 0; i < p->elements.size(); ++i)
        assign(p->elements[i], t->elements[i]);
    }
  };
  assign(decl->pattern, type);
  ResolveRecorded();
  lets_in_progress_.erase(decl);
  lets_done_.insert(decl);
}

const Type* Checker::TypeOfValueSymbol(const Symbol* symbol) {
  if (symbol->module_let && !lets_done_.contains(symbol->module_let)) {
    for (ModuleInfo& module : program_.modules)
      if (&module == symbol->owner) {
        CheckModuleLet(symbol->module_let, &module);
        break;
      }
  }
  return symbol->type ? symbol->type : types().Error();
}

void Checker::CheckModule(ModuleInfo* module) {
  import_stack_.push_back([&] {
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(module->path, real)) real = module->path;
    return real.str().str();
  }());
  module->scope = NewScope(prelude_);
  size_t first_joint_call = joint_calls_.size();
  // Imports first, so that their dims come first in canonical order.
  for (ast::Decl* decl : module->ast->decls) {
    auto* import = llvm::dyn_cast<ast::ImportDecl>(decl);
    if (!import) continue;
    ModuleInfo* imported = ResolveImport(import, module);
    const ast::Ident& name = import->alias ? *import->alias : import->module;
    if (!imported) {
      // A module symbol without a module: its uses are quietly errors.
      if (!module->scope->LookupLocal(name.name)) {
        Symbol* symbol = NewSymbol(Symbol::Kind::Module, name.name, name.span);
        symbol->owner = module;
        module->scope->Add(symbol);
      }
      continue;
    }
    if (const Symbol* existing = module->scope->LookupLocal(name.name)) {
      Error(DiagKind::Redefinition, name.span,
            "`" + name.name.str() + "` is imported twice")
          .Note(existing->span, "first imported here");
      continue;
    }
    Symbol* symbol = NewSymbol(Symbol::Kind::Module, name.name, name.span);
    symbol->module = imported;
    symbol->owner = module;
    import->symbol = symbol;
    module->scope->Add(symbol);
    module->decl_symbols[decl] = symbol;
    module->imports.push_back(imported);
  }
  CollectDecls(module);

  // Module dims: sizes are compile-time constants.
  for (ast::Decl* decl : module->ast->decls) {
    auto* dim = llvm::dyn_cast<ast::DimDecl>(decl);
    if (!dim || !dim->symbol || !dim->size) continue;
    Context context;
    context.scope = module->scope;
    LitVarId first = StatementStart();
    if (DimSizedAs(dim->size, module->scope)) {
      // `dim k = n;` or `dim k = cfg.n;`: ConstantInt gives its size.
    } else {
      Expect(types().Scalar(ScalarKind::I64), CheckExpr(dim->size, context),
             dim->size->span, "a dim size is an i64");
    }
    EndStatement(first);
    ResolveRecorded();
    // A size that is not an i64 was reported as a type error already.
    bool well_typed =
        dim->size->type && dim->size->type->IsScalarOf(ScalarKind::I64);
    auto size = ConstantInt(dim->size, module->scope);
    if (!well_typed) {
      continue;
    } else if (!size) {
      Error(DiagKind::BadDimSize, dim->size->span,
            "the size of module-level dim `" + dim->name.name.str() +
                "` must be a compile-time constant");
    } else if (*size < 0) {
      Error(DiagKind::BadDimSize, dim->size->span,
            "dim `" + dim->name.name.str() + "` has negative size " +
                std::to_string(*size));
    } else {
      const_cast<DimInfo*>(dim->symbol->dim)->constant_size = *size;
    }
  }
  // Every struct's size parameters first: a field may name a struct
  // declared further down (`l1: Dense[feat, hidden]`).
  std::vector<std::pair<StructInfo*, Scope*>> structs;
  for (ast::Decl* decl : module->ast->decls)
    if (auto* s = llvm::dyn_cast<ast::StructDecl>(decl); s && s->symbol) {
      StructInfo* info = s->symbol->struct_info;
      Scope* scope = NewScope(module->scope);
      info->size_params = DeclareSizeParams(info->decl->size_params, scope);
      DeclareStructFloatParam(info, scope);
      structs.emplace_back(info, scope);
    }
  for (auto [info, scope] : structs) {
    CheckStructDecl(info, scope);
    CheckStructFloatParamUsed(info);
  }
  for (ast::Decl* decl : module->ast->decls)
    if (auto* fn = llvm::dyn_cast<ast::FnDecl>(decl); fn && fn->symbol)
      CheckFnSignature(fn->symbol->fn);
  for (ast::Decl* decl : module->ast->decls) {
    auto* fn = llvm::dyn_cast<ast::FnDecl>(decl);
    if (!fn || !fn->symbol) continue;
    for (const ast::Attribute& attribute : fn->attributes) {
      if (attribute.name.name != "vjp") {
        Error(DiagKind::UnknownAttribute, attribute.name.span,
              "unknown attribute `@" + attribute.name.name.str() +
                  "`; the only attribute is @vjp(f)");
        continue;
      }
      CheckCustomVjp(fn->symbol->fn, attribute, module->scope);
    }
  }
  for (ast::Decl* decl : module->ast->decls)
    if (auto* let = llvm::dyn_cast<ast::LetDecl>(decl))
      CheckModuleLet(let, module);
  for (ast::Decl* decl : module->ast->decls) {
    auto* fn = llvm::dyn_cast<ast::FnDecl>(decl);
    if (!fn || !fn->symbol) continue;
    CheckFnBody(fn->symbol->fn);
    ReportUnusedBindings();
    if (fn->name.name == "main" && module->is_main) CheckMainSignature(fn);
  }
  CheckJointCalls(first_joint_call);
  CheckRecursion(module);
  import_stack_.pop_back();
}

}  // namespace delta::sema

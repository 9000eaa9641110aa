// Type rules of the builtin functions (section 5 of the contract).
#include <llvm/ADT/STLExtras.h>

#include "compiler/sema/checker.h"

namespace delta::sema {
namespace {

bool IsTransform(Builtin builtin) {
  switch (builtin) {
    case Builtin::Grad:
    case Builtin::ValueAndGrad:
    case Builtin::Jvp:
    case Builtin::Vjp:
    case Builtin::Vmap:
    case Builtin::Checkpoint:
      return true;
    default:
      return false;
  }
}

// The builtins of ops.def's DELTA_MATH_OP rows.
bool IsUnaryMath(Builtin builtin) {
  switch (builtin) {
#define DELTA_MATH_OP(Name, ...) case Builtin::Name:
#define DELTA_OP(...)
#include "compiler/ir/ops.def"
    return true;
    default:
      return false;
  }
}

// The builtins of ops.def's DELTA_MATH_OP2 rows (pow, atan2).
bool IsBinaryMath(Builtin builtin) {
  switch (builtin) {
#define DELTA_MATH_OP2(Name, ...) case Builtin::Name:
#define DELTA_OP(...)
#include "compiler/ir/ops.def"
    return true;
    default:
      return false;
  }
}

const char* BuiltinSpelling(Builtin builtin) {
  static const char* const kNames[] = {
#define DELTA_BUILTIN(Name, spelling) spelling,
#include "compiler/sema/builtins.def"
  };
  return kNames[static_cast<int>(builtin)];
}

// Checks one builtin call; each rule is a method so that the rules read as a
// table of cases.
class BuiltinChecker {
 public:
  BuiltinChecker(Checker& checker, Builtin builtin, ast::CallExpr* call,
                 Context& context)
      : checker_(checker),
        types_(checker.types()),
        builtin_(builtin),
        call_(call),
        context_(context),
        name_(BuiltinSpelling(builtin)) {}

  const Type* Check();
  // `T(x)`: a conversion to the float type parameter.
  const Type* CheckFloatParamConversion() {
    name_ = "T";
    return CheckConversion(ScalarKind::Float);
  }

 private:
  DiagBuilder Fail(Span span, const std::string& message) {
    return checker_.Error(DiagKind::BadBuiltinUse, span, message);
  }
  // Checks the arguments after an error, for their own errors only: a bare
  // name is skipped (it is a dim, or its error was already reported).
  const Type* CheckAllArgs() {
    for (ast::Arg& arg : call_->args)
      if (!llvm::isa<ast::StringLitExpr>(arg.value) &&
          !llvm::isa<ast::NameExpr>(arg.value))
        checker_.CheckExpr(arg.value, context_);
    return types_.Error();
  }
  ast::Expr* Arg(size_t i) { return call_->args[i].value; }
  size_t ArgCount() const { return call_->args.size(); }
  bool ExpectArgs(size_t min, size_t max, const char* form) {
    if (ArgCount() >= min && ArgCount() <= max) return true;
    checker_.Error(DiagKind::ArgCount, call_->span,
                   "wrong number of arguments; use " + std::string(form));
    return false;
  }
  // The dim named by an argument, or null if it does not name one.
  const DimInfo* AsDim(ast::Expr* expr) {
    auto ref = checker_.DimRefOf(expr, context_.scope);
    const Symbol* symbol =
        ref ? checker_.LookupDim(*ref, context_.scope) : nullptr;
    if (!symbol) return nullptr;
    if (auto* name = llvm::dyn_cast<ast::NameExpr>(expr))
      name->symbol = const_cast<Symbol*>(symbol);
    else
      llvm::cast<ast::FieldExpr>(expr)->module_member =
          const_cast<Symbol*>(symbol);
    expr->type = types_.Unit();
    return symbol->dim;
  }
  const DimInfo* ExpectDim(ast::Expr* expr) {
    if (const DimInfo* dim = AsDim(expr)) return dim;
    if (auto* name = llvm::dyn_cast<ast::NameExpr>(expr);
        name && !context_.scope->Lookup(name->name.name)) {
      checker_.ReportUnknown(name->name, context_.scope, "dim");
      return nullptr;
    }
    if (auto ref = checker_.DimRefOf(expr, context_.scope);
        ref && !ref->module.empty())
      return checker_.ResolveDimName(*ref, context_.scope);  // reports
    checker_.Error(DiagKind::NotADim, expr->span,
                   std::string("`") + name_ + "` expects a dim name here");
    return nullptr;
  }
  const Type* Value(size_t i) {
    return checker_.Resolve(checker_.CheckExpr(Arg(i), context_));
  }
  void Record(const DimSet& lift) {
    CallInfo* info = &checker_.program().calls.emplace_back();
    info->is_builtin = true;
    info->builtin = builtin_;
    info->lift_dims = lift;
    info->dim_args = dim_args_;
    call_->info = info;
  }
  // Removes `dims` from every leaf (all dims if `all`).
  const Type* RemoveDims(const Type* type, const DimSet& dims, bool all,
                         Span span);

  const Type* CheckUnaryMath();
  const Type* LeafwiseMath(const Type* x);
  const Type* Total(const Type* x);
  const Type* CheckBinaryMath();
  const Type* CheckClamp();
  const Type* CheckReduction();
  const Type* CheckArgReduction();
  const Type* CheckDot();
  const Type* CheckCumsum();
  const Type* CheckReduce();
  const Type* CheckWhere();
  const Type* CheckRename();
  const Type* CheckBroadcast();
  const Type* CheckSize();
  const Type* CheckConversion(ScalarKind target);
  const Type* CheckPrint();
  bool CheckNpyPath();
  const Type* CheckReadNpy();
  const Type* CheckWriteNpy();

  Checker& checker_;
  TypeContext& types_;
  Builtin builtin_;
  ast::CallExpr* call_;
  Context& context_;
  const char* name_;
  std::vector<const DimInfo*> dim_args_;
};

const Type* BuiltinChecker::RemoveDims(const Type* type, const DimSet& dims,
                                       bool all, Span span) {
  if (type->IsError()) return type;
  switch (type->kind) {
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (const Type* element : type->elements)
        elements.push_back(RemoveDims(element, dims, all, span));
      return types_.Tuple(std::move(elements));
    }
    case Type::Kind::Function:
      Fail(span, std::string("`") + name_ + "` cannot take a function");
      return types_.Error();
    case Type::Kind::Struct:
      if (all) {
        Fail(span, std::string("`") + name_ +
                       "` of a struct needs the dims to reduce over, e.g. " +
                       name_ + "(x, batch)");
        return types_.Error();
      }
      [[fallthrough]];
    default:
      if (!all && !type->dims.ContainsAll(dims)) {
        Fail(span, checker_.TypeString(type) + " has no dim " +
                       checker_.DimString(dims.Minus(type->dims)));
        return types_.Error();
      }
      return types_.WithDims(type, all ? DimSet() : type->dims.Minus(dims));
  }
}

const Type* BuiltinChecker::CheckUnaryMath() {
  if (!ExpectArgs(1, 1, (std::string(name_) + "(x)").c_str()))
    return CheckAllArgs();
  const Type* x = Value(0);
  if (x->IsError()) return x;
  if (!x->IsLeaf()) return LeafwiseMath(x);
  if (x->kind == Type::Kind::Index) {
    Fail(Arg(0)->span, std::string("`") + name_ + "` needs numbers, found " +
                           checker_.TypeString(x));
    return types_.Error();
  }
  const Type* kind = types_.WithDims(x, {});
  if (builtin_ == Builtin::Abs || builtin_ == Builtin::Sign) {
    if (kind->IsScalarOf(ScalarKind::Bool)) {
      Fail(Arg(0)->span,
           std::string("`") + name_ + "` needs numbers, found bool");
      return types_.Error();
    }
  } else if (!RequireFloatLeaf(checker_, kind)) {
    Fail(Arg(0)->span, std::string("`") + name_ + "` needs floats, found " +
                           checker_.TypeString(x) +
                           "; convert with f32(…) or f64(…)");
    return types_.Error();
  }
  Record(x->dims);
  return checker_.Resolve(x);
}

// A unary math builtin on a struct or tuple acts on each leaf; the value
// must be a vector space (every leaf floating-point).
const Type* BuiltinChecker::LeafwiseMath(const Type* x) {
  if (x->kind == Type::Kind::Function || !checker_.IsFloatValued(x)) {
    Fail(Arg(0)->span, std::string("`") + name_ +
                           "` acts leaf by leaf on a struct or tuple whose "
                           "leaves are all floats, not " +
                           checker_.TypeString(x));
    return types_.Error();
  }
  Record({});
  return x;
}

// Two values, lifted by name; structs and tuples combine leaf by leaf with
// each other or with a leaf, as the arithmetic operators do.
const Type* BuiltinChecker::CheckBinaryMath() {
  const Type* a = Value(0);
  const Type* b = Value(1);
  Record(a->dims.Union(b->dims));
  ast::BinaryOp op =
      IsBinaryMath(builtin_) ? ast::BinaryOp::Pow : ast::BinaryOp::Add;
  return CombineValues(checker_, op, a, b, call_->span);
}

// clamp(x, lo, hi) = min(max(x, lo), hi): numbers, lifted like max and min.
const Type* BuiltinChecker::CheckClamp() {
  if (!ExpectArgs(3, 3, "clamp(x, lo, hi)")) return CheckAllArgs();
  const Type* x = Value(0);
  const Type* lo = Value(1);
  const Type* hi = Value(2);
  Record(x->dims.Union(lo->dims).Union(hi->dims));
  const Type* low =
      CombineValues(checker_, ast::BinaryOp::Add, x, lo, call_->span);
  if (low->IsError()) return low;
  return CombineValues(checker_, ast::BinaryOp::Add, low, hi, call_->span);
}

const Type* BuiltinChecker::CheckReduction() {
  // max(a, b) and min(a, b) with two values are elementwise.
  if ((builtin_ == Builtin::Max || builtin_ == Builtin::Min) &&
      ArgCount() == 2 && !AsDim(Arg(1)))
    return CheckBinaryMath();
  if (ArgCount() < 1) {
    ExpectArgs(1, 1, (std::string(name_) + "(x, dims…)").c_str());
    return types_.Error();
  }
  DimSet dims;
  for (size_t i = 1; i < ArgCount(); ++i) {
    const DimInfo* dim = ExpectDim(Arg(i));
    if (!dim) return CheckAllArgs();
    dims.Insert(dim);
    dim_args_.push_back(dim);
  }
  const Type* x = Value(0);
  if (x->IsError()) return x;
  if (x->IsLeaf()) {
    const Type* kind = types_.WithDims(x, {});
    bool ok =
        kind->kind != Type::Kind::Index && !kind->IsScalarOf(ScalarKind::Bool);
    if (ok && builtin_ == Builtin::Mean) ok = RequireFloatLeaf(checker_, kind);
    if (!ok) {
      Fail(Arg(0)->span,
           std::string("`") + name_ + "` cannot reduce " +
               checker_.TypeString(x) +
               (builtin_ == Builtin::Mean ? "; convert it to a float first"
                                          : ""));
      return types_.Error();
    }
  } else if (!checker_.IsFloatValued(x) && builtin_ == Builtin::Mean) {
    Fail(Arg(0)->span, "`mean` needs floats, found " + checker_.TypeString(x));
    return types_.Error();
  }
  Record({});
  if (dims.empty() &&
      (x->kind == Type::Kind::Struct || x->kind == Type::Kind::TypeParam))
    return Total(x);
  return RemoveDims(x, dims, dims.empty(), Arg(0)->span);
}

// A reduction with no dim of a struct, or `dot` of two structs or tuples:
// one scalar over every leaf and every dim.
const Type* BuiltinChecker::Total(const Type* x) {
  const Type* kind = UniformLeafKind(checker_, x);
  if (!kind || kind->kind == Type::Kind::Index ||
      kind->IsScalarOf(ScalarKind::Bool)) {
    Fail(Arg(0)->span, std::string("`") + name_ +
                           "` over a whole struct needs leaves that are all "
                           "numbers of one type, found " +
                           checker_.TypeString(x));
    return types_.Error();
  }
  return kind;
}

const Type* BuiltinChecker::CheckArgReduction() {
  if (!ExpectArgs(2, 2, (std::string(name_) + "(x, d)").c_str()))
    return CheckAllArgs();
  const DimInfo* dim = ExpectDim(Arg(1));
  const Type* x = Value(0);
  if (!dim || x->IsError()) return types_.Error();
  dim_args_.push_back(dim);
  if (!x->IsLeaf() || x->kind == Type::Kind::Index ||
      types_.WithDims(x, {})->IsScalarOf(ScalarKind::Bool)) {
    Fail(Arg(0)->span, std::string("`") + name_ + "` needs numbers, found " +
                           checker_.TypeString(x));
    return types_.Error();
  }
  if (!x->dims.Contains(dim)) {
    Fail(Arg(1)->span,
         checker_.TypeString(x) + " has no dim `" + dim->name.str() + "`");
    return types_.Error();
  }
  DimSet rest = x->dims;
  rest.Erase(dim);
  Record({});
  return types_.Index(dim, rest);
}

const Type* BuiltinChecker::CheckDot() {
  if (ArgCount() < 2) {
    ExpectArgs(2, 2, "dot(x, y, dims…)");
    return CheckAllArgs();
  }
  DimSet dims;
  for (size_t i = 2; i < ArgCount(); ++i) {
    const DimInfo* dim = ExpectDim(Arg(i));
    if (!dim) return CheckAllArgs();
    dims.Insert(dim);
    dim_args_.push_back(dim);
  }
  const Type* x = Value(0);
  const Type* y = Value(1);
  if (x->IsError() || y->IsError()) return types_.Error();
  if (x->kind == Type::Kind::Function || y->kind == Type::Kind::Function) {
    Fail(call_->span, "`dot` needs two arrays, structs or tuples");
    return types_.Error();
  }
  // Structs and tuples multiply leaf by leaf; with no dim the product sums
  // to their inner product, one scalar.
  const Type* product =
      CombineValues(checker_, ast::BinaryOp::Mul, x, y, call_->span);
  if (product->IsError()) return product;
  Record({});
  if (dims.empty() && !product->IsLeaf()) return Total(product);
  return RemoveDims(product, dims, dims.empty(), call_->span);
}

const Type* BuiltinChecker::CheckCumsum() {
  if (!ExpectArgs(2, 2, "cumsum(x, d)")) return CheckAllArgs();
  const DimInfo* dim = ExpectDim(Arg(1));
  const Type* x = Value(0);
  if (!dim || x->IsError()) return types_.Error();
  dim_args_.push_back(dim);
  if (!x->IsLeaf() || x->kind == Type::Kind::Index ||
      types_.WithDims(x, {})->IsScalarOf(ScalarKind::Bool) ||
      !x->dims.Contains(dim)) {
    Fail(Arg(0)->span, "`cumsum` needs numbers over dim `" + dim->name.str() +
                           "`, found " + checker_.TypeString(x));
    return types_.Error();
  }
  Record({});
  return x;
}

const Type* BuiltinChecker::CheckReduce() {
  if (!ExpectArgs(4, 4, "reduce(f, init, x, d)")) return CheckAllArgs();
  const DimInfo* dim = ExpectDim(Arg(3));
  const Type* f = Value(0);
  const Type* init = Value(1);
  const Type* x = Value(2);
  if (!dim || f->IsError() || init->IsError() || x->IsError())
    return types_.Error();
  dim_args_.push_back(dim);
  if (f->kind != Type::Kind::Function) {
    Fail(Arg(0)->span,
         "the first argument of `reduce` is a function, e.g. "
         "|a, b| a + b");
    return types_.Error();
  }
  if (!x->IsLeaf() || !x->dims.Contains(dim)) {
    Fail(Arg(2)->span, "`reduce` needs an array over `" + dim->name.str() +
                           "`, found " + checker_.TypeString(x));
    return types_.Error();
  }
  if (!init->IsLeaf() || !init->dims.empty() ||
      !UnifyLeafKinds(checker_, init, types_.WithDims(x, {}))) {
    Fail(Arg(1)->span,
         "`reduce`'s init must be a scalar of the array's "
         "element type " +
             checker_.TypeString(types_.WithDims(x, {})) + ", found " +
             checker_.TypeString(init));
    return types_.Error();
  }
  const Type* element = checker_.Resolve(types_.WithDims(x, {}));
  std::vector<const Type*> args = {element, element};
  const Signature* signature =
      checker_.GetSignature(f->callable, &args, Arg(0)->span);
  if (!signature) return types_.Error();
  const Type* combined = checker_.ApplySignature(
      *signature, args, {Arg(0)->span, Arg(0)->span}, {}, {},
      checker_.CallableName(f->callable), Arg(0)->span, nullptr);
  checker_.Expect(element, combined, Arg(0)->span,
                  "`reduce`'s function must map two elements to one");
  DimSet rest = x->dims;
  rest.Erase(dim);
  Record({});
  return types_.WithDims(element, rest);
}

const Type* BuiltinChecker::CheckWhere() {
  if (!ExpectArgs(3, 3, "where(c, a, b)")) return CheckAllArgs();
  const Type* c = Value(0);
  const Type* a = Value(1);
  const Type* b = Value(2);
  if (c->IsError() || a->IsError() || b->IsError()) return types_.Error();
  if (!c->IsLeaf() || !types_.WithDims(c, {})->IsScalarOf(ScalarKind::Bool)) {
    Fail(Arg(0)->span, "the condition of `where` must be bool, found " +
                           checker_.TypeString(c));
    return types_.Error();
  }
  if (a->IsLeaf() && b->IsLeaf()) {
    const Type* kind = UnifyLeafKinds(checker_, types_.WithDims(a, {}),
                                      types_.WithDims(b, {}));
    if (!kind) {
      Fail(call_->span,
           "the arms of `where` differ: " + checker_.TypeString(a) + " and " +
               checker_.TypeString(b));
      return types_.Error();
    }
    DimSet dims = c->dims.Union(a->dims).Union(b->dims);
    Record(dims);
    return types_.WithDims(checker_.Resolve(kind), dims);
  }
  // Structs and tuples, chosen leaf by leaf: two of one type, or a vector
  // space and a value that broadcasts over it (`where(c, p, 0.0)`); the
  // condition broadcasts over the result like a leaf operand.
  Record(c->dims);
  const Type* arms = a;
  if (checker_.IsFloatValued(a) && checker_.IsFloatValued(b)) {
    if (!checker_.Unify(a, b))
      arms = CombineValues(checker_, ast::BinaryOp::Add, a, b, call_->span);
  } else {
    checker_.Expect(a, b, Arg(2)->span, "the arms of `where`", Arg(2));
  }
  if (arms->IsError()) return arms;
  return BroadcastValue(checker_, arms, c->dims, call_->span);
}

const Type* BuiltinChecker::CheckRename() {
  if (!ExpectArgs(3, 3, "rename(x, from, to)")) return CheckAllArgs();
  const DimInfo* from = ExpectDim(Arg(1));
  const DimInfo* to = ExpectDim(Arg(2));
  const Type* x = Value(0);
  if (!from || !to || x->IsError()) return types_.Error();
  dim_args_ = {from, to};
  if (checker_.AllDims(x).Contains(to) && from != to) {
    Fail(Arg(2)->span,
         checker_.TypeString(x) + " already has dim `" + to->name.str() + "`");
    return types_.Error();
  }
  if (from->constant_size && to->constant_size &&
      *from->constant_size != *to->constant_size) {
    Fail(call_->span, "cannot rename `" + from->name.str() + "` (size " +
                          std::to_string(*from->constant_size) + ") to `" +
                          to->name.str() + "` (size " +
                          std::to_string(*to->constant_size) + ")");
    return types_.Error();
  }
  Record({});
  if (from == to) return x;
  const Type* rest = RemoveDims(x, {from}, false, Arg(0)->span);
  if (rest->IsError()) return rest;
  return checker_.Lift(rest, {to}, call_->span);
}

const Type* BuiltinChecker::CheckBroadcast() {
  if (!ExpectArgs(2, 2, "broadcast(x, d)")) return CheckAllArgs();
  const DimInfo* dim = ExpectDim(Arg(1));
  const Type* x = Value(0);
  if (!dim || x->IsError()) return types_.Error();
  dim_args_.push_back(dim);
  Record({});
  return checker_.Lift(x, {dim}, call_->span);
}

const Type* BuiltinChecker::CheckSize() {
  if (!ExpectArgs(1, 1, "size(d)")) return CheckAllArgs();
  const DimInfo* dim = ExpectDim(Arg(0));
  if (!dim) return types_.Error();
  dim_args_.push_back(dim);
  Record({});
  return types_.Scalar(ScalarKind::I64);
}

const Type* BuiltinChecker::CheckConversion(ScalarKind target) {
  if (!ExpectArgs(1, 1, (std::string(name_) + "(x)").c_str()))
    return CheckAllArgs();
  // A bare or negated literal takes the target type; anything else flexible
  // defaults first (so f32(1 / 2) is 0).
  ast::Expr* literal = Arg(0);
  if (auto* unary = llvm::dyn_cast<ast::UnaryExpr>(literal);
      unary && unary->op == ast::UnaryOp::Neg)
    literal = unary->operand;
  bool is_literal = llvm::isa<ast::IntLitExpr>(literal) ||
                    llvm::isa<ast::FloatLitExpr>(literal);
  LitVarId first = checker_.StatementStart();
  const Type* x = Value(0);
  if (x->IsError()) return x;
  if (is_literal && x->kind == Type::Kind::LitVar) {
    if (!checker_.literals().Bind(x->var, target)) checker_.EndStatement(first);
  } else {
    checker_.EndStatement(first);
  }
  x = checker_.Resolve(x);
  if (!x->IsLeaf()) {
    Fail(Arg(0)->span, std::string("`") + name_ +
                           "` converts numbers, "
                           "bools and indices, not " +
                           checker_.TypeString(x));
    return types_.Error();
  }
  Record(x->dims);
  return types_.Scalar(target, x->dims);
}

const Type* BuiltinChecker::CheckPrint() {
  if (!context_.in_main) {
    checker_.Error(DiagKind::PrintOutsideMain, call_->callee->span,
                   "print is allowed only in the body of main; functions "
                   "are pure");
  }
  for (ast::Arg& arg : call_->args) {
    if (auto* text = llvm::dyn_cast<ast::StringLitExpr>(arg.value)) {
      text->type = types_.Unit();
      continue;
    }
    const Type* value = Value(static_cast<size_t>(&arg - call_->args.data()));
    if (checker_.ContainsFunction(value))
      Fail(arg.value->span, "a function cannot be printed");
  }
  Record({});
  return types_.Unit();
}

// `read_npy("path", d…)` and `write_npy("path", x, d…)`: the path is a
// string literal or a `path` parameter of main, and the dims, in the file's
// axis order, are distinct (docs/language/io.md). Only `main` has effects.
bool BuiltinChecker::CheckNpyPath() {
  if (!context_.in_main) {
    checker_.Error(DiagKind::PrintOutsideMain, call_->callee->span,
                   std::string(name_) +
                       " is allowed only in the body of main; functions "
                       "are pure");
  }
  // A `path` parameter of main names a file given on the command line.
  if (auto* name =
          ArgCount() > 0 ? llvm::dyn_cast<ast::NameExpr>(Arg(0)) : nullptr) {
    const Symbol* symbol = context_.scope->Lookup(name->name.name);
    if (symbol && symbol->kind == Symbol::Kind::Value &&
        symbol->path_arg >= 0) {
      name->symbol = const_cast<Symbol*>(symbol);
      name->type = types_.Unit();
      return true;
    }
  }
  auto* path =
      ArgCount() > 0 ? llvm::dyn_cast<ast::StringLitExpr>(Arg(0)) : nullptr;
  if (!path) {
    Fail(ArgCount() > 0 ? Arg(0)->span : call_->span,
         std::string("`") + name_ +
             "` needs a file path: a string literal or a `path` parameter "
             "of main");
    return false;
  }
  path->type = types_.Unit();
  return true;
}

const Type* BuiltinChecker::CheckReadNpy() {
  if (!ExpectArgs(1, 64, "read_npy(\"file.npy\", d…)")) return CheckAllArgs();
  if (!CheckNpyPath()) return CheckAllArgs();
  DimSet dims;
  for (size_t i = 1; i < ArgCount(); ++i) {
    const DimInfo* dim = ExpectDim(Arg(i));
    if (!dim) return types_.Error();
    if (!dims.Insert(dim)) {
      Fail(Arg(i)->span, "dim `" + dim->name.str() + "` is named twice");
      return types_.Error();
    }
    dim_args_.push_back(dim);
  }
  Record({});
  return types_.Scalar(ScalarKind::F32, dims);
}

const Type* BuiltinChecker::CheckWriteNpy() {
  if (!ExpectArgs(2, 64, "write_npy(\"file.npy\", x, d…)"))
    return CheckAllArgs();
  if (!CheckNpyPath()) return CheckAllArgs();
  const Type* x = Value(1);
  if (x->IsError()) return x;
  if (!x->IsLeaf() || x->kind == Type::Kind::Index) {
    Fail(Arg(1)->span, "`write_npy` writes an array of numbers or bools, not " +
                           checker_.TypeString(x));
    return types_.Error();
  }
  DimSet dims;
  for (size_t i = 2; i < ArgCount(); ++i) {
    const DimInfo* dim = ExpectDim(Arg(i));
    if (!dim) return types_.Error();
    if (!dims.Insert(dim)) {
      Fail(Arg(i)->span, "dim `" + dim->name.str() + "` is named twice");
      return types_.Error();
    }
    dim_args_.push_back(dim);
  }
  if (dims != x->dims &&
      !(dims.ContainsAll(x->dims) && x->dims.ContainsAll(dims))) {
    Fail(call_->span, "`write_npy` needs every dim of " +
                          checker_.TypeString(x) +
                          ", once each, in the file's axis order");
    return types_.Error();
  }
  Record({});
  return types_.Unit();
}

const Type* BuiltinChecker::Check() {
  for (ast::Arg& arg : call_->args) {
    bool allowed =
        (arg.label && arg.label->name == "wrt" &&
         (builtin_ == Builtin::Grad || builtin_ == Builtin::ValueAndGrad)) ||
        (arg.label && arg.label->name == "over" && builtin_ == Builtin::Vmap);
    if (arg.label && !allowed) {
      checker_.Error(DiagKind::UnknownLabel, arg.label->span,
                     std::string("`") + name_ + "` takes no argument `" +
                         arg.label->name.str() + ":`");
      return CheckAllArgs();
    }
  }
  if (IsUnaryMath(builtin_)) return CheckUnaryMath();
  if (IsReduction(builtin_)) return CheckReduction();
  if (IsBinaryMath(builtin_)) {
    if (!ExpectArgs(2, 2, (std::string(name_) + "(a, b)").c_str()))
      return CheckAllArgs();
    return CheckBinaryMath();
  }
  switch (builtin_) {
    case Builtin::IsNan: {
      // x != x: true where x is NaN.
      const Type* x = CheckUnaryMath();
      if (x->IsError()) return x;
      return types_.Scalar(ScalarKind::Bool, x->dims);
    }
    case Builtin::Clamp:
      return CheckClamp();
    case Builtin::Where:
      return CheckWhere();
    case Builtin::Argmax:
    case Builtin::Argmin:
      return CheckArgReduction();
    case Builtin::Dot:
      return CheckDot();
    case Builtin::Cumsum:
      return CheckCumsum();
    case Builtin::Reduce:
      return CheckReduce();
    case Builtin::Rename:
      return CheckRename();
    case Builtin::Broadcast:
      return CheckBroadcast();
    case Builtin::Size:
      return CheckSize();
    case Builtin::ToF32:
      return CheckConversion(ScalarKind::F32);
    case Builtin::ToF64:
      return CheckConversion(ScalarKind::F64);
    case Builtin::ToI32:
      return CheckConversion(ScalarKind::I32);
    case Builtin::ToI64:
      return CheckConversion(ScalarKind::I64);
    case Builtin::Print:
      return CheckPrint();
    case Builtin::ReadNpy:
      return CheckReadNpy();
    case Builtin::WriteNpy:
      return CheckWriteNpy();
    case Builtin::StopGradient: {
      if (!ExpectArgs(1, 1, "stop_gradient(x)")) return CheckAllArgs();
      const Type* x = Value(0);
      Record({});
      return x;
    }
    default:
      return types_.Error();
  }
}

}  // namespace

bool IsReduction(Builtin builtin) {
  switch (builtin) {
    case Builtin::Sum:
    case Builtin::Mean:
    case Builtin::Prod:
    case Builtin::Max:
    case Builtin::Min:
      return true;
    default:
      return false;
  }
}

const Type* Checker::CheckBuiltinCall(Builtin builtin, ast::CallExpr* call,
                                      Context& context) {
  if (IsTransform(builtin)) return CheckTransform(builtin, call, context);
  return BuiltinChecker(*this, builtin, call, context).Check();
}

const Type* Checker::CheckFloatParamConversion(ast::CallExpr* call,
                                               Context& context) {
  return BuiltinChecker(*this, Builtin::ToF32, call, context)
      .CheckFloatParamConversion();
}

}  // namespace delta::sema

// Type checking of binary operators: `a op b` on two leaves lifts by name
// (their dims combine by union), arithmetic on vector spaces (structs and
// tuples with float leaves) works leaf by leaf, and flexible literals take
// the kind of the other side. Builtins share the leaf combinations.
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

// How to make a float `leaf` fit a struct whose leaves are the float
// `kind` (`Dense[f64, i, o]` times an f32): "; convert it with f64(…)".
std::string ConvertHint(const Type* kind, const Type* leaf) {
  if (kind->kind != Type::Kind::Scalar || leaf->kind != Type::Kind::Scalar ||
      !IsFloat(kind->scalar) || !IsFloat(leaf->scalar))
    return "";
  return "; convert it with " + ScalarName(kind->scalar).str() + "(…)";
}

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
             (ra->scalar == ScalarKind::Float) !=
                 (rb->scalar == ScalarKind::Float))
      // See Note [Float type parameters]: `T` is f32 at one call and f64 at
      // another, so a concrete float never mixes with it unconverted.
      diag.Note(span,
                "`T` is f32 or f64, whichever each call chooses, so it never "
                "mixes with a concrete float; convert that side with T(…)");
    else if (ra->kind == Type::Kind::Scalar && rb->kind == Type::Kind::Scalar &&
             ra->scalar != rb->scalar && ra->scalar != ScalarKind::Bool &&
             rb->scalar != ScalarKind::Bool)
      diag.Note(span, "convert one side, e.g. with f64(…) or f32(…)");
    else if ((ra->kind == Type::Kind::Scalar && IsInteger(ra->scalar) &&
              rb->kind == Type::Kind::LitVar) ||
             (rb->kind == Type::Kind::Scalar && IsInteger(rb->scalar) &&
              ra->kind == Type::Kind::LitVar))
      // `k * 2.0` with `k: i64`: a float literal never becomes an integer.
      diag.Note(span,
                "integers and floats do not mix: convert the integer, e.g. "
                "f32(k) * 2.0, or write an integer literal");
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

// The element kind of every leaf of `value`, or null when its leaves are not
// all of one kind (a struct with f32 and f64 fields).
const Type* UniformLeafKind(Checker& checker, const Type* value) {
  using K = Type::Kind;
  const Type* kind = nullptr;
  std::vector<const Type*> pending = {value};
  while (!pending.empty()) {
    const Type* part = checker.Resolve(pending.back());
    pending.pop_back();
    if (part->kind == K::Struct) {
      std::vector<const Type*> fields = checker.FieldTypes(part);
      pending.insert(pending.end(), fields.begin(), fields.end());
    } else if (part->kind == K::Tuple) {
      pending.insert(pending.end(), part->elements.begin(),
                     part->elements.end());
    } else if (part->IsLeaf() || part->kind == K::TypeParam) {
      const Type* leaf = part->kind == K::TypeParam
                             ? checker.types().Scalar(part->type_param->leaf)
                             : checker.types().WithDims(part, {});
      kind = kind ? UnifyLeafKinds(checker, kind, leaf) : leaf;
      if (!kind) return nullptr;
    } else if (!part->IsError()) {
      return nullptr;
    }
  }
  return kind ? checker.Resolve(kind) : nullptr;
}

namespace {

// Every leaf of `value` with its field path (`l1.w`, `0`), dims included.
std::vector<std::pair<std::string, const Type*>> NamedLeaves(
    Checker& checker, const Type* value, const std::string& path = "") {
  value = checker.Resolve(value);
  std::vector<std::pair<std::string, const Type*>> leaves;
  auto add = [&](const Type* part, const std::string& name) {
    auto inner =
        NamedLeaves(checker, part, path.empty() ? name : path + "." + name);
    leaves.insert(leaves.end(), inner.begin(), inner.end());
  };
  if (value->kind == Type::Kind::Struct) {
    const StructInfo* info = value->struct_info;
    std::vector<const Type*> fields = checker.FieldTypes(value);
    for (size_t i = 0; i < fields.size(); ++i)
      add(checker.Lift(fields[i], value->dims, Span()),
          info->field_names[i].str());
  } else if (value->kind == Type::Kind::Tuple) {
    for (size_t i = 0; i < value->elements.size(); ++i)
      add(value->elements[i], std::to_string(i));
  } else if (value->IsLeaf()) {
    leaves.emplace_back(path, value);
  }
  return leaves;
}

}  // namespace

// Lifting a struct adds dims to its lift set, never to one field alone: a
// leaf over `batch` times an `S[batch]` matches the struct's `batch`.
const Type* BroadcastValue(Checker& checker, const Type* value,
                           const DimSet& dims, Span span) {
  value = checker.Resolve(value);
  switch (value->kind) {
    case Type::Kind::Tuple: {
      std::vector<const Type*> elements;
      for (const Type* element : value->elements)
        elements.push_back(BroadcastValue(checker, element, dims, span));
      return checker.types().Tuple(std::move(elements));
    }
    case Type::Kind::Struct: {
      // A dim that every leaf has already combines element by element; one
      // that some fields have and others lack cannot be added to all.
      DimSet extra = dims.Minus(value->dims);
      DimSet all = checker.AllDims(value);
      for (const DimInfo* dim : extra.Intersect(all)) {
        std::string has, lacks;
        for (const auto& [path, leaf] : NamedLeaves(checker, value))
          (leaf->dims.Contains(dim) ? has : lacks) = path;
        if (lacks.empty()) {
          extra.Erase(dim);
          continue;
        }
        checker.Error(DiagKind::DuplicateDim, span,
                      "cannot combine " + checker.TypeString(value) +
                          " with a value over `" + dim->name.str() + "`: `" +
                          has + "` has that dim but `" + lacks +
                          "` does not; combine the fields one by one");
        return checker.types().Error();
      }
      return checker.Lift(value, extra, span);
    }
    case Type::Kind::TypeParam:
      return checker.Lift(value, dims, span);
    case Type::Kind::Error:
    case Type::Kind::Function:
      return value;
    default:
      return checker.types().WithDims(value, value->dims.Union(dims));
  }
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
                   op == ast::BinaryOp::Mul || op == ast::BinaryOp::Div ||
                   op == ast::BinaryOp::Pow;
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
  if (a->kind == K::TypeParam || b->kind == K::TypeParam) {
    // See Note [Generic functions]: `P` with `P`, or with an f32 scalar.
    const Type* param = a->kind == K::TypeParam ? a : b;
    const Type* other = a->kind == K::TypeParam ? b : a;
    bool ok = other->kind == K::TypeParam
                  ? other->type_param == param->type_param
                  : other->IsLeaf() && other->dims.empty() &&
                        UnifyLeafKinds(checker, types.WithDims(other, {}),
                                       types.Scalar(param->type_param->leaf));
    if (ok) return param;
    checker
        .Error(DiagKind::BadOperand, span,
               std::string("cannot apply `") + OpSpelling(op) + "` to " +
                   checker.TypeString(a) + " and " + checker.TypeString(b))
        .Note(span, "a value of type parameter `" +
                        param->type_param->name.str() +
                        "` combines only with another `" +
                        param->type_param->name.str() + "` or an " +
                        ScalarName(param->type_param->leaf).str() + " scalar");
    return types.Error();
  }
  if (a->kind == K::Struct && b->kind == K::Struct) {
    if (a->struct_info != b->struct_info || a->struct_args != b->struct_args ||
        a->struct_float != b->struct_float || !checker.IsFloatValued(a))
      return fail();
    return BroadcastValue(checker, a, b->dims, span);
  }
  // A struct and a leaf: the leaf broadcasts over every field.
  const Type* structure = a->kind == K::Struct ? a : b;
  const Type* leaf = a->kind == K::Struct ? b : a;
  if (!leaf->IsLeaf() || !checker.IsFloatValued(structure)) return fail();
  // The leaf must fit every field's kind, as with a tuple: a struct with f32
  // and f64 fields times a float literal is an error, not f32 * f64 in IR.
  const Type* kind = UniformLeafKind(checker, structure);
  if (!kind || !UnifyLeafKinds(checker, kind, types.WithDims(leaf, {}))) {
    checker
        .Error(DiagKind::BadOperand, span,
               std::string("cannot apply `") + OpSpelling(op) + "` to " +
                   checker.TypeString(a) + " and " + checker.TypeString(b))
        .Note(span, kind
                        ? "the struct's leaves are " +
                              checker.TypeString(kind) + ", the other side " +
                              checker.TypeString(leaf) + ConvertHint(kind, leaf)
                        : "the fields of " + checker.TypeString(structure) +
                              " are not all of one type; combine them one "
                              "by one");
    return types.Error();
  }
  return BroadcastValue(checker, structure, leaf->dims, span);
}

}  // namespace delta::sema

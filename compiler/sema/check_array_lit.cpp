// Type checking of array literals `[k: a, b, c]`: the dim and its size, and
// the elements combined into one element type
// (docs/language/array_literals.md).
#include "compiler/sema/checker.h"

namespace delta::sema {

namespace {

std::string Ordinal(size_t i) { return "element " + std::to_string(i + 1); }

}  // namespace

const Type* CheckArrayLit(Checker& checker, ast::ArrayLitExpr* literal,
                          Context& context) {
  TypeContext& types = checker.types();
  std::vector<const Type*> elements;
  for (ast::Expr* element : literal->elements)
    elements.push_back(checker.Resolve(checker.CheckExpr(element, context)));
  if (literal->dim.name.empty()) return types.Error();  // reported by parser
  const DimInfo* dim = checker.ResolveDimName(literal->dim, context.scope);
  if (!dim) return types.Error();
  literal->dim_info = dim;
  const std::string name = dim->name.str();
  const size_t count = literal->elements.size();
  // A size known only at run time is checked when the literal is built.
  if (dim->constant_size &&
      *dim->constant_size != static_cast<int64_t>(count)) {
    checker
        .Error(DiagKind::ArrayLiteralSize, literal->span,
               "array literal over `" + name + "` has " +
                   std::to_string(count) +
                   (count == 1 ? " element" : " elements") + ", but dim `" +
                   name + "` has size " + std::to_string(*dim->constant_size) +
                   "; give " + std::to_string(*dim->constant_size) +
                   " elements, or use a dim of size " + std::to_string(count))
        .Note(dim->span, "`" + name + "` is declared here");
    return types.Error();
  }

  // Leaves (scalars, arrays, indices) combine like where's arms: one
  // element kind, dims by union; structs of one type combine their lift
  // dims by union. Tuples must match exactly.
  const Type* result = nullptr;
  size_t first = 0;
  for (size_t i = 0; i < elements.size(); ++i) {
    const Type* element = elements[i];
    if (element->IsError()) return types.Error();
    if (checker.ContainsFunction(element)) {
      checker.Error(DiagKind::FunctionValueMisuse, literal->elements[i]->span,
                    "an array literal cannot hold functions");
      return types.Error();
    }
    if (!result) {
      result = element;
      first = i;
      continue;
    }
    if (result->IsLeaf() && element->IsLeaf()) {
      const Type* kind = UnifyLeafKinds(checker, types.WithDims(result, {}),
                                        types.WithDims(element, {}));
      if (kind) {
        result = types.WithDims(checker.Resolve(kind),
                                result->dims.Union(element->dims));
        continue;
      }
    } else if (checker.Unify(result, element)) {
      result = checker.Resolve(result);
      continue;
    } else if (result->kind == Type::Kind::Struct &&
               element->kind == Type::Kind::Struct &&
               result->struct_info == element->struct_info &&
               result->struct_args == element->struct_args &&
               result->struct_float == element->struct_float) {
      result = BroadcastValue(checker, result, element->dims,
                              literal->elements[i]->span);
      if (result->IsError()) return result;
      continue;
    }
    checker
        .Error(DiagKind::ArrayLiteralElements, literal->elements[i]->span,
               "the elements of an array literal have one type, but " +
                   Ordinal(i) + " is " + checker.TypeString(element) + " and " +
                   Ordinal(first) + " is " + checker.TypeString(result) +
                   "; convert one of them, e.g. f32(…)")
        .Note(literal->elements[first]->span, Ordinal(first) + " is here");
    return types.Error();
  }
  if (!result) return types.Error();
  DimSet over;
  over.Insert(dim);
  if (checker.AllDims(result).Intersects(over)) {
    checker.Error(DiagKind::DuplicateDim, literal->dim.span,
                  "the elements of this array literal already have dim `" +
                      name + "` (" + checker.TypeString(result) +
                      "); stack them over another dim");
    return types.Error();
  }
  return checker.Lift(result, over, literal->span);
}

}  // namespace delta::sema

// What hover shows for a builtin: its forms and one line on what it does
// (docs/language/builtins.md says more). One row per builtin of
// sema/builtins.def (and npy_extent); lang-tests/lsp/check_lsp.py checks
// that none is missing.
#pragma once

#include <llvm/ADT/StringRef.h>

namespace delta::lsp {

struct BuiltinDoc {
  const char* name;
  const char* forms;
  const char* doc;
};

inline constexpr BuiltinDoc kBuiltinDocs[] = {
    {"exp", "exp(x)", "e^x, elementwise on floats"},
    {"expm1", "expm1(x)", "exp(x) - 1, exact for tiny x"},
    {"log", "log(x)", "the natural logarithm"},
    {"log1p", "log1p(x)", "log(1 + x), exact for tiny x"},
    {"sin", "sin(x)", "sine, in radians"},
    {"cos", "cos(x)", "cosine, in radians"},
    {"tan", "tan(x)", "tangent, in radians"},
    {"tanh", "tanh(x)", "hyperbolic tangent"},
    {"sqrt", "sqrt(x)", "square root, correctly rounded"},
    {"abs", "abs(x)", "absolute value of a number"},
    {"floor", "floor(x)", "the largest integer not above x"},
    {"ceil", "ceil(x)", "the smallest integer not below x"},
    {"sigmoid", "sigmoid(x)", "1 / (1 + exp(-x))"},
    {"relu", "relu(x)", "max(x, 0); NaN propagates"},
    {"erf", "erf(x)", "the error function"},
    {"erfc", "erfc(x)", "1 - erf(x), exact in the tail"},
    {"lgamma", "lgamma(x)", "log |Gamma(x)|"},
    {"sign", "sign(x)", "-1, 0 or 1; ±0 and NaN are themselves"},
    {"round", "round(x)", "to the nearest integer, halfway away from zero"},
    {"pow", "pow(a, b), a ^ b", "a to the power b, on floats"},
    {"atan2", "atan2(a, b)", "the angle of the point (b, a), in (-pi, pi]"},
    {"where", "where(c, a, b)", "a where c is true, else b, elementwise"},
    {"isnan", "isnan(x)", "whether x is NaN"},
    {"clamp", "clamp(x, lo, hi)", "min(max(x, lo), hi)"},
    {"sum", "sum(x, d), sum(x, (d, e)), sum(x)",
     "the sum over the named dims (all of them without a dim)"},
    {"mean", "mean(x, d), mean(x)", "the mean over the named dims"},
    {"prod", "prod(x, d), prod(x)", "the product over the named dims"},
    {"max", "max(x, d), max(a, b)",
     "the maximum over a dim, or of two values elementwise"},
    {"min", "min(x, d), min(a, b)",
     "the minimum over a dim, or of two values elementwise"},
    {"argmax", "argmax(x, d)", "the index of d where x is largest"},
    {"argmin", "argmin(x, d)", "the index of d where x is smallest"},
    {"dot", "dot(a, b, d), dot(p, q)",
     "sum(a * b, d): a named contraction; of two structs, their inner product"},
    {"cumsum", "cumsum(x, d)", "running sums along d"},
    {"reduce", "reduce(f, init, x, d)",
     "folds x along d with the associative f, starting from init"},
    {"rename", "rename(x, from, to)", "x with its dim `from` called `to`"},
    {"broadcast", "broadcast(x, d)", "x repeated along the new dim d"},
    {"size", "size(d)", "the number of positions of dim d, an i64"},
    {"f32", "f32(x)", "converts to f32"},
    {"f64", "f64(x)", "converts to f64"},
    {"i32", "i32(x)", "converts to i32"},
    {"i64", "i64(x)", "converts to i64 (an index to its position)"},
    {"print", "print(a, b, …)", "writes its arguments on one line; main only"},
    {"read_npy", "read_npy(path, d1, d2, …)",
     "an f32 or f64 array from a .npy file; main only"},
    {"write_npy", "write_npy(path, x, d1, d2, …)",
     "writes x to a .npy file in the dims' order; main only"},
    {"npy_extent", "dim n = npy_extent(path, axis);",
     "a dim sized by a .npy file's axis; main only"},
    {"grad", "grad(f), grad(f, wrt: p)",
     "the gradient of a scalar function, w.r.t. its first parameter or p"},
    {"value_and_grad", "value_and_grad(f), value_and_grad(f, wrt: p)",
     "the value and the gradient together"},
    {"jvp", "jvp(f, x, t)", "forward mode: (f(x), the derivative along t)"},
    {"vjp", "vjp(f, x)", "reverse mode: (f(x), a pullback dy -> dx)"},
    {"vmap", "vmap(f, over: d)", "f batched over the new dim d"},
    {"stop_gradient", "stop_gradient(x)", "x, with derivative zero"},
    {"checkpoint", "checkpoint(f)",
     "f, recomputed in the backward sweep instead of stored"},
};

// The row of builtin `name`, or null.
inline const BuiltinDoc* FindBuiltinDoc(llvm::StringRef name) {
  for (const BuiltinDoc& doc : kBuiltinDocs)
    if (name == doc.name) return &doc;
  return nullptr;
}

}  // namespace delta::lsp

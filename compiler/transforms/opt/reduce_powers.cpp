// Powers with small constant integer exponents as products (reduce_powers.h).
#include "compiler/transforms/opt/reduce_powers.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

// The exponent of a float `pow` that becomes products, if it is one.
std::optional<int> ReducibleExponent(const Op& op) {
  if (op.kind != OpKind::Pow || !ir::IsFloat(op.results[0]->type.elem))
    return std::nullopt;
  const Value* exponent = op.operands[1];
  const Op* def = exponent->def;
  if (!def || def->kind != OpKind::Const || !exponent->type.IsScalar())
    return std::nullopt;
  double k = def->float_value;
  if (k != std::trunc(k) || std::abs(k) > kMaxReducedExponent)
    return std::nullopt;
  // See Note [Exponents LLVM folds].
  if (k >= -1 && k <= 2) return std::nullopt;
  return static_cast<int>(k);
}

// Note [Exponents LLVM folds]
// pow(x, k) for k in {-1, 0, 1, 2} stays: LLVM's instcombine folds it
// exactly (1/x, 1, x, x*x) on every target, and until then the pow makes
// codegen give its loop a masked tail at -O3 (Note [Masked remainders] in
// docs/internals/codegen.md), which short reductions need: kmeans' sum of
// (c - p) ^ 2.0 over d = 8 or 16 took twice as long as products, its
// vector loop (8 lanes, 4 interleaved) never running.

// x^n for n >= 1 by square and multiply: x^13 = x^8 * x^4 * x.
Value* PositivePower(ir::Builder& builder, Value* x, int n) {
  Value* result = nullptr;
  for (Value* square = x; n > 0; n >>= 1) {
    if (n & 1)
      result = result ? builder.Binary(OpKind::Mul, result, square) : square;
    if (n > 1) square = builder.Binary(OpKind::Mul, square, square);
  }
  return result;
}

Value* Power(ir::Builder& builder, Value* x, int k, ir::ElemKind elem) {
  Value* power = PositivePower(builder, x, std::abs(k));
  if (k > 0) return power;
  return builder.Binary(OpKind::Div, builder.FloatConst(elem, 1.0), power);
}

bool ReduceFunction(ir::Function& function) {
  std::vector<Op*> powers;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (ReducibleExponent(op)) powers.push_back(&op);
  });
  return transforms::ReplaceEach(
      function, powers, [](ir::Builder& builder, Op& op) {
        return Power(builder, op.operands[0], *ReducibleExponent(op),
                     op.results[0]->type.elem);
      });
}

}  // namespace

bool ReducePowers(ir::Module& module) {
  return transforms::ForEachFunction(module, ReduceFunction);
}

}  // namespace delta::opt

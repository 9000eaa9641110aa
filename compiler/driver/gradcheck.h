// Gradient checks for `dlc test`: derivative functions that the AD pass
// fills, evaluated by the interpreter and by compiled code, compared with
// central finite differences that the interpreter computes in f64
// (docs/testing.md).
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/ir/ir.h"

namespace delta::driver {

struct GradcheckOptions {
  uint64_t seed = 1;
  // A derivative d passes against the finite difference r when
  // |d - r| <= abs_tol + rel_tol * |r|: the derivative is computed in f32,
  // the finite difference in f64.
  double rel_tol = 1e-3;
  double abs_tol = 1e-4;
  // The finite-difference step. In f64 the truncation error (~h^2) and the
  // cancellation error (~1e-16 / h) are both far below the tolerance.
  double step = 1e-4;
  // Float inputs and tangents are uniform in [float_low, float_high];
  // integer inputs uniform in [int_low, int_high].
  double float_low = -1;
  double float_high = 1;
  int64_t int_low = 0;
  int64_t int_high = 3;
};

// The derivative functions that checking one function needs. PlanGradcheck
// adds them to the module with an empty body; ad::Differentiate fills them.
struct GradcheckPlan {
  const ir::Function* primal = nullptr;
  // grad(f) w.r.t. every float parameter leaf; only for a float scalar result.
  const ir::Function* gradient = nullptr;
  const ir::Function* jvp = nullptr;
  // The pullback; only when f has float results.
  const ir::Function* vjp = nullptr;
  // jvp(grad(f)), the Hessian-vector product (gradcheck-hvp).
  const ir::Function* hvp = nullptr;
  // grad(grad(f)) (gradcheck-hvp, when f has one float parameter leaf and it
  // is a scalar).
  const ir::Function* gradient_of_gradient = nullptr;
};

// Adds to `module` the derivative functions that checking its function
// `name` needs (with `hvp`: also the second-order ones). Fails if there is
// no such function, or if it has size parameters or dims whose size is not
// a constant (random inputs need fixed shapes).
llvm::Expected<GradcheckPlan> PlanGradcheck(ir::Module& module,
                                            llvm::StringRef name, bool hvp);

struct GradcheckReport {
  bool ok = true;
  // Why the check failed (the worst difference, or an error), when !ok.
  std::string failure;
  // The largest |derivative - finite difference| and how many values were
  // compared.
  double worst_error = 0;
  int compared = 0;
};

// One evaluation that a gradient check made: a derivative function on its
// inputs, or the primal or gradient in f64 for a finite difference.
struct GradcheckCall {
  const ir::Function* function = nullptr;
  bool derivative = false;  // false: a finite difference's evaluation
  std::vector<interpreter::Tensor> args;  // derivative calls only
  std::vector<interpreter::Tensor> results;
};

// The evaluations of one gradient check, in order. With `replay` false,
// RunGradcheck runs them with the interpreter and records them; with
// `replay`, it takes every result from here instead, in the same order
// (after compiled code recomputed the derivatives: Note [Compiled gradient
// checks] in compiled_gradcheck.cpp).
struct GradcheckCalls {
  std::vector<GradcheckCall> calls;
  bool replay = false;
  size_t next = 0;
};

// Runs the checks of `plan` after ad::Differentiate filled its functions.
GradcheckReport RunGradcheck(const ir::Module& module,
                             const GradcheckPlan& plan,
                             const GradcheckOptions& options,
                             GradcheckCalls& calls);

}  // namespace delta::driver

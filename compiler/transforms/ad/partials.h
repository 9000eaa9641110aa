// The partial derivatives of the elementwise ops: the ops that ops.def gives
// the Derivative `Partials`. At one point, the partial of an elementwise op's
// result y with respect to its operand x_i is a scalar, so one linear map
// serves both modes (as Futhark's pdBinOp serves its two): forward mode
// applies it to the tangent of each x_i and sums, reverse mode applies it
// to the adjoint of y and adds the result to the adjoint of x_i.
#pragma once

#include <vector>

#include "compiler/ir/builder.h"

namespace delta::ad {

// d_i * dy/dx_i for each operand x_i of an op of `kind` with primal
// operands `x` and primal result `y`, emitted with `builder`; d_i null (a
// zero) gives null. A result keeps the element kind of its d_i, and its
// dims are those of d_i and the primal values it reads (the caller fits them
// to the value it updates).
std::vector<ir::Value*> ApplyPartials(ir::Builder& builder, ir::OpKind kind,
                                      const std::vector<ir::Value*>& x,
                                      ir::Value* y,
                                      const std::vector<ir::Value*>& d);

}  // namespace delta::ad

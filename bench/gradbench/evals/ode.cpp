// GradBench `ode` through the C ABI of modules/ode.dl.
#include "ode.h"

#include "tool.h"

namespace gradbench {

json Ode(const Library& library, const std::string& function, const json& input,
         json& timings) {
  const Array x = Read(input, "x", 1);
  const int64_t s = Integer(Field(input, "s"), "s");
  const int64_t n = x.Dim(0);
  if (n == 0 || s < 1)
    throw InputError("x must not be empty and s must be positive");
  if (function != "primal" && function != "gradient")
    throw InputError("ode has no " + function);
  // Both entries have one signature.
  auto f = function == "primal" ? GRADBENCH_ENTRY(library, ode_primal)
                                : GRADBENCH_ENTRY(library, ode_gradient);
  auto context = GRADBENCH_CONTEXT(library, ode);
  std::vector<double> y(n);
  Measure(input, context, timings,
          [&] { return f(context.get(), x.data.data(), n, s, y.data(), n); });
  return y;
}

}  // namespace gradbench

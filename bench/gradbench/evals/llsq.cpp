// GradBench `llsq` through the C ABI of modules/llsq.dl.
#include "llsq.h"

#include "tool.h"

namespace gradbench {

json Llsq(const Library& library, const std::string& function,
          const json& input, json& timings) {
  const Array x = Read(input, "x", 1);
  const int64_t n = Integer(Field(input, "n"), "n");
  // The objective divides by n - 1; a negative n is the module's error.
  if (n == 1) throw InputError("llsq: n must not be 1");
  const int64_t m = x.Dim(0);
  auto context = GRADBENCH_CONTEXT(library, llsq);
  if (function == "primal") {
    auto f = GRADBENCH_ENTRY(library, llsq_primal);
    double y = 0;
    Measure(input, context, timings,
            [&] { return f(context.get(), x.data.data(), m, n, &y); });
    return y;
  }
  if (function != "gradient") throw InputError("llsq has no " + function);
  auto f = GRADBENCH_ENTRY(library, llsq_gradient);
  std::vector<double> g(m);
  Measure(input, context, timings,
          [&] { return f(context.get(), x.data.data(), m, n, g.data(), m); });
  return g;
}

}  // namespace gradbench

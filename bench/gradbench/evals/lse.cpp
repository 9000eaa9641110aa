// GradBench `lse` through the C ABI of modules/lse.dl.
#include "lse.h"

#include "tool.h"

namespace gradbench {

json Lse(const Library& library, const std::string& function, const json& input,
         json& timings) {
  const Array x = Read(input, "x", 1);
  const int64_t n = x.Dim(0);
  if (n == 0) throw InputError("x is empty");
  auto context = GRADBENCH_CONTEXT(library, lse);
  if (function == "primal") {
    auto f = GRADBENCH_ENTRY(library, lse_primal);
    double y = 0;
    Measure(input, context, timings,
            [&] { return f(context.get(), x.data.data(), n, &y); });
    return y;
  }
  if (function != "gradient") throw InputError("lse has no " + function);
  auto f = GRADBENCH_ENTRY(library, lse_gradient);
  std::vector<double> g(n);
  Measure(input, context, timings,
          [&] { return f(context.get(), x.data.data(), n, g.data(), n); });
  return g;
}

}  // namespace gradbench

// GradBench `det` through the C ABI of modules/det.dl.
#include "det.h"

#include "tool.h"

namespace gradbench {

json Det(const Library& library, const std::string& function, const json& input,
         json& timings) {
  const Array a = Read(input, "A", 1);
  const int64_t ell = Integer(Field(input, "ell"), "ell");
  if (ell < 1 || a.Dim(0) != ell * ell)
    throw InputError("det: A must hold ell * ell numbers");
  auto context = GRADBENCH_CONTEXT(library, det);
  if (function == "primal") {
    auto f = GRADBENCH_ENTRY(library, det_primal);
    double y = 0;
    Measure(input, context, timings,
            [&] { return f(context.get(), a.data.data(), ell, ell, &y); });
    return y;
  }
  if (function != "gradient") throw InputError("det has no " + function);
  auto f = GRADBENCH_ENTRY(library, det_gradient);
  std::vector<double> g(ell * ell);
  Measure(input, context, timings, [&] {
    return f(context.get(), a.data.data(), ell, ell, g.data(), ell, ell);
  });
  return g;
}

}  // namespace gradbench

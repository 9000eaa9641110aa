// GradBench `hello` through the C ABI of modules/hello.dl.
#include "hello.h"

#include "tool.h"

namespace gradbench {

json Hello(const Library& library, const std::string& function,
           const json& input, json& timings) {
  if (function != "square" && function != "double")
    throw InputError("hello has no " + function);
  auto f = function == "square" ? GRADBENCH_ENTRY(library, hello_square)
                                : GRADBENCH_ENTRY(library, hello_double);
  auto context = GRADBENCH_CONTEXT(library, hello);
  const double x = Number(input, "the input");
  double y = 0;
  Measure(input, context, timings, [&] { return f(context.get(), x, &y); });
  return y;
}

}  // namespace gradbench

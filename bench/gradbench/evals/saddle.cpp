// GradBench `saddle` through the C ABI of modules/saddle.dl.
#include "saddle.h"

#include "tool.h"

namespace gradbench {

json Saddle(const Library& library, const std::string& function,
            const json& input, json& timings) {
  // The four entries (the modes) have one signature.
  decltype(&saddle_rr) f = nullptr;
  if (function == "rr") f = GRADBENCH_ENTRY(library, saddle_rr);
  if (function == "ff") f = GRADBENCH_ENTRY(library, saddle_ff);
  if (function == "fr") f = GRADBENCH_ENTRY(library, saddle_fr);
  if (function == "rf") f = GRADBENCH_ENTRY(library, saddle_rf);
  if (f == nullptr) throw InputError("saddle has no " + function);
  // The library checks that start holds 2 numbers.
  const Array start = Read(input, "start", 1);
  auto context = GRADBENCH_CONTEXT(library, saddle);
  std::vector<double> y(4);
  Measure(input, context, timings, [&] {
    return f(context.get(), start.data.data(), start.Dim(0), y.data(), 4);
  });
  return y;
}

}  // namespace gradbench

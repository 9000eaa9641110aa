// GradBench `particle` through the C ABI of modules/particle.dl.
#include "particle.h"

#include "tool.h"

namespace gradbench {

json Particle(const Library& library, const std::string& function,
              const json& input, json& timings) {
  // The four entries (the modes) have one signature.
  decltype(&particle_rr) f = nullptr;
  if (function == "rr") f = GRADBENCH_ENTRY(library, particle_rr);
  if (function == "ff") f = GRADBENCH_ENTRY(library, particle_ff);
  if (function == "fr") f = GRADBENCH_ENTRY(library, particle_fr);
  if (function == "rf") f = GRADBENCH_ENTRY(library, particle_rf);
  if (f == nullptr) throw InputError("particle has no " + function);
  const double w = Number(Field(input, "w"), "w");
  auto context = GRADBENCH_CONTEXT(library, particle);
  double y = 0;
  Measure(input, context, timings, [&] { return f(context.get(), w, &y); });
  return y;
}

}  // namespace gradbench

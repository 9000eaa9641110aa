// GradBench `lstm` through the C ABI of modules/lstm.dl.
#include "lstm.h"

#include "tool.h"

namespace gradbench {

json Lstm(const Library& library, const std::string& function,
          const json& input, json& timings) {
  const Array main = Read(input, "main_params", 2),
              extra = Read(input, "extra_params", 2);
  const Array state = Read(input, "state", 2),
              sequence = Read(input, "sequence", 2);
  const int64_t l = main.Dim(0) / 2, b = main.Dim(1) / 4, c = sequence.Dim(0);
  if (l < 1 || main.Dim(0) != 2 * l || main.Dim(1) != 4 * b || b < 1 ||
      state.shape != std::vector<int64_t>{2 * l, b} || c < 2)
    throw InputError("lstm: the arrays' sizes do not agree");
  // main_params [2l][4b] = [lay][wb][gate][b] -> f64[wb, gate, lay, b];
  // state [2l][b] = [lay][hc][b] -> f64[hc, lay, b]. The library checks
  // extra_params (f64[ex, b]) and sequence (f64[c, b]).
  std::vector<double> weights(8 * l * b), hidden(2 * l * b);
  for (int64_t layer = 0; layer < l; ++layer)
    for (int64_t row = 0; row < 2; ++row) {
      for (int64_t gate = 0; gate < 4; ++gate)
        for (int64_t lane = 0; lane < b; ++lane)
          weights[((row * 4 + gate) * l + layer) * b + lane] =
              main.data[(2 * layer + row) * 4 * b + gate * b + lane];
      for (int64_t lane = 0; lane < b; ++lane)
        hidden[(row * l + layer) * b + lane] =
            state.data[(2 * layer + row) * b + lane];
    }
  auto context = GRADBENCH_CONTEXT(library, lstm);
  // The arguments common to both entries, after the context.
  auto call = [&](auto f, auto... results) {
    return f(context.get(), weights.data(), 2, 4, l, b, extra.data.data(),
             extra.Dim(0), extra.Dim(1), hidden.data(), 2, l, b,
             sequence.data.data(), c, sequence.Dim(1), results...);
  };
  if (function == "objective") {
    auto f = GRADBENCH_ENTRY(library, lstm_objective);
    double y = 0;
    Measure(input, context, timings, [&] { return call(f, &y); });
    return y;
  }
  if (function != "jacobian") throw InputError("lstm has no " + function);
  auto f = GRADBENCH_ENTRY(library, lstm_jacobian);
  std::vector<double> main_grad(8 * l * b), extra_grad(3 * b);
  Measure(input, context, timings, [&] {
    return call(f, main_grad.data(), 2, 4, l, b, extra_grad.data(), 3, b);
  });
  std::vector<double> out;
  for (int64_t layer = 0; layer < l; ++layer)
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t gate = 0; gate < 4; ++gate)
        for (int64_t lane = 0; lane < b; ++lane)
          out.push_back(main_grad[((row * 4 + gate) * l + layer) * b + lane]);
  out.insert(out.end(), extra_grad.begin(), extra_grad.end());
  return out;
}

}  // namespace gradbench

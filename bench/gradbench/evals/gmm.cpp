// GradBench `gmm` through the C ABI of modules/gmm.dl.
#include "gmm.h"

#include "tool.h"

namespace gradbench {

json Gmm(const Library& library, const std::string& function, const json& input,
         json& timings) {
  const int64_t d = Integer(Field(input, "d"), "d"),
                k = Integer(Field(input, "k"), "k");
  const int64_t n = Integer(Field(input, "n"), "n"),
                m = Integer(Field(input, "m"), "m");
  const double gamma = Number(Field(input, "gamma"), "gamma");
  const Array x = Read(input, "x", 2), alpha = Read(input, "alpha", 1),
              mu = Read(input, "mu", 2);
  const Array q = Read(input, "q", 2), l = Read(input, "l", 2);
  const int64_t t = d * (d - 1) / 2;
  // The library checks that the arrays agree with each other; the tool,
  // that they agree with d, k and n.
  if (d < 1 || k < 1 || m < 0 || x.shape != std::vector<int64_t>{n, d} ||
      alpha.Dim(0) != k || l.shape != std::vector<int64_t>{k, t})
    throw InputError("gmm: the arrays' sizes do not agree with d, k and n");
  auto context = GRADBENCH_CONTEXT(library, gmm);
  // The arguments common to both entries, after the context.
  auto call = [&](auto f, auto* result) {
    return f(context.get(), x.data.data(), n, d, alpha.data.data(), k,
             mu.data.data(), mu.Dim(0), mu.Dim(1), q.data.data(), q.Dim(0),
             q.Dim(1), l.data.data(), k, t, m, gamma, result);
  };
  if (function == "objective") {
    auto f = GRADBENCH_ENTRY(library, gmm_objective);
    double y = 0;
    Measure(input, context, timings, [&] { return call(f, &y); });
    return y;
  }
  if (function != "jacobian") throw InputError("gmm has no " + function);
  auto f = GRADBENCH_ENTRY(library, gmm_jacobian);
  std::vector<double> g_alpha(k), g_mu(k * d), g_q(k * d), g_l(k * t);
  // The result struct Gmm[k, d, t]: the library writes through its
  // pointers.
  gmm_Gmm g = {g_alpha.data(), {k},    g_mu.data(), {k, d},
               g_q.data(),     {k, d}, g_l.data(),  {k, t}};
  Measure(input, context, timings, [&] { return call(f, &g); });
  auto rows = [&](const std::vector<double>& data, int64_t width) {
    json out = json::array();
    for (int64_t j = 0; j < k; ++j)
      out.push_back(List(data.data() + j * width, width));
    return out;
  };
  return {{"alpha", g_alpha},
          {"mu", rows(g_mu, d)},
          {"q", rows(g_q, d)},
          {"l", rows(g_l, t)}};
}

}  // namespace gradbench

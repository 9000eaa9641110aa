// GradBench `ba` through the C ABI of modules/ba.dl.
#include "ba.h"

#include <algorithm>

#include "tool.h"

namespace gradbench {
namespace {

// The first 30 elements of an array of `length` elements, then its last.
template <typename At>
json Truncated(int64_t length, At at) {
  json out = json::array();
  for (int64_t i = 0; i < std::min<int64_t>(30, length); ++i)
    out.push_back(at(i));
  if (length > 0) out.push_back(at(length - 1));
  return out;
}

}  // namespace

json Ba(const Library& library, const std::string& function, const json& input,
        json& timings) {
  const int64_t n = Integer(Field(input, "n"), "n"),
                m = Integer(Field(input, "m"), "m");
  const int64_t p = Integer(Field(input, "p"), "p");
  const Array cam = Read(input, "cam", 1), x = Read(input, "x", 1),
              feat = Read(input, "feat", 1);
  const double w = Number(Field(input, "w"), "w");
  if (n < 1 || m < 1 || p < 1 || cam.Dim(0) != 11 || x.Dim(0) != 3 ||
      feat.Dim(0) != 2)
    throw InputError(
        "ba: expected n, m, p >= 1, 11 camera parameters, 3 coordinates, 2 "
        "feature coordinates");
  // Materialize the whole problem (SPEC §3.7), in the layouts of the
  // exported signatures: cam f64[cp, cams], x f64[xyz, pts], feat f64[uv, obs].
  std::vector<double> cams(11 * n), points(3 * m), weights(p, w),
      features(2 * p);
  for (int64_t c = 0; c < 11; ++c)
    for (int64_t j = 0; j < n; ++j) cams[c * n + j] = cam.data[c];
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t j = 0; j < m; ++j) points[c * m + j] = x.data[c];
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < p; ++i) features[c * p + i] = feat.data[c];
  std::vector<int64_t> cam_of(p), point_of(p);
  for (int64_t i = 0; i < p; ++i) cam_of[i] = i % n, point_of[i] = i % m;
  auto context = GRADBENCH_CONTEXT(library, ba);
  // The arguments common to both entries, after the context.
  auto call = [&](auto f, auto... results) {
    return f(context.get(), cams.data(), 11, n, points.data(), 3, m,
             weights.data(), p, features.data(), 2, p, cam_of.data(), p,
             point_of.data(), p, results...);
  };
  if (function == "objective") {
    auto f = GRADBENCH_ENTRY(library, ba_objective);
    std::vector<double> reprojection(2 * p), weight_error(p);
    Measure(input, context, timings, [&] {
      return call(f, reprojection.data(), 2, p, weight_error.data(), p);
    });
    return {
        {"reproj_error",
         {{"elements", {reprojection[0], reprojection[p]}}, {"repeated", p}}},
        {"w_err", {{"element", weight_error[0]}, {"repeated", p}}}};
  }
  if (function != "jacobian") throw InputError("ba has no " + function);
  auto f = GRADBENCH_ENTRY(library, ba_jacobian);
  // Blocks f64[cp, uv, obs], f64[xyz, uv, obs], f64[uv, obs], f64[obs].
  std::vector<double> by_cam(22 * p), by_point(6 * p), by_weight(2 * p),
      weight_by_weight(p);
  Measure(input, context, timings, [&] {
    return call(f, by_cam.data(), 11, 2, p, by_point.data(), 3, 2, p,
                by_weight.data(), 2, p, weight_by_weight.data(), p);
  });
  // The CSR matrix (SPEC §3.7): 2p residual rows of 15 entries, then p
  // weight rows of one.
  const int64_t entries = 31 * p;
  auto row_start = [&](int64_t r) -> int64_t {
    return r <= 2 * p ? 15 * r : 30 * p + (r - 2 * p);
  };
  auto column = [&](int64_t e) -> int64_t {
    if (e >= 30 * p) return 11 * n + 3 * m + (e - 30 * p);
    const int64_t i = e / 30, at = e % 15;
    if (at < 11) return 11 * (i % n) + at;
    if (at < 14) return 11 * n + 3 * (i % m) + (at - 11);
    return 11 * n + 3 * m + i;
  };
  auto value = [&](int64_t e) -> double {
    if (e >= 30 * p) return weight_by_weight[e - 30 * p];
    const int64_t i = e / 30, u = (e / 15) % 2, at = e % 15;
    if (at < 11) return by_cam[(at * 2 + u) * p + i];
    if (at < 14) return by_point[((at - 11) * 2 + u) * p + i];
    return by_weight[u * p + i];
  };
  return {{"rows", Truncated(3 * p + 1, row_start)},
          {"cols", Truncated(entries, column)},
          {"vals", Truncated(entries, value)}};
}

}  // namespace gradbench

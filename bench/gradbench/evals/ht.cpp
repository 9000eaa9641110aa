// GradBench `ht` through the C ABI of modules/ht.dl.
#include "ht.h"

#include "tool.h"

namespace gradbench {

json Ht(const Library& library, const std::string& function, const json& input,
        json& timings) {
  const Array theta = Read(input, "theta", 1);
  const json& data = Field(input, "data");
  const json& model = Field(data, "model");
  const int64_t bones = Integer(Field(model, "bone_count"), "bone_count");
  const std::vector<int64_t> parents =
      Integers(Read(model, "parents", 1), "parents");
  const Array relatives = Read(model, "base_relatives", 3),
              inverses = Read(model, "inverse_base_absolutes", 3);
  const Array positions = Read(model, "base_positions", 2),
              weights = Read(model, "weights", 2);
  const Array triangles_in = Read(model, "triangles", 2);
  const json& mirrored = Field(model, "is_mirrored");
  const std::vector<int64_t> corr =
      Integers(Read(data, "correspondences", 1), "correspondences");
  const Array points = Read(data, "points", 2), us = Read(input, "us", 2);
  const auto verts = positions.Dim(0), tris = triangles_in.Dim(0);
  const auto pts = static_cast<int64_t>(corr.size());
  // Empty `us`: the simple variant (SPEC §3.8).
  const bool complicated = us.Dim(0) > 0;
  const std::vector<int64_t> matrices{bones, 4, 4};
  // The library checks the arrays' sizes against each other and the
  // module's dims, and the correspondences and triangles' vertices as
  // indices; the tool checks what the transposes below rely on.
  if (!mirrored.is_boolean() || static_cast<int64_t>(parents.size()) != bones ||
      relatives.shape != matrices || inverses.shape != matrices ||
      positions.Dim(1) != 4 || triangles_in.Dim(1) != 3 ||
      points.shape != std::vector<int64_t>{pts, 3} ||
      (complicated && us.shape != std::vector<int64_t>{pts, 2}))
    throw InputError("ht: the arrays' sizes do not agree");
  for (int64_t b = 0; b < bones; ++b)
    if (parents[b] < -1 || parents[b] >= b)
      throw InputError("ht: a bone's parent must be -1 or an earlier bone");
  // The exported signatures' layouts (canonical dim order, see ht.dl):
  // matrices f64[row, col, bones], positions f64[col, verts], triangles
  // i64[corner, tris], points f64[xyz, pts], us f64[uv, pts].
  const std::vector<double> relatives_t = MoveFirstLast(relatives.data, bones),
                            inverses_t = MoveFirstLast(inverses.data, bones),
                            positions_t = MoveFirstLast(positions.data, verts),
                            points_t = MoveFirstLast(points.data, pts),
                            us_t = MoveFirstLast(us.data, pts);
  const std::vector<int64_t> triangles =
      MoveFirstLast(Integers(triangles_in, "triangles"), tris);
  const bool is_mirrored = mirrored.get<bool>();
  auto context = GRADBENCH_CONTEXT(library, ht);
  // The arguments of the pose and the hand, which every entry takes first.
  auto with_hand = [&](auto f, auto... rest) {
    return f(context.get(), theta.data.data(), theta.Dim(0), parents.data(),
             bones, relatives_t.data(), 4, 4, bones, inverses_t.data(), 4, 4,
             bones, positions_t.data(), 4, verts, weights.data.data(),
             weights.Dim(0), weights.Dim(1), is_mirrored, rest...);
  };
  auto simple = [&](auto f, auto... results) {
    return with_hand(f, corr.data(), pts, points_t.data(), 3, pts, results...);
  };
  auto full = [&](auto f, auto... results) {
    return with_hand(f, triangles.data(), 3, tris, corr.data(), pts,
                     points_t.data(), 3, pts, us_t.data(), 2, pts, results...);
  };
  if (function == "objective") {
    // f64[xyz, pts] -> residual 3i + j.
    std::vector<double> e(3 * pts);
    if (complicated) {
      auto f = GRADBENCH_ENTRY(library, ht_objective);
      Measure(input, context, timings,
              [&] { return full(f, e.data(), 3, pts); });
    } else {
      auto f = GRADBENCH_ENTRY(library, ht_simple_objective);
      Measure(input, context, timings,
              [&] { return simple(f, e.data(), 3, pts); });
    }
    return MoveFirstLast(e, 3);
  }
  if (function != "jacobian") throw InputError("ht has no " + function);
  // Row 3i + j: the derivatives by u_i (complicated only), then by theta;
  // blocks f64[uv, xyz, pts] and f64[th, xyz, pts].
  std::vector<double> by_us(complicated ? 2 * 3 * pts : 0),
      by_theta(26 * 3 * pts);
  if (complicated) {
    auto f = GRADBENCH_ENTRY(library, ht_jacobian);
    Measure(input, context, timings, [&] {
      return full(f, by_us.data(), 2, 3, pts, by_theta.data(), 26, 3, pts);
    });
  } else {
    auto f = GRADBENCH_ENTRY(library, ht_simple_jacobian);
    Measure(input, context, timings,
            [&] { return simple(f, by_theta.data(), 26, 3, pts); });
  }
  const int64_t block = 3 * pts;
  json out = json::array();
  for (int64_t i = 0; i < pts; ++i)
    for (int64_t c = 0; c < 3; ++c) {
      std::vector<double> row;
      const int64_t at = c * pts + i;
      if (complicated)
        for (int64_t u = 0; u < 2; ++u) row.push_back(by_us[u * block + at]);
      for (int64_t t = 0; t < 26; ++t) row.push_back(by_theta[t * block + at]);
      out.push_back(std::move(row));
    }
  return out;
}

}  // namespace gradbench

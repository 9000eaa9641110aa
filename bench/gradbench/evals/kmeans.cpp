// GradBench `kmeans` through the C ABI of modules/kmeans.dl.
#include "kmeans.h"

#include "tool.h"

namespace gradbench {

json Kmeans(const Library& library, const std::string& function,
            const json& input, json& timings) {
  const Array points = Read(input, "points", 2);
  const Array centroids = Read(input, "centroids", 2);
  // The library checks that points and centroids agree in d.
  const int64_t n = points.Dim(0), d = points.Dim(1);
  const int64_t k = centroids.Dim(0), centroid_d = centroids.Dim(1);
  if (k == 0) throw InputError("no centroids");
  auto context = GRADBENCH_CONTEXT(library, kmeans);
  if (function == "cost") {
    auto f = GRADBENCH_ENTRY(library, kmeans_cost);
    double y = 0;
    Measure(input, context, timings, [&] {
      return f(context.get(), points.data.data(), n, d, centroids.data.data(),
               k, centroid_d, &y);
    });
    return y;
  }
  if (function != "dir") throw InputError("kmeans has no " + function);
  auto f = GRADBENCH_ENTRY(library, kmeans_dir);
  std::vector<double> dir(k * d);
  Measure(input, context, timings, [&] {
    return f(context.get(), points.data.data(), n, d, centroids.data.data(), k,
             centroid_d, dir.data(), k, d);
  });
  json out = json::array();
  for (int64_t j = 0; j < k; ++j) out.push_back(List(dir.data() + j * d, d));
  return out;
}

}  // namespace gradbench

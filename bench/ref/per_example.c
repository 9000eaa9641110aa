/* Hand-derived per-example gradients: g_b = 2 (w . x_b - y_b) x_b. */
#include "bench/ref/ref.h"

void RefPerExample(float* g, const float* w, const float* xs, const float* ys,
                   int64_t batch, int64_t feat) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = xs + b * feat;
    float e = 0;
    for (int64_t f = 0; f < feat; ++f) e += w[f] * x[f];
    e = 2 * (e - ys[b]);
    for (int64_t f = 0; f < feat; ++f) g[b * feat + f] = e * x[f];
  }
}

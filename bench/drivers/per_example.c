/* Per-example gradients (Delta grad lifted over a batch) against C. */
#include "bench/ref/ref.h"
#include "runtime/runtime.h"

enum { kBatch = 1024, kFeat = 512 };

float* DeltaPerExample(const float* w, const float* xs, const float* ys)
    __asm__("delta.per_example");

static float *w, *xs, *ys, *g;

static void RunRef(void* ctx) {
  (void)ctx;
  RefPerExample(g, w, xs, ys, kBatch, kFeat);
}
static void RunDelta(void* ctx) {
  (void)ctx;
  delta_free(DeltaPerExample(w, xs, ys));
}

int main(void) {
  w = BenchRandomF32(kFeat, 1, -1, 1);
  xs = BenchRandomF32((int64_t)kBatch * kFeat, 2, -1, 1);
  ys = BenchRandomF32(kBatch, 3, -1, 1);
  g = BenchRandomF32((int64_t)kBatch * kFeat, 4, -1, 1);
  RunRef(0);
  float* d = DeltaPerExample(w, xs, ys);
  for (int64_t e = 0; e < (int64_t)kBatch * kFeat; e += 13)
    BenchCheck("per_example", d[e], g[e], 1e-3);
  delta_free(d);
  double elems = (double)kBatch * kFeat;
  BenchReport("per_example", "batch 1024 feat 512 f32", "c",
              BenchMedian(RunRef, 0), elems, "elem");
  BenchReport("per_example", "batch 1024 feat 512 f32", "delta",
              BenchMedian(RunDelta, 0), elems, "elem");
  return 0;
}

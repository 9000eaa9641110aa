/* vmap(matvec) over a batch of 1024 against the direct contraction. */
#include "bench/common.h"
#include "runtime/runtime.h"

enum { kK = 512, kO = 512, kB = 1024 };

float* DeltaVmapped(const float* w, const float* xs) __asm__("delta.vmapped");
float* DeltaDirect(const float* w, const float* xs) __asm__("delta.direct");

static float *w, *xs;

static void RunVmapped(void* ctx) {
  (void)ctx;
  delta_free(DeltaVmapped(w, xs));
}
static void RunDirect(void* ctx) {
  (void)ctx;
  delta_free(DeltaDirect(w, xs));
}

int main(void) {
  /* Layouts are canonical dim order: w[k][o], xs[k][b]. */
  w = BenchRandomF32((int64_t)kK * kO, 1, -1, 1);
  xs = BenchRandomF32((int64_t)kK * kB, 2, -1, 1);
  float* v = DeltaVmapped(w, xs);
  float* d = DeltaDirect(w, xs);
  for (int64_t e = 0; e < (int64_t)kO * kB; e += 37)
    BenchCheck("vmap", v[e], d[e], 1e-4);
  delta_free(v);
  delta_free(d);
  double flops = 2.0 * kK * kO * kB;
  BenchReport("vmap_matvec", "512x512 batch 1024 f32", "delta-direct",
              BenchMedian(RunDirect, 0), flops, "FLOP");
  BenchReport("vmap_matvec", "512x512 batch 1024 f32", "delta",
              BenchMedian(RunVmapped, 0), flops, "FLOP");
  return 0;
}

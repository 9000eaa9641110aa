/* The named matmul sum(a * b, k) (Delta) against OpenBLAS sgemm. */
#include <cblas.h>

#include "bench/common.h"
#include "runtime/runtime.h"

float* DeltaMatmul(const float* a, const float* b) __asm__("delta.matmul");
char* openblas_get_corename(void);

static float *a, *b, *c;

static void RunBlas(void* ctx) {
  (void)ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BENCH_N, BENCH_N, BENCH_N, 1.0f, a, BENCH_N,
              b, BENCH_N, 0.0f, c, BENCH_N);
}
static void RunDelta(void* ctx) {
  (void)ctx;
  delta_free(DeltaMatmul(a, b));
}

int main(void) {
  a = BenchRandomF32((int64_t)BENCH_N * BENCH_N, 1, -1, 1);
  b = BenchRandomF32((int64_t)BENCH_N * BENCH_N, 2, -1, 1);
  c = BenchRandomF32((int64_t)BENCH_N * BENCH_N, 3, -1, 1);
  RunBlas(0);
  float* d = DeltaMatmul(a, b);
  for (int64_t e = 0; e < (int64_t)BENCH_N * BENCH_N; e += 997)
    BenchCheck("matmul", d[e], c[e], 1e-3);
  delta_free(d);
  char params[64], impl[64];
  snprintf(params, sizeof params, "%d f32", BENCH_N);
  snprintf(impl, sizeof impl, "openblas-%s", openblas_get_corename());
  double flops = 2.0 * BENCH_N * BENCH_N * BENCH_N;
  BenchReport("matmul", params, impl, BenchMedian(RunBlas, 0), flops, "FLOP");
  BenchReport("matmul", params, "delta", BenchMedian(RunDelta, 0), flops,
              "FLOP");
  return 0;
}

/* Fused elementwise chains (Delta) against the STREAM triad (C). */
#include "bench/ref/ref.h"
#include "runtime/runtime.h"

#ifndef BENCH_N
#define BENCH_N 8388608
#endif

double* DeltaTriad(const double* b, const double* c) __asm__("delta.triad");
double* DeltaChain(const double* b, const double* c) __asm__("delta.chain");

static double *a, *b, *c;

static void RunRef(void* ctx) {
  (void)ctx;
  RefTriad(a, b, c, BENCH_N);
}
static void RunTriad(void* ctx) {
  (void)ctx;
  delta_free(DeltaTriad(b, c));
}
static void RunChain(void* ctx) {
  (void)ctx;
  delta_free(DeltaChain(b, c));
}

int main(void) {
  a = BenchRandomF64(BENCH_N, 1, 0, 1);
  b = BenchRandomF64(BENCH_N, 2, 0, 1);
  c = BenchRandomF64(BENCH_N, 3, 0, 1);
  RefTriad(a, b, c, BENCH_N);
  double* d = DeltaTriad(b, c);
  for (int64_t i = 0; i < BENCH_N; i += 4097) BenchCheck("triad", d[i], a[i], 1e-14);
  delta_free(d);
  /* STREAM counts 24 bytes per element (two reads, one write). */
  double bytes = 24.0 * BENCH_N;
  BenchReport("elementwise", "triad 64MiB f64", "c", BenchMedian(RunRef, 0),
              bytes, "B");
  BenchReport("elementwise", "triad 64MiB f64", "delta",
              BenchMedian(RunTriad, 0), bytes, "B");
  BenchReport("elementwise", "chain 64MiB f64", "delta",
              BenchMedian(RunChain, 0), bytes, "B");
  return 0;
}

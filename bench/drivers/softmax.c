/* Softmax and logsumexp over a named dim (Delta) against hand-written C. */
#include "bench/ref/ref.h"
#include "runtime/runtime.h"

enum { kRows = 4096, kCols = 1000 };

float* DeltaSoftmax(const float* x) __asm__("delta.softmax_rows");
float* DeltaLogsumexp(const float* x) __asm__("delta.logsumexp_rows");

static float *x, *y;

static void RunRefSoftmax(void* ctx) {
  (void)ctx;
  RefSoftmax(y, x, kRows, kCols);
}
static void RunRefLogsumexp(void* ctx) {
  (void)ctx;
  RefLogsumexp(y, x, kRows, kCols);
}
static void RunSoftmax(void* ctx) {
  (void)ctx;
  delta_free(DeltaSoftmax(x));
}
static void RunLogsumexp(void* ctx) {
  (void)ctx;
  delta_free(DeltaLogsumexp(x));
}

int main(void) {
  x = BenchRandomF32((int64_t)kRows * kCols, 1, -10, 10);
  y = BenchRandomF32((int64_t)kRows * kCols, 2, 0, 1);
  RefSoftmax(y, x, kRows, kCols);
  float* d = DeltaSoftmax(x);
  for (int64_t e = 0; e < (int64_t)kRows * kCols; e += 101)
    BenchCheck("softmax", d[e], y[e], 1e-5);
  delta_free(d);
  RefLogsumexp(y, x, kRows, kCols);
  d = DeltaLogsumexp(x);
  for (int64_t e = 0; e < kRows; ++e)
    BenchCheck("logsumexp", d[e], y[e], 1e-5);
  delta_free(d);
  double elems = (double)kRows * kCols;
  BenchReport("softmax", "softmax 4096x1000 f32", "c",
              BenchMedian(RunRefSoftmax, 0), elems, "elem");
  BenchReport("softmax", "softmax 4096x1000 f32", "delta",
              BenchMedian(RunSoftmax, 0), elems, "elem");
  BenchReport("softmax", "logsumexp 4096x1000 f32", "c",
              BenchMedian(RunRefLogsumexp, 0), elems, "elem");
  BenchReport("softmax", "logsumexp 4096x1000 f32", "delta",
              BenchMedian(RunLogsumexp, 0), elems, "elem");
  return 0;
}

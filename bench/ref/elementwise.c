/* STREAM's triad a = b + s * c, hand-written, split over BENCH_THREADS. */
#include "bench/ref/ref.h"

typedef struct {
  double *a, *b, *c;
} Triad;

static void TriadChunk(void* ctx, int64_t begin, int64_t end) {
  Triad* t = (Triad*)ctx;
  for (int64_t i = begin; i < end; ++i) t->a[i] = t->b[i] + 3.0 * t->c[i];
}

void RefTriad(double* a, const double* b, const double* c, int64_t n) {
  Triad t = {a, (double*)b, (double*)c};
  BenchParallel(n, TriadChunk, &t);
}

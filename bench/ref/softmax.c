/* Row-wise softmax and logsumexp with libm's expf/logf, as one would write
   them by hand; rows split over BENCH_THREADS. */
#include "bench/ref/ref.h"

typedef struct {
  float* y;
  const float* x;
  int64_t cols;
} Rows;

static void SoftmaxChunk(void* ctx, int64_t begin, int64_t end) {
  Rows* r = (Rows*)ctx;
  for (int64_t i = begin; i < end; ++i) {
    const float* x = r->x + i * r->cols;
    float* y = r->y + i * r->cols;
    float m = x[0];
    for (int64_t j = 1; j < r->cols; ++j) m = x[j] > m ? x[j] : m;
    float s = 0;
    for (int64_t j = 0; j < r->cols; ++j) s += (y[j] = expf(x[j] - m));
    float inv = 1.0f / s;
    for (int64_t j = 0; j < r->cols; ++j) y[j] *= inv;
  }
}

static void LogsumexpChunk(void* ctx, int64_t begin, int64_t end) {
  Rows* r = (Rows*)ctx;
  for (int64_t i = begin; i < end; ++i) {
    const float* x = r->x + i * r->cols;
    float m = x[0];
    for (int64_t j = 1; j < r->cols; ++j) m = x[j] > m ? x[j] : m;
    float s = 0;
    for (int64_t j = 0; j < r->cols; ++j) s += expf(x[j] - m);
    r->y[i] = m + logf(s);
  }
}

void RefSoftmax(float* y, const float* x, int64_t rows, int64_t cols) {
  Rows r = {y, x, cols};
  BenchParallel(rows, SoftmaxChunk, &r);
}

void RefLogsumexp(float* y, const float* x, int64_t rows, int64_t cols) {
  Rows r = {y, x, cols};
  BenchParallel(rows, LogsumexpChunk, &r);
}

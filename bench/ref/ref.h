/* The hand-written C references of the benchmarks (the .c files beside this header), written
   from the problem definitions, compiled with -O3 -march=native. */
#ifndef DELTA_BENCH_REF_H_
#define DELTA_BENCH_REF_H_

#include "bench/common.h"

void RefTriad(double* a, const double* b, const double* c, int64_t n);

/* Row-wise softmax and logsumexp of x[rows][cols]. */
void RefSoftmax(float* y, const float* x, int64_t rows, int64_t cols);
void RefLogsumexp(float* y, const float* x, int64_t rows, int64_t cols);

/* GMM (gradbench 3.6) without the Wishart constant, gamma = 1, m = 0;
   alpha[K], mu[K][D], q[K][D], l[K][D][D] (strictly lower part used),
   x[N][D]. The gradient is written to g_* (same shapes); `work` holds
   K * D * 3 doubles. */
double RefGmmObjective(int n, int k, int d, const double* alpha,
                       const double* mu, const double* q, const double* l,
                       const double* x);
double RefGmmGradient(int n, int k, int d, const double* alpha,
                      const double* mu, const double* q, const double* l,
                      const double* x, double* g_alpha, double* g_mu,
                      double* g_q, double* g_l);

/* Per-example gradients of (w . x_b - y_b)^2: g[b][f]. */
void RefPerExample(float* g, const float* w, const float* xs, const float* ys,
                   int64_t batch, int64_t feat);

#endif

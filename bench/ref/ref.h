/* The hand-written C references of the benchmarks (the .c files beside this
   header), written from the problem definitions, compiled with -O3
   -march=native. */
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

/* Bundle adjustment (gradbench 3.7) in the layouts of
   bench/gradbench/modules/ba.dl: cam[11][n], x[3][m], w[p], feat[2][p];
   residuals reproj[2][p], w_err[p]; Jacobian blocks d_cam[11][2][p],
   d_point[3][2][p], d_w[2][p], d_w_err[p]. RefBaObservation is one
   observation: e[2] and jac[2][15] (camera, point, weight). */
void RefBaObjective(int64_t n, int64_t m, int64_t p, const double* cam,
                    const double* x, const double* w, const double* feat,
                    const int64_t* cam_of, const int64_t* pt_of, double* reproj,
                    double* w_err);
void RefBaJacobian(int64_t n, int64_t m, int64_t p, const double* cam,
                   const double* x, const double* w, const double* feat,
                   const int64_t* cam_of, const int64_t* pt_of, double* d_cam,
                   double* d_point, double* d_w, double* d_w_err);
void RefBaObservation(const double cam[11], const double point[3], double w,
                      const double feat[2], double e[2], double jac[2][15]);

/* Diagonal LSTM (gradbench 3.9) in the layouts of
   bench/gradbench/modules/lstm.dl: main[2][4][l][b], extra[3][b],
   state[2][l][b], seq[c][b]. The gradient (w.r.t. main and extra, same
   shapes) returns the loss too. */
double RefLstmObjective(int64_t l, int64_t c, int64_t b, const double* main,
                        const double* extra, const double* state,
                        const double* seq);
double RefLstmGradient(int64_t l, int64_t c, int64_t b, const double* main,
                       const double* extra, const double* state,
                       const double* seq, double* g_main, double* g_extra);

/* Per-example gradients of (w . x_b - y_b)^2: g[b][f]. */
void RefPerExample(float* g, const float* w, const float* xs, const float* ys,
                   int64_t batch, int64_t feat);

#endif

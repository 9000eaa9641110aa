/* ADBench GMM (gradbench SPEC.md 3.6) objective and hand-derived gradient,
   written as ADBench's "Manual" C++ does: per point, per component, the
   triangular product y = Q (x - mu) and its adjoint. */
#include "bench/ref/ref.h"

static double Lse(const double* v, int k) {
  double m = v[0];
  for (int j = 1; j < k; ++j) m = v[j] > m ? v[j] : m;
  double s = 0;
  for (int j = 0; j < k; ++j) s += exp(v[j] - m);
  return m + log(s);
}

/* y = Q (x - mu) for one component; returns sum over d of q. */
static void Project(int d, const double* x, const double* mu,
                    const double* qdiag, const double* l, double* xc,
                    double* y) {
  for (int r = 0; r < d; ++r) xc[r] = x[r] - mu[r];
  for (int r = 0; r < d; ++r) {
    double s = qdiag[r] * xc[r];
    const double* row = l + (int64_t)r * d;
    for (int c = 0; c < r; ++c) s += row[c] * xc[c];
    y[r] = s;
  }
}

static double Prior(int k, int d, const double* q, const double* l) {
  double prior = 0;
  for (int c = 0; c < k; ++c)
    for (int r = 0; r < d; ++r) {
      double e = exp(q[c * d + r]);
      prior += e * e;
      const double* row = l + ((int64_t)c * d + r) * d;
      for (int t = 0; t < r; ++t) prior += row[t] * row[t];
    }
  return 0.5 * prior;
}

double RefGmmObjective(int n, int k, int d, const double* alpha,
                       const double* mu, const double* q, const double* l,
                       const double* x) {
  double* qdiag = malloc(sizeof(double) * k * d);
  double* sumq = malloc(sizeof(double) * k);
  double* beta = malloc(sizeof(double) * k);
  double* xc = malloc(sizeof(double) * d);
  double* y = malloc(sizeof(double) * d);
  for (int c = 0; c < k; ++c) {
    sumq[c] = 0;
    for (int r = 0; r < d; ++r) {
      qdiag[c * d + r] = exp(q[c * d + r]);
      sumq[c] += q[c * d + r];
    }
  }
  double total = 0;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < k; ++c) {
      Project(d, x + (int64_t)i * d, mu + c * d, qdiag + c * d,
              l + (int64_t)c * d * d, xc, y);
      double norm = 0;
      for (int r = 0; r < d; ++r) norm += y[r] * y[r];
      beta[c] = alpha[c] + sumq[c] - 0.5 * norm;
    }
    total += Lse(beta, k);
  }
  double result = total - n * Lse(alpha, k) - Prior(k, d, q, l);
  free(qdiag), free(sumq), free(beta), free(xc), free(y);
  return result;
}

double RefGmmGradient(int n, int k, int d, const double* alpha,
                      const double* mu, const double* q, const double* l,
                      const double* x, double* g_alpha, double* g_mu,
                      double* g_q, double* g_l) {
  double* qdiag = malloc(sizeof(double) * k * d);
  double* sumq = malloc(sizeof(double) * k);
  double* beta = malloc(sizeof(double) * k);
  double* xcs = malloc(sizeof(double) * k * d);
  double* ys = malloc(sizeof(double) * k * d);
  for (int c = 0; c < k; ++c) {
    sumq[c] = 0;
    for (int r = 0; r < d; ++r) {
      qdiag[c * d + r] = exp(q[c * d + r]);
      sumq[c] += q[c * d + r];
    }
  }
  memset(g_alpha, 0, sizeof(double) * k);
  memset(g_mu, 0, sizeof(double) * k * d);
  memset(g_q, 0, sizeof(double) * k * d);
  memset(g_l, 0, sizeof(double) * k * d * d);
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const double* xi = x + (int64_t)i * d;
    for (int c = 0; c < k; ++c) {
      double* y = ys + c * d;
      Project(d, xi, mu + c * d, qdiag + c * d, l + (int64_t)c * d * d,
              xcs + c * d, y);
      double norm = 0;
      for (int r = 0; r < d; ++r) norm += y[r] * y[r];
      beta[c] = alpha[c] + sumq[c] - 0.5 * norm;
    }
    double lse = Lse(beta, k);
    total += lse;
    for (int c = 0; c < k; ++c) {
      /* dF/dbeta_c is the posterior weight; dbeta/dy = -y. */
      double w = exp(beta[c] - lse);
      const double* y = ys + c * d;
      const double* xc = xcs + c * d;
      const double* qd = qdiag + c * d;
      g_alpha[c] += w;
      double* gm = g_mu + c * d;
      double* gq = g_q + c * d;
      double* gl = g_l + (int64_t)c * d * d;
      for (int r = 0; r < d; ++r) {
        double wy = w * y[r];
        gq[r] += w - wy * qd[r] * xc[r];
        gm[r] += wy * qd[r];
        double* row = gl + (int64_t)r * d;
        for (int t = 0; t < r; ++t) {
          row[t] -= wy * xc[t];
          gm[t] += wy * l[((int64_t)c * d + r) * d + t];
        }
      }
    }
  }
  double lse_alpha = Lse(alpha, k);
  for (int c = 0; c < k; ++c) {
    g_alpha[c] -= n * exp(alpha[c] - lse_alpha);
    for (int r = 0; r < d; ++r) {
      g_q[c * d + r] -= qdiag[c * d + r] * qdiag[c * d + r];
      double* row = g_l + ((int64_t)c * d + r) * d;
      const double* lrow = l + ((int64_t)c * d + r) * d;
      for (int t = 0; t < r; ++t) row[t] -= lrow[t];
    }
  }
  double result = total - n * lse_alpha - Prior(k, d, q, l);
  free(qdiag), free(sumq), free(beta), free(xcs), free(ys);
  return result;
}

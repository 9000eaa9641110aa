/* ADBench GMM objective and gradient (Delta) against hand-written C, with
   the gradient/objective time ratio of each. */
#include "bench/ref/ref.h"
#include "runtime/runtime.h"

double DeltaObjective(const double* alpha, const double* mu, const double* q,
                      const double* l, const double* x)
    __asm__("delta.gmm_objective");
typedef struct {
  double *alpha, *mu, *q, *l;
} Gradient;
Gradient DeltaGradient(const double* alpha, const double* mu, const double* q,
                       const double* l, const double* x)
    __asm__("delta.gmm_gradient");

enum { kN = BENCH_GMM_N, kK = BENCH_GMM_K, kD = BENCH_GMM_D };

static double *alpha, *mu, *q, *l, *x, *g_alpha, *g_mu, *g_q, *g_l;
static volatile double sink;

static void RunRefObjective(void* ctx) {
  (void)ctx;
  sink = RefGmmObjective(kN, kK, kD, alpha, mu, q, l, x);
}
static void RunRefGradient(void* ctx) {
  (void)ctx;
  sink = RefGmmGradient(kN, kK, kD, alpha, mu, q, l, x, g_alpha, g_mu, g_q,
                        g_l);
}
static void RunObjective(void* ctx) {
  (void)ctx;
  sink = DeltaObjective(alpha, mu, q, l, x);
}
static void FreeGradient(Gradient g) {
  delta_free(g.alpha), delta_free(g.mu), delta_free(g.q), delta_free(g.l);
}
static void RunGradient(void* ctx) {
  (void)ctx;
  FreeGradient(DeltaGradient(alpha, mu, q, l, x));
}

int main(void) {
  alpha = BenchRandomF64(kK, 1, -1, 1);
  mu = BenchRandomF64(kK * kD, 2, 0, 1);
  q = BenchRandomF64(kK * kD, 3, -1, 1);
  l = BenchRandomF64((int64_t)kK * kD * kD, 4, -1, 1);
  x = BenchRandomF64((int64_t)kN * kD, 5, -1, 1);
  g_alpha = BenchRandomF64(kK, 6, 0, 1);
  g_mu = BenchRandomF64(kK * kD, 6, 0, 1);
  g_q = BenchRandomF64(kK * kD, 6, 0, 1);
  g_l = BenchRandomF64((int64_t)kK * kD * kD, 6, 0, 1);
  double want = RefGmmObjective(kN, kK, kD, alpha, mu, q, l, x);
  BenchCheck("gmm objective", DeltaObjective(alpha, mu, q, l, x), want, 1e-9);
  RefGmmGradient(kN, kK, kD, alpha, mu, q, l, x, g_alpha, g_mu, g_q, g_l);
  /* Every entry of Delta's gradient against C's; l is read below the
     diagonal only. */
  Gradient g = DeltaGradient(alpha, mu, q, l, x);
  BenchCheckArray("gmm d/dalpha", g.alpha, g_alpha, kK, 1e-8);
  BenchCheckArray("gmm d/dmu", g.mu, g_mu, kK * kD, 1e-8);
  BenchCheckArray("gmm d/dq", g.q, g_q, kK * kD, 1e-8);
  for (int c = 0; c < kK; ++c)
    for (int r = 1; r < kD; ++r) {
      int64_t row = ((int64_t)c * kD + r) * kD;
      BenchCheckArray("gmm d/dl", g.l + row, g_l + row, r, 1e-8);
    }
  FreeGradient(g);
  char params[64];
  snprintf(params, sizeof params, "d=%d K=%d n=%d", kD, kK, kN);
  BenchReport("gmm_objective", params, "c", BenchMedian(RunRefObjective, 0), 1,
              "call");
  BenchReport("gmm_objective", params, "delta", BenchMedian(RunObjective, 0),
              1, "call");
  BenchReport("gmm_gradient", params, "c", BenchMedian(RunRefGradient, 0), 1,
              "call");
  BenchReport("gmm_gradient", params, "delta", BenchMedian(RunGradient, 0), 1,
              "call");
  return 0;
}

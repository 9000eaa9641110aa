/* ADBench bundle adjustment: the residuals and the Jacobian blocks of
   bench/gradbench/modules/ba.dl against hand-written C (bench/ref/ba.c),
   after checking the C Jacobian against finite differences and Delta's
   outputs against C's, entry by entry. */
#include "bench/ref/ref.h"
#include "runtime/runtime.h"

typedef struct {
  double *a, *b;
} Two;
typedef struct {
  double *a, *b, *c, *d;
} Four;

Two DeltaObjective(int64_t n, int64_t m, int64_t p, const double* cam,
                   const double* x, const double* w, const double* feat,
                   const int64_t* cam_of,
                   const int64_t* pt_of) __asm__("delta.objective");
Four DeltaJacobian(int64_t n, int64_t m, int64_t p, const double* cam,
                   const double* x, const double* w, const double* feat,
                   const int64_t* cam_of,
                   const int64_t* pt_of) __asm__("delta.jacobian");

static const int64_t kN = BENCH_BA_N, kM = BENCH_BA_M, kP = BENCH_BA_P;

static double *cam, *x, *w, *feat, *reproj, *w_err, *d_cam, *d_point, *d_w,
    *d_w_err;
static int64_t *cam_of, *pt_of;

static void RunRefObjective(void* ctx) {
  (void)ctx;
  RefBaObjective(kN, kM, kP, cam, x, w, feat, cam_of, pt_of, reproj, w_err);
}
static void RunRefJacobian(void* ctx) {
  (void)ctx;
  RefBaJacobian(kN, kM, kP, cam, x, w, feat, cam_of, pt_of, d_cam, d_point, d_w,
                d_w_err);
}
static void RunObjective(void* ctx) {
  (void)ctx;
  Two e = DeltaObjective(kN, kM, kP, cam, x, w, feat, cam_of, pt_of);
  delta_free(e.a), delta_free(e.b);
}
static void RunJacobian(void* ctx) {
  (void)ctx;
  Four j = DeltaJacobian(kN, kM, kP, cam, x, w, feat, cam_of, pt_of);
  delta_free(j.a), delta_free(j.b), delta_free(j.c), delta_free(j.d);
}

static double Uniform(double lo, double hi) {
  return lo + (hi - lo) * ((double)rand() / RAND_MAX);
}

/* Distinct cameras and points (the spec replicates one of each; distinct
   values let the agreement checks catch indexing errors): small rotations,
   points about 10 units in front of the cameras, ADBench-like focal
   lengths. Observation i pairs camera i mod n with point i mod m (SPEC
   3.7). */
static void MakeProblem(void) {
  cam = malloc(sizeof(double) * 11 * kN);
  x = malloc(sizeof(double) * 3 * kM);
  w = malloc(sizeof(double) * kP);
  feat = malloc(sizeof(double) * 2 * kP);
  cam_of = malloc(sizeof(int64_t) * kP);
  pt_of = malloc(sizeof(int64_t) * kP);
  static const double lo[11] = {-0.3, -0.3, -0.3, -1,   -1,   -1,
                                500,  -5,   -5,   -0.1, -0.01};
  static const double hi[11] = {0.3, 0.3, 0.3, 1, 1, 1, 1500, 5, 5, 0.1, 0.01};
  srand(7);
  for (int t = 0; t < 11; ++t)
    for (int64_t j = 0; j < kN; ++j) cam[t * kN + j] = Uniform(lo[t], hi[t]);
  for (int t = 0; t < 3; ++t)
    for (int64_t q = 0; q < kM; ++q)
      x[t * kM + q] = Uniform(-2, 2) + (t == 2 ? 10 : 0);
  for (int64_t i = 0; i < kP; ++i) {
    w[i] = Uniform(0.5, 1.5);
    feat[i] = Uniform(-100, 100);
    feat[kP + i] = Uniform(-100, 100);
    cam_of[i] = i % kN;
    pt_of[i] = i % kM;
  }
  reproj = malloc(sizeof(double) * 2 * kP);
  w_err = malloc(sizeof(double) * kP);
  d_cam = malloc(sizeof(double) * 22 * kP);
  d_point = malloc(sizeof(double) * 6 * kP);
  d_w = malloc(sizeof(double) * 2 * kP);
  d_w_err = malloc(sizeof(double) * kP);
}

/* The hand-derived Jacobian of a few observations (one with a zero
   rotation, the spec's other branch) against central differences. */
static void CheckAgainstFiniteDifferences(void) {
  for (int64_t i = 0; i < 8 && i < kP; ++i) {
    double v[15], e[2], jac[2][15], ep[2], em[2], unused[2][15];
    for (int t = 0; t < 11; ++t) v[t] = cam[t * kN + cam_of[i]];
    if (i == 7) v[0] = v[1] = v[2] = 0;
    for (int t = 0; t < 3; ++t) v[11 + t] = x[t * kM + pt_of[i]];
    v[14] = w[i];
    double f[2] = {feat[i], feat[kP + i]};
    RefBaObservation(v, v + 11, v[14], f, e, jac);
    for (int t = 0; t < 15; ++t) {
      if (i == 7 && t < 3) continue; /* the branch is not differentiable */
      double saved = v[t], step = 1e-6 * (fabs(saved) > 1 ? fabs(saved) : 1);
      v[t] = saved + step;
      RefBaObservation(v, v + 11, v[14], f, ep, unused);
      v[t] = saved - step;
      RefBaObservation(v, v + 11, v[14], f, em, unused);
      v[t] = saved;
      for (int u = 0; u < 2; ++u) {
        double fd = (ep[u] - em[u]) / (2 * step);
        double scale = fabs(fd) > 1 ? fabs(fd) : 1;
        if (fabs(fd - jac[u][t]) > 1e-5 * scale) {
          fprintf(stderr,
                  "ba: C Jacobian [%ld] d e%d / d v%d = %.10g, "
                  "finite differences %.10g\n",
                  (long)i, u, t, jac[u][t], fd);
          exit(2);
        }
      }
    }
  }
}

int main(void) {
  MakeProblem();
  CheckAgainstFiniteDifferences();
  RunRefObjective(NULL);
  RunRefJacobian(NULL);
  Two e = DeltaObjective(kN, kM, kP, cam, x, w, feat, cam_of, pt_of);
  BenchCheckArray("ba reprojection error", e.a, reproj, 2 * kP, 1e-9);
  BenchCheckArray("ba weight error", e.b, w_err, kP, 1e-9);
  delta_free(e.a), delta_free(e.b);
  Four j = DeltaJacobian(kN, kM, kP, cam, x, w, feat, cam_of, pt_of);
  BenchCheckArray("ba d/dcamera", j.a, d_cam, 22 * kP, 1e-9);
  BenchCheckArray("ba d/dpoint", j.b, d_point, 6 * kP, 1e-9);
  BenchCheckArray("ba d/dw", j.c, d_w, 2 * kP, 1e-9);
  BenchCheckArray("ba d weight error/dw", j.d, d_w_err, kP, 1e-9);
  delta_free(j.a), delta_free(j.b), delta_free(j.c), delta_free(j.d);
  char params[64];
  snprintf(params, sizeof params, "n=%ld m=%ld p=%ld", (long)kN, (long)kM,
           (long)kP);
  BenchReport("ba_objective", params, "c", BenchMedian(RunRefObjective, 0), 1,
              "call");
  BenchReport("ba_objective", params, "delta", BenchMedian(RunObjective, 0), 1,
              "call");
  BenchReport("ba_jacobian", params, "c", BenchMedian(RunRefJacobian, 0), 1,
              "call");
  BenchReport("ba_jacobian", params, "delta", BenchMedian(RunJacobian, 0), 1,
              "call");
  return 0;
}

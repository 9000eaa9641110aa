/* ADBench diagonal LSTM: the loss and its gradient of
   bench/gradbench/modules/lstm.dl against hand-written C (bench/ref/lstm.c),
   after checking the C gradient against finite differences (on a small
   problem) and Delta's results against C's, entry by entry. */
#include "bench/ref/ref.h"
#include "runtime/runtime.h"

typedef struct {
  double *a, *b;
} Two;

double DeltaObjective(int64_t l, int64_t c, int64_t b, const double* main,
                      const double* extra, const double* state,
                      const double* seq) __asm__("delta.objective");
Two DeltaGradient(int64_t l, int64_t c, int64_t b, const double* main,
                  const double* extra, const double* state,
                  const double* seq) __asm__("delta.jacobian");

static const int64_t kL = BENCH_LSTM_L, kC = BENCH_LSTM_C, kB = BENCH_LSTM_B;

static double *main_params, *extra, *state, *seq, *g_main, *g_extra;
static volatile double sink;

static void RunRefObjective(void* ctx) {
  (void)ctx;
  sink = RefLstmObjective(kL, kC, kB, main_params, extra, state, seq);
}
static void RunRefGradient(void* ctx) {
  (void)ctx;
  sink = RefLstmGradient(kL, kC, kB, main_params, extra, state, seq, g_main,
                         g_extra);
}
static void RunObjective(void* ctx) {
  (void)ctx;
  sink = DeltaObjective(kL, kC, kB, main_params, extra, state, seq);
}
static void RunGradient(void* ctx) {
  (void)ctx;
  Two g = DeltaGradient(kL, kC, kB, main_params, extra, state, seq);
  delta_free(g.a), delta_free(g.b);
}

/* Parameters and state ~ U[0, 1) as in the spec; the text is random bits
   (the spec's is Shakespeare's, b = 14). */
static void MakeProblem(int64_t l, int64_t c, int64_t b, unsigned seed,
                        double** main_out, double** extra_out,
                        double** state_out, double** seq_out) {
  *main_out = BenchRandomF64(8 * l * b, seed, 0, 1);
  *extra_out = BenchRandomF64(3 * b, seed + 1, 0, 1);
  *state_out = BenchRandomF64(2 * l * b, seed + 2, 0, 1);
  double* bits = BenchRandomF64(c * b, seed + 3, 0, 1);
  for (int64_t k = 0; k < c * b; ++k) bits[k] = bits[k] < 0.5 ? 0.0 : 1.0;
  *seq_out = bits;
}

/* The hand-written backpropagation against central differences of the
   objective, every parameter of a small problem. */
static void CheckAgainstFiniteDifferences(void) {
  const int64_t l = 2, c = 6, b = 5;
  double *m, *e, *s, *q;
  MakeProblem(l, c, b, 11, &m, &e, &s, &q);
  double gm[8 * 2 * 5], ge[3 * 5];
  double loss = RefLstmGradient(l, c, b, m, e, s, q, gm, ge);
  BenchCheck("lstm: C gradient's loss", loss,
             RefLstmObjective(l, c, b, m, e, s, q), 1e-14);
  for (int which = 0; which < 2; ++which) {
    double* v = which == 0 ? m : e;
    const double* g = which == 0 ? gm : ge;
    for (int64_t k = 0; k < (which == 0 ? 8 * l * b : 3 * b); ++k) {
      double saved = v[k], step = 1e-6;
      v[k] = saved + step;
      double up = RefLstmObjective(l, c, b, m, e, s, q);
      v[k] = saved - step;
      double down = RefLstmObjective(l, c, b, m, e, s, q);
      v[k] = saved;
      char label[64];
      snprintf(label, sizeof label, "lstm: C gradient %s[%ld] vs differences",
               which == 0 ? "main" : "extra", (long)k);
      BenchCheck(label, g[k], (up - down) / (2 * step), 1e-7);
    }
  }
  free(m), free(e), free(s), free(q);
}

int main(void) {
  CheckAgainstFiniteDifferences();
  MakeProblem(kL, kC, kB, 1, &main_params, &extra, &state, &seq);
  g_main = malloc(sizeof(double) * 8 * kL * kB);
  g_extra = malloc(sizeof(double) * 3 * kB);
  double want = RefLstmObjective(kL, kC, kB, main_params, extra, state, seq);
  BenchCheck("lstm objective",
             DeltaObjective(kL, kC, kB, main_params, extra, state, seq), want,
             1e-10);
  BenchCheck("lstm: C gradient's loss",
             RefLstmGradient(kL, kC, kB, main_params, extra, state, seq, g_main,
                             g_extra),
             want, 1e-12);
  Two g = DeltaGradient(kL, kC, kB, main_params, extra, state, seq);
  for (int64_t k = 0; k < 8 * kL * kB + 3 * kB; ++k) {
    char label[64];
    snprintf(label, sizeof label, "lstm gradient[%ld]", (long)k);
    /* Gradient entries are O(1 / (c b)) sums of c terms: compare them at
       the scale of their largest. */
    const int64_t n_main = 8 * kL * kB;
    double got = k < n_main ? g.a[k] : g.b[k - n_main];
    double ref = k < n_main ? g_main[k] : g_extra[k - n_main];
    BenchCheck(label, got * kB, ref * kB, 1e-9);
  }
  delta_free(g.a), delta_free(g.b);
  char params[64];
  snprintf(params, sizeof params, "l=%ld c=%ld b=%ld", (long)kL, (long)kC,
           (long)kB);
  BenchReport("lstm_objective", params, "c", BenchMedian(RunRefObjective, 0), 1,
              "call");
  BenchReport("lstm_objective", params, "delta", BenchMedian(RunObjective, 0),
              1, "call");
  BenchReport("lstm_gradient", params, "c", BenchMedian(RunRefGradient, 0), 1,
              "call");
  BenchReport("lstm_gradient", params, "delta", BenchMedian(RunGradient, 0), 1,
              "call");
  return 0;
}

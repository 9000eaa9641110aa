/* ADBench's diagonal LSTM (gradbench SPEC.md 3.9): the loss, and its
   gradient by hand-written backpropagation through time (ADBench's
   "Manual" style: the forward pass keeps every gate, the backward pass
   walks the steps and layers in reverse). Arrays use the layouts of
   bench/gradbench/modules/lstm.dl's exports: main[wb][gate][lay][b] (rows
   weights, biases; gates forget, input, output, cell), extra[3][b],
   state[hc][lay][b], seq[c][b]. One thread: the recurrence is sequential
   and the lanes are few. */
#include "bench/ref/ref.h"

static double Sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* The weight (row 0) or bias (row 1) of `gate` in `layer`. */
static const double* Main(const double* main, int64_t l, int64_t b, int row,
                          int gate, int64_t layer) {
  return main + ((int64_t)(row * 4 + gate) * l + layer) * b;
}

double RefLstmObjective(int64_t l, int64_t c, int64_t b, const double* main,
                        const double* extra, const double* state,
                        const double* seq) {
  double* h = malloc(sizeof(double) * l * b);
  double* cell = malloc(sizeof(double) * l * b);
  double* z = malloc(sizeof(double) * b);
  memcpy(h, state, sizeof(double) * l * b);
  memcpy(cell, state + l * b, sizeof(double) * l * b);
  const double *e_in = extra, *e_out = extra + b, *e_b = extra + 2 * b;
  double total = 0;
  for (int64_t t = 0; t + 1 < c; ++t) {
    for (int64_t j = 0; j < b; ++j) z[j] = seq[t * b + j] * e_in[j];
    for (int64_t layer = 0; layer < l; ++layer) {
      const double *wf = Main(main, l, b, 0, 0, layer),
                   *wi = Main(main, l, b, 0, 1, layer),
                   *wo = Main(main, l, b, 0, 2, layer),
                   *wc = Main(main, l, b, 0, 3, layer);
      const double *bf = Main(main, l, b, 1, 0, layer),
                   *bi = Main(main, l, b, 1, 1, layer),
                   *bo = Main(main, l, b, 1, 2, layer),
                   *bc = Main(main, l, b, 1, 3, layer);
      double *hl = h + layer * b, *cl = cell + layer * b;
      for (int64_t j = 0; j < b; ++j) {
        double f = Sigmoid(z[j] * wf[j] + bf[j]);
        double i = Sigmoid(hl[j] * wi[j] + bi[j]);
        double o = Sigmoid(z[j] * wo[j] + bo[j]);
        double g = tanh(hl[j] * wc[j] + bc[j]);
        cl[j] = cl[j] * f + i * g;
        z[j] = hl[j] = o * tanh(cl[j]);
      }
    }
    double sum_exp = 0;
    for (int64_t j = 0; j < b; ++j) sum_exp += exp(z[j] * e_out[j] + e_b[j]);
    double lambda = log(sum_exp + 2);
    const double* next = seq + (t + 1) * b;
    for (int64_t j = 0; j < b; ++j)
      total += next[j] * (z[j] * e_out[j] + e_b[j] - lambda);
  }
  free(h), free(cell), free(z);
  return -total / (double)((c - 1) * b);
}

/* What the forward pass keeps per step and layer, b lanes each. */
enum { kInput, kHidden, kCell, kForget, kIn, kOut, kGate, kTanhCell, kSaved };

double RefLstmGradient(int64_t l, int64_t c, int64_t b, const double* main,
                       const double* extra, const double* state,
                       const double* seq, double* g_main, double* g_extra) {
  const int64_t steps = c - 1;
  /* tape[((t * l + layer) * kSaved + what) * b + lane] */
  double* tape = malloc(sizeof(double) * steps * l * kSaved * b);
  double* h = malloc(sizeof(double) * l * b);
  double* cell = malloc(sizeof(double) * l * b);
  double* z = malloc(sizeof(double) * b);
  double* y = malloc(sizeof(double) * steps * b); /* outputs, for backward */
  double* lse_scale = malloc(sizeof(double) * steps);
  memcpy(h, state, sizeof(double) * l * b);
  memcpy(cell, state + l * b, sizeof(double) * l * b);
  const double *e_in = extra, *e_out = extra + b, *e_b = extra + 2 * b;
  double total = 0;
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t j = 0; j < b; ++j) z[j] = seq[t * b + j] * e_in[j];
    for (int64_t layer = 0; layer < l; ++layer) {
      const double *wf = Main(main, l, b, 0, 0, layer),
                   *wi = Main(main, l, b, 0, 1, layer),
                   *wo = Main(main, l, b, 0, 2, layer),
                   *wc = Main(main, l, b, 0, 3, layer);
      const double *bf = Main(main, l, b, 1, 0, layer),
                   *bi = Main(main, l, b, 1, 1, layer),
                   *bo = Main(main, l, b, 1, 2, layer),
                   *bc = Main(main, l, b, 1, 3, layer);
      double *hl = h + layer * b, *cl = cell + layer * b;
      double* saved = tape + (t * l + layer) * kSaved * b;
      for (int64_t j = 0; j < b; ++j) {
        double f = Sigmoid(z[j] * wf[j] + bf[j]);
        double i = Sigmoid(hl[j] * wi[j] + bi[j]);
        double o = Sigmoid(z[j] * wo[j] + bo[j]);
        double g = tanh(hl[j] * wc[j] + bc[j]);
        saved[kInput * b + j] = z[j];
        saved[kHidden * b + j] = hl[j];
        saved[kCell * b + j] = cl[j];
        saved[kForget * b + j] = f;
        saved[kIn * b + j] = i;
        saved[kOut * b + j] = o;
        saved[kGate * b + j] = g;
        cl[j] = cl[j] * f + i * g;
        double tc = tanh(cl[j]);
        saved[kTanhCell * b + j] = tc;
        z[j] = hl[j] = o * tc;
      }
    }
    double* yt = y + t * b;
    double sum_exp = 0, sum_next = 0;
    const double* next = seq + (t + 1) * b;
    for (int64_t j = 0; j < b; ++j) {
      yt[j] = z[j] * e_out[j] + e_b[j];
      sum_exp += exp(yt[j]);
      sum_next += next[j];
    }
    double lambda = log(sum_exp + 2);
    for (int64_t j = 0; j < b; ++j) total += next[j] * (yt[j] - lambda);
    /* d total / d y_j = next_j - sum(next) exp(y_j) / (sum_exp + 2). */
    lse_scale[t] = sum_next / (sum_exp + 2);
  }

  memset(g_main, 0, sizeof(double) * 8 * l * b);
  memset(g_extra, 0, sizeof(double) * 3 * b);
  double *g_in = g_extra, *g_out = g_extra + b, *g_b = g_extra + 2 * b;
  /* Cotangents of each layer's hidden and cell state, carried back in time,
     and of the current layer's output. */
  double* dh = calloc((size_t)(l * b), sizeof(double));
  double* dcell = calloc((size_t)(l * b), sizeof(double));
  double* dz = malloc(sizeof(double) * b);
  const double scale = -1.0 / (double)(steps * b);
  for (int64_t t = steps - 1; t >= 0; --t) {
    const double* yt = y + t * b;
    const double* next = seq + (t + 1) * b;
    const double* top = tape + (t * l + l - 1) * kSaved * b;
    for (int64_t j = 0; j < b; ++j) {
      double dy = scale * (next[j] - lse_scale[t] * exp(yt[j]));
      double out = top[kOut * b + j] * top[kTanhCell * b + j];
      g_out[j] += dy * out;
      g_b[j] += dy;
      dz[j] = dy * e_out[j];
    }
    for (int64_t layer = l - 1; layer >= 0; --layer) {
      const double *wf = Main(main, l, b, 0, 0, layer),
                   *wi = Main(main, l, b, 0, 1, layer),
                   *wo = Main(main, l, b, 0, 2, layer),
                   *wc = Main(main, l, b, 0, 3, layer);
      double *gwf = (double*)Main(g_main, l, b, 0, 0, layer),
             *gwi = (double*)Main(g_main, l, b, 0, 1, layer),
             *gwo = (double*)Main(g_main, l, b, 0, 2, layer),
             *gwc = (double*)Main(g_main, l, b, 0, 3, layer);
      double *gbf = (double*)Main(g_main, l, b, 1, 0, layer),
             *gbi = (double*)Main(g_main, l, b, 1, 1, layer),
             *gbo = (double*)Main(g_main, l, b, 1, 2, layer),
             *gbc = (double*)Main(g_main, l, b, 1, 3, layer);
      const double* saved = tape + (t * l + layer) * kSaved * b;
      double *dhl = dh + layer * b, *dcl = dcell + layer * b;
      for (int64_t j = 0; j < b; ++j) {
        double zin = saved[kInput * b + j], hin = saved[kHidden * b + j];
        double f = saved[kForget * b + j], i = saved[kIn * b + j];
        double o = saved[kOut * b + j], g = saved[kGate * b + j];
        double tc = saved[kTanhCell * b + j];
        /* h' = o tanh(c'): its cotangent comes from above (dz) and from
           this layer's next step (dh). */
        double dhout = dz[j] + dhl[j];
        double dc = dcl[j] + dhout * o * (1 - tc * tc);
        double dpre_f = dc * saved[kCell * b + j] * f * (1 - f);
        double dpre_i = dc * g * i * (1 - i);
        double dpre_o = dhout * tc * o * (1 - o);
        double dpre_g = dc * i * (1 - g * g);
        gwf[j] += dpre_f * zin, gbf[j] += dpre_f;
        gwi[j] += dpre_i * hin, gbi[j] += dpre_i;
        gwo[j] += dpre_o * zin, gbo[j] += dpre_o;
        gwc[j] += dpre_g * hin, gbc[j] += dpre_g;
        dcl[j] = dc * f;
        dhl[j] = dpre_i * wi[j] + dpre_g * wc[j];
        dz[j] = dpre_f * wf[j] + dpre_o * wo[j];
      }
    }
    for (int64_t j = 0; j < b; ++j) g_in[j] += dz[j] * seq[t * b + j];
  }
  free(tape), free(h), free(cell), free(z), free(y), free(lse_scale);
  free(dh), free(dcell), free(dz);
  return -total / (double)(steps * b);
}

/* The GradBench GMM gradient (bench/gradbench/modules/gmm.dl's `jacobian`)
   per call: the library built for the GPU (DLPack tensors in device
   memory, the four gradient leaves written into device tensors) against
   the same module built for the CPU (2 threads), which also checks it.
   run.py builds the module twice, as gmm_gpu.dl and gmm_cpu.dl (distinct
   prefixes, one process).
   Usage: gmm_bench [--cpu-only] N:K:D ...   (--cpu-only: the CPU half, for
   run.py --self-test on machines without a GPU). */
#include <dlpack/dlpack.h>  // declares the libraries' _dl entries

#include "bench_cuda.h"
#include "gmm_cpu.h"
#include "gmm_gpu.h"

enum { kInputs = 5, kLeaves = 4 };  // x, alpha, mu, q, l; the gradient's

typedef struct {
  gmm_cpu_context* cpu;
  gmm_gpu_context* gpu;
  int64_t n, k, d, t;
  double* host[kInputs];
  double* cpu_grad[kLeaves];
  gmm_cpu_Gmm cpu_result;
  DLTensor inputs[kInputs], grads[kLeaves];
  int status;
} Gmm;

static const int64_t kM = 0;
static const double kGamma = 1.0;

static void RunCpu(void* arg) {
  Gmm* g = (Gmm*)arg;
  if (g->status) return;
  double* const* h = g->host;
  g->status = gmm_cpu_jacobian(g->cpu, h[0], g->n, g->d, h[1], g->k, h[2], g->k,
                               g->d, h[3], g->k, g->d, h[4], g->k, g->t, kM,
                               kGamma, &g->cpu_result);
}

static void RunGpu(void* arg) {
  Gmm* g = (Gmm*)arg;
  if (g->status) return;
  const DLTensor* in = g->inputs;
  DLTensor* out = g->grads;
  g->status =
      gmm_gpu_jacobian_dl(g->gpu, &in[0], &in[1], &in[2], &in[3], &in[4], kM,
                          kGamma, &out[0], &out[1], &out[2], &out[3]);
}

static int Failed(Gmm* g, const char* params, int gpu) {
  if (!g->status) return 0;
  char message[1200];
  snprintf(message, sizeof message, "%s: %s", gpu ? "GPU" : "CPU",
           gpu ? gmm_gpu_last_error(g->gpu) : gmm_cpu_last_error(g->cpu));
  BenchFail("gmm", params, message);
  return 1;
}

/* One size; returns 0 when a call or a check failed. */
static int RunSize(gmm_cpu_context* cpu, gmm_gpu_context* gpu, int64_t n,
                   int64_t k, int64_t d) {
  char params[96];
  snprintf(params, sizeof params, "n=%lld k=%lld d=%lld", (long long)n,
           (long long)k, (long long)d);
  Gmm g;
  memset(&g, 0, sizeof g);
  g.cpu = cpu;
  g.gpu = gpu;
  g.n = n;
  g.k = k;
  g.d = d;
  g.t = d * (d - 1) / 2;
  /* x, alpha, mu in [-1, 1); q and l in [-0.5, 0.5). */
  int64_t shapes[kInputs][2] = {{n, d}, {k, 0}, {k, d}, {k, d}, {k, g.t}};
  int ranks[kInputs] = {2, 1, 2, 2, 2};
  for (int i = 0; i < kInputs; ++i) {
    int64_t count = shapes[i][0] * (ranks[i] == 2 ? shapes[i][1] : 1);
    g.host[i] = BenchInputsF64(count, 31 + (uint32_t)i, i < 3 ? -1 : -0.5f,
                               i < 3 ? 2 : 1);
  }
  int64_t counts[kLeaves];
  for (int l = 0; l < kLeaves; ++l) {
    counts[l] = shapes[l + 1][0] * (ranks[l + 1] == 2 ? shapes[l + 1][1] : 1);
    g.cpu_grad[l] = (double*)malloc((size_t)counts[l] * sizeof(double));
  }
  g.cpu_result.alpha = g.cpu_grad[0];
  g.cpu_result.alpha_sizes[0] = k;
  g.cpu_result.mu = g.cpu_grad[1];
  g.cpu_result.mu_sizes[0] = k;
  g.cpu_result.mu_sizes[1] = d;
  g.cpu_result.q = g.cpu_grad[2];
  g.cpu_result.q_sizes[0] = k;
  g.cpu_result.q_sizes[1] = d;
  g.cpu_result.l = g.cpu_grad[3];
  g.cpu_result.l_sizes[0] = k;
  g.cpu_result.l_sizes[1] = g.t;

  int ok = 1;
  RunCpu(&g);
  if (Failed(&g, params, 0)) return 0;
  BenchReport("gmm", params, "delta cpu", BenchTime(RunCpu, &g), 1, "gradient");
  if (Failed(&g, params, 0)) return 0;
  if (bench_cpu_only) return 1;

  void* device[kInputs + kLeaves];
  for (int i = 0; i < kInputs; ++i) {
    int64_t count = shapes[i][0] * (ranks[i] == 2 ? shapes[i][1] : 1);
    device[i] = BenchToDevice(g.host[i], (size_t)count * sizeof(double));
    g.inputs[i] = BenchTensor(device[i], 1, kDLFloat, 64, ranks[i], shapes[i]);
  }
  for (int l = 0; l < kLeaves; ++l) {
    size_t bytes = (size_t)counts[l] * sizeof(double);
    BENCH_CUDA(cudaMalloc(&device[kInputs + l], bytes));
    BENCH_CUDA(cudaMemset(device[kInputs + l], 0xff, bytes));  // NaNs
    g.grads[l] = BenchTensor(device[kInputs + l], 1, kDLFloat, 64, ranks[l + 1],
                             shapes[l + 1]);
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  RunGpu(&g);
  if (Failed(&g, params, 1)) return 0;
  static const char* const kNames[kLeaves] = {"alpha", "mu", "q", "l"};
  for (int l = 0; l < kLeaves; ++l) {
    double* got = (double*)malloc((size_t)counts[l] * sizeof(double));
    BENCH_CUDA(cudaMemcpy(got, device[kInputs + l],
                          (size_t)counts[l] * sizeof(double),
                          cudaMemcpyDeviceToHost));
    char what[64];
    snprintf(what, sizeof what, "gpu d%s vs cpu", kNames[l]);
    /* f64 sums over n in another order, exp/log from libdevice. */
    ok &=
        BenchCheck("gmm", params, what, got, g.cpu_grad[l], counts[l], 1e-8, 1);
    free(got);
  }
  BenchTiming gpu_time = BenchTime(RunGpu, &g);
  if (Failed(&g, params, 1)) return 0;
  BenchReport("gmm", params, "delta gpu", gpu_time, 1, "gradient");
  for (int i = 0; i < kInputs + kLeaves; ++i) cudaFree(device[i]);
  for (int i = 0; i < kInputs; ++i) free(g.host[i]);
  for (int l = 0; l < kLeaves; ++l) free(g.cpu_grad[l]);
  return ok;
}

int main(int argc, char** argv) {
  int first = 1;
  if (argc > 1 && strcmp(argv[1], "--cpu-only") == 0) {
    bench_cpu_only = 1;
    first = 2;
  }
  gmm_cpu_options cpu_options;
  memset(&cpu_options, 0, sizeof cpu_options);
  cpu_options.num_threads = 2;  // with DELTA_NUM_THREADS=2 from run.py
  gmm_cpu_context* cpu = gmm_cpu_context_create(&cpu_options);
  gmm_gpu_context* gpu = bench_cpu_only ? NULL : gmm_gpu_context_create(NULL);
  if (cpu == NULL || (!bench_cpu_only && gpu == NULL)) {
    printf("{\"fail\": \"cannot create a context\"}\n");
    return 3;
  }
  int ok = 1;
  for (int i = first; i < argc; ++i) {
    long long n, k, d;
    if (sscanf(argv[i], "%lld:%lld:%lld", &n, &k, &d) != 3 || n < 1 || k < 1 ||
        d < 2) {
      fprintf(stderr, "usage: gmm_bench [--cpu-only] N:K:D ...\n");
      return 64;
    }
    ok &= RunSize(cpu, gpu, n, k, d);
  }
  if (gpu) gmm_gpu_context_destroy(gpu);
  gmm_cpu_context_destroy(cpu);
  return ok ? 0 : 2;
}

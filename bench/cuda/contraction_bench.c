/* C = A B per call on the GPU: Delta's contraction.dl (DLPack tensors in
   device memory) against cuBLAS sgemm/dgemm on the same buffers, both
   results checked against each other and a few entries against the CPU.
   Usage: contraction_bench [f32|f64]:MxKxN ... (A is M x K, B is K x N). */
#include <cublas_v2.h>
#include <dlpack/dlpack.h>  // declares the libraries' _dl entries

#include "bench_cuda.h"
#include "contraction.h"

typedef struct {
  contraction_context* ctx;
  cublasHandle_t handle;
  int f64;
  int64_t m, k, n;
  void *a, *b, *c_delta, *c_cublas;
  DLTensor ta, tb, tc;
  contraction_status status;
} Gemm;

static void RunDelta(void* arg) {
  Gemm* g = (Gemm*)arg;
  if (g->status != CONTRACTION_OK) return;
  g->status = g->f64
                  ? contraction_matmul_f64_dl(g->ctx, &g->ta, &g->tb, &g->tc)
                  : contraction_matmul_f32_dl(g->ctx, &g->ta, &g->tb, &g->tc);
}

/* Row-major C = A B is column-major C^T = B^T A^T: cuBLAS's (N x M) result
   from B (N x K) and A (K x M), no transposes. */
static void RunCublas(void* arg) {
  Gemm* g = (Gemm*)arg;
  int m = (int)g->m, k = (int)g->k, n = (int)g->n;
  cublasStatus_t status;
  if (g->f64) {
    const double one = 1, zero = 0;
    status = cublasDgemm(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                         (const double*)g->b, n, (const double*)g->a, k, &zero,
                         (double*)g->c_cublas, n);
  } else {
    const float one = 1, zero = 0;
    status = cublasSgemm(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                         (const float*)g->b, n, (const float*)g->a, k, &zero,
                         (float*)g->c_cublas, n);
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    printf("{\"fail\": \"cuBLAS gemm: status %d\"}\n", (int)status);
    exit(3);
  }
}

/* The device result as doubles on the host. */
static double* Download(const void* device, int64_t count, int f64) {
  size_t bytes = (size_t)count * (f64 ? 8 : 4);
  void* host = malloc(bytes);
  BENCH_CUDA(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  if (f64) return (double*)host;
  double* wide = BenchF32ToF64((const float*)host, count);
  free(host);
  return wide;
}

/* One size and type; returns 0 when a check or call failed. */
static int RunSize(contraction_context* ctx, cublasHandle_t handle, int f64,
                   int64_t m, int64_t k, int64_t n) {
  char params[96];
  snprintf(params, sizeof params, "%s %lldx%lldx%lld", f64 ? "f64" : "f32",
           (long long)m, (long long)k, (long long)n);
  Gemm g;
  memset(&g, 0, sizeof g);
  g.ctx = ctx;
  g.handle = handle;
  g.f64 = f64;
  g.m = m;
  g.k = k;
  g.n = n;
  size_t elem = f64 ? 8 : 4;
  /* Entries in [-1, 1): A's and B's streams differ. */
  double* a_host = BenchInputsF64(m * k, 11, -1, 2);
  double* b_host = BenchInputsF64(k * n, 12, -1, 2);
  if (f64) {
    g.a = BenchToDevice(a_host, (size_t)(m * k) * elem);
    g.b = BenchToDevice(b_host, (size_t)(k * n) * elem);
  } else {
    float* a32 = BenchInputsF32(m * k, 11, -1, 2);
    float* b32 = BenchInputsF32(k * n, 12, -1, 2);
    g.a = BenchToDevice(a32, (size_t)(m * k) * elem);
    g.b = BenchToDevice(b32, (size_t)(k * n) * elem);
    free(a32);
    free(b32);
  }
  BENCH_CUDA(cudaMalloc(&g.c_delta, (size_t)(m * n) * elem));
  BENCH_CUDA(cudaMalloc(&g.c_cublas, (size_t)(m * n) * elem));
  BENCH_CUDA(cudaMemset(g.c_delta, 0xff, (size_t)(m * n) * elem));  // NaNs
  int64_t a_shape[2] = {m, k}, b_shape[2] = {k, n}, c_shape[2] = {m, n};
  uint8_t bits = f64 ? 64 : 32;
  g.ta = BenchTensor(g.a, 1, kDLFloat, bits, 2, a_shape);
  g.tb = BenchTensor(g.b, 1, kDLFloat, bits, 2, b_shape);
  g.tc = BenchTensor(g.c_delta, 1, kDLFloat, bits, 2, c_shape);

  int ok = 1;
  RunDelta(&g);
  RunCublas(&g);
  BENCH_CUDA(cudaDeviceSynchronize());
  if (g.status != CONTRACTION_OK) {
    char message[1024];
    snprintf(message, sizeof message, "Delta: %s", contraction_last_error(ctx));
    BenchFail("contraction", params, message);
    ok = 0;
  } else {
    double* got = Download(g.c_delta, m * n, f64);
    double* want = Download(g.c_cublas, m * n, f64);
    /* cuBLAS itself against the CPU at a few entries (in double), so that
       a disagreement says which side is wrong. */
    enum { kSpots = 32 };
    double spot_cublas[kSpots], spot_cpu[kSpots];
    for (int s = 0; s < kSpots; ++s) {
      int64_t r = (int64_t)s * 7919 % m, c = (int64_t)s * 104729 % n;
      double sum = 0;
      for (int64_t t = 0; t < k; ++t)
        sum += a_host[r * k + t] * b_host[t * n + c];  // exact f32 values
      spot_cpu[s] = sum;
      spot_cublas[s] = want[r * n + c];
    }
    /* Relative to the largest |C| (about sqrt(K) / 3 for these inputs):
       f32 accumulation over K terms in any order stays well inside. */
    double tolerance = f64 ? 1e-12 : 1e-4;
    ok &= BenchCheck("contraction", params, "cublas vs cpu", spot_cublas,
                     spot_cpu, kSpots, tolerance, 1);
    ok &= BenchCheck("contraction", params, "delta vs cublas", got, want, m * n,
                     tolerance, 1);
    free(got);
    free(want);
    double flops = 2.0 * (double)m * (double)k * (double)n;
    BenchTiming delta = BenchTime(RunDelta, &g);
    if (g.status == CONTRACTION_OK) {
      BenchReport("contraction", params, "delta", delta, flops, "flop");
    } else {
      BenchFail("contraction", params, contraction_last_error(ctx));
      ok = 0;
    }
    BenchReport("contraction", params, f64 ? "cublas dgemm" : "cublas sgemm",
                BenchTime(RunCublas, &g), flops, "flop");
  }
  free(a_host);
  free(b_host);
  cudaFree(g.a);
  cudaFree(g.b);
  cudaFree(g.c_delta);
  cudaFree(g.c_cublas);
  return ok;
}

int main(int argc, char** argv) {
  contraction_context* ctx = contraction_context_create(NULL);
  cublasHandle_t handle;
  if (ctx == NULL || cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    printf("{\"fail\": \"cannot create a context or a cuBLAS handle\"}\n");
    return 3;
  }
  /* Plain FP32 (no TF32), as Delta computes by default. */
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
  int ok = 1;
  for (int i = 1; i < argc; ++i) {
    char type[8];
    long long m, k, n;
    if (sscanf(argv[i], "%3[f0-9]:%lldx%lldx%lld", type, &m, &k, &n) != 4 ||
        (strcmp(type, "f32") != 0 && strcmp(type, "f64") != 0)) {
      fprintf(stderr, "usage: contraction_bench [f32|f64]:MxKxN ...\n");
      return 64;
    }
    ok &= RunSize(ctx, handle, strcmp(type, "f64") == 0, m, k, n);
  }
  cublasDestroy(handle);
  contraction_context_destroy(ctx);
  return ok ? 0 : 2;
}

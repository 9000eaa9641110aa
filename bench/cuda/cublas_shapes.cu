// Times cublasSgemm alone for the shapes and transposes of the large MLP
// step's five contractions (p x q x k, as delta_cuda_gemm names them), with
// and without a user workspace, and cublasGemmEx. Session 9 ran it on an
// H200 (about 0.17 ms each, 48-51 TFLOP/s) to compare with the same calls
// inside Delta (docs/gpu.md, "Benchmarks"). Not part of run.py:
//   nvcc -O2 bench/cuda/cublas_shapes.cu -lcublas -o cublas_shapes &&
//   ./cublas_shapes [random]
// With `random` the operands hold values in [-1, 1) instead of zeros.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
__global__ void Fill(float* x, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n;
       i += (long)gridDim.x * blockDim.x)
    x[i] = -1.0f + 2.0f * ((unsigned)(i * 2654435761u) >> 8) / 16777216.0f;
}
struct Case {
  int p, q, k, xin, yout;
};
static float Time(cublasHandle_t h, const Case& c, float* x, float* y, float* o,
                  int ex) {
  int m = c.q, n = c.p, d = c.k;
  cublasOperation_t oy = c.yout ? CUBLAS_OP_N : CUBLAS_OP_T,
                    ox = c.xin ? CUBLAS_OP_N : CUBLAS_OP_T;
  int ly = c.yout ? c.q : c.k, lx = c.xin ? c.k : c.p;
  float one = 1, zero = 0;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto gemm = [&] {
    if (ex)
      cublasGemmEx(h, oy, ox, m, n, d, &one, y, CUDA_R_32F, ly, x, CUDA_R_32F,
                   lx, &zero, o, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
    else
      cublasSgemm(h, oy, ox, m, n, d, &one, y, ly, x, lx, &zero, o, m);
  };
  for (int w = 0; w < 2; ++w) gemm();  // warm-up
  cudaEventRecord(a);
  for (int r = 0; r < 10; ++r) gemm();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  return ms * 100;  // us per call
}
int main(int argc, char** argv) {
  Case cases[] = {{4096, 1024, 1024, 0, 1}, {1000, 1024, 4096, 0, 1},
                  {4096, 1000, 1024, 1, 0}, {4096, 1024, 1000, 1, 1},
                  {1024, 4096, 1024, 1, 0}, {4096, 4096, 4096, 1, 1},
                  {4096, 4096, 4096, 0, 1}, {4096, 4096, 4096, 1, 0},
                  {4096, 4096, 4096, 0, 0}};
  float *x, *y, *o;
  cudaMalloc(&x, 1 << 28);
  cudaMalloc(&y, 1 << 28);
  cudaMalloc(&o, 1 << 28);
  cudaMemset(x, 0, 1 << 28);
  cudaMemset(y, 0, 1 << 28);
  if (argc > 1 && argv[1][0] == 'r') {
    Fill<<<1024, 256>>>(x, (1 << 28) / 4);
    Fill<<<1024, 256>>>(y, (1 << 28) / 4);
  }
  cublasHandle_t h;
  cublasCreate(&h);
  cublasHandle_t hw;
  cublasCreate(&hw);
  void* ws;
  cudaMalloc(&ws, 64 << 20);
  cublasSetWorkspace(hw, ws, 64 << 20);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cublasHandle_t hs;
  cublasCreate(&hs);
  cublasSetStream(hs, s);
  for (const Case& c : cases) {
    double gf = 2.0 * c.p * c.q * c.k / 1e3;
    float t0 = Time(h, c, x, y, o, 0), t1 = Time(hw, c, x, y, o, 0),
          t2 = Time(h, c, x, y, o, 1);
    cudaStream_t old;
    cublasGetStream(hs, &old);
    printf(
        "p=%d q=%d k=%d x_k_inner=%d y_k_outer=%d: sgemm %.1f us (%.1f TF/s), "
        "+workspace %.1f us, GemmEx %.1f us\n",
        c.p, c.q, c.k, c.xin, c.yout, t0, gf / t0 / 1e3 * 1e3 / 1e3, t1, t2);
  }
  return 0;
}

/* The MLP training step of bench/cases/mlp.dl per call: the library built
   for the GPU (DLPack tensors in device memory) against the same library
   built for the CPU (2 threads), with the sizes run.py substituted into
   both copies (mlp_gpu.dl, mlp_cpu.dl: distinct prefixes, one process).
   Times `train_step` (the new parameters reduced to a checksum, as in
   bench/) and `train_step_params` (run.py's addition: the new parameters
   themselves, written into device tensors, as a training loop would keep
   them); the GPU's new parameters are checked against the CPU's.
   Usage: mlp_bench [--cpu-only]   (--cpu-only: the CPU half, for run.py
   --self-test on machines without a GPU). */
#include <dlpack/dlpack.h>  // declares the libraries' _dl entries

#include "bench_cuda.h"
#include "mlp_cpu.h"
#include "mlp_gpu.h"

static const int64_t kFeat = MLP_GPU_DIM_feat, kHidden = MLP_GPU_DIM_hidden,
                     kClasses = MLP_GPU_DIM_classes, kBatch = MLP_GPU_DIM_batch;

enum { kLeaves = 4 };  // w1, b1, w2, b2

typedef struct {
  mlp_cpu_context* cpu;
  mlp_gpu_context* gpu;
  /* Host inputs; for the GPU, their device copies and tensors. */
  float* host[kLeaves + 1];  // the leaves, then xs
  int64_t* labels;
  void* device[kLeaves + 1];      // the leaves, xs
  DLTensor tensors[kLeaves + 2];  // ... and the labels, in host memory
  int64_t shapes[kLeaves + 2][2];
  /* Results: the CPU's new parameters, the GPU's on the device. */
  float* cpu_next[kLeaves];
  void* gpu_next[kLeaves];
  DLTensor next_tensors[kLeaves];
  int64_t sizes[kLeaves];
  float checksum;
  int status;
} Mlp;

static void RunCpuStep(void* arg) {
  Mlp* p = (Mlp*)arg;
  if (p->status) return;
  p->status = mlp_cpu_train_step(p->cpu, p->host[0], kFeat, kHidden, p->host[1],
                                 kHidden, p->host[2], kHidden, kClasses,
                                 p->host[3], kClasses, p->host[4], kBatch,
                                 kFeat, p->labels, kBatch, &p->checksum);
}

static void RunCpuParams(void* arg) {
  Mlp* p = (Mlp*)arg;
  if (p->status) return;
  p->status = mlp_cpu_train_step_params(
      p->cpu, p->host[0], kFeat, kHidden, p->host[1], kHidden, p->host[2],
      kHidden, kClasses, p->host[3], kClasses, p->host[4], kBatch, kFeat,
      p->labels, kBatch, p->cpu_next[0], kFeat, kHidden, p->cpu_next[1],
      kHidden, p->cpu_next[2], kHidden, kClasses, p->cpu_next[3], kClasses);
}

static void RunGpuStep(void* arg) {
  Mlp* p = (Mlp*)arg;
  if (p->status) return;
  const DLTensor* t = p->tensors;
  p->status = mlp_gpu_train_step_dl(p->gpu, &t[0], &t[1], &t[2], &t[3], &t[4],
                                    &t[5], &p->checksum);
}

static void RunGpuParams(void* arg) {
  Mlp* p = (Mlp*)arg;
  if (p->status) return;
  const DLTensor* t = p->tensors;
  DLTensor* r = p->next_tensors;
  p->status =
      mlp_gpu_train_step_params_dl(p->gpu, &t[0], &t[1], &t[2], &t[3], &t[4],
                                   &t[5], &r[0], &r[1], &r[2], &r[3]);
}

static int Failed(Mlp* p, const char* params, int gpu) {
  if (!p->status) return 0;
  char message[1200];
  snprintf(message, sizeof message, "%s: %s", gpu ? "GPU" : "CPU",
           gpu ? mlp_gpu_last_error(p->gpu) : mlp_cpu_last_error(p->cpu));
  BenchFail("mlp", params, message);
  return 1;
}

int main(int argc, char** argv) {
  bench_cpu_only = argc > 1 && strcmp(argv[1], "--cpu-only") == 0;
  char params[96];
  snprintf(params, sizeof params, "%lld-%lld-%lld batch %lld", (long long)kFeat,
           (long long)kHidden, (long long)kClasses, (long long)kBatch);
  Mlp p;
  memset(&p, 0, sizeof p);
  mlp_cpu_options cpu_options;
  memset(&cpu_options, 0, sizeof cpu_options);
  cpu_options.num_threads = 2;  // with DELTA_NUM_THREADS=2 from run.py
  p.cpu = mlp_cpu_context_create(&cpu_options);
  p.gpu = bench_cpu_only ? NULL : mlp_gpu_context_create(NULL);
  if (p.cpu == NULL || (!bench_cpu_only && p.gpu == NULL)) {
    BenchFail("mlp", params, "cannot create a context");
    return 3;
  }
  /* The inputs torch_mlp.py makes: weights and biases in [-0.05, 0.05),
     features in [0, 1), labels 7 b mod classes. */
  int64_t shapes[kLeaves + 2][2] = {{kFeat, kHidden},    {kHidden, 0},
                                    {kHidden, kClasses}, {kClasses, 0},
                                    {kBatch, kFeat},     {kBatch, 0}};
  int ranks[kLeaves + 2] = {2, 1, 2, 1, 2, 1};
  memcpy(p.shapes, shapes, sizeof shapes);
  double abs_sum = 0;
  for (int l = 0; l < kLeaves + 1; ++l) {
    int64_t count = shapes[l][0] * (ranks[l] == 2 ? shapes[l][1] : 1);
    p.host[l] = l < kLeaves
                    ? BenchInputsF32(count, (uint32_t)l + 1, -0.05f, 0.1f)
                    : BenchInputsF32(count, 5, 0, 1);
    if (l < kLeaves) {
      p.sizes[l] = count;
      p.cpu_next[l] = (float*)malloc((size_t)count * sizeof(float));
      for (int64_t i = 0; i < count; ++i) abs_sum += fabs(p.host[l][i]);
    }
  }
  p.labels = (int64_t*)malloc((size_t)kBatch * sizeof(int64_t));
  for (int64_t b = 0; b < kBatch; ++b) p.labels[b] = b * 7 % kClasses;

  RunCpuStep(&p);
  if (Failed(&p, params, 0)) return 2;
  float cpu_checksum = p.checksum;
  RunCpuParams(&p);
  if (Failed(&p, params, 0)) return 2;
  BenchValue("mlp", params, "checksum", cpu_checksum);
  BenchValue("mlp", params, "abs_sum", abs_sum);
  BenchReport("mlp", params, "delta cpu step", BenchTime(RunCpuStep, &p), 1,
              "step");
  BenchReport("mlp", params, "delta cpu params", BenchTime(RunCpuParams, &p), 1,
              "step");
  if (Failed(&p, params, 0)) return 2;
  if (bench_cpu_only) return 0;

  /* The labels, an index array, stay in host memory: the library checks
     index arrays there (and rejects them in device memory). */
  p.tensors[kLeaves + 1] =
      BenchTensor(p.labels, 0, kDLInt, 64, 1, p.shapes[kLeaves + 1]);
  for (int l = 0; l < kLeaves + 1; ++l) {
    int64_t count = shapes[l][0] * (ranks[l] == 2 ? shapes[l][1] : 1);
    p.device[l] = BenchToDevice(p.host[l], (size_t)count * sizeof(float));
    p.tensors[l] =
        BenchTensor(p.device[l], 1, kDLFloat, 32, ranks[l], p.shapes[l]);
    if (l < kLeaves) {
      BENCH_CUDA(cudaMalloc(&p.gpu_next[l], (size_t)count * sizeof(float)));
      BENCH_CUDA(cudaMemset(p.gpu_next[l], 0xff, (size_t)count * 4));  // NaN
      p.next_tensors[l] =
          BenchTensor(p.gpu_next[l], 1, kDLFloat, 32, ranks[l], p.shapes[l]);
    }
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  int ok = 1;
  RunGpuStep(&p);
  RunGpuParams(&p);
  if (Failed(&p, params, 1)) return 2;
  /* The checksum: float sums of up to millions of weights (near 0 in all,
     so the gradient's part is half or more of it) in another order:
     within 1e-7 of the sum of their magnitudes. */
  double got = p.checksum, want = cpu_checksum;
  ok &= BenchCheck("mlp", params, "gpu checksum vs cpu", &got, &want, 1, 1e-5,
                   fmax(1, 0.01 * abs_sum));
  /* The updates (new - old) of every leaf, so that the check sees the
     gradient rather than the weights it is added to. */
  static const char* const kNames[kLeaves] = {"w1", "b1", "w2", "b2"};
  for (int l = 0; l < kLeaves; ++l) {
    int64_t count = p.sizes[l];
    float* next = (float*)malloc((size_t)count * sizeof(float));
    BENCH_CUDA(cudaMemcpy(next, p.gpu_next[l], (size_t)count * sizeof(float),
                          cudaMemcpyDeviceToHost));
    double* got_update = (double*)malloc((size_t)count * sizeof(double));
    double* want_update = (double*)malloc((size_t)count * sizeof(double));
    for (int64_t i = 0; i < count; ++i) {
      got_update[i] = (double)next[i] - p.host[l][i];
      want_update[i] = (double)p.cpu_next[l][i] - p.host[l][i];
    }
    char what[64];
    snprintf(what, sizeof what, "gpu update of %s vs cpu", kNames[l]);
    ok &= BenchCheck("mlp", params, what, got_update, want_update, count, 2e-3,
                     1e-6);
    free(next);
    free(got_update);
    free(want_update);
  }
  BenchTiming step = BenchTime(RunGpuStep, &p);
  BenchTiming next = BenchTime(RunGpuParams, &p);
  if (Failed(&p, params, 1)) return 2;
  BenchReport("mlp", params, "delta gpu step", step, 1, "step");
  BenchReport("mlp", params, "delta gpu params", next, 1, "step");
  mlp_gpu_context_destroy(p.gpu);
  mlp_cpu_context_destroy(p.cpu);
  return ok ? 0 : 2;
}

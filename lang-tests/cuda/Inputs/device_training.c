/* A 1,000-step training loop driven from C whose parameters stay on the
   device (library_device_resident.dl): the context takes device pointers
   (set_device_memory(ctx, 1)), the inputs are copied to the device once, and
   each step writes the new parameters into the other of two device buffers.
   With the fake driver (Inputs/fake_driver.c, FAKE_CUDA_LAUNCH=ok) it
   prints the driver's copy and allocation counts around the loop. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp_device.h"

typedef unsigned long long Pointer;

enum {
  kFeat = MLP_DEVICE_DIM_feat,
  kHidden = MLP_DEVICE_DIM_hidden,
  kClasses = MLP_DEVICE_DIM_classes,
  kBatch = MLP_DEVICE_DIM_batch,
  kSteps = 1000
};

static int (*mem_alloc)(Pointer*, size_t);
static int (*mem_free)(Pointer);
static int (*copy_in)(Pointer, const void*, size_t);
static void (*counts)(long long*);

/* A device buffer of `count` floats holding `value` at every element. */
static float* DeviceArray(size_t count, float value) {
  float* host = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) host[i] = value * (float)(i % 7);
  Pointer device = 0;
  if (mem_alloc(&device, count * sizeof(float)) != 0 ||
      copy_in(device, host, count * sizeof(float)) != 0) {
    printf("device allocation failed\n");
    exit(1);
  }
  free(host);
  return (float*)device;
}

static void Layer(mlp_device_Dense* layer, int64_t in, int64_t out) {
  layer->w = DeviceArray((size_t)(in * out), 0.01f);
  layer->w_sizes[0] = in;
  layer->w_sizes[1] = out;
  layer->b = DeviceArray((size_t)out, 0.0f);
  layer->b_sizes[0] = out;
}

static void PrintCounts(const char* when) {
  long long c[9];
  counts(c);
  printf(
      "%s: %lld launches; host to device: %lld copies, %lld bytes; "
      "device to host: %lld copies, %lld bytes; device to device: %lld "
      "copies; cuMemAlloc: %lld; stream synchronizations: %lld\n",
      when, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[8]);
}

int main(void) {
  void* driver = dlopen(getenv("DELTA_CUDA_DRIVER"), RTLD_NOW);
  if (driver == NULL) return 1;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(driver, "cuInit");
  mem_alloc = (int (*)(Pointer*, size_t))dlsym(driver, "cuMemAlloc_v2");
  mem_free = (int (*)(Pointer))dlsym(driver, "cuMemFree_v2");
  copy_in =
      (int (*)(Pointer, const void*, size_t))dlsym(driver, "cuMemcpyHtoD_v2");
  counts = (void (*)(long long*))dlsym(driver, "fake_cuda_counts");
  if (init == NULL || mem_alloc == NULL || mem_free == NULL ||
      copy_in == NULL || counts == NULL || init(0) != 0)
    return 1;

  mlp_device_context* ctx = mlp_device_context_create(NULL);
  mlp_device_context_set_device_memory(ctx, 1); /* device pointers */
  mlp_device_Mlp params[2];
  Layer(&params[0].l1, kFeat, kHidden);
  Layer(&params[0].l2, kHidden, kClasses);
  Layer(&params[1].l1, kFeat, kHidden);
  Layer(&params[1].l2, kHidden, kClasses);
  float* xs = DeviceArray(kBatch * kFeat, 0.1f);
  float* targets = DeviceArray(kBatch * kClasses, 1.0f);

  PrintCounts("before");
  int failed = 0;
  for (int step = 0; step < kSteps && !failed; ++step) {
    mlp_device_status status = mlp_device_train_step(
        ctx, &params[step % 2], xs, kBatch, kFeat, targets, kBatch, kClasses,
        &params[(step + 1) % 2]);
    if (status != MLP_DEVICE_OK) {
      printf("step %d: %s\n", step, mlp_device_last_error(ctx));
      failed = 1;
    }
  }
  if (!failed) PrintCounts("after");
  mlp_device_context_destroy(ctx);
  for (int i = 0; i < 2; ++i) {
    mlp_device_Dense* layers[2] = {&params[i].l1, &params[i].l2};
    for (int l = 0; l < 2; ++l) {
      mem_free((Pointer)layers[l]->w);
      mem_free((Pointer)layers[l]->b);
    }
  }
  mem_free((Pointer)xs);
  mem_free((Pointer)targets);
  if (failed) return 1;

  printf("done\n");
  return 0;
}

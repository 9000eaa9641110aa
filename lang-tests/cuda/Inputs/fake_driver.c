/* A stand-in for libcuda.so.1 (loaded through DELTA_CUDA_DRIVER) that has
   memory but cannot run kernels, so that a machine without a GPU can test
   the runtime's device sessions: copies, failed launches, and that every
   device buffer and module is released. FAKE_CUDA_DEVICES=0 makes it report
   no GPU. It says when the last buffer and module are released.
   FAKE_CUDA_LAUNCH=ok makes launches succeed without running anything (the
   results are then garbage, but the traffic is real), FAKE_CUDA_LAUNCH=check
   makes every launch succeed as if the kernel failed its module's first
   device check, and
   FAKE_CUDA_REPORT=1 prints, at exit, how many copies of each direction and
   how many allocations and stream synchronizations the process made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long Pointer;
enum { kSuccess = 0, kNoDevice = 100, kUnsupported = 801 };

static int live_buffers, live_modules, launches;
static long long htod_calls, htod_bytes, dtoh_calls, dtoh_bytes, dtod_calls;
static long long plain_allocs, pool_allocs, streams, synchronizations;

/* The counts so far, for tests that call the driver themselves: launches,
   host-to-device copies and bytes, device-to-host copies and bytes,
   device-to-device copies, cuMemAlloc calls, pool allocations, stream
   synchronizations. */
void fake_cuda_counts(long long* counts) {
  long long values[9] = {launches,     htod_calls,  htod_bytes,
                         dtoh_calls,   dtoh_bytes,  dtod_calls,
                         plain_allocs, pool_allocs, synchronizations};
  memcpy(counts, values, sizeof values);
}

static void Report(void) {
  printf(
      "fake driver: %d launches; host to device: %lld copies, %lld bytes; "
      "device to host: %lld copies, %lld bytes; device to device: %lld "
      "copies; cuMemAlloc: %lld; pool allocations: %lld; streams: %lld; "
      "stream synchronizations: %lld\n",
      launches, htod_calls, htod_bytes, dtoh_calls, dtoh_bytes, dtod_calls,
      plain_allocs, pool_allocs, streams, synchronizations);
}

static void Released(void) {
  if (live_buffers == 0 && live_modules == 0)
    printf("fake driver: everything released after %d launches\n", launches);
}

int cuGetErrorString(int result, const char** text) {
  *text = result == kNoDevice ? "no CUDA-capable device is detected"
                              : "fake driver: not supported";
  return kSuccess;
}
int cuInit(unsigned flags) {
  const char* report = getenv("FAKE_CUDA_REPORT");
  if (report != NULL && strcmp(report, "1") == 0) atexit(Report);
  return flags == 0 ? kSuccess : kUnsupported;
}
int cuDeviceGetCount(int* count) {
  const char* devices = getenv("FAKE_CUDA_DEVICES");
  *count = devices != NULL ? atoi(devices) : 1;
  return kSuccess;
}
int cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return kSuccess;
}
int cuDeviceGetAttribute(int* value, int attribute, int device) {
  (void)attribute;
  (void)device;
  *value = 2;
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void** context, int device) {
  (void)device;
  static int primary;
  *context = &primary;
  return kSuccess;
}
int cuCtxSetCurrent(void* context) { return context ? kSuccess : 1; }
int cuCtxSynchronize(void) { return kSuccess; }
int cuModuleLoadDataEx(void** module, const void* image, unsigned count,
                       int* options, void** values) {
  (void)count;
  (void)options;
  (void)values;
  if (strstr((const char*)image, ".entry") == NULL) return kUnsupported;
  *module = malloc(1);
  ++live_modules;
  return kSuccess;
}
int cuModuleUnload(void* module) {
  free(module);
  --live_modules;
  Released();
  return kSuccess;
}
int cuModuleGetFunction(void** function, void* module, const char* name) {
  (void)module;
  *function = (void*)name;
  return kSuccess;
}
int cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shared,
                   void* stream, void** params, void** extra) {
  (void)function, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
  (void)shared, (void)stream, (void)extra;
  ++launches;
  const char* launch = getenv("FAKE_CUDA_LAUNCH");
  if (launch != NULL && strcmp(launch, "check") == 0) {
    /* As if the kernel failed the module's first check: its first
       parameter is the error slot (code, first, second, unused). */
    long long* slot = *(long long**)params[0];
    if (slot[0] == 0) slot[0] = 1;
    return kSuccess;
  }
  return launch != NULL && strcmp(launch, "ok") == 0 ? kSuccess : kUnsupported;
}
int cuMemAlloc_v2(Pointer* pointer, size_t bytes) {
  void* memory = malloc(bytes);
  if (memory == NULL) return 2;
  *pointer = (Pointer)memory;
  ++live_buffers;
  ++plain_allocs;
  return kSuccess;
}
int cuMemFree_v2(Pointer pointer) {
  free((void*)pointer);
  --live_buffers;
  Released();
  return kSuccess;
}
int cuMemcpyHtoD_v2(Pointer dst, const void* src, size_t bytes) {
  memcpy((void*)dst, src, bytes);
  return kSuccess;
}
int cuMemcpyDtoH_v2(void* dst, Pointer src, size_t bytes) {
  memcpy(dst, (const void*)src, bytes);
  return kSuccess;
}
int cuMemcpyDtoD_v2(Pointer dst, Pointer src, size_t bytes) {
  memcpy((void*)dst, (const void*)src, bytes);
  return kSuccess;
}
int cuMemsetD8_v2(Pointer dst, unsigned char value, size_t bytes) {
  memset((void*)dst, value, bytes);
  return kSuccess;
}

/* Streams, the stream-ordered pool and asynchronous copies: everything
   happens at once, in host memory. */
int cuStreamCreate(void** stream, unsigned flags) {
  (void)flags;
  static int handle;
  *stream = &handle;
  ++streams;
  return kSuccess;
}
int cuStreamDestroy_v2(void* stream) { return stream ? kSuccess : 1; }
int cuStreamSynchronize(void* stream) {
  (void)stream;
  ++synchronizations;
  return kSuccess;
}
int cuMemPoolCreate(void** pool, const void* props) {
  (void)props;
  *pool = malloc(1);
  ++live_modules; /* released like a module: by cuMemPoolDestroy */
  return kSuccess;
}
int cuMemPoolDestroy(void* pool) {
  free(pool);
  --live_modules;
  Released();
  return kSuccess;
}
int cuMemPoolSetAttribute(void* pool, int attribute, void* value) {
  (void)pool, (void)attribute, (void)value;
  return kSuccess;
}
int cuMemAllocFromPoolAsync(Pointer* pointer, size_t bytes, void* pool,
                            void* stream) {
  (void)pool, (void)stream;
  void* memory = malloc(bytes);
  if (memory == NULL) return 2;
  *pointer = (Pointer)memory;
  ++live_buffers;
  ++pool_allocs;
  return kSuccess;
}
int cuMemFreeAsync(Pointer pointer, void* stream) {
  (void)stream;
  return cuMemFree_v2(pointer);
}
int cuMemcpyHtoDAsync_v2(Pointer dst, const void* src, size_t bytes,
                         void* stream) {
  (void)stream;
  ++htod_calls;
  htod_bytes += (long long)bytes;
  memcpy((void*)dst, src, bytes);
  return kSuccess;
}
int cuMemcpyDtoHAsync_v2(void* dst, Pointer src, size_t bytes, void* stream) {
  (void)stream;
  ++dtoh_calls;
  dtoh_bytes += (long long)bytes;
  memcpy(dst, (const void*)src, bytes);
  return kSuccess;
}
int cuMemcpyDtoDAsync_v2(Pointer dst, Pointer src, size_t bytes, void* stream) {
  (void)stream;
  ++dtod_calls;
  memmove((void*)dst, (const void*)src, bytes);
  return kSuccess;
}
int cuMemsetD8Async(Pointer dst, unsigned char value, size_t bytes,
                    void* stream) {
  (void)stream;
  memset((void*)dst, value, bytes);
  return kSuccess;
}
int cuMemAllocHost_v2(void** pointer, size_t bytes) {
  *pointer = malloc(bytes);
  return *pointer != NULL ? kSuccess : 2;
}
int cuMemFreeHost(void* pointer) {
  free(pointer);
  return kSuccess;
}

// The CUDA driver API loaded with dlopen at run time, and the device memory
// and launches that code built with --target=cuda calls (runtime/cuda.h).
#include "runtime/cuda.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/runtime.h"

namespace {

// The few driver types and entry points used, declared here so that the
// build needs no CUDA headers (values from cuda.h, stable since CUDA 4).
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUdeviceptr = unsigned long long;
constexpr CUresult kCudaSuccess = 0;
constexpr int kAttributeMultiprocessorCount = 16;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSize = 6;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*,
                                 void**);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void**,
                             void**);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

// Where an array lives: its device buffer (0 if none yet) and whether the
// host copy is current.
struct DeviceCopy {
  CUdeviceptr device = 0;
  bool host_current = true;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  Driver driver{};
  CUcontext context = nullptr;
  int64_t multiprocessors = 1;
  CUdeviceptr error_slot = 0;
  const DeltaCudaCheck* checks = nullptr;
  int64_t check_count = 0;
  std::unordered_map<const void*, CUmodule> modules;
  std::unordered_map<void*, DeviceCopy> arrays;
};

State& GetState() {
  // Never destroyed: generated code may run during static destruction.
  static State* state = new State;
  return *state;
}

[[noreturn]] void FailNoDevice(const std::string& why) {
  delta_fail(nullptr, 0, 0, ("no CUDA device: " + why).c_str());
}

// A driver error as a Delta run-time error.
void Check(State& state, CUresult result, const char* what) {
  if (result == kCudaSuccess) return;
  const char* text = nullptr;
  if (state.driver.cuGetErrorString == nullptr ||
      state.driver.cuGetErrorString(result, &text) != kCudaSuccess ||
      text == nullptr)
    text = "unknown error";
  char message[512];
  std::snprintf(message, sizeof message, "CUDA error in %s: %s (code %d)", what,
                text, result);
  delta_fail(nullptr, 0, 0, message);
}

template <typename F>
void Load(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (function == nullptr)
    FailNoDevice(std::string("the driver lacks ") + name);
}

// Loads the driver and makes device 0's primary context current; called
// with the mutex held.
void InitLocked(State& state) {
  thread_local bool current = false;
  if (state.initialized) {
    if (!current) {
      Check(state, state.driver.cuCtxSetCurrent(state.context),
            "cuCtxSetCurrent");
      current = true;
    }
    return;
  }
  // DELTA_CUDA_DRIVER names another driver library (tests, unusual
  // installs).
  const char* name = std::getenv("DELTA_CUDA_DRIVER");
  if (name == nullptr || *name == '\0') name = "libcuda.so.1";
  void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    FailNoDevice(std::string("cannot load the CUDA driver (") +
                 (why != nullptr ? why : name) + ")");
  }
  Driver& driver = state.driver;
  Load(library, "cuGetErrorString", driver.cuGetErrorString);
  Load(library, "cuInit", driver.cuInit);
  Load(library, "cuDeviceGetCount", driver.cuDeviceGetCount);
  Load(library, "cuDeviceGet", driver.cuDeviceGet);
  Load(library, "cuDeviceGetAttribute", driver.cuDeviceGetAttribute);
  Load(library, "cuDevicePrimaryCtxRetain", driver.cuDevicePrimaryCtxRetain);
  Load(library, "cuCtxSetCurrent", driver.cuCtxSetCurrent);
  Load(library, "cuModuleLoadDataEx", driver.cuModuleLoadDataEx);
  Load(library, "cuModuleGetFunction", driver.cuModuleGetFunction);
  Load(library, "cuLaunchKernel", driver.cuLaunchKernel);
  Load(library, "cuMemAlloc_v2", driver.cuMemAlloc);
  Load(library, "cuMemFree_v2", driver.cuMemFree);
  Load(library, "cuMemcpyHtoD_v2", driver.cuMemcpyHtoD);
  Load(library, "cuMemcpyDtoH_v2", driver.cuMemcpyDtoH);
  Load(library, "cuMemcpyDtoD_v2", driver.cuMemcpyDtoD);
  Load(library, "cuMemsetD8_v2", driver.cuMemsetD8);
  Load(library, "cuCtxSynchronize", driver.cuCtxSynchronize);
  CUresult result = driver.cuInit(0);
  int count = 0;
  if (result == kCudaSuccess) result = driver.cuDeviceGetCount(&count);
  if (result != kCudaSuccess || count == 0) {
    const char* text = nullptr;
    if (result == kCudaSuccess ||
        driver.cuGetErrorString(result, &text) != kCudaSuccess ||
        text == nullptr)
      text = "the driver reports no GPU";
    FailNoDevice(text);
  }
  CUdevice device = 0;
  Check(state, driver.cuDeviceGet(&device, 0), "cuDeviceGet");
  Check(state, driver.cuDevicePrimaryCtxRetain(&state.context, device),
        "cuDevicePrimaryCtxRetain");
  Check(state, driver.cuCtxSetCurrent(state.context), "cuCtxSetCurrent");
  current = true;
  int multiprocessors = 1;
  Check(state,
        driver.cuDeviceGetAttribute(&multiprocessors,
                                    kAttributeMultiprocessorCount, device),
        "cuDeviceGetAttribute");
  state.multiprocessors = multiprocessors;
  Check(state, driver.cuMemAlloc(&state.error_slot, 4 * sizeof(int64_t)),
        "cuMemAlloc");
  Check(state, driver.cuMemsetD8(state.error_slot, 0, 4 * sizeof(int64_t)),
        "cuMemsetD8");
  state.initialized = true;
}

CUdeviceptr AllocateDevice(State& state, int64_t bytes) {
  CUdeviceptr pointer = 0;
  // The driver rejects empty allocations; every array gets a distinct one.
  Check(state,
        state.driver.cuMemAlloc(&pointer,
                                static_cast<size_t>(bytes > 0 ? bytes : 1)),
        "cuMemAlloc");
  return pointer;
}

}  // namespace

extern "C" {

void delta_cuda_init(void) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  InitLocked(state);
}

void* delta_cuda_function(void** slot, const char* ptx, const char* name,
                          const DeltaCudaCheck* checks, int64_t check_count) {
  if (*slot != nullptr) return *slot;
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  InitLocked(state);
  CUmodule& module = state.modules[ptx];
  if (module == nullptr) {
    static char log[8192];
    log[0] = '\0';
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
    CUresult result =
        state.driver.cuModuleLoadDataEx(&module, ptx, 2, options, values);
    if (result != kCudaSuccess && log[0] != '\0')
      std::fprintf(stderr, "%s\n", log);
    Check(state, result, "cuModuleLoadData");
    state.checks = checks;
    state.check_count = check_count;
  }
  CUfunction function = nullptr;
  Check(state, state.driver.cuModuleGetFunction(&function, module, name),
        "cuModuleGetFunction");
  *slot = function;
  return function;
}

void delta_cuda_launch(void* function, int64_t grid_x, int64_t grid_y,
                       int64_t block_x, int64_t block_y, int64_t shared_bytes,
                       void** args) {
  if (grid_x <= 0 || grid_y <= 0) return;
  State& state = GetState();
  Check(state,
        state.driver.cuLaunchKernel(
            function, static_cast<unsigned>(grid_x),
            static_cast<unsigned>(grid_y), 1, static_cast<unsigned>(block_x),
            static_cast<unsigned>(block_y), 1,
            static_cast<unsigned>(shared_bytes), nullptr, args, nullptr),
        "cuLaunchKernel");
}

int64_t delta_cuda_multiprocessors(void) {
  delta_cuda_init();
  return GetState().multiprocessors;
}

void* delta_cuda_error_slot(void) {
  delta_cuda_init();
  return reinterpret_cast<void*>(GetState().error_slot);
}

void delta_cuda_check(void) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  InitLocked(state);
  Check(state, state.driver.cuCtxSynchronize(), "a kernel");
  int64_t slot[4] = {0, 0, 0, 0};
  Check(state, state.driver.cuMemcpyDtoH(slot, state.error_slot, sizeof slot),
        "cuMemcpyDtoH");
  if (slot[0] == 0) return;
  if (slot[0] < 1 || slot[0] > state.check_count)
    delta_fail(nullptr, 0, 0, "a kernel failed a check");
  const DeltaCudaCheck& check = state.checks[slot[0] - 1];
  if (check.formatted != 0)
    delta_fail_format(check.file, check.line, check.column, check.message,
                      slot[1], slot[2]);
  delta_fail(check.file, check.line, check.column, check.message);
}

void* delta_cuda_alloc(int64_t bytes) {
  State& state = GetState();
  // Host pages are only touched if the host reads the array.
  void* host = delta_alloc(bytes);
  std::lock_guard<std::mutex> lock(state.mutex);
  InitLocked(state);
  DeviceCopy& copy = state.arrays[host];
  copy.device = AllocateDevice(state, bytes);
  copy.host_current = false;
  return host;
}

void* delta_cuda_device(void* host, int64_t bytes) {
  State& state = GetState();
  std::lock_guard<std::mutex> lock(state.mutex);
  InitLocked(state);
  DeviceCopy& copy = state.arrays[host];
  if (copy.device == 0) {
    copy.device = AllocateDevice(state, bytes);
    if (bytes > 0)
      Check(state,
            state.driver.cuMemcpyHtoD(copy.device, host,
                                      static_cast<size_t>(bytes)),
            "cuMemcpyHtoD");
  }
  return reinterpret_cast<void*>(copy.device);
}

void delta_cuda_host(void* host, int64_t bytes) {
  State& state = GetState();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto it = state.arrays.find(host);
    if (it == state.arrays.end() || it->second.host_current) return;
  }
  // A failed kernel check is reported before its result is read.
  delta_cuda_check();
  std::lock_guard<std::mutex> lock(state.mutex);
  DeviceCopy& copy = state.arrays[host];
  if (bytes > 0)
    Check(state,
          state.driver.cuMemcpyDtoH(host, copy.device,
                                    static_cast<size_t>(bytes)),
          "cuMemcpyDtoH");
  copy.host_current = true;
}

void* delta_cuda_clone(void* host, int64_t bytes) {
  State& state = GetState();
  bool on_device = false;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto it = state.arrays.find(host);
    on_device = it != state.arrays.end() && !it->second.host_current;
  }
  if (!on_device) {
    void* copy = delta_alloc(bytes);
    if (bytes > 0) std::memcpy(copy, host, static_cast<size_t>(bytes));
    return copy;
  }
  void* copy = delta_cuda_alloc(bytes);
  std::lock_guard<std::mutex> lock(state.mutex);
  if (bytes > 0)
    Check(state,
          state.driver.cuMemcpyDtoD(state.arrays[copy].device,
                                    state.arrays[host].device,
                                    static_cast<size_t>(bytes)),
          "cuMemcpyDtoD");
  return copy;
}

void delta_cuda_free(void* host) {
  State& state = GetState();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    auto it = state.arrays.find(host);
    if (it != state.arrays.end()) {
      if (it->second.device != 0) state.driver.cuMemFree(it->second.device);
      state.arrays.erase(it);
    }
  }
  delta_free(host);
}

}  // extern "C"

// The CUDA driver API loaded with dlopen at run time, and the device memory,
// streams, launches and cuBLAS calls that code built with --target=cuda
// makes (runtime/cuda.h).
#include "runtime/cuda.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "runtime/runtime.h"

namespace {

// The few driver types and entry points used, declared here so that the
// build needs no CUDA headers (values from cuda.h).
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUmemoryPool = void*;
using CUdeviceptr = unsigned long long;
constexpr CUresult kCudaSuccess = 0;
constexpr int kAttributeMaxThreadsPerBlock = 1;
constexpr int kAttributeMultiprocessorCount = 16;
constexpr int kAttributeMaxThreadsPerMultiprocessor = 39;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSize = 6;
constexpr unsigned kStreamNonBlocking = 1;
constexpr int kPoolReleaseThreshold = 4;  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
// The page-locked read-back buffer of a session (Session::pinned).
constexpr int64_t kPinnedBytes = 64 * 1024;

// CUmemPoolProps (cuda.h, CUDA 12 and 13): pinned device memory of device 0.
struct PoolProps {
  int alloc_type = 1;     // CU_MEM_ALLOCATION_TYPE_PINNED
  int handle_types = 0;   // none
  int location_type = 1;  // CU_MEM_LOCATION_TYPE_DEVICE
  int location_id = 0;
  void* win32_security_attributes = nullptr;
  size_t max_size = 0;
  unsigned short usage = 0;
  unsigned char reserved[54] = {};
};

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*,
                                 void**);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void**,
                             void**);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  // Props as const void*: the call's type must be the definition's, which
  // UBSan checks (the fake driver of the tests is C).
  CUresult (*cuMemPoolCreate)(CUmemoryPool*, const void*);
  CUresult (*cuMemPoolDestroy)(CUmemoryPool);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void*);
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr*, size_t, CUmemoryPool,
                                      CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  // For DELTA_CUDA_PROFILE only (optional: null when the driver lacks them).
  CUresult (*cuEventCreate)(void**, unsigned);
  CUresult (*cuEventRecord)(void*, CUstream);
  CUresult (*cuEventSynchronize)(void*);
  CUresult (*cuEventElapsedTime)(float*, void*, void*);
  // Page-locked host memory for small read-backs (optional).
  CUresult (*cuMemAllocHost)(void**, size_t);
  CUresult (*cuMemFreeHost)(void*);
  // For DELTA_CUDA_POOL=0 (allocation without the pool, for comparisons).
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
};

// cuBLAS, loaded with dlopen on the first contraction (Note [Contractions
// through cuBLAS] in docs/gpu.md). Status 0 is success.
using BlasHandle = void*;
struct Blas {
  int (*create)(BlasHandle*);
  int (*destroy)(BlasHandle);
  int (*set_stream)(BlasHandle, CUstream);
  int (*set_math_mode)(BlasHandle, int);
  // Optional (cuBLAS 12 and later).
  int (*set_workspace)(BlasHandle, void*, size_t);
  int (*sgemm)(BlasHandle, int, int, int, int, int, const float*, const float*,
               int, const float*, int, const float*, float*, int);
  int (*dgemm)(BlasHandle, int, int, int, int, int, const double*,
               const double*, int, const double*, int, const double*, double*,
               int);
  int (*sgemm_batched)(BlasHandle, int, int, int, int, int, const float*,
                       const float*, int, long long, const float*, int,
                       long long, const float*, float*, int, long long, int);
  int (*dgemm_batched)(BlasHandle, int, int, int, int, int, const double*,
                       const double*, int, long long, const double*, int,
                       long long, const double*, double*, int, long long, int);
  int (*sgeam)(BlasHandle, int, int, int, int, const float*, const float*, int,
               const float*, const float*, int, float*, int);
  int (*dgeam)(BlasHandle, int, int, int, int, const double*, const double*,
               int, const double*, const double*, int, double*, int);
};
constexpr int kBlasOpN = 0, kBlasOpT = 1;
constexpr int kBlasTf32Math = 3;  // CUBLAS_TF32_TENSOR_OP_MATH

// See Note [Device errors in libraries] in docs/internals/c_abi.md: a
// failure is recorded here, every lock and C++ object of the failing call is
// released, and only then does Raise call delta_fail (which may longjmp).
// Plain data, so that the frames the longjmp skips destroy nothing.
struct Error {
  bool failed = false;
  const char* file = nullptr;  // a failed kernel check: its location,
  int32_t line = 0;            // message and numbers
  int32_t column = 0;
  const char* format = nullptr;
  int64_t first = 0;
  int64_t second = 0;
  char message[1024];
};

void SetError(Error& error, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
void SetError(Error& error, const char* format, ...) {
  if (error.failed) return;  // the first failure is the one reported
  error.failed = true;
  va_list args;
  va_start(args, format);
  std::vsnprintf(error.message, sizeof error.message, format, args);
  va_end(args);
}

void Raise(const Error& error) {
  if (!error.failed) return;
  if (error.format != nullptr)
    delta_fail_format(error.file, error.line, error.column, error.format,
                      error.first, error.second);
  delta_fail(error.file, error.line, error.column, error.message);
}

// The driver and the device's primary context (DeviceOrdinal): loaded once
// per process and kept (as the CUDA runtime keeps its primary context).
struct Device {
  std::mutex mutex;
  bool tried = false;
  bool ready = false;
  char failure[512] = "";  // why there is no device, for every caller
  Driver driver{};
  CUcontext context = nullptr;
  int64_t multiprocessors = 1;
  int64_t max_threads_per_block = 1024;
  int64_t threads_per_multiprocessor = 2048;
  // cuBLAS: tried once; `blas_ready` when every entry point was found.
  bool blas_tried = false;
  bool blas_ready = false;
  Blas blas{};
};

Device& GetDevice() {
  // Never destroyed: generated code may run during static destruction.
  static Device* device = new Device;
  return *device;
}

// A driver error as a Delta run-time error.
bool Check(CUresult result, const char* what, Error& error) {
  if (result == kCudaSuccess) return true;
  const char* text = nullptr;
  const Driver& driver = GetDevice().driver;
  if (driver.cuGetErrorString == nullptr ||
      driver.cuGetErrorString(result, &text) != kCudaSuccess || text == nullptr)
    text = "unknown error";
  SetError(error, "CUDA error in %s: %s (code %d)", what, text, result);
  return false;
}

template <typename F>
bool Load(void* library, const char* name, F& function, Device& device) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (function != nullptr) return true;
  std::snprintf(device.failure, sizeof device.failure,
                "no CUDA device: the driver lacks %s", name);
  return false;
}

__attribute__((format(printf, 1, 2))) void Trace(const char* format, ...);

// Which of the `count` devices this process uses (Note [One GPU per
// process] in docs/gpu.md): DELTA_CUDA_DEVICE if set, else the process's
// rank among those mpirun started on its machine, modulo `count`, so that
// the processes of a sharded run spread over the machine's GPUs; else 0.
// -1 after writing why into `failure`.
int DeviceOrdinal(int count, char* failure, size_t size) {
  if (const char* chosen = std::getenv("DELTA_CUDA_DEVICE")) {
    char* end = nullptr;
    long ordinal = std::strtol(chosen, &end, 10);
    if (*chosen == '\0' || *end != '\0' || ordinal < 0 || ordinal >= count) {
      std::snprintf(failure, size,
                    "no CUDA device: DELTA_CUDA_DEVICE is '%s', but the driver "
                    "reports %d GPU%s (0 to %d)",
                    chosen, count, count == 1 ? "" : "s", count - 1);
      return -1;
    }
    return static_cast<int>(ordinal);
  }
  // OpenMPI's and MPICH's (Hydra's) names for it.
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})
    if (const char* rank = std::getenv(name))
      return static_cast<int>(std::strtol(rank, nullptr, 10) % count);
  return 0;
}

bool LoadDriver(Device& device) {
  // DELTA_CUDA_DRIVER names another driver library (tests, unusual
  // installs).
  const char* name = std::getenv("DELTA_CUDA_DRIVER");
  if (name == nullptr || *name == '\0') name = "libcuda.so.1";
  void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    std::snprintf(device.failure, sizeof device.failure,
                  "no CUDA device: cannot load the CUDA driver (%s)",
                  why != nullptr ? why : name);
    return false;
  }
  Driver& d = device.driver;
  if (!Load(library, "cuGetErrorString", d.cuGetErrorString, device) ||
      !Load(library, "cuInit", d.cuInit, device) ||
      !Load(library, "cuDeviceGetCount", d.cuDeviceGetCount, device) ||
      !Load(library, "cuDeviceGet", d.cuDeviceGet, device) ||
      !Load(library, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, device) ||
      !Load(library, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain,
            device) ||
      !Load(library, "cuCtxSetCurrent", d.cuCtxSetCurrent, device) ||
      !Load(library, "cuModuleLoadDataEx", d.cuModuleLoadDataEx, device) ||
      !Load(library, "cuModuleUnload", d.cuModuleUnload, device) ||
      !Load(library, "cuModuleGetFunction", d.cuModuleGetFunction, device) ||
      !Load(library, "cuLaunchKernel", d.cuLaunchKernel, device) ||
      !Load(library, "cuStreamCreate", d.cuStreamCreate, device) ||
      !Load(library, "cuStreamDestroy_v2", d.cuStreamDestroy, device) ||
      !Load(library, "cuStreamSynchronize", d.cuStreamSynchronize, device) ||
      !Load(library, "cuMemPoolCreate", d.cuMemPoolCreate, device) ||
      !Load(library, "cuMemPoolDestroy", d.cuMemPoolDestroy, device) ||
      !Load(library, "cuMemPoolSetAttribute", d.cuMemPoolSetAttribute,
            device) ||
      !Load(library, "cuMemAllocFromPoolAsync", d.cuMemAllocFromPoolAsync,
            device) ||
      !Load(library, "cuMemFreeAsync", d.cuMemFreeAsync, device) ||
      !Load(library, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, device) ||
      !Load(library, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync, device) ||
      !Load(library, "cuMemcpyDtoDAsync_v2", d.cuMemcpyDtoDAsync, device) ||
      !Load(library, "cuMemsetD8Async", d.cuMemsetD8Async, device))
    return false;
  d.cuEventCreate = reinterpret_cast<decltype(d.cuEventCreate)>(
      dlsym(library, "cuEventCreate"));
  d.cuEventRecord = reinterpret_cast<decltype(d.cuEventRecord)>(
      dlsym(library, "cuEventRecord"));
  d.cuEventSynchronize = reinterpret_cast<decltype(d.cuEventSynchronize)>(
      dlsym(library, "cuEventSynchronize"));
  d.cuEventElapsedTime = reinterpret_cast<decltype(d.cuEventElapsedTime)>(
      dlsym(library, "cuEventElapsedTime_v2"));
  if (d.cuEventElapsedTime == nullptr)
    d.cuEventElapsedTime = reinterpret_cast<decltype(d.cuEventElapsedTime)>(
        dlsym(library, "cuEventElapsedTime"));
  d.cuMemAllocHost = reinterpret_cast<decltype(d.cuMemAllocHost)>(
      dlsym(library, "cuMemAllocHost_v2"));
  d.cuMemFreeHost = reinterpret_cast<decltype(d.cuMemFreeHost)>(
      dlsym(library, "cuMemFreeHost"));
  d.cuMemAlloc =
      reinterpret_cast<decltype(d.cuMemAlloc)>(dlsym(library, "cuMemAlloc_v2"));
  d.cuMemFree =
      reinterpret_cast<decltype(d.cuMemFree)>(dlsym(library, "cuMemFree_v2"));
  CUresult result = d.cuInit(0);
  int count = 0;
  if (result == kCudaSuccess) result = d.cuDeviceGetCount(&count);
  if (result != kCudaSuccess || count == 0) {
    const char* text = nullptr;
    if (result == kCudaSuccess ||
        d.cuGetErrorString(result, &text) != kCudaSuccess || text == nullptr)
      text = "the driver reports no GPU";
    std::snprintf(device.failure, sizeof device.failure, "no CUDA device: %s",
                  text);
    return false;
  }
  int ordinal = DeviceOrdinal(count, device.failure, sizeof device.failure);
  if (ordinal < 0) return false;
  Trace("device %d of %d", ordinal, count);
  Error error;
  CUdevice handle = 0;
  int multiprocessors = 1;
  int max_threads = 1024;
  int threads_per_multiprocessor = 2048;
  if (!Check(d.cuDeviceGet(&handle, ordinal), "cuDeviceGet", error) ||
      !Check(d.cuDevicePrimaryCtxRetain(&device.context, handle),
             "cuDevicePrimaryCtxRetain", error) ||
      !Check(d.cuDeviceGetAttribute(&multiprocessors,
                                    kAttributeMultiprocessorCount, handle),
             "cuDeviceGetAttribute", error) ||
      !Check(d.cuDeviceGetAttribute(&max_threads, kAttributeMaxThreadsPerBlock,
                                    handle),
             "cuDeviceGetAttribute", error) ||
      !Check(
          d.cuDeviceGetAttribute(&threads_per_multiprocessor,
                                 kAttributeMaxThreadsPerMultiprocessor, handle),
          "cuDeviceGetAttribute", error)) {
    std::snprintf(device.failure, sizeof device.failure, "%s", error.message);
    return false;
  }
  device.multiprocessors = multiprocessors;
  device.max_threads_per_block = max_threads;
  device.threads_per_multiprocessor = threads_per_multiprocessor;
  return true;
}

// Whether the driver was loaded (without trying to load it).
bool DeviceLoaded() {
  Device& device = GetDevice();
  std::lock_guard<std::mutex> lock(device.mutex);
  return device.ready;
}

// Loads the driver once per process and makes the primary context current
// on the calling thread.
bool EnsureDevice(Error& error) {
  thread_local bool current = false;
  Device& device = GetDevice();
  {
    std::lock_guard<std::mutex> lock(device.mutex);
    if (!device.tried) {
      device.tried = true;
      device.ready = LoadDriver(device);
    }
  }
  if (!device.ready) {
    SetError(error, "%s", device.failure);
    return false;
  }
  if (current) return true;
  current = Check(device.driver.cuCtxSetCurrent(device.context),
                  "cuCtxSetCurrent", error);
  return current;
}

// DELTA_CUDA_TRACE=1: every allocation, copy, launch and free on stderr,
// and where a library call starts, waits and ends, each line stamped with
// the microseconds since the first (for debugging and timing the runtime on
// a GPU).
bool Tracing() {
  static const bool tracing = [] {
    const char* value = std::getenv("DELTA_CUDA_TRACE");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return tracing;
}

__attribute__((format(printf, 1, 2))) void Trace(const char* format, ...) {
  if (!Tracing()) return;
  using Clock = std::chrono::steady_clock;
  static const Clock::time_point first = Clock::now();
  double us =
      std::chrono::duration<double, std::micro>(Clock::now() - first).count();
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  std::fprintf(stderr, "cuda: %12.1f us  %s\n", us, line);
}

// cuBLAS from DELTA_CUBLAS (a path, or "none") or else the toolkit's
// libcublas.so.13, .12 or .11; false when none loads (contractions then use
// the tiled kernel).
bool LoadBlas(Device& device) {
  std::lock_guard<std::mutex> lock(device.mutex);
  if (device.blas_tried) return device.blas_ready;
  device.blas_tried = true;
  const char* chosen = std::getenv("DELTA_CUBLAS");
  const char* names[] = {"libcublas.so.13", "libcublas.so.12",
                         "libcublas.so.11"};
  void* library = nullptr;
  if (chosen != nullptr && *chosen != '\0') {
    if (std::strcmp(chosen, "none") != 0)
      library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  } else {
    for (const char* name : names)
      if (library == nullptr) library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  }
  if (library == nullptr) return false;
  if (Tracing()) {
    link_map* map = nullptr;
    dlinfo(library, RTLD_DI_LINKMAP, &map);
    Trace("cuBLAS from %s", map != nullptr ? map->l_name : "?");
  }
  Blas& blas = device.blas;
  auto load = [&](const char* name, auto& function) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
        dlsym(library, name));
    return function != nullptr;
  };
  device.blas_ready = load("cublasCreate_v2", blas.create) &&
                      load("cublasDestroy_v2", blas.destroy) &&
                      load("cublasSetStream_v2", blas.set_stream) &&
                      load("cublasSetMathMode", blas.set_math_mode) &&
                      load("cublasSgemm_v2", blas.sgemm) &&
                      load("cublasDgemm_v2", blas.dgemm) &&
                      load("cublasSgemmStridedBatched", blas.sgemm_batched) &&
                      load("cublasDgemmStridedBatched", blas.dgemm_batched) &&
                      load("cublasSgeam", blas.sgeam) &&
                      load("cublasDgeam", blas.dgeam);
  load("cublasSetWorkspace_v2", blas.set_workspace);
  return device.blas_ready;
}

// DELTA_CUDA_PROFILE=1 (Note [Profiling kernels] in docs/gpu.md): each
// launch and cuBLAS call is bracketed by two events on its stream; at exit
// the time of each kernel is summed and printed to stderr, slowest first.
struct Profile {
  std::mutex mutex;
  std::unordered_map<CUfunction, std::string> names;
  struct Span {
    std::string name;
    void* start;
    void* end;
  };
  std::vector<Span> spans;
};

Profile& GetProfile() {
  static Profile* profile = new Profile;
  return *profile;
}

void PrintProfile() {
  Profile& profile = GetProfile();
  const Driver& d = GetDevice().driver;
  std::lock_guard<std::mutex> lock(profile.mutex);
  std::unordered_map<std::string, std::vector<float>> times;
  double all = 0;
  for (const Profile::Span& span : profile.spans) {
    float ms = 0;
    if (d.cuEventSynchronize(span.end) != kCudaSuccess ||
        d.cuEventElapsedTime(&ms, span.start, span.end) != kCudaSuccess)
      continue;
    times[span.name].push_back(ms);
    all += ms;
  }
  struct Row {
    std::string name;
    double ms = 0;
    size_t calls = 0;
    float median = 0;
  };
  std::vector<Row> rows;
  for (auto& [name, ms] : times) {
    Row row{name, 0, ms.size(), 0};
    for (float t : ms) row.ms += t;
    // The median, not the mean, says what a call costs: a kernel's first
    // launch loads its module (cuBLAS's, lazily) and can take milliseconds.
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    row.median = ms[ms.size() / 2];
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.ms > b.ms; });
  std::fprintf(stderr,
               "cuda profile: %.3f ms in %zu launches (total, share, calls, "
               "median per call)\n",
               all, profile.spans.size());
  for (const Row& row : rows)
    std::fprintf(stderr, "  %9.3f ms %5.1f%% %7zu x %9.2f us  %s\n", row.ms,
                 all > 0 ? 100 * row.ms / all : 0.0, row.calls,
                 1000 * row.median, row.name.c_str());
}

bool Profiling() {
  static const bool profiling = [] {
    const char* value = std::getenv("DELTA_CUDA_PROFILE");
    if (value == nullptr || std::strcmp(value, "1") != 0) return false;
    std::atexit(PrintProfile);
    return true;
  }();
  return profiling && GetDevice().driver.cuEventElapsedTime != nullptr;
}

// Records an event on `stream` for the profile (null when not profiling).
void* ProfileEvent(CUstream stream) {
  if (!Profiling()) return nullptr;
  const Driver& d = GetDevice().driver;
  void* event = nullptr;
  if (d.cuEventCreate(&event, 0) != kCudaSuccess) return nullptr;
  d.cuEventRecord(event, stream);
  return event;
}

void ProfileSpan(std::string name, void* start, CUstream stream) {
  if (start == nullptr) return;
  void* end = ProfileEvent(stream);
  if (end == nullptr) return;
  Profile& profile = GetProfile();
  std::lock_guard<std::mutex> lock(profile.mutex);
  profile.spans.push_back({std::move(name), start, end});
}

// Where an array lives: its device buffer (0 if none yet) of `bytes`,
// whether the host copy is current, and whether the buffer is the caller's
// (a library input or result in device memory: never freed here).
struct DeviceCopy {
  CUdeviceptr device = 0;
  int64_t bytes = 0;
  bool host_current = true;
  bool borrowed = false;
};

// See Note [Device sessions] in docs/internals/c_abi.md: what one user of
// the device owns. Its stream orders every launch, copy and allocation of
// the session; its memory pool keeps freed device memory for the next
// allocation (Note [Streams and the memory pool] in docs/gpu.md).
struct Session {
  std::mutex mutex;
  void* (*alloc)(int64_t) = delta_alloc;
  void (*release)(void*) = delta_free;
  // Library sessions look kernels up in `functions`, not in the host code's
  // slots, which every context of the library shares.
  bool library = false;
  CUstream stream = nullptr;
  CUmemoryPool pool = nullptr;
  BlasHandle blas = nullptr;
  CUdeviceptr blas_workspace = 0;
  CUdeviceptr error_slot = 0;
  // Kernels were launched since the error slot was last read.
  bool unchecked = false;
  // A module with device checks was loaded: only then can a kernel write
  // the error slot (Note [Reading the error slot] in docs/gpu.md).
  bool kernels_can_fail = false;
  // Page-locked memory that the error slot and small arrays are read back
  // through: a device-to-host copy into pageable memory is staged by the
  // driver and costs a second synchronization (null: not available).
  void* pinned = nullptr;
  const DeltaCudaCheck* checks = nullptr;
  int64_t check_count = 0;
  std::unordered_map<const void*, CUmodule> modules;
  std::unordered_map<void**, CUfunction> functions;
  std::unordered_map<void*, DeviceCopy> arrays;
  // Device buffers replaced while a call runs (a borrowed input read again
  // with a larger size); freed when the call ends.
  std::vector<CUdeviceptr> retired;
  // The caller's device buffers for the results of the running library
  // call, by result index (0: none), and their sizes (Note [Results written
  // in place] in docs/gpu.md).
  std::vector<CUdeviceptr> result_buffers;
  std::vector<int64_t> result_bytes;
};

Session& ProcessSession() {
  static Session* session = new Session;
  return *session;
}

thread_local Session* current_session = nullptr;

Session& CurrentSession() {
  return current_session != nullptr ? *current_session : ProcessSession();
}

CUdeviceptr AllocateDevice(Session& session, int64_t bytes, Error& error);
void FreeBuffer(Session& session, CUdeviceptr pointer);

// The session's cuBLAS handle, made on first use on the session's stream;
// a cuBLAS status (0: success) and in `what` the call that failed.
int BlasHandleOf(Session& session, const char*& what) {
  const Blas& blas = GetDevice().blas;
  std::lock_guard<std::mutex> lock(session.mutex);
  if (session.blas != nullptr) return 0;
  what = "cublasCreate";
  int status = blas.create(&session.blas);
  if (status == 0) {
    what = "cublasSetStream";
    status = blas.set_stream(session.blas, session.stream);
  }
  // A workspace of the session's own (as PyTorch gives cuBLAS), so that
  // cuBLAS allocates nothing per call; DELTA_CUBLAS_WORKSPACE=0 leaves it
  // to cuBLAS.
  const char* workspace = std::getenv("DELTA_CUBLAS_WORKSPACE");
  if (status == 0 && blas.set_workspace != nullptr &&
      !(workspace != nullptr && std::strcmp(workspace, "0") == 0)) {
    constexpr int64_t kWorkspaceBytes = int64_t{32} << 20;
    Error error;
    session.blas_workspace = AllocateDevice(session, kWorkspaceBytes, error);
    what = "cublasSetWorkspace";
    if (session.blas_workspace != 0)
      status = blas.set_workspace(
          session.blas, reinterpret_cast<void*>(session.blas_workspace),
          static_cast<size_t>(kWorkspaceBytes));
  }
  // TF32 tensor cores for f32 only when the user asks (docs/gpu.md).
  const char* tf32 = std::getenv("DELTA_CUDA_TF32");
  if (status == 0 && tf32 != nullptr && std::strcmp(tf32, "1") == 0) {
    what = "cublasSetMathMode";
    status = blas.set_math_mode(session.blas, kBlasTf32Math);
  }
  return status;
}

// DELTA_CUDA_POOL=0: cuMemAlloc and cuMemFree instead of the pool (to
// measure what the pool saves).
bool PoolDisabled() {
  static const bool disabled = [] {
    const char* value = std::getenv("DELTA_CUDA_POOL");
    return value != nullptr && std::strcmp(value, "0") == 0 &&
           GetDevice().driver.cuMemAlloc != nullptr;
  }();
  return disabled;
}

CUdeviceptr AllocateDevice(Session& session, int64_t bytes, Error& error) {
  CUdeviceptr pointer = 0;
  const Driver& d = GetDevice().driver;
  // The driver rejects empty allocations; every array gets a distinct one.
  auto size = static_cast<size_t>(bytes > 0 ? bytes : 1);
  if (PoolDisabled())
    Check(d.cuMemAlloc(&pointer, size), "cuMemAlloc", error);
  else
    Check(
        d.cuMemAllocFromPoolAsync(&pointer, size, session.pool, session.stream),
        "cuMemAllocAsync", error);
  return pointer;
}

// Returns a device buffer, in stream order (kernels may still read it).
void FreeBuffer(Session& session, CUdeviceptr pointer) {
  const Driver& d = GetDevice().driver;
  if (!PoolDisabled()) {
    d.cuMemFreeAsync(pointer, session.stream);
    return;
  }
  d.cuStreamSynchronize(session.stream);
  d.cuMemFree(pointer);
}

void FreeDevice(Session& session, const DeviceCopy& copy) {
  if (copy.device != 0 && !copy.borrowed) FreeBuffer(session, copy.device);
}

// The device ready and the session's stream, pool and error slot made;
// `session.mutex` held.
bool Ready(Session& session, Error& error) {
  if (!EnsureDevice(error)) return false;
  if (session.error_slot != 0) return true;
  const Driver& d = GetDevice().driver;
  if (session.stream == nullptr &&
      !Check(d.cuStreamCreate(&session.stream, kStreamNonBlocking),
             "cuStreamCreate", error))
    return false;
  if (session.pool == nullptr) {
    PoolProps props;
    if (!Check(d.cuMemPoolCreate(&session.pool, &props), "cuMemPoolCreate",
               error))
      return false;
    // Keep freed memory for the session's next allocations instead of
    // returning it to the driver at every synchronization.
    unsigned long long keep = ~0ULL;
    if (!Check(
            d.cuMemPoolSetAttribute(session.pool, kPoolReleaseThreshold, &keep),
            "cuMemPoolSetAttribute", error))
      return false;
  }
  if (session.pinned == nullptr && d.cuMemAllocHost != nullptr &&
      d.cuMemAllocHost(&session.pinned, kPinnedBytes) != kCudaSuccess)
    session.pinned = nullptr;
  CUdeviceptr slot = AllocateDevice(session, 4 * sizeof(int64_t), error);
  if (slot == 0) return false;
  if (!Check(d.cuMemsetD8Async(slot, 0, 4 * sizeof(int64_t), session.stream),
             "cuMemsetD8Async", error)) {
    FreeBuffer(session, slot);
    return false;
  }
  session.error_slot = slot;
  return true;
}

// The kernel `name`, loading the module `ptx` into the session first.
CUfunction FindFunction(Session& session, void** slot, const char* ptx,
                        const char* name, const DeltaCudaCheck* checks,
                        int64_t check_count, Error& error) {
  if (!Ready(session, error)) return nullptr;
  const Driver& driver = GetDevice().driver;
  CUmodule& module = session.modules[ptx];
  if (module == nullptr) {
    char log[4096];
    log[0] = '\0';
    int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
    void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
    CUresult result =
        driver.cuModuleLoadDataEx(&module, ptx, 2, options, values);
    if (result != kCudaSuccess) {
      module = nullptr;
      // Libraries never print: the JIT's log goes into the message.
      if (log[0] != '\0' && !session.library) std::fprintf(stderr, "%s\n", log);
      Check(result, "cuModuleLoadData", error);
      if (log[0] != '\0' && session.library) {
        size_t used = std::strlen(error.message);
        std::snprintf(error.message + used, sizeof error.message - used, ": %s",
                      log);
      }
      return nullptr;
    }
    session.checks = checks;
    session.check_count = check_count;
    session.kernels_can_fail |= check_count > 0;
  }
  CUfunction& function = session.functions[slot];
  if (function == nullptr &&
      !Check(driver.cuModuleGetFunction(&function, module, name),
             "cuModuleGetFunction", error))
    return nullptr;
  if (Profiling() || Tracing()) {
    Profile& profile = GetProfile();
    std::lock_guard<std::mutex> lock(profile.mutex);
    profile.names[function] = name;
  }
  return function;
}

// Waits for the session's stream and reads the error slot into `error`
// (only if kernels ran since it was last read); with `host`, also copies
// `bytes` from `device` to it in the same round trip. The session's mutex
// held.
void Synchronize(Session& session, Error& error, void* host = nullptr,
                 CUdeviceptr device = 0, int64_t bytes = 0) {
  if (!Ready(session, error)) return;
  const Driver& d = GetDevice().driver;
  // The error slot and a small array go through the pinned buffer: its
  // first 32 bytes, then the rest.
  int64_t own_slot[4] = {0, 0, 0, 0};
  auto* slot = session.pinned != nullptr ? static_cast<int64_t*>(session.pinned)
                                         : own_slot;
  slot[0] = 0;
  bool staged = session.pinned != nullptr && bytes <= kPinnedBytes - 64;
  void* target = staged ? static_cast<char*>(session.pinned) + 64 : host;
  // Note [Reading the error slot]: a copy back costs a round trip of the
  // copy engine after the last kernel, so it is skipped when no kernel of
  // the session can write the slot.
  bool read_slot = session.unchecked && session.kernels_can_fail;
  if (read_slot &&
      !Check(d.cuMemcpyDtoHAsync(slot, session.error_slot, 4 * sizeof(int64_t),
                                 session.stream),
             "cuMemcpyDtoHAsync", error))
    return;
  if (host != nullptr && bytes > 0 &&
      !Check(d.cuMemcpyDtoHAsync(target, device, static_cast<size_t>(bytes),
                                 session.stream),
             "cuMemcpyDtoHAsync", error))
    return;
  Trace("synchronize (%lld bytes back)", static_cast<long long>(bytes));
  if (!Check(d.cuStreamSynchronize(session.stream), "a kernel", error)) return;
  Trace("synchronized");
  session.unchecked = false;
  if (host != nullptr && bytes > 0 && staged)
    std::memcpy(host, target, static_cast<size_t>(bytes));
  if (slot[0] == 0) return;
  if (slot[0] < 1 || slot[0] > session.check_count) {
    SetError(error, "a kernel failed a check");
    return;
  }
  const DeltaCudaCheck& check = session.checks[slot[0] - 1];
  SetError(error, "%s", check.message);
  error.file = check.file;
  error.line = check.line;
  error.column = check.column;
  if (check.formatted != 0) {
    error.format = check.message;
    error.first = slot[1];
    error.second = slot[2];
  }
}

// The device copy of `host` (copied from the host if there is none yet, or
// if it is smaller than `bytes`).
CUdeviceptr DeviceOf(Session& session, void* host, int64_t bytes,
                     Error& error) {
  if (!Ready(session, error)) return 0;
  DeviceCopy& copy = session.arrays[host];
  if (copy.device != 0 && copy.bytes >= bytes) return copy.device;
  // A borrowed input that an earlier argument of the same call aliased
  // with fewer bytes: kernels may still read the old copy.
  if (copy.device != 0 && !copy.borrowed)
    session.retired.push_back(copy.device);
  copy.device = AllocateDevice(session, bytes, error);
  copy.bytes = bytes;
  copy.borrowed = false;
  Trace("to device %p -> %llx (%lld bytes)", host, copy.device,
        static_cast<long long>(bytes));
  if (copy.device != 0 && bytes > 0)
    Check(GetDevice().driver.cuMemcpyHtoDAsync(
              copy.device, host, static_cast<size_t>(bytes), session.stream),
          "cuMemcpyHtoDAsync", error);
  return copy.device;
}

// Makes the host copy of `host` current; the session's mutex held.
void ToHost(Session& session, void* host, int64_t bytes, Error& error) {
  auto it = session.arrays.find(host);
  if (it == session.arrays.end() || it->second.host_current) return;
  Trace("to host %llx -> %p (%lld bytes)", it->second.device, host,
        static_cast<long long>(bytes));
  // One round trip: the copy and the error slot. A failed kernel check is
  // reported instead of the (then meaningless) result.
  Synchronize(session, error, host, it->second.device, bytes);
  if (!error.failed) it->second.host_current = true;
}

// Frees every array's device copy and the retired buffers (the end of a
// library call); the session's mutex held. With the pool the buffers are
// freed in stream order; without it FreeBuffer waits for the stream.
void FreeArrays(Session& session) {
  for (auto& [host, copy] : session.arrays) FreeDevice(session, copy);
  session.arrays.clear();
  session.result_buffers.clear();
  session.result_bytes.clear();
  for (CUdeviceptr pointer : session.retired) FreeBuffer(session, pointer);
  session.retired.clear();
}

}  // namespace

extern "C" {

void delta_cuda_init(void) {
  Error error;
  {
    Session& session = CurrentSession();
    std::lock_guard<std::mutex> lock(session.mutex);
    Ready(session, error);
  }
  Raise(error);
}

void* delta_cuda_function(void** slot, const char* ptx, const char* name,
                          const DeltaCudaCheck* checks, int64_t check_count) {
  if (*slot != nullptr) return *slot;
  Error error;
  CUfunction function = nullptr;
  {
    Session& session = CurrentSession();
    std::lock_guard<std::mutex> lock(session.mutex);
    function =
        FindFunction(session, slot, ptx, name, checks, check_count, error);
    if (function != nullptr && !session.library) *slot = function;
  }
  Raise(error);
  return function;
}

void delta_cuda_launch(void* function, int64_t grid_x, int64_t grid_y,
                       int64_t block_x, int64_t block_y, int64_t shared_bytes,
                       void** args) {
  if (grid_x <= 0 || grid_y <= 0) return;
  Error error;
  Session& session = CurrentSession();
  session.unchecked = true;
  CUstream stream = session.stream;
  void* start = ProfileEvent(stream);
  Check(GetDevice().driver.cuLaunchKernel(
            function, static_cast<unsigned>(grid_x),
            static_cast<unsigned>(grid_y), 1, static_cast<unsigned>(block_x),
            static_cast<unsigned>(block_y), 1,
            static_cast<unsigned>(shared_bytes), stream, args, nullptr),
        "cuLaunchKernel", error);
  if (Profiling() || Tracing()) {
    std::string name;
    {
      Profile& profile = GetProfile();
      std::lock_guard<std::mutex> lock(profile.mutex);
      name = profile.names[function];
    }
    Trace("launch %s grid %lld x %lld", name.c_str(),
          static_cast<long long>(grid_x), static_cast<long long>(grid_y));
    ProfileSpan(std::move(name), start, stream);
  }
  Raise(error);
}

int64_t delta_cuda_resident_blocks(void) {
  delta_cuda_init();
  const Device& device = GetDevice();
  return device.multiprocessors *
         std::max<int64_t>(1, device.threads_per_multiprocessor / 256);
}

void* delta_cuda_error_slot(void) {
  delta_cuda_init();
  return reinterpret_cast<void*>(CurrentSession().error_slot);
}

void delta_cuda_check(void) {
  Error error;
  {
    Session& session = CurrentSession();
    std::lock_guard<std::mutex> lock(session.mutex);
    Synchronize(session, error);
  }
  Raise(error);
}

void* delta_cuda_alloc(int64_t bytes) {
  Session& session = CurrentSession();
  // Host pages are only touched if the host reads the array.
  void* host = session.alloc(bytes);
  Error error;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    if (Ready(session, error)) {
      DeviceCopy& copy = session.arrays[host];
      copy.device = AllocateDevice(session, bytes, error);
      copy.bytes = bytes;
      copy.host_current = false;
      copy.borrowed = false;
      Trace("alloc %p on device %llx (%lld bytes)", host, copy.device,
            static_cast<long long>(bytes));
    }
  }
  // A library's tracked buffer is freed by its entry after an error.
  Raise(error);
  return host;
}

void* delta_cuda_alloc_result(int64_t index, int64_t bytes) {
  Session& session = CurrentSession();
  CUdeviceptr buffer = 0;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    auto i = static_cast<size_t>(index);
    if (i < session.result_buffers.size() && session.result_bytes[i] == bytes) {
      buffer = session.result_buffers[i];
      session.result_buffers[i] = 0;  // one array per buffer
    }
  }
  if (buffer == 0) return delta_cuda_alloc(bytes);
  Trace("result %lld in the caller's %llx", static_cast<long long>(index),
        buffer);
  return delta_cuda_adopt(reinterpret_cast<void*>(buffer), bytes);
}

void delta_cuda_result_buffers(int64_t count, void* const* buffers,
                               const int64_t* bytes) {
  Session& session = CurrentSession();
  std::lock_guard<std::mutex> lock(session.mutex);
  session.result_buffers.assign(static_cast<size_t>(count), 0);
  session.result_bytes.assign(bytes, bytes + count);
  for (int64_t i = 0; i < count; ++i)
    session.result_buffers[static_cast<size_t>(i)] =
        reinterpret_cast<CUdeviceptr>(buffers[i]);
}

void* delta_cuda_device(void* host, int64_t bytes) {
  Error error;
  CUdeviceptr device = 0;
  {
    Session& session = CurrentSession();
    std::lock_guard<std::mutex> lock(session.mutex);
    device = DeviceOf(session, host, bytes, error);
  }
  Raise(error);
  return reinterpret_cast<void*>(device);
}

void delta_cuda_host(void* host, int64_t bytes) {
  Session& session = CurrentSession();
  Error error;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    ToHost(session, host, bytes, error);
  }
  Raise(error);
}

void* delta_cuda_clone(void* host, int64_t bytes) {
  Session& session = CurrentSession();
  bool on_device = false;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    auto it = session.arrays.find(host);
    on_device = it != session.arrays.end() && !it->second.host_current;
  }
  if (!on_device) {
    void* copy = session.alloc(bytes);
    if (bytes > 0) std::memcpy(copy, host, static_cast<size_t>(bytes));
    return copy;
  }
  void* copy = delta_cuda_alloc(bytes);
  Error error;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    if (bytes > 0)
      Check(GetDevice().driver.cuMemcpyDtoDAsync(
                session.arrays[copy].device, session.arrays[host].device,
                static_cast<size_t>(bytes), session.stream),
            "cuMemcpyDtoDAsync", error);
  }
  Raise(error);
  return copy;
}

void delta_cuda_free(void* host) {
  Session& session = CurrentSession();
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    auto it = session.arrays.find(host);
    if (it != session.arrays.end()) {
      Trace("free %p on device %llx", host, it->second.device);
      FreeDevice(session, it->second);
      session.arrays.erase(it);
    }
  }
  session.release(host);
}

int32_t delta_cuda_gemm(int32_t elem_bytes, int64_t p, int64_t q, int64_t k,
                        const void* x, int32_t x_k_inner, const void* y,
                        int32_t y_k_outer, void* out, int64_t batch,
                        int64_t x_stride, int64_t y_stride,
                        int64_t out_stride) {
  Device& device = GetDevice();
  // cuBLAS takes int sizes.
  if (p > INT_MAX || q > INT_MAX || k > INT_MAX || batch > INT_MAX ||
      !LoadBlas(device))
    return 0;
  if (p == 0 || q == 0 || batch == 0) return 1;
  const Blas& blas = device.blas;
  Session& session = CurrentSession();
  Error error;
  const char* what = "cublasCreate";
  int status = BlasHandleOf(session, what);
  void* start = ProfileEvent(session.stream);
  if (status == 0) {
    // Row-major out (p × q) = x (p × k) · y (k × q) is, in cuBLAS's
    // column-major terms, out^T = y^T · x^T (Note [Contractions through
    // cuBLAS] in docs/gpu.md).
    int m = static_cast<int>(q), n = static_cast<int>(p);
    int depth = static_cast<int>(k);
    int op_y = y_k_outer ? kBlasOpN : kBlasOpT;
    int ld_y = static_cast<int>(y_k_outer ? q : k);
    int op_x = x_k_inner ? kBlasOpN : kBlasOpT;
    int ld_x = static_cast<int>(x_k_inner ? k : p);
    int count = static_cast<int>(batch);
    if (elem_bytes == 4) {
      const float one = 1.0f, zero = 0.0f;
      const auto* a = static_cast<const float*>(y);
      const auto* b = static_cast<const float*>(x);
      auto* c = static_cast<float*>(out);
      what = "cublasSgemm";
      status = batch == 1 ? blas.sgemm(session.blas, op_y, op_x, m, n, depth,
                                       &one, a, ld_y, b, ld_x, &zero, c, m)
                          : blas.sgemm_batched(session.blas, op_y, op_x, m, n,
                                               depth, &one, a, ld_y, y_stride,
                                               b, ld_x, x_stride, &zero, c, m,
                                               out_stride, count);
    } else {
      const double one = 1.0, zero = 0.0;
      const auto* a = static_cast<const double*>(y);
      const auto* b = static_cast<const double*>(x);
      auto* c = static_cast<double*>(out);
      what = "cublasDgemm";
      status = batch == 1 ? blas.dgemm(session.blas, op_y, op_x, m, n, depth,
                                       &one, a, ld_y, b, ld_x, &zero, c, m)
                          : blas.dgemm_batched(session.blas, op_y, op_x, m, n,
                                               depth, &one, a, ld_y, y_stride,
                                               b, ld_x, x_stride, &zero, c, m,
                                               out_stride, count);
    }
  }
  if (status != 0)
    SetError(error, "cuBLAS error in %s (status %d)", what, status);
  if (start != nullptr || Tracing()) {
    char name[128];
    std::snprintf(name, sizeof name, "cuBLAS %s %lldx%lldx%lld batch %lld",
                  elem_bytes == 4 ? "sgemm" : "dgemm",
                  static_cast<long long>(p), static_cast<long long>(q),
                  static_cast<long long>(k), static_cast<long long>(batch));
    Trace("%s", name);
    ProfileSpan(name, start, session.stream);
  }
  Raise(error);
  return 1;
}

int32_t delta_cuda_transpose(int32_t elem_bytes, int64_t rows, int64_t cols,
                             const void* source, void* destination) {
  Device& device = GetDevice();
  if (rows > INT_MAX || cols > INT_MAX || !LoadBlas(device)) return 0;
  if (rows == 0 || cols == 0) return 1;
  Session& session = CurrentSession();
  const char* what = "cublasCreate";
  int status = BlasHandleOf(session, what);
  // source row-major (rows × cols) is column-major (cols × rows), ld cols;
  // destination row-major (cols × rows) is column-major (rows × cols).
  int m = static_cast<int>(rows), n = static_cast<int>(cols);
  if (status == 0 && elem_bytes == 4) {
    const float one = 1.0f, zero = 0.0f;
    auto* out = static_cast<float*>(destination);
    what = "cublasSgeam";
    status = device.blas.sgeam(session.blas, kBlasOpT, kBlasOpN, m, n, &one,
                               static_cast<const float*>(source), n, &zero, out,
                               m, out, m);
  } else if (status == 0) {
    const double one = 1.0, zero = 0.0;
    auto* out = static_cast<double*>(destination);
    what = "cublasDgeam";
    status = device.blas.dgeam(session.blas, kBlasOpT, kBlasOpN, m, n, &one,
                               static_cast<const double*>(source), n, &zero,
                               out, m, out, m);
  }
  Error error;
  if (status != 0)
    SetError(error, "cuBLAS error in %s (status %d)", what, status);
  Raise(error);
  return 1;
}

void* delta_cuda_adopt(void* device_pointer, int64_t bytes) {
  Session& session = CurrentSession();
  void* host = session.alloc(bytes);
  std::lock_guard<std::mutex> lock(session.mutex);
  DeviceCopy& copy = session.arrays[host];
  copy.device = reinterpret_cast<CUdeviceptr>(device_pointer);
  copy.bytes = bytes;
  copy.host_current = false;
  copy.borrowed = true;
  return host;
}

void delta_cuda_to_device(void* host, int64_t bytes, void* device_pointer) {
  Session& session = CurrentSession();
  Error error;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    const Driver& d = GetDevice().driver;
    auto destination = reinterpret_cast<CUdeviceptr>(device_pointer);
    auto it = session.arrays.find(host);
    if (bytes <= 0) {
    } else if (it != session.arrays.end() && !it->second.host_current) {
      if (it->second.device != destination)
        Check(d.cuMemcpyDtoDAsync(destination, it->second.device,
                                  static_cast<size_t>(bytes), session.stream),
              "cuMemcpyDtoDAsync", error);
    } else if (Ready(session, error)) {
      Check(d.cuMemcpyHtoDAsync(destination, host, static_cast<size_t>(bytes),
                                session.stream),
            "cuMemcpyHtoDAsync", error);
    }
  }
  Raise(error);
}

void delta_cuda_copy_to_host(void* host, const void* device_pointer,
                             int64_t bytes) {
  Session& session = CurrentSession();
  Error error;
  {
    std::lock_guard<std::mutex> lock(session.mutex);
    const Driver& d = GetDevice().driver;
    if (bytes > 0 && Ready(session, error) &&
        Check(d.cuMemcpyDtoHAsync(host,
                                  reinterpret_cast<CUdeviceptr>(device_pointer),
                                  static_cast<size_t>(bytes), session.stream),
              "cuMemcpyDtoHAsync", error))
      Check(d.cuStreamSynchronize(session.stream), "cuMemcpyDtoH", error);
  }
  Raise(error);
}

void* delta_cuda_session_create(void* (*alloc)(int64_t),
                                void (*release)(void*)) {
  auto* session = new (std::nothrow) Session;
  if (session == nullptr) return nullptr;
  session->alloc = alloc;
  session->release = release;
  session->library = true;
  return session;
}

void delta_cuda_session_destroy(void* opaque) {
  auto* session = static_cast<Session*>(opaque);
  if (session == nullptr) return;
  Error error;
  // Without a device the session never allocated anything.
  if (DeviceLoaded() && EnsureDevice(error)) {
    Device& device = GetDevice();
    const Driver& d = device.driver;
    if (session->stream != nullptr) d.cuStreamSynchronize(session->stream);
    FreeArrays(*session);
    if (session->error_slot != 0) FreeBuffer(*session, session->error_slot);
    if (session->blas != nullptr) device.blas.destroy(session->blas);
    if (session->blas_workspace != 0)
      FreeBuffer(*session, session->blas_workspace);
    if (session->stream != nullptr) {
      d.cuStreamSynchronize(session->stream);
      d.cuStreamDestroy(session->stream);
    }
    if (session->pool != nullptr) d.cuMemPoolDestroy(session->pool);
    if (session->pinned != nullptr) d.cuMemFreeHost(session->pinned);
    for (auto& [ptx, module] : session->modules)
      if (module != nullptr) d.cuModuleUnload(module);
  }
  delete session;
}

void delta_cuda_session_enter(void* opaque) {
  Trace("call starts");
  current_session = static_cast<Session*>(opaque);
  delta_cuda_init();
}

void delta_cuda_session_leave(void* opaque, int32_t failed) {
  auto* session = static_cast<Session*>(opaque);
  current_session = nullptr;
  Error error;
  std::lock_guard<std::mutex> lock(session->mutex);
  if (!EnsureDevice(error) || session->stream == nullptr) {
    session->arrays.clear();
    return;
  }
  const Driver& d = GetDevice().driver;
  // Kernels of a failed call may still run: wait before freeing. A call
  // that succeeded ended with delta_cuda_check, which waited for the
  // stream, and its device buffers go back to the pool in stream order.
  if (failed != 0) {
    Trace("call failed: synchronize");
    d.cuStreamSynchronize(session->stream);
    Trace("synchronized");
  }
  Trace("call ends");
  FreeArrays(*session);
  // The next call starts with a clear error slot.
  if (failed != 0 && session->error_slot != 0)
    d.cuMemsetD8Async(session->error_slot, 0, 4 * sizeof(int64_t),
                      session->stream);
}

}  // extern "C"

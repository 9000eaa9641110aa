// The CUDA driver API loaded with dlopen at run time, and the device memory
// and launches that code built with --target=cuda calls (runtime/cuda.h).
#include "runtime/cuda.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

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
  CUresult (*cuModuleUnload)(CUmodule);
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

// The driver and device 0's primary context: loaded once per process and
// kept (as the CUDA runtime keeps its primary context).
struct Device {
  std::mutex mutex;
  bool tried = false;
  bool ready = false;
  char failure[512] = "";  // why there is no device, for every caller
  Driver driver{};
  CUcontext context = nullptr;
  int64_t multiprocessors = 1;
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
  Driver& driver = device.driver;
  if (!Load(library, "cuGetErrorString", driver.cuGetErrorString, device) ||
      !Load(library, "cuInit", driver.cuInit, device) ||
      !Load(library, "cuDeviceGetCount", driver.cuDeviceGetCount, device) ||
      !Load(library, "cuDeviceGet", driver.cuDeviceGet, device) ||
      !Load(library, "cuDeviceGetAttribute", driver.cuDeviceGetAttribute,
            device) ||
      !Load(library, "cuDevicePrimaryCtxRetain",
            driver.cuDevicePrimaryCtxRetain, device) ||
      !Load(library, "cuCtxSetCurrent", driver.cuCtxSetCurrent, device) ||
      !Load(library, "cuModuleLoadDataEx", driver.cuModuleLoadDataEx, device) ||
      !Load(library, "cuModuleUnload", driver.cuModuleUnload, device) ||
      !Load(library, "cuModuleGetFunction", driver.cuModuleGetFunction,
            device) ||
      !Load(library, "cuLaunchKernel", driver.cuLaunchKernel, device) ||
      !Load(library, "cuMemAlloc_v2", driver.cuMemAlloc, device) ||
      !Load(library, "cuMemFree_v2", driver.cuMemFree, device) ||
      !Load(library, "cuMemcpyHtoD_v2", driver.cuMemcpyHtoD, device) ||
      !Load(library, "cuMemcpyDtoH_v2", driver.cuMemcpyDtoH, device) ||
      !Load(library, "cuMemcpyDtoD_v2", driver.cuMemcpyDtoD, device) ||
      !Load(library, "cuMemsetD8_v2", driver.cuMemsetD8, device) ||
      !Load(library, "cuCtxSynchronize", driver.cuCtxSynchronize, device))
    return false;
  CUresult result = driver.cuInit(0);
  int count = 0;
  if (result == kCudaSuccess) result = driver.cuDeviceGetCount(&count);
  if (result != kCudaSuccess || count == 0) {
    const char* text = nullptr;
    if (result == kCudaSuccess ||
        driver.cuGetErrorString(result, &text) != kCudaSuccess ||
        text == nullptr)
      text = "the driver reports no GPU";
    std::snprintf(device.failure, sizeof device.failure, "no CUDA device: %s",
                  text);
    return false;
  }
  Error error;
  CUdevice handle = 0;
  int multiprocessors = 1;
  if (!Check(driver.cuDeviceGet(&handle, 0), "cuDeviceGet", error) ||
      !Check(driver.cuDevicePrimaryCtxRetain(&device.context, handle),
             "cuDevicePrimaryCtxRetain", error) ||
      !Check(driver.cuDeviceGetAttribute(&multiprocessors,
                                         kAttributeMultiprocessorCount, handle),
             "cuDeviceGetAttribute", error)) {
    std::snprintf(device.failure, sizeof device.failure, "%s", error.message);
    return false;
  }
  device.multiprocessors = multiprocessors;
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

// Where an array lives: its device buffer (0 if none yet) of `bytes`, and
// whether the host copy is current.
struct DeviceCopy {
  CUdeviceptr device = 0;
  int64_t bytes = 0;
  bool host_current = true;
};

// See Note [Device sessions] in docs/internals/c_abi.md.
struct Session {
  std::mutex mutex;
  void* (*alloc)(int64_t) = delta_alloc;
  void (*release)(void*) = delta_free;
  // Library sessions look kernels up in `functions`, not in the host code's
  // slots, which every context of the library shares.
  bool library = false;
  CUdeviceptr error_slot = 0;
  const DeltaCudaCheck* checks = nullptr;
  int64_t check_count = 0;
  std::unordered_map<const void*, CUmodule> modules;
  std::unordered_map<void**, CUfunction> functions;
  std::unordered_map<void*, DeviceCopy> arrays;
  // Device buffers replaced while a call runs (a borrowed input read again
  // with a larger size); freed when the call ends.
  std::vector<CUdeviceptr> retired;
};

Session& ProcessSession() {
  static Session* session = new Session;
  return *session;
}

thread_local Session* current_session = nullptr;

Session& CurrentSession() {
  return current_session != nullptr ? *current_session : ProcessSession();
}

// The device ready and the session's error slot allocated; `session.mutex`
// held.
bool Ready(Session& session, Error& error) {
  if (!EnsureDevice(error)) return false;
  if (session.error_slot != 0) return true;
  const Driver& driver = GetDevice().driver;
  CUdeviceptr slot = 0;
  if (!Check(driver.cuMemAlloc(&slot, 4 * sizeof(int64_t)), "cuMemAlloc",
             error))
    return false;
  if (!Check(driver.cuMemsetD8(slot, 0, 4 * sizeof(int64_t)), "cuMemsetD8",
             error)) {
    driver.cuMemFree(slot);
    return false;
  }
  session.error_slot = slot;
  return true;
}

CUdeviceptr AllocateDevice(int64_t bytes, Error& error) {
  CUdeviceptr pointer = 0;
  // The driver rejects empty allocations; every array gets a distinct one.
  Check(GetDevice().driver.cuMemAlloc(
            &pointer, static_cast<size_t>(bytes > 0 ? bytes : 1)),
        "cuMemAlloc", error);
  return pointer;
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
  }
  CUfunction& function = session.functions[slot];
  if (function == nullptr &&
      !Check(driver.cuModuleGetFunction(&function, module, name),
             "cuModuleGetFunction", error))
    return nullptr;
  return function;
}

// Waits for the device and reads the error slot into `error`; the session's
// mutex held.
void Synchronize(Session& session, Error& error) {
  if (!Ready(session, error)) return;
  const Driver& driver = GetDevice().driver;
  if (!Check(driver.cuCtxSynchronize(), "a kernel", error)) return;
  int64_t slot[4] = {0, 0, 0, 0};
  if (!Check(driver.cuMemcpyDtoH(slot, session.error_slot, sizeof slot),
             "cuMemcpyDtoH", error) ||
      slot[0] == 0)
    return;
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
  if (copy.device != 0) session.retired.push_back(copy.device);
  copy.device = AllocateDevice(bytes, error);
  copy.bytes = bytes;
  if (copy.device != 0 && bytes > 0)
    Check(GetDevice().driver.cuMemcpyHtoD(copy.device, host,
                                          static_cast<size_t>(bytes)),
          "cuMemcpyHtoD", error);
  return copy.device;
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
  Check(GetDevice().driver.cuLaunchKernel(
            function, static_cast<unsigned>(grid_x),
            static_cast<unsigned>(grid_y), 1, static_cast<unsigned>(block_x),
            static_cast<unsigned>(block_y), 1,
            static_cast<unsigned>(shared_bytes), nullptr, args, nullptr),
        "cuLaunchKernel", error);
  Raise(error);
}

int64_t delta_cuda_multiprocessors(void) {
  delta_cuda_init();
  return GetDevice().multiprocessors;
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
      copy.device = AllocateDevice(bytes, error);
      copy.bytes = bytes;
      copy.host_current = false;
    }
  }
  // A library's tracked buffer is freed by its entry after an error.
  Raise(error);
  return host;
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
    auto it = session.arrays.find(host);
    if (it == session.arrays.end() || it->second.host_current) return;
    // A failed kernel check is reported before its result is read.
    Synchronize(session, error);
    if (!error.failed && bytes > 0)
      Check(GetDevice().driver.cuMemcpyDtoH(host, it->second.device,
                                            static_cast<size_t>(bytes)),
            "cuMemcpyDtoH", error);
    if (!error.failed) it->second.host_current = true;
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
      Check(GetDevice().driver.cuMemcpyDtoD(session.arrays[copy].device,
                                            session.arrays[host].device,
                                            static_cast<size_t>(bytes)),
            "cuMemcpyDtoD", error);
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
      if (it->second.device != 0)
        GetDevice().driver.cuMemFree(it->second.device);
      session.arrays.erase(it);
    }
  }
  session.release(host);
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
    const Driver& driver = GetDevice().driver;
    driver.cuCtxSynchronize();
    for (auto& [host, copy] : session->arrays)
      if (copy.device != 0) driver.cuMemFree(copy.device);
    for (CUdeviceptr pointer : session->retired) driver.cuMemFree(pointer);
    for (auto& [ptx, module] : session->modules)
      if (module != nullptr) driver.cuModuleUnload(module);
    if (session->error_slot != 0) driver.cuMemFree(session->error_slot);
  }
  delete session;
}

void delta_cuda_session_enter(void* opaque) {
  current_session = static_cast<Session*>(opaque);
  delta_cuda_init();
}

void delta_cuda_session_leave(void* opaque, int32_t failed) {
  auto* session = static_cast<Session*>(opaque);
  current_session = nullptr;
  Error error;
  std::lock_guard<std::mutex> lock(session->mutex);
  if (!EnsureDevice(error)) {
    session->arrays.clear();
    return;
  }
  const Driver& driver = GetDevice().driver;
  // Kernels of a failed call may still run: wait before freeing.
  driver.cuCtxSynchronize();
  for (auto& [host, copy] : session->arrays)
    if (copy.device != 0) driver.cuMemFree(copy.device);
  session->arrays.clear();
  for (CUdeviceptr pointer : session->retired) driver.cuMemFree(pointer);
  session->retired.clear();
  // The next call starts with a clear error slot.
  if (failed != 0 && session->error_slot != 0)
    driver.cuMemsetD8(session->error_slot, 0, 4 * sizeof(int64_t));
}

}  // extern "C"

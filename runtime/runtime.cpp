// Allocation, run-time error reporting and flushing for generated code.
#include "runtime/runtime.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int64_t kAlignment = 64;

// See Note [Run-time errors] in docs/internals/codegen.md: the handler is
// per thread so that several embedding contexts can run at once.
thread_local DeltaFailHandler fail_handler = nullptr;
thread_local void* fail_user = nullptr;

}  // namespace

extern "C" {

void* delta_alloc(int64_t bytes) {
  if (bytes < 0) delta_fail(nullptr, 0, 0, "negative allocation size");
  // aligned_alloc needs a multiple of the alignment; 0 becomes one line so
  // that every array has a distinct, freeable pointer.
  int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* pointer = std::aligned_alloc(kAlignment, static_cast<size_t>(rounded));
  if (pointer == nullptr)
    delta_fail(nullptr, 0, 0, "out of memory allocating an array");
  return pointer;
}

void delta_free(void* pointer) { std::free(pointer); }

void delta_set_fail_handler(DeltaFailHandler handler, void* user) {
  fail_handler = handler;
  fail_user = user;
}

void delta_get_fail_handler(DeltaFailHandler* handler, void** user) {
  *handler = fail_handler;
  *user = fail_user;
}

void delta_fail(const char* file, int line, int column, const char* message) {
  if (fail_handler != nullptr) {
    fail_handler(fail_user, file, line, column, message);
    std::abort();  // a handler must not return
  }
  std::fflush(stdout);
  if (file != nullptr)
    std::fprintf(stderr, "%s:%d:%d: error: %s\n", file, line, column, message);
  else
    std::fprintf(stderr, "error: %s\n", message);
  std::fflush(stderr);
  // _exit, not exit: inside `dlc run` the JIT and LLVM are mid-flight, and
  // their static destructors must not run under the program's feet.
  _exit(1);
}

void delta_fail_format(const char* file, int line, int column,
                       const char* format, int64_t first, int64_t second) {
  char message[512];
  std::snprintf(message, sizeof message, format, static_cast<long long>(first),
                static_cast<long long>(second));
  delta_fail(file, line, column, message);
}

void delta_flush(void) { std::fflush(stdout); }

}  // extern "C"

// Allocation, run-time error reporting and flushing for generated code.
#include "runtime/runtime.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "runtime/format.h"

// Weak: only programs with a sharded dim link runtime/distributed.cpp (and
// MPI); for the others they are null.
extern "C" int32_t delta_shard_running(void) __attribute__((weak));
extern "C" void delta_shard_abort(int32_t status) __attribute__((weak));

namespace {

constexpr int64_t kAlignment = 64;

// Note [Block cache]: an array op returns a fresh buffer, and glibc serves
// large ones with mmap, so a loop that makes and drops a 64 MiB array pays
// the kernel's page faults (and zeroing) on every trip. Freed blocks of at
// least kCachedMin bytes are kept instead, up to kCacheSlots blocks and
// kCacheBytes in all, and handed out again to a request they fit within a
// quarter of their size.
constexpr size_t kCachedMin = size_t{128} << 10;
constexpr int kCacheSlots = 256;
constexpr size_t kCacheBytes = size_t{512} << 20;

struct BlockCache {
  std::mutex mutex;
  void* blocks[kCacheSlots] = {};
  size_t sizes[kCacheSlots] = {};
  int count = 0;
  size_t bytes = 0;

  void* Take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    int best = -1;
    for (int i = 0; i < count; ++i)
      if (sizes[i] >= size && sizes[i] - size <= size / 4 &&
          (best < 0 || sizes[i] < sizes[best]))
        best = i;
    if (best < 0) return nullptr;
    void* block = blocks[best];
    Remove(best, 1);
    return block;
  }

  // Keeps `block`, releasing the oldest blocks to make room.
  void Keep(void* block, size_t size) {
    if (size > kCacheBytes) {
      std::free(block);
      return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    int evict = 0;
    size_t kept = bytes;
    while (count - evict == kCacheSlots || kept + size > kCacheBytes)
      kept -= sizes[evict++];
    for (int i = 0; i < evict; ++i) std::free(blocks[i]);
    Remove(0, evict);
    blocks[count] = block;
    sizes[count] = size;
    bytes += size;
    ++count;
  }

  // Drops `n` entries from `first` on, keeping the rest in age order (the
  // oldest first, evicted first).
  void Remove(int first, int n) {
    for (int i = first; i < first + n; ++i) bytes -= sizes[i];
    for (int i = first; i + n < count; ++i) {
      blocks[i] = blocks[i + n];
      sizes[i] = sizes[i + n];
    }
    count -= n;
  }
};

// Small arrays (loop state, a row per iteration) come and go at a high
// rate in sequential loops; glibc's aligned allocation of them costs more
// than the loop body. Each thread keeps up to kDepth freed blocks per size
// class (multiples of kGrain bytes below kMax), a block in the class of the
// whole grains its usable size covers, and (if kBytes is not 0) at most
// kBytes in all.
template <size_t kGrain, size_t kMax, int kDepth, size_t kBytes>
struct SizeClassCache {
  static constexpr size_t kClasses = kMax / kGrain;
  void* blocks[kClasses][kDepth];
  int counts[kClasses] = {};
  size_t bytes = 0;

  ~SizeClassCache() {
    for (size_t c = 0; c < kClasses; ++c)
      for (int i = 0; i < counts[c]; ++i) std::free(blocks[c][i]);
  }
  // `size` is a multiple of kGrain.
  void* Take(size_t size) {
    size_t c = size / kGrain;
    if (counts[c] == 0) return nullptr;
    if constexpr (kBytes != 0) bytes -= c * kGrain;
    return blocks[c][--counts[c]];
  }
  bool Keep(void* block, size_t usable) {
    size_t c = usable / kGrain;
    if (c >= kClasses || counts[c] == kDepth) return false;
    if constexpr (kBytes != 0) {
      if (bytes + c * kGrain > kBytes) return false;
      bytes += c * kGrain;
    }
    blocks[c][counts[c]++] = block;
    return true;
  }
};

constexpr size_t kSmallMax = 4096;
thread_local SizeClassCache<kAlignment, kSmallMax, 32, 0> small_cache;
// Note [Mid-size blocks]: arrays of 4 to 128 KiB (a 10 000-element row of
// a loop's state or temporaries) are below glibc's mmap threshold, so it
// serves them from the top of its heap, and frees that leave more than
// 128 KiB free there give it back to the kernel (brk): a loop making and
// dropping a few such arrays per trip then page-faults them in on every
// trip (GradBench ode's gradient, n = 10 000: a thousand brk calls a call,
// 3x its time). Such blocks are allocated in whole pages and each thread
// keeps up to 8 per size class, 16 MiB in all.
constexpr size_t kPage = 4096;
thread_local SizeClassCache<kPage, kCachedMin, 8, size_t{16} << 20> mid_cache;

BlockCache& Cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: see _exit
  return *cache;
}

// See Note [Run-time errors] in docs/internals/codegen.md: the handler is
// per thread so that several embedding contexts can run at once.
thread_local DeltaFailHandler fail_handler = nullptr;
// delta_set_location's: where the calling thread is in the program.
thread_local const char* location_file = nullptr;
thread_local int32_t location_line = 0;
thread_local int32_t location_column = 0;
thread_local const char* location_chain = nullptr;
thread_local void* fail_user = nullptr;

// delta_enter_call's: the calls running on this thread, a ring of the
// innermost kMaxCallFrames (call k in call_frames[k % kMaxCallFrames]).
struct CallFrame {
  const char* callee;
  const char* call_site;
};
constexpr int32_t kMaxCallFrames = 64;
thread_local CallFrame call_frames[kMaxCallFrames];
thread_local int32_t call_depth = 0;

// The chain of calls of an error at FILE:LINE:COLUMN (Note [Call chains]
// in compiler/ir/ir.cpp): the inlined calls' `chain` (may be null), then
// the calls running on this thread, innermost first.
void PrintCallChain(const char* file, int line, int column, const char* chain) {
  if (chain != nullptr) std::fputs(chain, stderr);
  if (call_depth <= 0) return;
  int32_t innermost = call_depth - 1;
  int32_t outermost = std::max(0, call_depth - kMaxCallFrames);
  if (chain == nullptr)
    std::fprintf(stderr, "  in %s at %s:%d:%d\n",
                 call_frames[innermost % kMaxCallFrames].callee, file, line,
                 column);
  for (int32_t k = innermost; k >= outermost; --k)
    std::fputs(call_frames[k % kMaxCallFrames].call_site, stderr);
  if (outermost > 0)
    std::fprintf(stderr, "  (and %d outer calls)\n", outermost);
}

}  // namespace

extern "C" {

void* delta_try_alloc(int64_t bytes) {
  if (bytes < 0) return nullptr;
  // aligned_alloc needs a multiple of the alignment; 0 becomes one line so
  // that every array has a distinct, freeable pointer.
  int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  auto size = static_cast<size_t>(rounded);
  if (size < kSmallMax) {
    if (void* block = small_cache.Take(size)) return block;
  } else {
    // Whole pages, so that a mid-size block lands in the class it is taken
    // from (this may make it a large one).
    if (size < kCachedMin) size = (size + kPage - 1) / kPage * kPage;
    void* block = size < kCachedMin ? mid_cache.Take(size) : Cache().Take(size);
    if (block != nullptr) return block;
  }
  return std::aligned_alloc(kAlignment, size);
}

void* delta_alloc(int64_t bytes) {
  if (bytes < 0) delta_fail(nullptr, 0, 0, "negative allocation size");
  void* pointer = delta_try_alloc(bytes);
  if (pointer == nullptr)
    delta_fail(nullptr, 0, 0, "out of memory allocating an array");
  return pointer;
}

void delta_free(void* pointer) {
  if (pointer == nullptr) return;
  size_t size = malloc_usable_size(pointer);
  if (size >= kCachedMin)
    Cache().Keep(pointer, size);
  else if (!(size < kSmallMax ? small_cache.Keep(pointer, size)
                              : mid_cache.Keep(pointer, size)))
    std::free(pointer);
}

void delta_set_fail_handler(DeltaFailHandler handler, void* user) {
  fail_handler = handler;
  fail_user = user;
}

void delta_get_fail_handler(DeltaFailHandler* handler, void** user) {
  *handler = fail_handler;
  *user = fail_user;
}

void delta_set_location(const char* file, int32_t line, int32_t column,
                        const char* chain) {
  location_file = file;
  location_line = line;
  location_column = column;
  location_chain = chain;
}

void delta_enter_call(const char* callee, const char* call_site) {
  call_frames[call_depth % kMaxCallFrames] = {callee, call_site};
  ++call_depth;
}

void delta_leave_call(void) { --call_depth; }

int32_t delta_call_depth(void) { return call_depth; }

void delta_set_call_depth(int32_t depth) { call_depth = depth; }

void delta_fail(const char* file, int line, int column, const char* message) {
  if (file == nullptr && location_file != nullptr) {
    file = location_file;
    line = location_line;
    column = location_column;
  }
  // The chain of calls belongs to the thread's location only.
  bool at_location = file != nullptr && location_file != nullptr &&
                     std::strcmp(file, location_file) == 0 &&
                     line == location_line && column == location_column;
  const char* chain = at_location ? location_chain : nullptr;
  // The thread pool's workers and embedding contexts unwind through their
  // handler (context.cpp stops a sharded run itself).
  if (fail_handler != nullptr) {
    fail_handler(fail_user, file, line, column, message);
    std::abort();  // a handler must not return
  }
  std::fflush(stdout);
  if (file != nullptr) {
    std::fprintf(stderr, "%s:%d:%d: error: %s\n", file, line, column, message);
    std::string excerpt = delta::runtime::SourceExcerpt(file, line, column);
    std::fputs(excerpt.c_str(), stderr);
    PrintCallChain(file, line, column, chain);
  } else
    std::fprintf(stderr, "error: %s\n", message);
  std::fflush(stderr);
  // A process of a sharded run takes the others down with it, or they
  // would wait forever in their next collective.
  if (delta_shard_running != nullptr && delta_shard_running())
    delta_shard_abort(1);
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

// The runtime's thread pool: delta_parallel_for splits a range into chunks
// that the calling thread and the workers take from a shared counter.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/runtime.h"

namespace {

// True on pool workers and on a thread running a parallel loop, so that a
// parallel_for nested in a body runs inline instead of deadlocking.
thread_local bool in_parallel_region = false;
// Set by delta_set_serial: this thread runs its loops itself.
thread_local bool serial_thread = false;

// See Note [Errors in parallel loops] in docs/internals/codegen.md: a chunk
// runs under its own fail handler, which records the first error and jumps
// back to the pool; the calling thread reports it once every chunk is done.
struct LoopError {
  std::mutex mutex;
  bool failed = false;
  const char* file = nullptr;
  int line = 0;
  int column = 0;
  char message[512];
};

struct ChunkGuard {
  std::jmp_buf jump;
  LoopError* error;
};

[[noreturn]] void OnChunkFail(void* user, const char* file, int line,
                              int column, const char* message) {
  auto* guard = static_cast<ChunkGuard*>(user);
  LoopError& error = *guard->error;
  {
    std::lock_guard<std::mutex> lock(error.mutex);
    if (!error.failed) {
      error.failed = true;
      error.file = file;  // a string constant of the generated code
      error.line = line;
      error.column = column;
      std::snprintf(error.message, sizeof error.message, "%s", message);
    }
  }
  std::longjmp(guard->jump, 1);
}

// Runs one chunk; false if it failed. setjmp lives in this frame, which
// holds no C++ objects, so the jump skips only generated frames.
bool RunChunk(DeltaParallelBody body, void* ctx, int64_t begin, int64_t end,
              LoopError& error) {
  ChunkGuard guard;
  guard.error = &error;
  DeltaFailHandler saved_handler;
  void* saved_user;
  delta_get_fail_handler(&saved_handler, &saved_user);
  delta_set_fail_handler(OnChunkFail, &guard);
  bool ok = setjmp(guard.jump) == 0;
  if (ok) body(ctx, begin, end);
  delta_set_fail_handler(saved_handler, saved_user);
  return ok;
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void Run(int64_t n, DeltaParallelBody body, void* ctx) {
    // One loop at a time; a second caller (another embedding context's
    // thread) runs its loop inline rather than waiting.
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) {
      RunInline(n, body, ctx);
      return;
    }
    int64_t chunks = std::min<int64_t>(n, 4 * static_cast<int64_t>(size()));
    LoopError error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = body;
      ctx_ = ctx;
      n_ = n;
      chunks_ = chunks;
      error_ = &error;
      failed_.store(false);
      next_.store(0);
      pending_.store(chunks);
      ++generation_;
    }
    wake_.notify_all();
    in_parallel_region = true;
    TakeChunks();
    in_parallel_region = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_.load() == 0; });
    }
    busy.unlock();
    // Every chunk has stopped using `ctx`: report on the calling thread,
    // through its own handler (an embedding context's, say).
    if (error.failed)
      delta_fail(error.file, error.line, error.column, error.message);
  }

  static void RunInline(int64_t n, DeltaParallelBody body, void* ctx) {
    bool was = in_parallel_region;
    in_parallel_region = true;
    body(ctx, 0, n);
    in_parallel_region = was;
  }

 private:
  void Work() {
    in_parallel_region = true;
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
      }
      TakeChunks();
    }
  }

  void TakeChunks() {
    for (;;) {
      int64_t chunk = next_.fetch_add(1);
      if (chunk >= chunks_) return;
      int64_t begin = n_ * chunk / chunks_;
      int64_t end = n_ * (chunk + 1) / chunks_;
      // After a failure the remaining chunks are skipped.
      if (!failed_.load(std::memory_order_relaxed) &&
          !RunChunk(body_, ctx_, begin, end, *error_))
        failed_.store(true, std::memory_order_relaxed);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_all();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  DeltaParallelBody body_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int64_t chunks_ = 0;
  LoopError* error_ = nullptr;
  std::atomic<bool> failed_{false};
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> pending_{0};
};

int ThreadCount() {
  if (const char* text = std::getenv("DELTA_NUM_THREADS")) {
    int threads = std::atoi(text);
    if (threads > 0) return threads;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool& Pool() {
  static ThreadPool pool(ThreadCount());
  return pool;
}

}  // namespace

extern "C" {

void delta_parallel_for(int64_t n, DeltaParallelBody body, void* ctx) {
  if (n <= 0) return;
  if (in_parallel_region || serial_thread || n == 1) {
    ThreadPool::RunInline(n, body, ctx);
    return;
  }
  ThreadPool& pool = Pool();
  if (pool.size() == 1) {
    ThreadPool::RunInline(n, body, ctx);
    return;
  }
  pool.Run(n, body, ctx);
}

int32_t delta_num_threads(void) { return Pool().size(); }

void delta_set_serial(int32_t serial) { serial_thread = serial != 0; }

}  // extern "C"

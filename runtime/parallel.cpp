// The runtime's thread pool: delta_parallel_for splits a range into chunks
// that the calling thread and the workers take from a shared counter.
#include <algorithm>
#include <atomic>
#include <chrono>
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

// Note [Spinning before sleeping]: a worker that finishes a loop, and the
// caller waiting for the last chunk, first poll for a while before they
// sleep on a condition variable. Code made of many short parallel loops
// (BA's Jacobian at 31,843 observations: eight loops of 50-400 us) paid a
// futex wake-up and a context switch per loop and thread; OpenMP runtimes
// spin for the same reason. The time is bounded (kSpin), so a thread that
// has nothing to do stops using its core soon after.
constexpr std::chrono::microseconds kSpin{100};

// Polls `ready` until it is true or kSpin has passed; whether it is true.
template <typename Ready>
bool SpinUntil(Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
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

// Note [Pool jobs]: each parallel loop is a Job on the calling thread's
// stack. A worker joins it under the pool's mutex and leaves it under the
// mutex again, and the caller returns only when every chunk is done and
// no worker is still in the job. So a worker that wakes late never takes
// a chunk of, or counts down, the next loop: with counters shared between
// loops it could, and a loop then waited forever for a count that had
// skipped zero (GMM's Jacobian through the C ABI hung in its GEMM).
struct Job {
  DeltaParallelBody body = nullptr;
  void* ctx = nullptr;
  int64_t n = 0;
  int64_t chunks = 0;
  LoopError error;
  std::atomic<bool> failed{false};
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> pending{0};
  // Workers in the job: they join and leave under the pool's mutex.
  std::atomic<int> workers{0};
};

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
    Job job;
    job.body = body;
    job.ctx = ctx;
    job.n = n;
    job.chunks = chunks;
    job.pending.store(chunks);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    in_parallel_region = true;
    TakeChunks(job);
    in_parallel_region = false;
    SpinUntil(
        [&] { return job.pending.load() == 0 && job.workers.load() == 0; });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock,
                 [&] { return job.pending.load() == 0 && job.workers == 0; });
      job_ = nullptr;
    }
    busy.unlock();
    // Every chunk has stopped using `ctx`: report on the calling thread,
    // through its own handler (an embedding context's, say).
    if (job.error.failed)
      delta_fail(job.error.file, job.error.line, job.error.column,
                 job.error.message);
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
      Job* job = nullptr;
      SpinUntil(
          [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        job = job_;
        if (job == nullptr) continue;  // that loop has already finished
        ++job->workers;
      }
      TakeChunks(*job);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --job->workers;
      }
      done_.notify_all();
    }
  }

  static void TakeChunks(Job& job) {
    for (;;) {
      int64_t chunk = job.next.fetch_add(1);
      if (chunk >= job.chunks) return;
      int64_t begin = job.n * chunk / job.chunks;
      int64_t end = job.n * (chunk + 1) / job.chunks;
      // After a failure the remaining chunks are skipped.
      if (!job.failed.load(std::memory_order_relaxed) &&
          !RunChunk(job.body, job.ctx, begin, end, job.error))
        job.failed.store(true, std::memory_order_relaxed);
      job.pending.fetch_sub(1);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stopping_ = false;
  // Changed under mutex_; read without it by spinning workers.
  std::atomic<uint64_t> generation_{0};
  Job* job_ = nullptr;  // the loop being run, if any
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

// The runtime's thread pool: delta_parallel_for splits a range into chunks
// that the calling thread and the workers take from a shared counter.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/runtime.h"

namespace {

// True on pool workers and on a thread running a parallel loop, so that a
// parallel_for nested in a body runs inline instead of deadlocking.
thread_local bool in_parallel_region = false;

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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = body;
      ctx_ = ctx;
      n_ = n;
      chunks_ = chunks;
      next_.store(0);
      pending_.store(chunks);
      ++generation_;
    }
    wake_.notify_all();
    in_parallel_region = true;
    TakeChunks();
    in_parallel_region = false;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_.load() == 0; });
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
      body_(ctx_, begin, end);
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
  if (in_parallel_region || n == 1) {
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

}  // extern "C"

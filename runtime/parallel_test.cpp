// The thread pool behind delta_parallel_for: every index of every loop runs
// exactly once, however the loops follow each other (Note [Pool jobs] in
// parallel.cpp). ctest runs this with DELTA_NUM_THREADS=2.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>

#include "runtime/runtime.h"

namespace {

void CountIndices(void* ctx, int64_t begin, int64_t end) {
  auto* counts = static_cast<std::atomic<int>*>(ctx);
  for (int64_t i = begin; i < end; ++i) counts[i].fetch_add(1);
}

}  // namespace

TEST_CASE("back-to-back parallel loops run each index once") {
  // Loops of varying length, one right after another: a worker that wakes
  // late must not take chunks of, or count down, the next loop (a lost
  // count used to hang the caller).
  REQUIRE(delta_num_threads() == 2);
  std::atomic<int> counts[16];
  for (int round = 0; round < 2000000; ++round) {
    int64_t n = 2 + round % 13;
    for (int64_t i = 0; i < n; ++i) counts[i].store(0);
    delta_parallel_for(n, CountIndices, counts);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += counts[i].load() != 1;
    if (wrong != 0) {
      CAPTURE(round);
      CHECK(wrong == 0);
      break;
    }
  }
}

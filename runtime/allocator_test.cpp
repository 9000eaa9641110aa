// Unit tests of the runtime's allocator (runtime.cpp): freed blocks are
// handed out again from its caches (Note [Block cache], Note [Mid-size
// blocks]).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/runtime.h"

TEST_CASE("a freed block is handed out again to a request of its size") {
  // Small (loop state), mid-size (a row of 10 000 doubles: glibc would
  // serve it from the top of its heap and trim it away on free) and large.
  for (int64_t bytes : {int64_t{200}, int64_t{80000}, int64_t{1} << 20}) {
    CAPTURE(bytes);
    void* first = delta_alloc(bytes);
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    delta_free(first);
    void* again = delta_alloc(bytes);
    CHECK(again == first);
    delta_free(again);
  }
}

TEST_CASE("a loop's mid-size arrays come from the cache on every trip") {
  // Three rows made and dropped per trip, as a loop body does.
  std::vector<void*> first_trip;
  for (int trip = 0; trip < 4; ++trip) {
    std::vector<void*> rows;
    for (int row = 0; row < 3; ++row) rows.push_back(delta_alloc(80000));
    if (trip == 0) first_trip = rows;
    for (void* row : rows) {
      CHECK(std::find(first_trip.begin(), first_trip.end(), row) !=
            first_trip.end());
      delta_free(row);
    }
  }
}

TEST_CASE("a mid-size block serves smaller requests of its size class") {
  void* block = delta_alloc(81920);
  delta_free(block);
  void* smaller = delta_alloc(77825);  // rounds up to the same 20 pages
  CHECK(smaller == block);
  delta_free(smaller);
}

TEST_CASE("a request just under the large size is served as a large block") {
  // 128 KiB - 4000 bytes round up to whole pages, 128 KiB: the block cache's,
  // while the mid-size cache holds a block (its class 32 does not exist).
  void* mid = delta_alloc(80000);
  delta_free(mid);
  for (int trip = 0; trip < 3; ++trip) {
    void* block = delta_alloc((int64_t{128} << 10) - 4000);
    REQUIRE(block != nullptr);
    static_cast<char*>(block)[0] = 1;
    static_cast<char*>(block)[(128 << 10) - 4001] = 1;
    delta_free(block);
  }
}

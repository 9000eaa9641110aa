/* Nanoseconds per call of a scalar library entry through the C ABI
   (run.sh builds and runs it): the median of 7 rounds of 2 million calls
   on one context, on the calling thread. */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "square.h"

int main(void) {
  square_options options = {1};
  square_context* ctx = square_context_create(&options);
  if (ctx == NULL) return 1;
  enum { kCalls = 2000000, kRounds = 7 };
  double x = 1.0001, y = 0.0, sum = 0.0, rounds[kRounds];
  for (int r = 0; r < kRounds; ++r) {
    double start = BenchNow();
    for (int i = 0; i < kCalls; ++i) {
      if (square_square(ctx, x, &y) != SQUARE_OK) return 1;
      sum += y;
    }
    rounds[r] = (BenchNow() - start) / kCalls * 1e9;
  }
  qsort(rounds, kRounds, sizeof rounds[0], BenchCompare);
  printf("%.1f ns per call (median of %d rounds; checksum %.4f)\n",
         rounds[kRounds / 2], kRounds, sum);
  square_context_destroy(ctx);
  return 0;
}

/* Calls library_sizes.dl's entries with sizes whose products pass 2^40
   elements or wrap in 64 bits: each call returns an error status and the
   process goes on (library_sizes.dl). */
#include <stdint.h>
#include <stdio.h>

#include "library_sizes.h"

int main(void) {
  library_sizes_context* ctx = library_sizes_context_create(NULL);
  float r = 0;
  /* n * n = 2^64 wraps to 0: the array y is refused before it exists. */
  library_sizes_status s = library_sizes_total(ctx, INT64_C(1) << 32, 1.0f, &r);
  printf("total 2^32: status %d: %s\n", (int)s, library_sizes_last_error(ctx));
  s = library_sizes_total(ctx, 3, 2.0f, &r);
  printf("total 3: status %d: %g\n", (int)s, r);
  /* A result beyond the limit is refused at the boundary. */
  float small[4];
  int64_t huge = (INT64_C(1) << 62) + 1;
  s = library_sizes_fill(ctx, huge, 1.0f, small, huge);
  printf("fill 2^62+1: status %d: %s\n", (int)s, library_sizes_last_error(ctx));
  int64_t sizes[1];
  s = library_sizes_fill_result_sizes(huge, sizes);
  printf("fill_result_sizes 2^62+1: status %d, size %lld\n", (int)s,
         (long long)sizes[0]);
  s = library_sizes_fill_result_sizes(4, sizes);
  printf("fill_result_sizes 4: status %d, size %lld\n", (int)s,
         (long long)sizes[0]);
  library_sizes_context_destroy(ctx);
  return 0;
}

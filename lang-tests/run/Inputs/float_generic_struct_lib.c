/* Calls float_generic_struct_lib.dl's entries: the header declares one C
   struct of floats for nn.Dense[inp, hid] and one of doubles for
   nn.Dense[f64, inp, hid] (float_generic_struct_library.dl). */
#include <stdio.h>

#include "float_generic_struct_lib.h"

int main(void) {
  float_generic_struct_lib_context* ctx =
      float_generic_struct_lib_context_create(NULL);
  double w64[6] = {1, 2, 3, 4, 5, 6}, b64[2] = {0.5, -0.5}, x64[3] = {1, 0.1, 0.01};
  float w32[6] = {1, 2, 3, 4, 5, 6}, b32[2] = {0.5f, -0.5f}, x32[3] = {1, 0.1f, 0.01f};
  float_generic_struct_lib_Dense_2 l64 = {w64, {3, 2}, b64, {2}};
  float_generic_struct_lib_Dense l32 = {w32, {3, 2}, b32, {2}};
  double y64[2];
  float y32[2];
  int s = float_generic_struct_lib_apply64(ctx, &l64, x64, 3, y64, 2);
  printf("apply64: %d %.17g %.17g\n", s, y64[0], y64[1]);
  s = float_generic_struct_lib_apply32(ctx, &l32, x32, 3, y32, 2);
  printf("apply32: %d %.9g %.9g\n", s, y32[0], y32[1]);
  double w2[6], b2[2];
  float_generic_struct_lib_Dense_2 out = {w2, {3, 2}, b2, {2}};
  s = float_generic_struct_lib_step64(ctx, &l64, x64, 3, &out);
  printf("step64: %d %.17g %.17g %.17g\n", s, w2[0], w2[5], b2[1]);
  float_generic_struct_lib_context_destroy(ctx);
  return 0;
}

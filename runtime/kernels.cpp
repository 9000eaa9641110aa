// The matrix product of contractions: packed panels, a register-tiled
// micro-kernel in the widest vectors the CPU has (chosen at run time), and
// the thread pool over row blocks. See Note [GEMM kernel] in
// docs/performance.md.
#include "runtime/kernels.h"

#include <xmmintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "runtime/runtime.h"

// Products and sums stay separate roundings unless FMA is asked for
// explicitly (__builtin_elementwise_fma): that is what keeps the exact mode
// bitwise equal to the naive loop.
#pragma clang fp contract(off)

namespace {

constexpr int64_t kBlockK = 256;   // depth of a packed panel (L1: a B strip)
constexpr int64_t kBlockN = 1024;  // columns of packed B (L2/L3)
constexpr int64_t kBlockM = 96;    // rows of packed A per task (L2)
// Columns per thread from which a parallel product splits by columns
// (Note [Column split]).
constexpr int64_t kSplitColumnsMin = 256;
// Up to this many rows and columns of C, a product whose operands are
// contiguous in k runs as dot products (Note [Dot products]); at 32 (GMM
// d32) the packed kernel is faster again.
constexpr int64_t kDotMaxSide = 24;
// Up to this many rows of C, B is not packed (Note [B in place]).
constexpr int64_t kInPlaceMaxRows = 24;
// Below this many multiply-adds the pool's wake-up costs more than it saves.
constexpr double kParallelWork = 1 << 20;

template <typename T>
struct Problem {
  int64_t m, n, k;
  const T* a;
  int64_t a_m, a_k;
  const T* b;
  int64_t b_k, b_n;
  T* c;
  int64_t c_m, c_n;
  bool fma;
};

// One task: rows [row_begin, row_end) of C for the packed B strip of
// columns [col, col + cols) and depths [depth, depth + depth_size).
template <typename T>
struct Block {
  const Problem<T>* problem;
  const T* packed_b;
  int64_t col, cols, depth, depth_size, block_m;
  bool in_place_b;  // Note [B in place]
  bool in_place_a;  // Note [A in place]
};

// Where packed panel `panel` of a strip starts: panels of kc x nr
// elements, each followed by one cache line of padding (Note [Panel
// padding]). Without it the panels are a multiple of 4 KiB apart (kc 256
// x 16 floats), and packing depth by depth writes each depth's line of
// every panel into the same L1 and L2 sets.
template <typename T>
constexpr int64_t PanelOffset(int64_t panel, int64_t kc, int64_t nr) {
  return panel * (kc * nr + 64 / static_cast<int64_t>(sizeof(T)));
}

// B's columns [col, col + cols) at depths [depth, depth + kc), to be
// packed into panels of nr columns.
template <typename T>
struct Strip {
  const Problem<T>* problem;
  T* packed_b;
  int64_t col, cols, depth, kc, nr;
  bool in_place_b;  // only the last, partial panel is packed
};

// Four columns of a B contiguous in k (`in`, columns b_n apart) into a
// panel of nr columns: blocks of 4 x 4 transposed in SSE registers.
void PackFourColumns(const float* in, int64_t b_n, int64_t kc, float* out,
                     int64_t nr) {
  int64_t q = 0;
  for (; q + 4 <= kc; q += 4) {
    __m128 r0 = _mm_loadu_ps(in + q);
    __m128 r1 = _mm_loadu_ps(in + b_n + q);
    __m128 r2 = _mm_loadu_ps(in + 2 * b_n + q);
    __m128 r3 = _mm_loadu_ps(in + 3 * b_n + q);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(out + q * nr, r0);
    _mm_storeu_ps(out + (q + 1) * nr, r1);
    _mm_storeu_ps(out + (q + 2) * nr, r2);
    _mm_storeu_ps(out + (q + 3) * nr, r3);
  }
  for (; q < kc; ++q)
    for (int t = 0; t < 4; ++t) out[q * nr + t] = in[t * b_n + q];
}

// Full panels [begin, end) of a strip of a B with contiguous rows (b_n
// is 1), depth by depth: each depth's part of the strip is read in order,
// one stream that the prefetcher follows. Panel by panel, each panel read
// kNr elements from each of kc rows, rows a page apart for a 1024-wide
// weight: every read missed, none was prefetched, and packing was 20% of
// the Transformer's forward pass with AVX2 (Note [B packing order]). A
// panel row is a copy of fixed size (kNr elements), a few vector moves; a
// call of memcpy per row was 8% of that forward pass with AVX-512.
template <typename T, int kNr>
void PackFullPanelsByDepth(const Strip<T>& s, int64_t begin, int64_t end) {
  const Problem<T>& p = *s.problem;
  for (int64_t q = 0; q < s.kc; ++q) {
    const T* in = p.b + (s.depth + q) * p.b_k + s.col;
    for (int64_t panel = begin; panel < end; ++panel)
      std::memcpy(s.packed_b + PanelOffset<T>(panel, s.kc, kNr) + q * kNr,
                  in + panel * kNr, kNr * sizeof(T));
  }
}

// Packs panels [begin, end) of a strip (zero-padded past its columns).
template <typename T>
void PackPanels(void* ctx, int64_t begin, int64_t end) {
  const Strip<T>& s = *static_cast<const Strip<T>*>(ctx);
  const Problem<T>& p = *s.problem;
  int64_t full_end = std::min(end, s.cols / s.nr);
  if (p.b_n == 1 && !s.in_place_b && begin < full_end) {
    switch (s.nr) {
      case 32:
        PackFullPanelsByDepth<T, 32>(s, begin, full_end);
        break;
      case 16:
        PackFullPanelsByDepth<T, 16>(s, begin, full_end);
        break;
      case 8:
        PackFullPanelsByDepth<T, 8>(s, begin, full_end);
        break;
      default:
        PackFullPanelsByDepth<T, 4>(s, begin, full_end);
        break;
    }
    begin = full_end;
  }
  for (int64_t panel = begin; panel < end; ++panel) {
    int64_t j0 = panel * s.nr;
    T* out = s.packed_b + PanelOffset<T>(panel, s.kc, s.nr);
    // The columns past the strip's end are zeros; no test per element.
    int64_t valid = std::min(s.nr, s.cols - j0);
    if (s.in_place_b && valid == s.nr) continue;
    if (std::is_same_v<T, float> && p.b_k == 1 && p.b_n != 1) {
      // B contiguous in k (a transposed weight), f32: four columns at a
      // time, transposed in registers. Row by row read nr columns b_n
      // apart for each depth, addresses that share one or two L1 sets
      // when b_n is 512 or 2048 floats, so every line was evicted before
      // its next element was read: the Transformer's W2 (512 x 2048)
      // packed in 0.60 ms, 0.11 so. (Column after column in scalars took
      // 0.28 ms, and made GMM's f64 products ~10% slower than row by row.)
      int64_t j = 0;
      if constexpr (std::is_same_v<T, float>)
        for (; j + 4 <= valid; j += 4)
          PackFourColumns(p.b + s.depth + (s.col + j0 + j) * p.b_n, p.b_n, s.kc,
                          out + j, s.nr);
      for (; j < valid; ++j) {
        const T* in = p.b + s.depth + (s.col + j0 + j) * p.b_n;
        for (int64_t q = 0; q < s.kc; ++q) out[q * s.nr + j] = in[q];
      }
      for (int64_t q = 0; q < s.kc; ++q)
        for (int64_t pad = valid; pad < s.nr; ++pad) out[q * s.nr + pad] = T(0);
      continue;
    }
    for (int64_t q = 0; q < s.kc; ++q) {
      const T* in = p.b + (s.depth + q) * p.b_k + (s.col + j0) * p.b_n;
      T* row = out + q * s.nr;
      if (p.b_n == 1) {
        // Only a last, partial panel: full ones were packed depth by depth
        // above, or are read in place.
        std::memcpy(row, in, valid * sizeof(T));
      } else {
        for (int64_t j = 0; j < valid; ++j) row[j] = in[j * p.b_n];
      }
      for (int64_t j = valid; j < s.nr; ++j) row[j] = T(0);
    }
  }
}

// pa is a packed panel of A (element (r, q) at pa[q * kMr + r]) or, with
// kAInPlace, A where it lies (at pa[q * a_q + r * a_r]: Note [A in place]).
template <typename T, int kW, int kMr, int kNv, bool kFma, bool kAInPlace>
[[gnu::always_inline]] inline void MicroKernel(
    const Problem<T>& p, int64_t kc, const T* pa, int64_t a_q, int64_t a_r,
    const T* pb, int64_t ldb, int64_t row, int64_t rows, int64_t col,
    int64_t cols, bool first, const T* next_c) {
  using V [[gnu::vector_size(kW * sizeof(T)), gnu::aligned(alignof(T))]] = T;
  constexpr int kNr = kW * kNv;
  V acc[kMr][kNv];
  T tile[kMr][kNr];
  bool direct = p.c_n == 1 && rows == kMr && cols == kNr;
  // Note [C prefetch].
  if (next_c != nullptr)
    for (int r = 0; r < kMr; ++r)
      for (int v = 0; v < kNv; ++v)
        __builtin_prefetch(next_c + r * p.c_m + v * kW, 1, 3);
  if (first) {
    for (int r = 0; r < kMr; ++r)
      for (int v = 0; v < kNv; ++v) acc[r][v] = V{};
  } else if (direct) {
    for (int r = 0; r < kMr; ++r)
      for (int v = 0; v < kNv; ++v)
        std::memcpy(&acc[r][v], p.c + (row + r) * p.c_m + col + v * kW,
                    sizeof(V));
  } else {
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j)
        tile[r][j] = r < rows && j < cols
                         ? p.c[(row + r) * p.c_m + (col + j) * p.c_n]
                         : T(0);
    for (int r = 0; r < kMr; ++r)
      for (int v = 0; v < kNv; ++v)
        std::memcpy(&acc[r][v], &tile[r][v * kW], sizeof(V));
  }
  // Four depths per trip: the Transformer block's gradient and forward
  // ran 1.5-7% faster with AVX2 (same-process alternation, 1 thread); two
  // were as fast, eight 1.6x slower (Note [Micro-kernel unrolling] in
  // docs/performance.md). Each accumulator's sum keeps its order.
#pragma clang loop unroll_count(4)
  for (int64_t q = 0; q < kc; ++q) {
    V b[kNv];
    for (int v = 0; v < kNv; ++v)
      std::memcpy(&b[v], pb + q * ldb + v * kW, sizeof(V));
    for (int r = 0; r < kMr; ++r) {
      V a;
      T x = kAInPlace ? pa[q * a_q + r * a_r] : pa[q * kMr + r];
      for (int lane = 0; lane < kW; ++lane) a[lane] = x;
      for (int v = 0; v < kNv; ++v) {
        if constexpr (kFma) {
          acc[r][v] = __builtin_elementwise_fma(a, b[v], acc[r][v]);
        } else {
          V product = a * b[v];
          acc[r][v] = acc[r][v] + product;
        }
      }
    }
  }
  if (direct) {
    for (int r = 0; r < kMr; ++r)
      for (int v = 0; v < kNv; ++v)
        std::memcpy(p.c + (row + r) * p.c_m + col + v * kW, &acc[r][v],
                    sizeof(V));
    return;
  }
  for (int r = 0; r < kMr; ++r)
    for (int v = 0; v < kNv; ++v)
      std::memcpy(&tile[r][v * kW], &acc[r][v], sizeof(V));
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j)
      p.c[(row + r) * p.c_m + (col + j) * p.c_n] = tile[r][j];
}

// This thread's buffer for packed rows of A, grown as needed and kept:
// a batch of small products (one per batch index, or per block of a
// blocked group) would otherwise allocate and free one per call.
void* PanelScratch(size_t bytes) {
  thread_local struct Buffer {
    void* data = nullptr;
    size_t bytes = 0;
    ~Buffer() { std::free(data); }
  } buffer;
  if (buffer.bytes < bytes) {
    std::free(buffer.data);
    buffer.bytes = (bytes + 63) / 64 * 64;
    buffer.data = std::aligned_alloc(64, buffer.bytes);
  }
  return buffer.data;
}

// Packs rows [row, row + mc) of A at depths [depth, depth + kc) into
// panels of kMr rows, zero-padded past mc. The loops follow A's smaller
// stride: a panel's rows side by side when A is contiguous in k, depth by
// depth when it is contiguous in m. Reading a column-major A row by row
// strides by a whole column per element, and those addresses share a
// handful of L1 sets, so every row of a panel missed again: the MLP's
// forward product (A = w1[feat, hidden], m = hidden) ran at 74 GFLOP/s,
// 94-100 with this. A row-major A is read kMr rows at a time, a few
// elements of each in turn: one row after another left the memory system
// a single stream to fetch (packing was 15% of a 2048 product, 6% so).
template <typename T, int kMr>
void PackRows(const Problem<T>& p, int64_t row, int64_t mc, int64_t depth,
              int64_t kc, T* pa) {
  int64_t panels = (mc + kMr - 1) / kMr;
  if (std::abs(p.a_k) <= std::abs(p.a_m)) {
    for (int64_t panel = 0; panel < panels; ++panel) {
      T* out = pa + panel * kMr * kc;
      int64_t valid = std::min<int64_t>(kMr, mc - panel * kMr);
      // Rows past mc repeat the last valid one, then are zeroed.
      const T* in[kMr];
      for (int r = 0; r < kMr; ++r)
        in[r] = p.a +
                (row + panel * kMr + std::min<int64_t>(r, valid - 1)) * p.a_m +
                depth * p.a_k;
      if (p.a_k == 1) {
        for (int64_t q = 0; q < kc; ++q)
          for (int r = 0; r < kMr; ++r) out[q * kMr + r] = in[r][q];
      } else {
        for (int64_t q = 0; q < kc; ++q)
          for (int r = 0; r < kMr; ++r) out[q * kMr + r] = in[r][q * p.a_k];
      }
      for (int r = valid; r < kMr; ++r)
        for (int64_t q = 0; q < kc; ++q) out[q * kMr + r] = T(0);
    }
    return;
  }
  for (int64_t q = 0; q < kc; ++q) {
    const T* in = p.a + row * p.a_m + (depth + q) * p.a_k;
    for (int64_t panel = 0; panel < panels; ++panel) {
      T* out = pa + panel * kMr * kc + q * kMr;
      int64_t valid = std::min<int64_t>(kMr, mc - panel * kMr);
      if (p.a_m == 1 && valid == kMr) {
        // Contiguous rows: a copy of fixed size (a few vector moves).
        std::memcpy(out, in + panel * kMr, kMr * sizeof(T));
        continue;
      }
      for (int r = 0; r < valid; ++r) out[r] = in[(panel * kMr + r) * p.a_m];
      for (int r = valid; r < kMr; ++r) out[r] = T(0);
    }
  }
}

// A packed panel of A times a panel of B. Note [Short panels]: a short
// last panel (rows < kMr) runs a kernel of 2 or 4 rows, reading the packed
// panel with its stride kMr: a full tile's work for 2 rows was 11% of a
// 32-row product with AVX2's 6-row tiles (the LSTM's per-step products),
// 3% of a 128-row one.
template <typename T, int kW, int kMr, int kNv, bool kFma>
[[gnu::always_inline]] inline void PanelKernel(const Problem<T>& p, int64_t kc,
                                               const T* pa, const T* pb,
                                               int64_t ldb, int64_t row,
                                               int64_t rows, int64_t col,
                                               int64_t cols, bool first,
                                               const T* next_c) {
  if constexpr (kMr > 2)
    if (rows <= 2)
      return MicroKernel<T, kW, 2, kNv, kFma, true>(
          p, kc, pa, kMr, 1, pb, ldb, row, rows, col, cols, first, next_c);
  if constexpr (kMr > 4)
    if (rows <= 4)
      return MicroKernel<T, kW, 4, kNv, kFma, true>(
          p, kc, pa, kMr, 1, pb, ldb, row, rows, col, cols, first, next_c);
  MicroKernel<T, kW, kMr, kNv, kFma, false>(p, kc, pa, 0, 0, pb, ldb, row, rows,
                                            col, cols, first, next_c);
}

// Rows [row_begin, row_end) of C for one packed strip of B: packs A's rows
// block by block and runs the micro-kernel over each block's panels.
template <typename T, int kW, int kMr, int kNv, bool kFma>
[[gnu::always_inline]] inline void MacroKernel(const Block<T>& block,
                                               int64_t row_begin,
                                               int64_t row_end) {
  const Problem<T>& p = *block.problem;
  constexpr int kNr = kW * kNv;
  int64_t kc = block.depth_size;
  bool first = block.depth == 0;
  int64_t panels = (block.block_m + kMr - 1) / kMr;
  T* pa = static_cast<T*>(PanelScratch(panels * kMr * kc * sizeof(T)));
  for (int64_t row = row_begin; row < row_end; row += block.block_m) {
    int64_t mc = std::min(block.block_m, row_end - row);
    // Note [A in place]: only a last, partial panel is packed.
    int64_t full_in_place = block.in_place_a ? mc / kMr * kMr : 0;
    if (full_in_place < mc)
      PackRows<T, kMr>(p, row + full_in_place, mc - full_in_place, block.depth,
                       kc, pa);
    for (int64_t j = 0; j < block.cols; j += kNr) {
      int64_t cols = std::min<int64_t>(kNr, block.cols - j);
      // A full panel of B in place is read from B's rows (b_n is 1).
      bool in_place = block.in_place_b && cols == kNr;
      const T* pb = in_place
                        ? p.b + block.depth * p.b_k + block.col + j
                        : block.packed_b + PanelOffset<T>(j / kNr, kc, kNr);
      int64_t ldb = in_place ? p.b_k : kNr;
      for (int64_t i = 0; i < mc; i += kMr) {
        // Note [C prefetch]: the tile below this one, or the first of the
        // next column panel.
        const T* next_c = nullptr;
        if (p.c_n == 1 && !first) {
          if (i + 2 * kMr <= mc)
            next_c = p.c + (row + i + kMr) * p.c_m + block.col + j;
          else if (j + 2 * kNr <= block.cols)
            next_c = p.c + row * p.c_m + block.col + j + kNr;
        }
        int64_t rows = std::min<int64_t>(kMr, mc - i);
        if (i < full_in_place)
          MicroKernel<T, kW, kMr, kNv, kFma, true>(
              p, kc, p.a + (row + i) * p.a_m + block.depth * p.a_k, p.a_k,
              p.a_m, pb, ldb, row + i, rows, block.col + j, cols, first,
              next_c);
        else
          PanelKernel<T, kW, kMr, kNv, kFma>(
              p, kc, pa + ((i - full_in_place) / kMr) * kMr * kc, pb, ldb,
              row + i, rows, block.col + j, cols, first, next_c);
      }
    }
  }
}

// Note [Dot products]: a product with few rows and columns (at most
// kDotMaxSide each) whose A and B are both contiguous in k is a table of
// dot products: C[i][j] = sum over q of A[i][q] B[j][q]. GMM's adjoint of
// the factor, sum over the 1000 points of dy (x) centred, is 20 x 20 x 1000
// per component at d20; packing its A and B (a transposition each, 40,000
// elements) took longer than its 400,000 multiply-adds. Here
// kTile x kTile pairs accumulate vectors along k, read where they lie, and
// each is summed across its lanes at the end. That reorders each sum, so
// only when FMA is allowed (-O3, which reassociates sums anyway).
template <typename T, int kW, int kTile>
[[gnu::always_inline]] inline void DotProducts(const Problem<T>& p) {
  using V [[gnu::vector_size(kW * sizeof(T)), gnu::aligned(alignof(T))]] = T;
  for (int64_t i0 = 0; i0 < p.m; i0 += kTile) {
    int rows = static_cast<int>(std::min<int64_t>(kTile, p.m - i0));
    for (int64_t j0 = 0; j0 < p.n; j0 += kTile) {
      int cols = static_cast<int>(std::min<int64_t>(kTile, p.n - j0));
      // Rows and columns past the edge repeat the last one (computed,
      // never stored), so that the loop has no test.
      const T* a[kTile];
      const T* b[kTile];
      for (int t = 0; t < kTile; ++t) {
        a[t] = p.a + (i0 + std::min(t, rows - 1)) * p.a_m;
        b[t] = p.b + (j0 + std::min(t, cols - 1)) * p.b_n;
      }
      V acc[kTile][kTile];
      for (int r = 0; r < kTile; ++r)
        for (int c = 0; c < kTile; ++c) acc[r][c] = V{};
      int64_t q = 0;
      for (; q + kW <= p.k; q += kW) {
        V x[kTile], y[kTile];
        for (int t = 0; t < kTile; ++t) {
          std::memcpy(&x[t], a[t] + q, sizeof(V));
          std::memcpy(&y[t], b[t] + q, sizeof(V));
        }
        for (int r = 0; r < kTile; ++r)
          for (int c = 0; c < kTile; ++c)
            acc[r][c] = __builtin_elementwise_fma(x[r], y[c], acc[r][c]);
      }
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
          T sum = T(0);
          for (int lane = 0; lane < kW; ++lane) sum += acc[r][c][lane];
          for (int64_t tail = q; tail < p.k; ++tail)
            sum = __builtin_elementwise_fma(a[r][tail], b[c][tail], sum);
          p.c[(i0 + r) * p.c_m + (j0 + c) * p.c_n] = sum;
        }
    }
  }
}

// The instruction sets the kernel is compiled for; the widest the CPU has
// is chosen once at run time (the runtime itself is built for baseline
// x86-64, executables may run anywhere the runtime does).
#define DELTA_MACRO_KERNEL(name, features, T, W, MR, NV, FMA)                  \
  [[gnu::target(features)]] void name(void* ctx, int64_t begin, int64_t end) { \
    const auto& block = *static_cast<const Block<T>*>(ctx);                    \
    MacroKernel<T, W, MR, NV, FMA>(                                            \
        block, begin * block.block_m,                                          \
        std::min(end * block.block_m, block.problem->m));                      \
  }
#define DELTA_AVX512 "avx512f,avx512vl,avx512bw,avx512dq,fma,avx2"
DELTA_MACRO_KERNEL(F32Avx512, DELTA_AVX512, float, 16, 8, 2, false)
DELTA_MACRO_KERNEL(F32Avx512Fma, DELTA_AVX512, float, 16, 8, 2, true)
DELTA_MACRO_KERNEL(F64Avx512, DELTA_AVX512, double, 8, 6, 2, false)
DELTA_MACRO_KERNEL(F64Avx512Fma, DELTA_AVX512, double, 8, 6, 2, true)
DELTA_MACRO_KERNEL(F32Avx2, "avx2,fma", float, 8, 6, 2, false)
DELTA_MACRO_KERNEL(F32Avx2Fma, "avx2,fma", float, 8, 6, 2, true)
DELTA_MACRO_KERNEL(F64Avx2, "avx2,fma", double, 4, 6, 2, false)
DELTA_MACRO_KERNEL(F64Avx2Fma, "avx2,fma", double, 4, 6, 2, true)
// Baseline x86-64 has no FMA instruction: the FMA flag is a permission,
// not a promise, so SSE2 runs the exact kernel for both.
DELTA_MACRO_KERNEL(F32Sse, "sse2", float, 4, 4, 2, false)
DELTA_MACRO_KERNEL(F64Sse, "sse2", double, 2, 4, 2, false)
#undef DELTA_MACRO_KERNEL
#define DELTA_DOT_KERNEL(name, features, T, W, TILE)         \
  [[gnu::target(features)]] void name(const Problem<T>& p) { \
    DotProducts<T, W, TILE>(p);                              \
  }
DELTA_DOT_KERNEL(F32Avx512Dot, DELTA_AVX512, float, 16, 4)
DELTA_DOT_KERNEL(F64Avx512Dot, DELTA_AVX512, double, 8, 4)
DELTA_DOT_KERNEL(F32Avx2Dot, "avx2,fma", float, 8, 3)
DELTA_DOT_KERNEL(F64Avx2Dot, "avx2,fma", double, 4, 3)
#undef DELTA_DOT_KERNEL
#undef DELTA_AVX512

enum class Isa { Avx512, Avx2, Sse };

Isa HostIsa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (std::getenv("DELTA_GEMM_NO_AVX512") == nullptr &&
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
      return Isa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return Isa::Avx2;
    return Isa::Sse;
  }();
  return isa;
}

// Columns of the micro-kernel's tile for T with `isa`.
template <typename T>
int64_t TileColumns(Isa isa) {
  int64_t bytes = isa == Isa::Avx512 ? 128 : isa == Isa::Avx2 ? 64 : 32;
  return bytes / static_cast<int64_t>(sizeof(T));
}

// Note [B in place]: packing B pays off when each packed panel is read by
// many row panels of A. With a few rows (GMM d10's products are 10 x 1000
// x 10 per component) it costs as much as the multiply-adds, so whole
// panels of a B with contiguous rows are read where they lie.
template <typename T>
bool InPlaceB(const Problem<T>& p) {
  return p.b_n == 1 && p.m <= kInPlaceMaxRows;
}

// Note [A in place]: a packed panel of A saves nothing over A's own rows
// (or columns) when one of its strides is 1: the micro-kernel reads kMr
// streams of depth (or kMr adjacent elements per depth) from L2 either
// way, and packing was a pass over A per column strip. A product with few
// columns reads each panel once or twice (the Transformer's per-head
// products, 128 x 64 x 128: 10.3 -> 8.7 us, 1 thread); with AVX-512 wide
// products do not change, with AVX2 (6 rows read in place) they were 10%
// slower than packed. A strided both ways (a slice of a batch) is packed.
template <typename T>
bool InPlaceA(const Problem<T>& p, Isa isa) {
  return (p.a_k == 1 || p.a_m == 1) &&
         (isa == Isa::Avx512 || p.n <= 2 * TileColumns<T>(isa));
}

template <typename T>
void Gemm(const Problem<T>& p, int32_t flags);

// Columns [begin, end) of a product split by columns, as a serial
// product of their own.
template <typename T>
struct ColumnSplit {
  const Problem<T>* problem;
  int64_t cols_per_task;
};

template <typename T>
void GemmColumns(void* ctx, int64_t begin, int64_t end) {
  const ColumnSplit<T>& split = *static_cast<const ColumnSplit<T>*>(ctx);
  const Problem<T>& p = *split.problem;
  for (int64_t task = begin; task < end; ++task) {
    int64_t col = task * split.cols_per_task;
    Problem<T> part = p;
    part.n = std::min(split.cols_per_task, p.n - col);
    part.b = p.b + col * p.b_n;
    part.c = p.c + col * p.c_n;
    Gemm<T>(part, DELTA_GEMM_SERIAL);
  }
}

template <typename T>
void Gemm(const Problem<T>& p, int32_t flags) {
  if (p.m <= 0 || p.n <= 0) return;
  if (p.k <= 0) {
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) p.c[i * p.c_m + j * p.c_n] = T(0);
    return;
  }
  Isa isa = HostIsa();
  // Enough row blocks for every thread when the product is large.
  bool parallel = (flags & DELTA_GEMM_SERIAL) == 0 &&
                  static_cast<double>(p.m) * p.n * p.k >= kParallelWork &&
                  delta_num_threads() > 1;
  // Note [Dot products].
  if (p.fma && !parallel && p.a_k == 1 && p.b_k == 1 && p.m <= kDotMaxSide &&
      p.n <= kDotMaxSide && isa != Isa::Sse) {
    bool avx512 = isa == Isa::Avx512;
    if constexpr (sizeof(T) == 4)
      (avx512 ? F32Avx512Dot : F32Avx2Dot)(p);
    else
      (avx512 ? F64Avx512Dot : F64Avx2Dot)(p);
    return;
  }
  DeltaParallelBody body;
  int64_t nr = TileColumns<T>(isa);
  int64_t mr = 6;
  bool f32 = sizeof(T) == 4;
  switch (isa) {
    case Isa::Avx512:
      body = f32 ? (p.fma ? F32Avx512Fma : F32Avx512)
                 : (p.fma ? F64Avx512Fma : F64Avx512);
      mr = f32 ? 8 : 6;
      break;
    case Isa::Avx2:
      body =
          f32 ? (p.fma ? F32Avx2Fma : F32Avx2) : (p.fma ? F64Avx2Fma : F64Avx2);
      break;
    default:
      body = f32 ? F32Sse : F64Sse;
      mr = 4;
      break;
  }
  // Note [Column split]: with columns enough for every thread, each thread
  // computes its own columns of C as a serial product: it packs its own
  // part of B (into its own L2) and never waits for the others, where
  // splitting rows makes the threads share each packed strip of B and meet
  // twice per strip. A is packed once per task instead of once.
  if (parallel && p.n >= kSplitColumnsMin * delta_num_threads()) {
    int64_t threads = delta_num_threads();
    int64_t tasks = std::min<int64_t>(threads, p.n / kSplitColumnsMin);
    int64_t per_task = ((p.n + tasks - 1) / tasks + nr - 1) / nr * nr;
    ColumnSplit<T> split{&p, per_task};
    delta_parallel_for((p.n + per_task - 1) / per_task, GemmColumns<T>, &split);
    return;
  }
  int64_t block_m = kBlockM;
  if (parallel) {
    // A multiple of the thread count of row blocks (at least two each, at
    // most kBlockM rows), so that the threads finish together: 1024 rows
    // in blocks of 96 were 11 tasks, 6 for one thread and 5 for the other.
    // Blocks are whole panels of mr rows, so fewer rounds can balance
    // better: 128 rows on 2 threads (22 panels of 6) in 4 blocks of 36 gave
    // one thread 72 rows and the other 56; in 2 blocks of 66, 66 and 62.
    // Of 1 to that many rounds, the one whose busiest thread has the fewest
    // rows (on a tie, the most rounds).
    int64_t threads = delta_num_threads();
    int64_t most_rounds = std::max<int64_t>(
        2, (p.m + threads * kBlockM - 1) / (threads * kBlockM));
    int64_t fewest_rows = p.m + 1;
    for (int64_t rounds = 1; rounds <= most_rounds; ++rounds) {
      int64_t per_task = (p.m + threads * rounds - 1) / (threads * rounds);
      int64_t rows =
          std::clamp<int64_t>((per_task + mr - 1) / mr * mr, mr, kBlockM);
      int64_t tasks = (p.m + rows - 1) / rows;
      int64_t busiest = std::min(p.m, (tasks + threads - 1) / threads * rows);
      if (busiest <= fewest_rows) {
        fewest_rows = busiest;
        block_m = rows;
      }
    }
  }
  int64_t tasks = (p.m + block_m - 1) / block_m;
  bool in_place_b = InPlaceB(p);
  bool in_place_a = InPlaceA(p, isa);
  int64_t max_cols = std::min(kBlockN, (p.n + nr - 1) / nr * nr);
  // Depth in equal panels of at most kBlockK: 784 as 4 x 196, not
  // 3 x 256 + 16 (a 16-deep pass loads and stores C for little work).
  int64_t depth_panels = (p.k + kBlockK - 1) / kBlockK;
  int64_t block_k = (p.k + depth_panels - 1) / depth_panels;
  // Sized by the depth actually used, and from the runtime's allocator,
  // which keeps freed blocks: a batch of small products (one per batch
  // index) would otherwise map and fault in a fresh 2 MiB panel each.
  T* pb = static_cast<T*>(delta_alloc(static_cast<int64_t>(
      PanelOffset<T>(max_cols / nr, block_k, nr) * sizeof(T))));
  for (int64_t col = 0; col < p.n; col += kBlockN) {
    int64_t cols = std::min(kBlockN, p.n - col);
    for (int64_t depth = 0; depth < p.k; depth += block_k) {
      int64_t kc = std::min(block_k, p.k - depth);
      // B's strip in panels of nr columns, zero-padded; on the pool too
      // when the product is, or packing is the serial part of it.
      Strip<T> strip{&p, pb, col, cols, depth, kc, nr, in_place_b};
      int64_t panels = (cols + nr - 1) / nr;
      if (parallel)
        delta_parallel_for(panels, PackPanels<T>, &strip);
      else
        PackPanels<T>(&strip, 0, panels);
      Block<T> block{&p, pb,      col,        cols,      depth,
                     kc, block_m, in_place_b, in_place_a};
      if (parallel)
        delta_parallel_for(tasks, body, &block);
      else
        body(&block, 0, tasks);
    }
  }
  delta_free(pb);
}

// DELTA_GEMM_TRACE=1: every product's shape, strides and time on stderr,
// to find the slow ones in a program (docs/performance.md).
bool Tracing() {
  static const bool tracing = [] {
    const char* value = std::getenv("DELTA_GEMM_TRACE");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return tracing;
}

template <typename T>
void TracedGemm(const Problem<T>& p, int32_t flags) {
  if (!Tracing()) return Gemm<T>(p, flags);
  auto start = std::chrono::steady_clock::now();
  Gemm<T>(p, flags);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::fprintf(stderr,
               "delta_gemm_f%d m %lld n %lld k %lld a_m %lld a_k %lld b_k %lld "
               "b_n %lld c_m %lld c_n %lld flags %d: %.1f us, %.1f GFLOP/s\n",
               static_cast<int>(8 * sizeof(T)), static_cast<long long>(p.m),
               static_cast<long long>(p.n), static_cast<long long>(p.k),
               static_cast<long long>(p.a_m), static_cast<long long>(p.a_k),
               static_cast<long long>(p.b_k), static_cast<long long>(p.b_n),
               static_cast<long long>(p.c_m), static_cast<long long>(p.c_n),
               flags, seconds * 1e6,
               2.0 * p.m * p.n * p.k / std::max(seconds, 1e-9) * 1e-9);
}

}  // namespace

extern "C" {

void delta_gemm_f32(int64_t m, int64_t n, int64_t k, const float* a,
                    int64_t a_m, int64_t a_k, const float* b, int64_t b_k,
                    int64_t b_n, float* c, int64_t c_m, int64_t c_n,
                    int32_t flags) {
  TracedGemm<float>({m, n, k, a, a_m, a_k, b, b_k, b_n, c, c_m, c_n,
                     (flags & DELTA_GEMM_FMA) != 0},
                    flags);
}

void delta_gemm_f64(int64_t m, int64_t n, int64_t k, const double* a,
                    int64_t a_m, int64_t a_k, const double* b, int64_t b_k,
                    int64_t b_n, double* c, int64_t c_m, int64_t c_n,
                    int32_t flags) {
  TracedGemm<double>({m, n, k, a, a_m, a_k, b, b_k, b_n, c, c_m, c_n,
                      (flags & DELTA_GEMM_FMA) != 0},
                     flags);
}

}  // extern "C"

/* Timing helpers shared by the benchmark drivers: a monotonic clock,
   medians of repeated runs, a two-way pthread split for the C references,
   and one JSON line per measurement on stdout (read by bench/run.py). */
#ifndef DELTA_BENCH_COMMON_H_
#define DELTA_BENCH_COMMON_H_

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* BENCH_CLOCK=cpu times with the process's CPU time instead of the wall
   clock: on a loaded machine it leaves out the time other programs hold
   the core (meaningful for one-thread runs only: threads' times add up). */
static double BenchNow(void) {
  static int clock_id = -1;
  if (clock_id < 0) {
    const char* text = getenv("BENCH_CLOCK");
    clock_id = text && strcmp(text, "cpu") == 0 ? CLOCK_PROCESS_CPUTIME_ID
                                                : CLOCK_MONOTONIC;
  }
  struct timespec t;
  clock_gettime(clock_id, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int BenchCompare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Runs fn once to warm up, then at least `BENCH_MIN_REPS` times (default 5)
   and for at least `BENCH_MIN_TIME` seconds (default 0.3), at most 200
   times; returns the median. */
static double BenchMedian(void (*fn)(void*), void* ctx) {
  const char* min_time_text = getenv("BENCH_MIN_TIME");
  const char* min_reps_text = getenv("BENCH_MIN_REPS");
  double min_time = min_time_text ? atof(min_time_text) : 0.3;
  int min_reps = min_reps_text ? atoi(min_reps_text) : 5;
  double times[200];
  int reps = 0;
  double total = 0;
  fn(ctx);
  while (reps < 200 && (reps < min_reps || total < min_time)) {
    double start = BenchNow();
    fn(ctx);
    times[reps] = BenchNow() - start;
    total += times[reps++];
  }
  qsort(times, (size_t)reps, sizeof(double), BenchCompare);
  return reps % 2 ? times[reps / 2]
                  : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
}

/* One measurement: `work` units of `unit` per run (flops, bytes, ...). */
static void BenchReport(const char* bench_case, const char* params,
                        const char* impl, double seconds, double work,
                        const char* unit) {
  printf(
      "{\"case\": \"%s\", \"params\": \"%s\", \"impl\": \"%s\", "
      "\"median_s\": %.9g, \"work\": %.9g, \"unit\": \"%s\"}\n",
      bench_case, params, impl, seconds, work, unit);
  fflush(stdout);
}

/* Agreement of a result with the reference, reported and fatal when off. */
static void BenchCheck(const char* what, double got, double want,
                       double tolerance) {
  double scale = fabs(want) > 1 ? fabs(want) : 1;
  if (!(fabs(got - want) <= tolerance * scale)) {
    fprintf(stderr, "%s: got %.17g, want %.17g\n", what, got, want);
    exit(2);
  }
}

/* BenchCheck of every entry of an array, labelled "what[k]". */
static void BenchCheckArray(const char* what, const double* got,
                            const double* want, int64_t length,
                            double tolerance) {
  for (int64_t k = 0; k < length; ++k) {
    char label[96];
    snprintf(label, sizeof label, "%s[%ld]", what, (long)k);
    BenchCheck(label, got[k], want[k], tolerance);
  }
}

/* BENCH_THREADS (default 1) threads for the C references, which split their
   outer loop with BenchParallel. */
static int BenchThreads(void) {
  const char* text = getenv("BENCH_THREADS");
  int threads = text ? atoi(text) : 1;
  return threads < 1 ? 1 : threads > 64 ? 64 : threads;
}

typedef struct {
  void (*body)(void* ctx, int64_t begin, int64_t end);
  void* ctx;
  int64_t begin, end;
} BenchChunk;

static void* BenchRunChunk(void* arg) {
  BenchChunk* chunk = (BenchChunk*)arg;
  chunk->body(chunk->ctx, chunk->begin, chunk->end);
  return NULL;
}

/* body(ctx, begin, end) over [0, n) on BenchThreads() threads. Threads are
   created per call (tens of microseconds): use it for long loops only. */
static void BenchParallel(int64_t n, void (*body)(void*, int64_t, int64_t),
                          void* ctx) {
  int threads = BenchThreads();
  if (threads == 1 || n < 2) {
    body(ctx, 0, n);
    return;
  }
  pthread_t ids[64];
  BenchChunk chunks[64];
  for (int t = 0; t < threads; ++t) {
    chunks[t] = (BenchChunk){body, ctx, n * t / threads, n * (t + 1) / threads};
    if (t > 0) pthread_create(&ids[t], NULL, BenchRunChunk, &chunks[t]);
  }
  BenchRunChunk(&chunks[0]);
  for (int t = 1; t < threads; ++t) pthread_join(ids[t], NULL);
}

static double* BenchRandomF64(int64_t n, unsigned seed, double lo, double hi) {
  double* x = (double*)aligned_alloc(64, (size_t)((n * 8 + 63) / 64 * 64));
  srand(seed);
  for (int64_t i = 0; i < n; ++i)
    x[i] = lo + (hi - lo) * ((double)rand() / RAND_MAX);
  return x;
}

static float* BenchRandomF32(int64_t n, unsigned seed, float lo, float hi) {
  float* x = (float*)aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
  srand(seed);
  for (int64_t i = 0; i < n; ++i)
    x[i] = lo + (hi - lo) * (float)((double)rand() / RAND_MAX);
  return x;
}

#endif

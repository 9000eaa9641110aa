// The one- or many-process half of sharded dims (runtime/distributed.h).
// With MPI the state is set once by delta_shard_init on the main thread
// before any worker reads it; the collectives run on that thread only
// (the distribute pass keeps them out of parallel loops).
#include "runtime/distributed.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/format.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"

#ifdef DELTA_HAVE_MPI
// The C API only: MPI's C++ bindings (deprecated) do not build warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace {

int32_t rank = 0;
int32_t processes = 1;
// The process that prints and writes files: 0, or DELTA_SHARD_ROOT (tests
// use it to see that every process holds the same replicated values).
int32_t root = 0;

#ifdef DELTA_HAVE_MPI
bool active = false;  // MPI initialized here, with more than one process
// The processes of the run: MPI_COMM_WORLD, or the communicator an
// embedding program gave (delta_shard_use_comm).
MPI_Comm comm = MPI_COMM_NULL;

// Whether `mpirun` (OpenMPI, MPICH's Hydra, or PMIx) started this process:
// outside it a one-process run needs no MPI at all.
bool UnderMpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

MPI_Datatype TypeOf(int32_t elem) {
  switch (elem) {
    case DELTA_ELEM_F32:
      return MPI_FLOAT;
    case DELTA_ELEM_F64:
      return MPI_DOUBLE;
    case DELTA_ELEM_I32:
      return MPI_INT32_T;
    case DELTA_ELEM_BOOL:
      return MPI_UINT8_T;
    default:
      return MPI_INT64_T;
  }
}

MPI_Op OpOf(int32_t combine) {
  switch (combine) {
    case DELTA_COMBINE_PROD:
      return MPI_PROD;
    case DELTA_COMBINE_MAX:
      return MPI_MAX;
    case DELTA_COMBINE_MIN:
      return MPI_MIN;
    default:
      return MPI_SUM;
  }
}

// MPI takes int counts: a larger array goes in pieces.
constexpr int64_t kMaxPiece = 1 << 30;

// Whether delta_shard_init initialized MPI (then delta_shard_finalize
// finalizes it; an embedding program does both itself).
bool initialized_here = false;

// See Note [Failures in a library] in docs/internals/distribute.md. An
// embedding program's communicator is duplicated (its own messages never
// meet ours); collectives on it are non-blocking and wait while watching
// for a failure message from another process.
bool embedded = false;
// A process failed during a call: collectives of the failed call may stay
// unmatched, so nothing more runs on `comm` until the next
// delta_shard_use_comm.
bool broken = false;
// A failure message's tag names the call it failed (the calls completed
// on `comm` before it, modulo kFailTags): a process already past call n
// may fail call n+1 while another still waits in call n's closing
// allreduce, which must not take that failure for its own.
int64_t completed_calls = 0;
constexpr int kFailTagBase = 0x4000;  // MPI guarantees tags up to 32767
constexpr int kFailTags = 0x1000;
int FailTag() {
  return kFailTagBase + static_cast<int>(completed_calls % kFailTags);
}
// Failure messages being sent: MPI reads them after the call returns.
std::vector<std::string>* sent_failures = nullptr;

// Seconds spent inside MPI calls, and how many (DELTA_SHARD_STATS=1).
double mpi_seconds = 0;
int64_t mpi_calls = 0;
double start_time = 0;  // MPI_Wtime after delta_shard_init

// Times one MPI call into mpi_seconds.
class MpiTimer {
 public:
  MpiTimer() : start_(MPI_Wtime()) {}
  ~MpiTimer() {
    mpi_seconds += MPI_Wtime() - start_;
    ++mpi_calls;
  }

 private:
  double start_;
};

[[noreturn]] void FailBroken() {
  delta_set_location(nullptr, 0, 0, nullptr);
  delta_fail(nullptr, 0, 0,
             "a call failed on another process, so the communicator of "
             "this library is unusable: call the library's "
             "context_set_mpi_comm again on every process");
  std::abort();
}

// Waits for a collective; in a library, fails (delta_fail) when another
// process reports a failure instead of joining it.
void Wait(MPI_Request& request) {
  if (!embedded) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    return;
  }
  for (;;) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    int failed = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, FailTag(), comm, &failed, &status);
    if (!failed) continue;
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    std::string message(static_cast<size_t>(std::max(length, 1)), '\0');
    MPI_Recv(message.data(), length, MPI_CHAR, status.MPI_SOURCE, FailTag(),
             comm, MPI_STATUS_IGNORE);
    broken = true;
    std::string text = "process " + std::to_string(status.MPI_SOURCE) +
                       " of the communicator failed: " + message.c_str();
    // The error is the other process's, not at this one's last op.
    delta_set_location(nullptr, 0, 0, nullptr);
    delta_fail(nullptr, 0, 0, text.c_str());
  }
}

void Allreduce(void* data, int count, MPI_Datatype type, MPI_Op op) {
  MpiTimer timer;
  if (!embedded) {
    MPI_Allreduce(MPI_IN_PLACE, data, count, type, op, comm);
    return;
  }
  if (broken) FailBroken();
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, data, count, type, op, comm, &request);
  Wait(request);
}
#endif

}  // namespace

extern "C" {

void delta_shard_init(void) {
#ifdef DELTA_HAVE_MPI
  static bool done = false;
  if (done) return;
  done = true;
  if (!UnderMpirun()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    initialized_here = true;
  }
  start_time = MPI_Wtime();
  comm = MPI_COMM_WORLD;
  int r = 0, p = 1;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &p);
  rank = r;
  processes = p;
  active = p > 1;
  if (const char* chosen = std::getenv("DELTA_SHARD_ROOT")) {
    int value = std::atoi(chosen);
    if (value > 0 && value < p) root = value;
  }
#endif
}

void delta_shard_finalize(void) {
#ifdef DELTA_HAVE_MPI
  // Not from atexit: a process that stops the run with MPI_Abort may exit
  // through it, and finalizing would then wait for the processes it kills.
  if (!initialized_here) return;
  initialized_here = false;
  const char* stats = std::getenv("DELTA_SHARD_STATS");
  if (stats != nullptr && std::strcmp(stats, "1") == 0) {
    std::fflush(stdout);
    double total = MPI_Wtime() - start_time;
    std::fprintf(stderr,
                 "delta shard stats: process %d of %d: %.6f s in %lld MPI "
                 "calls, %.6f s since MPI_Init (%.2f%%)\n",
                 rank, processes, mpi_seconds,
                 static_cast<long long>(mpi_calls), total,
                 total > 0 ? 100 * mpi_seconds / total : 0.0);
  }
  active = false;
  MPI_Finalize();
#endif
}

int32_t delta_shard_use_comm(int64_t fortran_comm) {
#ifdef DELTA_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return -1;
  MPI_Comm given = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_comm));
  MPI_Comm own = MPI_COMM_NULL;
  int r = 0, p = 1;
  if (given == MPI_COMM_NULL || MPI_Comm_dup(given, &own) != MPI_SUCCESS ||
      MPI_Comm_rank(own, &r) != MPI_SUCCESS ||
      MPI_Comm_size(own, &p) != MPI_SUCCESS)
    return -1;
  // A broken communicator may have collectives that never complete: it is
  // left alone rather than freed.
  if (embedded && !broken) MPI_Comm_free(&comm);
  comm = own;
  embedded = true;
  broken = false;
  completed_calls = 0;
  rank = r;
  processes = p;
  active = p > 1;
  return 0;
#else
  (void)fortran_comm;
  return -1;
#endif
}

void delta_shard_report_failure(const char* message) {
#ifdef DELTA_HAVE_MPI
  if (!embedded || !active || broken) return;
  broken = true;
  if (sent_failures == nullptr) sent_failures = new std::vector<std::string>;
  sent_failures->emplace_back(message);
  std::string& text = sent_failures->back();
  for (int32_t to = 0; to < processes; ++to) {
    if (to == rank) continue;
    MPI_Request request;
    MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, to,
              FailTag(), comm, &request);
    MPI_Request_free(&request);
  }
#else
  (void)message;
#endif
}

void delta_shard_agree(void) {
#ifdef DELTA_HAVE_MPI
  if (!embedded || !active) return;
  int32_t nothing = 0;
  Allreduce(&nothing, 1, MPI_INT32_T, MPI_SUM);
  ++completed_calls;
#endif
}

int32_t delta_shard_running(void) {
#ifdef DELTA_HAVE_MPI
  return active ? 1 : 0;
#else
  return 0;
#endif
}

int32_t delta_shard_rank(void) { return rank; }
int32_t delta_shard_is_root(void) { return rank == root; }
int32_t delta_shard_processes(void) { return processes; }

int64_t delta_shard_extent(int64_t global) {
  return global / processes + (rank < global % processes ? 1 : 0);
}

int64_t delta_shard_offset(int64_t global) {
  return rank * (global / processes) +
         std::min<int64_t>(rank, global % processes);
}

void delta_shard_allreduce(int32_t elem, int32_t combine, void* data,
                           int64_t count) {
#ifdef DELTA_HAVE_MPI
  if (!active) return;
  auto* bytes = static_cast<char*>(data);
  for (int64_t done = 0; done < count; done += kMaxPiece) {
    int piece = static_cast<int>(std::min(kMaxPiece, count - done));
    Allreduce(bytes + done * delta_elem_bytes(elem), piece, TypeOf(elem),
              OpOf(combine));
  }
#else
  (void)elem, (void)combine, (void)data, (void)count;
#endif
}

void delta_shard_exscan_sum(int32_t elem, void* data, int64_t count) {
  int64_t bytes = count * delta_elem_bytes(elem);
#ifdef DELTA_HAVE_MPI
  if (active) {
    if (broken) FailBroken();
    std::vector<char> mine(static_cast<char*>(data),
                           static_cast<char*>(data) + bytes);
    auto* out = static_cast<char*>(data);
    for (int64_t done = 0; done < count; done += kMaxPiece) {
      int piece = static_cast<int>(std::min(kMaxPiece, count - done));
      int64_t at = done * delta_elem_bytes(elem);
      MpiTimer timer;
      MPI_Request request;
      MPI_Iexscan(mine.data() + at, out + at, piece, TypeOf(elem), MPI_SUM,
                  comm, &request);
      Wait(request);
    }
    // MPI leaves the first process's buffer undefined: the empty sum.
    if (rank == 0) std::memset(data, 0, bytes);
    return;
  }
#endif
  std::memset(data, 0, bytes);
}

void delta_shard_gather(int64_t elem_bytes, const void* block, int64_t outer,
                        int64_t global, int64_t inner, void* whole) {
  int64_t extent = delta_shard_extent(global);
  int64_t block_bytes = outer * extent * inner * elem_bytes;
#ifdef DELTA_HAVE_MPI
  if (active) {
    if (broken) FailBroken();
    MpiTimer timer;
    // Each process's block arrives whole (one message each); the root
    // then interleaves them along the axis.
    std::vector<char> staged(rank == root ? outer * global * inner * elem_bytes
                                          : 0);
    if (rank == root) {
      int64_t at = 0;
      for (int32_t from = 0; from < processes; ++from) {
        int64_t their_extent =
            global / processes + (from < global % processes ? 1 : 0);
        int64_t bytes = outer * their_extent * inner * elem_bytes;
        if (from == root)
          std::memcpy(staged.data() + at, block, bytes);
        else
          for (int64_t done = 0; done < bytes; done += kMaxPiece) {
            MPI_Request request;
            MPI_Irecv(staged.data() + at + done,
                      static_cast<int>(std::min(kMaxPiece, bytes - done)),
                      MPI_BYTE, from, 0, comm, &request);
            Wait(request);
          }
        // Block `from` lands at its offset along the axis of each row.
        int64_t offset = from * (global / processes) +
                         std::min<int64_t>(from, global % processes);
        int64_t row = their_extent * inner * elem_bytes;
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(static_cast<char*>(whole) +
                          (o * global + offset) * inner * elem_bytes,
                      staged.data() + at + o * row, row);
        at += bytes;
      }
    } else {
      const char* bytes = static_cast<const char*>(block);
      for (int64_t done = 0; done < block_bytes; done += kMaxPiece) {
        MPI_Request request;
        MPI_Isend(bytes + done,
                  static_cast<int>(std::min(kMaxPiece, block_bytes - done)),
                  MPI_BYTE, root, 0, comm, &request);
        Wait(request);
      }
    }
    return;
  }
#endif
  std::memcpy(whole, block, block_bytes);
}

}  // extern "C"

namespace {

// An array with a sharded dim, gathered whole onto the root: `whole` and
// `sizes` hold it there (with the global size at `sharded_dim`).
struct Whole {
  std::vector<char> data;
  std::vector<int64_t> sizes;
};

Whole GatherWhole(int32_t kind, const void* data, int64_t dims,
                  const int64_t* sizes, int64_t sharded_dim, int64_t global) {
  Whole whole;
  whole.sizes.assign(sizes, sizes + dims);
  whole.sizes[sharded_dim] = global;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dims; ++d) {
    if (d < sharded_dim) outer *= sizes[d];
    if (d > sharded_dim) inner *= sizes[d];
  }
  int64_t bytes = delta_elem_bytes(kind);
  if (delta_shard_is_root())
    whole.data.resize(static_cast<size_t>(outer * global * inner * bytes));
  delta_shard_gather(bytes, data, outer, global, inner, whole.data.data());
  return whole;
}

}  // namespace

extern "C" {

void delta_shard_print_value(int32_t kind, const void* data, int64_t rank,
                             const int64_t* sizes, const char* const* names,
                             int64_t sharded_dim, int64_t global) {
  Whole whole = GatherWhole(kind, data, rank, sizes, sharded_dim, global);
  if (delta_shard_is_root())
    delta_print_value(kind, whole.data.data(), rank, whole.sizes.data(), names);
}

void delta_shard_read_npy(const char* file, int32_t line, int32_t column,
                          const char* path, int32_t kind, int64_t rank,
                          const int64_t* sizes, const char* const* names,
                          const int64_t* file_axes, int64_t sharded_dim,
                          int64_t global, void* out) {
  char error[1024];
  if (delta_npy_read_block(path, kind, rank, sizes, names, file_axes,
                           sharded_dim, global, delta_shard_offset(global), out,
                           error, sizeof error) != 0)
    delta_fail(file, line, column, error);
}

void delta_shard_write_npy(const char* file, int32_t line, int32_t column,
                           const char* path, int32_t kind, const void* data,
                           int64_t rank, const int64_t* sizes,
                           const int64_t* file_axes, int64_t sharded_dim,
                           int64_t global) {
  if (sharded_dim < 0) {
    if (delta_shard_is_root())
      delta_write_npy(file, line, column, path, kind, data, rank, sizes,
                      file_axes);
  } else {
    Whole whole = GatherWhole(kind, data, rank, sizes, sharded_dim, global);
    if (delta_shard_is_root())
      delta_write_npy(file, line, column, path, kind, whole.data.data(), rank,
                      whole.sizes.data(), file_axes);
  }
  delta_shard_barrier();
}

void delta_shard_barrier(void) {
#ifdef DELTA_HAVE_MPI
  if (!active) return;
  if (broken) FailBroken();
  MpiTimer timer;
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  Wait(request);
#endif
}

void delta_shard_abort(int32_t status) {
#ifdef DELTA_HAVE_MPI
  if (active) MPI_Abort(comm, status);
#else
  (void)status;
#endif
}

}  // extern "C"

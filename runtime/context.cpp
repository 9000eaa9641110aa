// Contexts and the generic entry routine of Delta libraries: argument
// checks, layout conversion, error capture and the tracked allocator.
#include "runtime/context.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "runtime/format.h"
#include "runtime/runtime.h"

// Weak: linked only into libraries with a sharded dim (distributed.h).
extern "C" int32_t delta_shard_use_comm(int64_t fortran_comm)
    __attribute__((weak));
extern "C" void delta_shard_report_failure(const char* message)
    __attribute__((weak));
extern "C" void delta_shard_agree(void) __attribute__((weak));
extern "C" int64_t delta_shard_extent(int64_t global) __attribute__((weak));
extern "C" int64_t delta_shard_offset(int64_t global) __attribute__((weak));

struct InvocationScratch;
struct DeltaContext {
  DeltaContext();
  ~DeltaContext();
  int32_t num_threads = 0;
  int32_t device_memory = 0;  // plain entries take device pointers
  std::string last_error;
  // --target=cuda libraries: the device session, made on the first call by
  // `device` (Note [Device sessions] in docs/internals/c_abi.md).
  const DeltaAbiDevice* device = nullptr;
  void* device_session = nullptr;
  // Note [Invocation scratch].
  std::unique_ptr<InvocationScratch> scratch;
};

namespace {

constexpr int64_t kAlignment = 64;

// See Note [Tracked buffers] in docs/internals/c_abi.md: every buffer of
// generated code carries a header that links it into the running entry's
// list, so that a longjmp out of the generated frames leaks nothing.
struct alignas(kAlignment) BufferHeader {
  BufferHeader* prev;
  BufferHeader* next;
};

// The state of one running entry on this thread.
struct Guard {
  std::jmp_buf jump;
  BufferHeader buffers;  // the list's sentinel
  int32_t status = DELTA_STATUS_OK;
  char message[1024];
  // Note [Results in the caller's buffers]: per result of a CPU entry, the
  // caller's buffer still on offer (null: none) and its bytes, and the
  // buffer handed out for it.
  int64_t num_results = 0;
  void** offered = nullptr;
  const int64_t* offered_bytes = nullptr;
  void** taken = nullptr;
  bool any_taken = false;
};

thread_local Guard* current_guard = nullptr;

[[noreturn]] void OnFail(void* user, const char* file, int line, int column,
                         const char* message) {
  auto* guard = static_cast<Guard*>(user);
  if (guard->status == DELTA_STATUS_OK)
    guard->status = DELTA_STATUS_ERROR_RUNTIME;
  if (file != nullptr)
    std::snprintf(guard->message, sizeof guard->message, "%s:%d:%d: error: %s",
                  file, line, column, message);
  else
    std::snprintf(guard->message, sizeof guard->message, "error: %s", message);
  std::longjmp(guard->jump, 1);
}

// The size of a dim that is not a size parameter: its constant, or for
// the sharded dim this process's block of it.
int64_t ConstantSize(const DeltaAbiDim& dim) {
  if (dim.size_param == DELTA_ABI_SHARDED && delta_shard_extent != nullptr)
    return delta_shard_extent(dim.constant);
  return dim.constant;
}

// DELTA_ABI_TRACE=1: each call says, per array result, whether it was made
// in the caller's buffer or copied there (Note [Results in the caller's
// buffers] in docs/internals/c_abi.md).
bool AbiTracing() {
  static const bool tracing = [] {
    const char* value = std::getenv("DELTA_ABI_TRACE");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return tracing;
}

void FreeAll(BufferHeader& list) {
  while (list.next != &list) {
    BufferHeader* header = list.next;
    list.next = header->next;
    delta_free(header);
  }
  list.prev = &list;
}

// A leaf in the caller's device memory (Note [Device memory at the
// boundary] in docs/internals/c_abi.md): compact in written order. When
// that is not the canonical order but a rotation of it, the written layout
// is a `rows` × `cols` matrix whose transpose is the canonical one (cuBLAS
// transposes it on the device); otherwise (rows < 0, or no cuBLAS) it is
// transposed through the host with `sizes`, `strides` (canonical) and
// `user_strides` (the caller's).
struct DeviceLeaf {
  int64_t leaf;  // index of the parameter or result
  char* data;    // the caller's device pointer
  int64_t bytes;
  bool canonical;
  int64_t rows;
  int64_t cols;
  int64_t rank;
  int64_t elem_size;
  const int64_t* sizes;
  const int64_t* strides;
  const int64_t* user_strides;
};

void CopyStrided(char* dst, const int64_t* dst_strides, const char* src,
                 const int64_t* src_strides, const int64_t* sizes, int64_t rank,
                 int64_t elem_size);

// What one guarded call runs. Plain data: it lives in RunGuarded's frame.
struct GuardedCall {
  DeltaAbiBody body;
  const int64_t* sizes;
  uint64_t* params;
  uint64_t* results;
  // A device entry: the session, and each result's bytes (-1: a scalar),
  // whose host copies must be current before they are written out.
  const DeltaAbiDevice* device;
  void* session;
  int64_t num_results;
  const int64_t* result_bytes;
  // Leaves in device memory, and for each result whether it is one.
  int64_t num_device_inputs;
  const DeviceLeaf* device_inputs;
  int64_t num_device_results;
  const DeviceLeaf* device_results;
  const char* result_on_device;
  // Per result: the caller's device buffer that kernels may write it into
  // (null: none), and its bytes.
  void* const* result_buffers;
  const int64_t* result_buffer_bytes;
};

// Runs under the guard: device inputs become arrays of the session.
void AdoptInputs(const GuardedCall& call, uint64_t* params) {
  for (int64_t i = 0; i < call.num_device_inputs; ++i) {
    const DeviceLeaf& in = call.device_inputs[i];
    void* array = nullptr;
    if (in.canonical) {
      array = call.device->adopt(in.data, in.bytes);
    } else if (in.rows >= 0 &&
               call.device->transpose(
                   static_cast<int32_t>(in.elem_size), in.rows, in.cols,
                   in.data,
                   call.device->device_of(array = call.device->alloc(in.bytes),
                                          in.bytes))) {
    } else {
      void* staging = delta_abi_alloc(in.bytes);
      call.device->copy_to_host(staging, in.data, in.bytes);
      array = delta_abi_alloc(in.bytes);
      CopyStrided(static_cast<char*>(array), in.strides,
                  static_cast<char*>(staging), in.user_strides, in.sizes,
                  in.rank, in.elem_size);
    }
    std::memcpy(&params[in.leaf], &array, sizeof array);
  }
  if (call.num_device_results > 0)
    call.device->result_buffers(call.num_results, call.result_buffers,
                                call.result_buffer_bytes);
}

// Runs under the guard: results go to the caller's device memory.
void WriteDeviceResults(const GuardedCall& call) {
  for (int64_t i = 0; i < call.num_device_results; ++i) {
    const DeviceLeaf& out = call.device_results[i];
    auto* array = reinterpret_cast<char*>(call.results[out.leaf]);
    if (out.canonical) {
      call.device->to_device(array, out.bytes, out.data);
      continue;
    }
    if (out.rows >= 0 &&
        call.device->transpose(
            static_cast<int32_t>(out.elem_size), out.cols, out.rows,
            call.device->device_of(array, out.bytes), out.data))
      continue;
    call.device->to_host(array, out.bytes);
    auto* staging = static_cast<char*>(delta_abi_alloc(out.bytes));
    CopyStrided(staging, out.user_strides, array, out.strides, out.sizes,
                out.rank, out.elem_size);
    call.device->to_device(staging, out.bytes, out.data);
  }
}

// setjmp lives in this small frame, which holds no C++ objects, so that the
// longjmp from OnFail skips only generated frames and the device runtime's
// (which release their locks before failing; no destructors).
int32_t RunGuarded(Guard& guard, const GuardedCall& call) {
  guard.buffers.prev = guard.buffers.next = &guard.buffers;
  current_guard = &guard;
  delta_set_fail_handler(OnFail, &guard);
  // No op of this call has run yet: an error before one (no device) has
  // no location, not the last call's.
  delta_set_location(nullptr, 0, 0, nullptr);
  // A failure skips the leave_call of the calls it unwinds.
  int32_t call_depth = delta_call_depth();
  if (setjmp(guard.jump) == 0) {
    if (call.device != nullptr) {
      call.device->enter(call.session);
      AdoptInputs(call, call.params);
    }
    call.body(call.sizes, call.params, call.results);
    // A call succeeds on every process of a sharded library or on none.
    if (delta_shard_agree != nullptr) delta_shard_agree();
    if (call.device != nullptr) {
      WriteDeviceResults(call);
      for (int64_t i = 0; i < call.num_results; ++i)
        if (call.result_bytes[i] >= 0 && !call.result_on_device[i])
          call.device->to_host(reinterpret_cast<void*>(call.results[i]),
                               call.result_bytes[i]);
      call.device->synchronize();
    }
  }
  delta_set_fail_handler(nullptr, nullptr);
  delta_set_call_depth(call_depth);
  current_guard = nullptr;
  if (call.device != nullptr)
    call.device->leave(call.session, guard.status != DELTA_STATUS_OK);
  return guard.status;
}

// DLPack v0.6's DLTensor, mirrored so that the runtime builds without
// dlpack.h; the layout has been stable since v0.6 (docs/embedding.md).
struct DlTensor {
  void* data;
  int32_t device_type;
  int32_t device_id;
  int32_t ndim;
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
constexpr int32_t kDlCpu = 1;
constexpr int32_t kDlCuda = 2;
constexpr int32_t kDlCudaHost = 3;
constexpr uint8_t kDlInt = 0, kDlUInt = 1, kDlFloat = 2, kDlBool = 6;

bool DtypeMatches(const DlTensor& tensor, int64_t elem) {
  if (tensor.lanes != 1) return false;
  switch (elem) {
    case DELTA_ELEM_F32:
      return tensor.code == kDlFloat && tensor.bits == 32;
    case DELTA_ELEM_F64:
      return tensor.code == kDlFloat && tensor.bits == 64;
    case DELTA_ELEM_I32:
      return tensor.code == kDlInt && tensor.bits == 32;
    case DELTA_ELEM_BOOL:
      return (tensor.code == kDlBool || tensor.code == kDlUInt ||
              tensor.code == kDlInt) &&
             tensor.bits == 8;
    default:
      return tensor.code == kDlInt && tensor.bits == 64;
  }
}

// A leaf as the caller laid it out: data, sizes and strides (in elements)
// in written order.
struct UserArray {
  char* data = nullptr;
  bool on_device = false;  // CUDA device memory
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

struct Output {
  UserArray array;
};

}  // namespace

// Note [Invocation scratch]: the arrays one call of an entry fills, kept by
// its context between calls (a context runs one call at a time), so that a
// call allocates nothing once they have grown. A scalar entry took about
// 130 ns, most of it in eleven malloc/free pairs for these.
struct InvocationScratch {
  std::vector<int64_t> sizes;
  std::vector<std::string> known_from;  // which leaf gave each size
  std::vector<uint64_t> params;
  std::vector<UserArray> arrays;
  std::vector<Output> outputs;
  std::vector<void*> temporaries;
  std::vector<DeviceLeaf> device_inputs;
  std::vector<DeviceLeaf> device_results;
  std::vector<char> result_on_device;
  std::deque<std::vector<int64_t>> layouts;  // DeviceLeaf's arrays
  std::vector<uint64_t> results;
  std::vector<int64_t> result_bytes;
  std::vector<void*> buffers;
  std::vector<int64_t> buffer_bytes;
  std::vector<void*> taken;  // Note [Results in the caller's buffers]
  // One leaf's canonical sizes and strides, and the caller's strides.
  std::vector<int64_t> layout_sizes, layout_strides, layout_user_strides;
};

DeltaContext::DeltaContext() : scratch(new(std::nothrow) InvocationScratch) {}
DeltaContext::~DeltaContext() = default;

namespace {

// Copies a rank-`rank` array between two strided layouts (strides in
// elements; the innermost loop is a memcpy where both are unit-stride).
void CopyStrided(char* dst, const int64_t* dst_strides, const char* src,
                 const int64_t* src_strides, const int64_t* sizes, int64_t rank,
                 int64_t elem_size) {
  if (rank == 0) {
    std::memcpy(dst, src, static_cast<size_t>(elem_size));
    return;
  }
  if (rank == 1 && dst_strides[0] == 1 && src_strides[0] == 1) {
    std::memcpy(dst, src, static_cast<size_t>(sizes[0] * elem_size));
    return;
  }
  for (int64_t i = 0; i < sizes[0]; ++i)
    CopyStrided(dst + i * dst_strides[0] * elem_size, dst_strides + 1,
                src + i * src_strides[0] * elem_size, src_strides + 1,
                sizes + 1, rank - 1, elem_size);
}

// One call of an entry: the checks before, the conversions, the copies
// after. Errors set status_ and message_ and return false.
class Invocation {
 public:
  Invocation(const DeltaAbiEntry& entry, const uint64_t* args, bool dlpack,
             bool device_memory, void* device_session,
             InvocationScratch& scratch)
      : entry_(entry),
        device_session_(device_session),
        args_(args),
        dlpack_(dlpack),
        device_memory_(device_memory),
        scratch_(scratch) {
    scratch_.sizes.assign(static_cast<size_t>(entry.num_size_params), -1);
    scratch_.known_from.resize(static_cast<size_t>(entry.num_size_params));
    scratch_.device_inputs.clear();
    scratch_.device_results.clear();
    scratch_.layouts.clear();
  }
  ~Invocation() {
    for (void* buffer : scratch_.temporaries) std::free(buffer);
    scratch_.temporaries.clear();
  }

  int32_t Run(std::string& error) {
    int32_t status = Prepare() ? Execute() : status_;
    error = status == DELTA_STATUS_OK ? std::string() : message_;
    return status;
  }

 private:
  bool Fail(int32_t status, const std::string& message) {
    status_ = status;
    message_ =
        std::string(entry_.name) + (dlpack_ ? "_dl" : "") + ": " + message;
    return false;
  }

  // Where a leaf's pointer (or scalar value) is, and its sizes follow.
  const char* LeafAddress(const DeltaAbiLeaf& leaf, bool& ok) {
    const auto* slot = reinterpret_cast<const char*>(&args_[leaf.slot]);
    if (leaf.offset < 0) return slot;
    const char* base = nullptr;
    std::memcpy(&base, slot, sizeof base);
    if (base == nullptr) {
      ok = Fail(DELTA_STATUS_ERROR_NULL,
                std::string("the struct holding ") + leaf.name + " is null");
      return nullptr;
    }
    return base + leaf.offset;
  }

  // Reads an array leaf's buffer description from the caller's arguments.
  bool ReadArray(const DeltaAbiLeaf& leaf, UserArray& array) {
    int64_t rank = leaf.rank;
    array.data = nullptr;
    array.on_device = false;
    array.sizes.assign(static_cast<size_t>(rank), 0);
    array.strides.assign(static_cast<size_t>(rank), 0);
    bool ok = true;
    if (dlpack_) {
      const DlTensor* tensor = nullptr;
      std::memcpy(&tensor, &args_[leaf.dl_slot], sizeof tensor);
      if (tensor == nullptr)
        return Fail(DELTA_STATUS_ERROR_NULL,
                    std::string("tensor ") + leaf.name + " is null");
      array.on_device = tensor->device_type == kDlCuda;
      if (tensor->device_type != kDlCpu && tensor->device_type != kDlCudaHost &&
          !array.on_device)
        return Fail(DELTA_STATUS_ERROR_ARGUMENT,
                    std::string(leaf.name) +
                        " is neither in CPU nor in CUDA memory (DLPack device "
                        "type " +
                        std::to_string(tensor->device_type) + ")");
      if (array.on_device && tensor->device_id != 0)
        return Fail(DELTA_STATUS_ERROR_ARGUMENT,
                    std::string(leaf.name) + " is on CUDA device " +
                        std::to_string(tensor->device_id) +
                        "; this library runs on device 0");
      if (!DtypeMatches(*tensor, leaf.elem))
        return Fail(DELTA_STATUS_ERROR_ARGUMENT,
                    std::string(leaf.name) + " has dtype (code " +
                        std::to_string(tensor->code) + ", bits " +
                        std::to_string(tensor->bits) + ", lanes " +
                        std::to_string(tensor->lanes) + "), expected " +
                        delta::runtime::ElemName(leaf.elem));
      if (tensor->ndim != rank)
        return Fail(DELTA_STATUS_ERROR_SIZE, std::string(leaf.name) + " has " +
                                                 std::to_string(tensor->ndim) +
                                                 " dims, expected " +
                                                 std::to_string(rank));
      if (rank > 0 && tensor->shape == nullptr)
        return Fail(DELTA_STATUS_ERROR_NULL,
                    std::string("the shape of ") + leaf.name + " is null");
      for (int64_t i = 0; i < rank; ++i) array.sizes[i] = tensor->shape[i];
      array.data = static_cast<char*>(tensor->data) + tensor->byte_offset;
      if (tensor->strides != nullptr)
        for (int64_t i = 0; i < rank; ++i)
          array.strides[i] = tensor->strides[i];
    } else {
      const char* address = LeafAddress(leaf, ok);
      if (!ok) return false;
      std::memcpy(&array.data, address, sizeof array.data);
      std::memcpy(array.sizes.data(), address + sizeof(void*),
                  static_cast<size_t>(rank) * sizeof(int64_t));
      array.on_device = device_memory_;
    }
    if (array.on_device && entry_.device == nullptr)
      return Fail(DELTA_STATUS_ERROR_ARGUMENT,
                  std::string(leaf.name) +
                      " is in CUDA device memory, but this library was built "
                      "for the CPU (build it with dlc build --lib "
                      "--target=cuda)");
    if (array.on_device && leaf.elem == DELTA_ELEM_INDEX)
      return Fail(DELTA_STATUS_ERROR_ARGUMENT,
                  std::string(leaf.name) +
                      " is an index array in device memory: pass index "
                      "arrays in host memory, where they are checked");
    // Compact row-major strides where none were given.
    bool given = dlpack_ && rank > 0 && array.strides[0] != 0;
    int64_t count = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
      const DeltaAbiDim& dim = leaf.dims[i];
      int64_t size = array.sizes[i];
      if (size < 0)
        return Fail(DELTA_STATUS_ERROR_SIZE,
                    std::string(leaf.name) + " has the negative size " +
                        std::to_string(size) + " in dim " + dim.name);
      if (!given) array.strides[i] = count;
      // Wraps only past the limit, or where a zero size empties the array;
      // both are settled below.
      count = static_cast<int64_t>(static_cast<uint64_t>(count) *
                                   static_cast<uint64_t>(size));
      if (!CheckDim(leaf, dim, size)) return false;
    }
    if (delta_element_count(rank, array.sizes.data(), &count) != 0)
      return Fail(DELTA_STATUS_ERROR_SIZE,
                  std::string(leaf.name) + " has more than " +
                      DELTA_MAX_ELEMENTS_TEXT " elements");
    if (array.data == nullptr && count != 0)
      return Fail(DELTA_STATUS_ERROR_NULL,
                  std::string("argument ") + leaf.name + " is null");
    if (array.on_device && given) {
      int64_t compact = 1;
      for (int64_t i = rank - 1; i >= 0; --i) {
        if (array.sizes[i] > 1 && array.strides[i] != compact)
          return Fail(DELTA_STATUS_ERROR_ARGUMENT,
                      std::string(leaf.name) +
                          " is in device memory with strides: device tensors "
                          "must be compact and row-major");
        compact *= array.sizes[i];
      }
    }
    return true;
  }

  // A leaf in device memory: how the guarded call moves it.
  DeviceLeaf DeviceLayout(const DeltaAbiLeaf& leaf, int64_t index,
                          const UserArray& array) {
    std::vector<int64_t>& sizes = scratch_.layouts.emplace_back();
    std::vector<int64_t>& strides = scratch_.layouts.emplace_back();
    std::vector<int64_t>& user_strides = scratch_.layouts.emplace_back();
    CanonicalLayout(leaf, array, sizes, strides, user_strides);
    bool canonical = true;
    for (size_t k = 0; k < sizes.size(); ++k)
      canonical &= sizes[k] <= 1 || strides[k] == user_strides[k];
    // A rotation: canonical order = written dims split .. rank, 0 .. split.
    int64_t rows = -1, cols = -1;
    int64_t split = leaf.rank > 0 ? leaf.canonical_order[0] : 0;
    bool rotation = split > 0;
    for (int64_t k = 0; k < leaf.rank; ++k)
      rotation &= leaf.canonical_order[k] == (split + k) % leaf.rank;
    int64_t elem_size = delta_elem_bytes(leaf.elem);
    if (!canonical && rotation && (elem_size == 4 || elem_size == 8)) {
      rows = cols = 1;
      for (int64_t w = 0; w < leaf.rank; ++w)
        (w < split ? rows : cols) *= array.sizes[static_cast<size_t>(w)];
    }
    return DeviceLeaf{index,
                      array.data,
                      Count(leaf) * elem_size,
                      canonical,
                      rows,
                      cols,
                      leaf.rank,
                      elem_size,
                      sizes.data(),
                      strides.data(),
                      user_strides.data()};
  }

  // A dim's size must agree with its constant or with the size parameter's
  // first occurrence.
  bool CheckDim(const DeltaAbiLeaf& leaf, const DeltaAbiDim& dim,
                int64_t size) {
    if (dim.size_param == DELTA_ABI_SHARDED) {
      if (size == ConstantSize(dim)) return true;
      return Fail(DELTA_STATUS_ERROR_SIZE,
                  std::string(leaf.name) + " has size " + std::to_string(size) +
                      " in dim " + dim.name + ", which is sharded: this " +
                      "process's block holds " +
                      std::to_string(ConstantSize(dim)) + " of its " +
                      std::to_string(dim.constant) + " (see shard_block)");
    }
    if (dim.size_param < 0) {
      if (size == dim.constant) return true;
      return Fail(DELTA_STATUS_ERROR_SIZE,
                  std::string(leaf.name) + " has size " + std::to_string(size) +
                      " in dim " + dim.name + ", which has size " +
                      std::to_string(dim.constant));
    }
    int64_t& known = scratch_.sizes[static_cast<size_t>(dim.size_param)];
    if (known < 0) {
      known = size;
      scratch_.known_from[static_cast<size_t>(dim.size_param)] = leaf.name;
      return true;
    }
    if (known == size) return true;
    return Fail(DELTA_STATUS_ERROR_SIZE,
                std::string("dim ") + dim.name + " has size " +
                    std::to_string(size) + " in " + leaf.name + " but " +
                    std::to_string(known) + " in " +
                    scratch_.known_from[static_cast<size_t>(dim.size_param)]);
  }

  int64_t DimSize(const DeltaAbiDim& dim) const {
    return dim.size_param < 0
               ? ConstantSize(dim)
               : scratch_.sizes[static_cast<size_t>(dim.size_param)];
  }

  // Index arguments must be positions in their dim; `data` is compact.
  bool CheckIndices(const DeltaAbiLeaf& leaf, const char* data, int64_t count) {
    int64_t bound = DimSize(leaf.index_dim);
    auto check = [&](int64_t value) {
      if (value >= 0 && value < bound) return true;
      return Fail(DELTA_STATUS_ERROR_ARGUMENT,
                  "index " + std::to_string(value) + " in " + leaf.name +
                      " is out of range for dim " + leaf.index_dim.name +
                      " of size " + std::to_string(bound));
    };
    for (int64_t i = 0; i < count; ++i) {
      int64_t value = 0;
      std::memcpy(&value, data + i * 8, sizeof value);
      if (!check(value)) return false;
    }
    return true;
  }

  // Fills scratch_.params with the canonical pointer or scalar value of each
  // leaf.
  bool ReadParams() {
    for (int64_t i = 0; i < entry_.num_size_params; ++i) {
      const DeltaAbiSizeParam& param = entry_.size_params[i];
      if (param.slot < 0) continue;
      int64_t size = static_cast<int64_t>(args_[param.slot]);
      if (size < 0)
        return Fail(DELTA_STATUS_ERROR_SIZE, std::string("size parameter ") +
                                                 param.name + " is negative (" +
                                                 std::to_string(size) + ")");
      scratch_.sizes[static_cast<size_t>(i)] = size;
      scratch_.known_from[static_cast<size_t>(i)]
          .assign("argument ")
          .append(param.name);
    }
    scratch_.params.assign(static_cast<size_t>(entry_.num_params), 0);
    std::vector<UserArray>& arrays = scratch_.arrays;
    arrays.resize(static_cast<size_t>(entry_.num_params));
    for (int64_t i = 0; i < entry_.num_params; ++i) {
      const DeltaAbiLeaf& leaf = entry_.params[i];
      if (leaf.rank == 0) {
        bool ok = true;
        const char* address =
            dlpack_ ? reinterpret_cast<const char*>(&args_[leaf.dl_slot])
                    : LeafAddress(leaf, ok);
        if (!ok) return false;
        std::memcpy(&scratch_.params[i], address,
                    static_cast<size_t>(delta_elem_bytes(leaf.elem)));
        continue;
      }
      if (!ReadArray(leaf, arrays[i])) return false;
    }
    // Sizes are all known now: convert arrays whose layout differs.
    for (int64_t i = 0; i < entry_.num_params; ++i) {
      const DeltaAbiLeaf& leaf = entry_.params[i];
      if (leaf.rank == 0) {
        if (leaf.elem == DELTA_ELEM_INDEX &&
            !CheckIndices(
                leaf, reinterpret_cast<const char*>(&scratch_.params[i]), 1))
          return false;
        continue;
      }
      if (arrays[i].on_device) {  // moved under the guard
        scratch_.device_inputs.push_back(DeviceLayout(leaf, i, arrays[i]));
        continue;
      }
      char* canonical = nullptr;
      if (!ToCanonical(leaf, arrays[i], canonical)) return false;
      std::memcpy(&scratch_.params[i], &canonical, sizeof canonical);
      if (leaf.elem == DELTA_ELEM_INDEX &&
          !CheckIndices(leaf, canonical, Count(leaf)))
        return false;
    }
    return true;
  }

  int64_t Count(const DeltaAbiLeaf& leaf) const {
    int64_t count = 1;
    for (int64_t i = 0; i < leaf.rank; ++i) count *= DimSize(leaf.dims[i]);
    return count;
  }

  // The canonical sizes and compact strides of a leaf, and the caller's
  // strides permuted into canonical order.
  void CanonicalLayout(const DeltaAbiLeaf& leaf, const UserArray& array,
                       std::vector<int64_t>& sizes,
                       std::vector<int64_t>& strides,
                       std::vector<int64_t>& user_strides) const {
    auto rank = static_cast<size_t>(leaf.rank);
    sizes.resize(rank);
    strides.resize(rank);
    user_strides.resize(rank);
    int64_t count = 1;
    for (size_t k = rank; k-- > 0;) {
      int64_t written = leaf.canonical_order[k];
      sizes[k] = array.sizes[static_cast<size_t>(written)];
      user_strides[k] = array.strides[static_cast<size_t>(written)];
      strides[k] = count;
      count *= sizes[k];
    }
  }

  // Whether the caller's buffer is compact in canonical order (the
  // layout generated code reads and writes); leaves the leaf's layout in
  // scratch_.layout_* (CanonicalLayout) for a copy.
  bool IsCanonicalCompact(const DeltaAbiLeaf& leaf, const UserArray& array) {
    std::vector<int64_t>& sizes = scratch_.layout_sizes;
    std::vector<int64_t>& strides = scratch_.layout_strides;
    std::vector<int64_t>& user_strides = scratch_.layout_user_strides;
    CanonicalLayout(leaf, array, sizes, strides, user_strides);
    for (size_t k = 0; k < sizes.size(); ++k)
      if (sizes[k] > 1 && strides[k] != user_strides[k]) return false;
    return true;
  }

  bool ToCanonical(const DeltaAbiLeaf& leaf, const UserArray& array,
                   char*& canonical) {
    std::vector<int64_t>& sizes = scratch_.layout_sizes;
    std::vector<int64_t>& strides = scratch_.layout_strides;
    std::vector<int64_t>& user_strides = scratch_.layout_user_strides;
    if (IsCanonicalCompact(leaf, array)) {  // zero-copy: already canonical
      canonical = array.data;
      return true;
    }
    int64_t elem_size = delta_elem_bytes(leaf.elem);
    canonical = static_cast<char*>(Allocate(Count(leaf) * elem_size));
    if (canonical == nullptr) return false;
    CopyStrided(canonical, strides.data(), array.data, user_strides.data(),
                sizes.data(), leaf.rank, elem_size);
    return true;
  }

  void* Allocate(int64_t bytes) {
    int64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* buffer = std::aligned_alloc(
        kAlignment, static_cast<size_t>(rounded == 0 ? kAlignment : rounded));
    if (buffer == nullptr) {
      Fail(DELTA_STATUS_ERROR_OOM, "out of memory");
      return nullptr;
    }
    scratch_.temporaries.push_back(buffer);
    return buffer;
  }

  // Checks every result's destination before running anything.
  bool ReadResults() {
    scratch_.outputs.resize(static_cast<size_t>(entry_.num_results));
    for (int64_t i = 0; i < entry_.num_results; ++i) {
      const DeltaAbiLeaf& leaf = entry_.results[i];
      Output& output = scratch_.outputs[static_cast<size_t>(i)];
      if (leaf.rank == 0) {
        bool ok = true;
        const char* address =
            dlpack_ ? reinterpret_cast<const char*>(&args_[leaf.dl_slot])
                    : LeafAddress(leaf, ok);
        if (!ok) return false;
        if (leaf.offset >= 0 && !dlpack_) {
          output.array.data = const_cast<char*>(address);
        } else {
          std::memcpy(&output.array.data, address, sizeof(void*));
          if (output.array.data == nullptr)
            return Fail(DELTA_STATUS_ERROR_NULL,
                        std::string("result ") + leaf.name + " is null");
        }
        continue;
      }
      if (!ReadArray(leaf, output.array)) return false;
    }
    return true;
  }

  // The results' device destinations, once every size is known.
  void ReadDeviceResults() {
    scratch_.result_on_device.assign(static_cast<size_t>(entry_.num_results),
                                     0);
    for (int64_t i = 0; i < entry_.num_results; ++i) {
      const UserArray& array = scratch_.outputs[static_cast<size_t>(i)].array;
      if (entry_.results[i].rank == 0 || !array.on_device) continue;
      scratch_.result_on_device[static_cast<size_t>(i)] = 1;
      scratch_.device_results.push_back(
          DeviceLayout(entry_.results[i], i, array));
    }
  }

  bool Prepare() {
    if (!ReadParams() || !ReadResults()) return false;
    ReadDeviceResults();
    return true;
  }

  int32_t Execute() {
    std::vector<uint64_t>& results = scratch_.results;
    results.assign(static_cast<size_t>(entry_.num_results), 0);
    std::vector<int64_t>& result_bytes = scratch_.result_bytes;
    result_bytes.assign(static_cast<size_t>(entry_.num_results), -1);
    for (int64_t i = 0; i < entry_.num_results; ++i)
      if (entry_.results[i].rank > 0)
        result_bytes[static_cast<size_t>(i)] =
            Count(entry_.results[i]) * delta_elem_bytes(entry_.results[i].elem);
    Guard guard;
    std::vector<void*>& buffers = scratch_.buffers;
    buffers.assign(static_cast<size_t>(entry_.num_results), nullptr);
    std::vector<int64_t>& buffer_bytes = scratch_.buffer_bytes;
    buffer_bytes.assign(buffers.size(), -1);
    std::vector<void*>& taken = scratch_.taken;
    taken.assign(buffers.size(), nullptr);
    // Note [Results in the caller's buffers]: host results of a CPU entry.
    if (entry_.device == nullptr) {
      OfferCallerBuffers(buffers, buffer_bytes);
      guard.num_results = entry_.num_results;
      guard.offered = buffers.data();
      guard.offered_bytes = buffer_bytes.data();
      guard.taken = taken.data();
    }
    // Note [Results written in place] in docs/gpu.md: a canonical device
    // result that overlaps no device input and no other result may be
    // written by the kernel that makes it.
    auto overlaps = [](const DeviceLeaf& a, const DeviceLeaf& b) {
      return a.data < b.data + b.bytes && b.data < a.data + a.bytes;
    };
    for (const DeviceLeaf& out : scratch_.device_results) {
      bool alone = out.canonical && out.bytes > 0;
      for (const DeviceLeaf& in : scratch_.device_inputs)
        alone &= !overlaps(out, in);
      for (const DeviceLeaf& other : scratch_.device_results)
        alone &= &other == &out || !overlaps(out, other);
      if (!alone) continue;
      buffers[static_cast<size_t>(out.leaf)] = out.data;
      buffer_bytes[static_cast<size_t>(out.leaf)] = out.bytes;
    }
    GuardedCall call = {entry_.body,
                        scratch_.sizes.data(),
                        scratch_.params.data(),
                        results.data(),
                        entry_.device,
                        device_session_,
                        entry_.num_results,
                        result_bytes.data(),
                        static_cast<int64_t>(scratch_.device_inputs.size()),
                        scratch_.device_inputs.data(),
                        static_cast<int64_t>(scratch_.device_results.size()),
                        scratch_.device_results.data(),
                        scratch_.result_on_device.data(),
                        buffers.data(),
                        buffer_bytes.data()};
    int32_t status = RunGuarded(guard, call);
    if (status == DELTA_STATUS_OK) {
      if (guard.any_taken) MoveOutOfOtherBuffers(results, taken);
      for (int64_t i = 0; i < entry_.num_results; ++i) {
        auto k = static_cast<size_t>(i);
        if (scratch_.result_on_device[k]) continue;
        // Made in the caller's buffer: nothing to copy or free.
        bool in_place = entry_.results[i].rank > 0 && taken[k] != nullptr &&
                        results[k] == reinterpret_cast<uint64_t>(taken[k]);
        if (entry_.results[i].rank > 0 && AbiTracing())
          std::fprintf(stderr, "delta abi: %s%s result %lld: %s\n", entry_.name,
                       dlpack_ ? "_dl" : "", static_cast<long long>(i),
                       in_place ? "made in the caller's buffer"
                                : "copied into the caller's buffer");
        if (!in_place)
          WriteResult(entry_.results[i], scratch_.outputs[k], results[k]);
      }
    } else {
      message_ = guard.message;
    }
    // Whatever generated code allocated and has not freed: result buffers
    // (copied above) and, after an error, the unwound frames' arrays.
    FreeAll(guard.buffers);
    return status;
  }

  // Note [Results in the caller's buffers]: a host result whose buffer is
  // compact in canonical order and overlaps no input array and no other
  // result may be made there.
  void OfferCallerBuffers(std::vector<void*>& buffers,
                          std::vector<int64_t>& bytes) {
    for (int64_t i = 0; i < entry_.num_results; ++i) {
      const DeltaAbiLeaf& leaf = entry_.results[i];
      const UserArray& array = scratch_.outputs[static_cast<size_t>(i)].array;
      if (leaf.rank == 0 || array.on_device || !IsCanonicalCompact(leaf, array))
        continue;
      Span span = SpanOf(leaf, array);
      if (span.begin == span.end) continue;
      bool alone = true;
      for (int64_t j = 0; j < entry_.num_params && alone; ++j)
        if (entry_.params[j].rank > 0)
          alone = !span.Overlaps(SpanOf(
              entry_.params[j], scratch_.arrays[static_cast<size_t>(j)]));
      for (int64_t j = 0; j < entry_.num_results && alone; ++j)
        if (j != i && entry_.results[j].rank > 0)
          alone = !span.Overlaps(
              SpanOf(entry_.results[j],
                     scratch_.outputs[static_cast<size_t>(j)].array));
      if (!alone) continue;
      buffers[static_cast<size_t>(i)] = array.data;
      bytes[static_cast<size_t>(i)] = span.end - span.begin;
    }
  }

  // The bytes an array of the caller spans, whatever its strides.
  struct Span {
    const char* begin;
    const char* end;
    bool Overlaps(const Span& other) const {
      return begin < other.end && other.begin < end;
    }
  };
  Span SpanOf(const DeltaAbiLeaf& leaf, const UserArray& array) const {
    int64_t elem_size = delta_elem_bytes(leaf.elem);
    int64_t low = 0, high = elem_size;
    for (size_t k = 0; k < array.sizes.size(); ++k) {
      if (array.sizes[k] == 0) return {array.data, array.data};
      int64_t reach = (array.sizes[k] - 1) * array.strides[k] * elem_size;
      (reach < 0 ? low : high) += reach;
    }
    return {array.data + low, array.data + high};
  }

  // A result made in the caller's buffer of another result (an exported
  // function that returns what another one it calls made) is copied out
  // before the buffers are written.
  void MoveOutOfOtherBuffers(std::vector<uint64_t>& results,
                             const std::vector<void*>& taken) {
    for (size_t i = 0; i < results.size(); ++i) {
      if (entry_.results[i].rank == 0 ||
          results[i] == reinterpret_cast<uint64_t>(taken[i]))
        continue;
      auto* array = reinterpret_cast<void*>(results[i]);
      if (std::find(taken.begin(), taken.end(), array) == taken.end()) continue;
      int64_t bytes =
          Count(entry_.results[i]) * delta_elem_bytes(entry_.results[i].elem);
      void* copy = delta_abi_alloc(bytes);
      std::memcpy(copy, array, static_cast<size_t>(bytes));
      results[i] = reinterpret_cast<uint64_t>(copy);
    }
  }

  void WriteResult(const DeltaAbiLeaf& leaf, Output& output, uint64_t value) {
    int64_t elem_size = delta_elem_bytes(leaf.elem);
    if (leaf.rank == 0) {
      std::memcpy(output.array.data, &value, static_cast<size_t>(elem_size));
      return;
    }
    char* buffer = nullptr;
    std::memcpy(&buffer, &value, sizeof buffer);
    std::vector<int64_t>& sizes = scratch_.layout_sizes;
    std::vector<int64_t>& strides = scratch_.layout_strides;
    std::vector<int64_t>& user_strides = scratch_.layout_user_strides;
    CanonicalLayout(leaf, output.array, sizes, strides, user_strides);
    CopyStrided(output.array.data, user_strides.data(), buffer, strides.data(),
                sizes.data(), leaf.rank, elem_size);
    delta_abi_free(buffer);
  }

  const DeltaAbiEntry& entry_;
  void* device_session_;
  const uint64_t* args_;
  bool dlpack_;
  bool device_memory_;
  InvocationScratch& scratch_;
  int32_t status_ = DELTA_STATUS_OK;
  std::string message_;
};

}  // namespace

extern "C" {

DeltaContext* delta_context_create(const void* options) {
  auto* context = new (std::nothrow) DeltaContext;
  if (context != nullptr && context->scratch == nullptr) {
    delete context;
    return nullptr;
  }
  if (context == nullptr) return nullptr;
  if (options != nullptr)
    std::memcpy(&context->num_threads, options, sizeof(int32_t));

  return context;
}

int32_t delta_context_set_device_memory(DeltaContext* context,
                                        int32_t device_memory) {
  if (context == nullptr) return DELTA_STATUS_ERROR_NULL;
  context->device_memory = device_memory != 0 ? 1 : 0;
  return DELTA_STATUS_OK;
}

int32_t delta_context_set_mpi_comm(DeltaContext* context,
                                   int64_t fortran_comm) {
  if (context == nullptr) return DELTA_STATUS_ERROR_NULL;
  context->last_error.clear();
  // Weak (runtime.cpp): only libraries with a sharded dim link MPI.
  if (delta_shard_use_comm == nullptr) {
    context->last_error =
        "this library has no @shard dim: it runs on one process";
    return DELTA_STATUS_ERROR_ARGUMENT;
  }
  if (delta_shard_use_comm(fortran_comm) != 0) {
    context->last_error =
        "cannot use the communicator: MPI is not initialized, or this "
        "library was built without MPI";
    return DELTA_STATUS_ERROR_ARGUMENT;
  }
  return DELTA_STATUS_OK;
}

int32_t delta_context_shard_block(const DeltaContext* context, int64_t global,
                                  int64_t* offset, int64_t* extent) {
  if (context == nullptr || offset == nullptr || extent == nullptr)
    return DELTA_STATUS_ERROR_NULL;
  *offset = delta_shard_offset != nullptr ? delta_shard_offset(global) : 0;
  *extent = delta_shard_extent != nullptr ? delta_shard_extent(global) : global;
  return DELTA_STATUS_OK;
}

void delta_context_destroy(DeltaContext* context) {
  if (context == nullptr) return;
  if (context->device_session != nullptr)
    context->device->destroy(context->device_session);
  delete context;
}

const char* delta_context_last_error(const DeltaContext* context) {
  if (context == nullptr) return "null context";
  return context->last_error.c_str();
}

const char* delta_status_string(int32_t status) {
  switch (status) {
    case DELTA_STATUS_OK:
      return "ok";
    case DELTA_STATUS_ERROR_NULL:
      return "null pointer";
    case DELTA_STATUS_ERROR_SIZE:
      return "size mismatch";
    case DELTA_STATUS_ERROR_ARGUMENT:
      return "invalid argument";
    case DELTA_STATUS_ERROR_RUNTIME:
      return "run-time error";
    case DELTA_STATUS_ERROR_OOM:
      return "out of memory";
    default:
      return "unknown status";
  }
}

int32_t delta_abi_invoke(DeltaContext* context, const DeltaAbiEntry* entry,
                         const uint64_t* args, int32_t dlpack) {
  if (context == nullptr) return DELTA_STATUS_ERROR_NULL;
  try {
    std::string error;
    // A --target=cuda library's context makes its device session on its
    // first call (no driver call yet: that fails under the guard).
    if (entry->device != nullptr && context->device_session == nullptr) {
      context->device_session =
          entry->device->create(delta_abi_alloc, delta_abi_free);
      if (context->device_session == nullptr) {
        context->last_error = "out of memory";
        return DELTA_STATUS_ERROR_OOM;
      }
      context->device = entry->device;
    }
    // num_threads = 1: this context's calls run their loops on the calling
    // thread only (the pool is the process's, shared by every context).
    delta_set_serial(context->num_threads == 1);
    int32_t status =
        Invocation(*entry, args, dlpack != 0, context->device_memory != 0,
                   context->device_session, *context->scratch)
            .Run(error);
    delta_set_serial(0);
    // The other processes would wait for this one in their collectives.
    if (status != DELTA_STATUS_OK && delta_shard_report_failure != nullptr)
      delta_shard_report_failure(error.c_str());
    context->last_error = std::move(error);
    return status;
  } catch (const std::bad_alloc&) {
    context->last_error.clear();
    return DELTA_STATUS_ERROR_OOM;
  }
}

int32_t delta_abi_result_sizes(const DeltaAbiEntry* entry, const int64_t* sizes,
                               int64_t* result_sizes) {
  if (entry == nullptr || result_sizes == nullptr ||
      (sizes == nullptr && entry->num_size_params > 0))
    return DELTA_STATUS_ERROR_NULL;
  for (int64_t i = 0; i < entry->num_size_params; ++i)
    if (sizes[i] < 0) return DELTA_STATUS_ERROR_SIZE;
  int32_t status = DELTA_STATUS_OK;
  for (int64_t i = 0; i < entry->num_results; ++i) {
    const DeltaAbiLeaf& leaf = entry->results[i];
    int64_t* first = result_sizes;
    for (int64_t k = 0; k < leaf.rank; ++k) {
      const DeltaAbiDim& dim = leaf.dims[k];
      *result_sizes++ =
          dim.size_param < 0 ? ConstantSize(dim) : sizes[dim.size_param];
    }
    int64_t count = 0;
    if (delta_element_count(leaf.rank, first, &count) != 0)
      status = DELTA_STATUS_ERROR_SIZE;  // beyond DELTA_MAX_ELEMENTS
  }
  return status;
}

void* delta_abi_alloc(int64_t bytes) {
  if (bytes < 0) delta_fail(nullptr, 0, 0, "negative allocation size");
  // From the runtime's allocator, whose caches serve the arrays a call
  // makes and drops (Note [Block cache]); the header is one aligned line,
  // so the array after it stays aligned.
  void* memory =
      delta_try_alloc(bytes + static_cast<int64_t>(sizeof(BufferHeader)));
  if (memory == nullptr) {
    if (current_guard != nullptr)
      current_guard->status = DELTA_STATUS_ERROR_OOM;
    delta_fail(nullptr, 0, 0, "out of memory allocating an array");
  }
  auto* header = static_cast<BufferHeader*>(memory);
  if (current_guard != nullptr) {
    BufferHeader& list = current_guard->buffers;
    header->prev = &list;
    header->next = list.next;
    list.next->prev = header;
    list.next = header;
  } else {
    header->prev = header->next = header;
  }
  return header + 1;
}

void* delta_abi_alloc_result(int64_t index, int64_t bytes) {
  Guard* guard = current_guard;
  if (guard != nullptr && index >= 0 && index < guard->num_results &&
      guard->offered[index] != nullptr &&
      guard->offered_bytes[index] == bytes) {
    void* buffer = guard->offered[index];
    guard->offered[index] = nullptr;  // one array per buffer
    guard->taken[index] = buffer;
    guard->any_taken = true;
    return buffer;
  }
  return delta_abi_alloc(bytes);
}

void delta_abi_free(void* pointer) {
  if (pointer == nullptr) return;
  // A result made in the caller's buffer and then dropped (an exported
  // function called by another) stays the caller's.
  if (const Guard* guard = current_guard; guard != nullptr && guard->any_taken)
    for (int64_t i = 0; i < guard->num_results; ++i)
      if (guard->taken[i] == pointer) return;
  BufferHeader* header = static_cast<BufferHeader*>(pointer) - 1;
  header->prev->next = header->next;
  header->next->prev = header->prev;
  delta_free(header);
}

}  // extern "C"

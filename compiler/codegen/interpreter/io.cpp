// Ops with effects outside the program: print, which writes the §7 text of
// its values, and read_npy and write_npy through the runtime's .npy code.
#include "compiler/codegen/interpreter/evaluator.h"
#include "runtime/args.h"
#include "runtime/distributed.h"
#include "runtime/format.h"
#include "runtime/npy.h"

namespace delta::interpreter {

Error Evaluator::RunPrint(const Op& op) {
  // Items are concatenated as they are (lowering puts the spaces between
  // print's arguments and the punctuation of tuples and structs into the
  // text items); the line ends with a newline and is written at once.
  std::string line;
  size_t next = 0;
  for (size_t i = 0; i < op.print_items.size(); ++i) {
    const PrintItem& item = op.print_items[i];
    if (!item.is_value) {
      line += item.text;
      continue;
    }
    if (next >= op.operands.size())
      return InternalError(op, "more value items than operands");
    // A sharded array is printed whole, by the root process.
    Expected<Tensor> whole = Gathered(Get(op.operands[next++]), op.loc);
    if (!whole) return whole.takeError();
    line += FormatTensor(*whole);
  }
  line += "\n";
  if (delta_shard_is_root()) interpreter_.out_ << line;
  interpreter_.out_.flush();
  return Error::success();
}

// read_npy and write_npy (runtime/npy.h): the array is passed in the
// tensor's canonical order, with the position of each file axis in it.
Error Evaluator::RunNpy(const Op& op) {
  bool read = op.kind == OpKind::ReadNpy;
  if (op.print_items.size() != 1 || op.operands.size() != (read ? 0u : 1u) ||
      op.results.size() != (read ? 1u : 0u))
    return InternalError(op, "needs a path and one array");
  // Note [Path arguments]: main's parameter number k, from the runtime.
  std::string path = op.print_items[0].is_value
                         ? delta_path_arg(std::stoll(op.print_items[0].text))
                         : op.print_items[0].text;
  Tensor tensor;
  if (read) {
    Expected<Tensor> result = New(op.results[0]->type, op.loc);
    if (!result) return result.takeError();
    tensor = std::move(*result);
  } else {
    // A sharded array is written whole, by the root process.
    Expected<Tensor> whole = Gathered(Get(op.operands[0]), op.loc);
    if (!whole) return whole.takeError();
    if (!delta_shard_is_root()) {
      delta_shard_barrier();  // until the root has written the file
      return Error::success();
    }
    tensor = std::move(*whole);
  }
  if (op.dims.size() != tensor.dims.size())
    return InternalError(op, "the dims do not match the array");
  std::vector<int64_t> axes;
  for (const Dim* dim : op.dims) {
    int64_t position = 0;
    for (const Dim* other : tensor.dims) {
      if (other == dim) break;
      ++position;
    }
    if (position == static_cast<int64_t>(tensor.dims.size()))
      return InternalError(op, "a dim is not in the array");
    axes.push_back(position);
  }
  std::string error;
  if (read) {
    // Of a sharded dim, this process's block only.
    NpyBlock block;
    for (size_t d = 0; d < tensor.dims.size(); ++d)
      if (tensor.dims[d]->sharded) {
        Expected<int64_t> size = GlobalDimSize(tensor.dims[d], op.loc);
        if (!size) return size.takeError();
        block = {static_cast<int64_t>(d), *size, delta_shard_offset(*size)};
      }
    if (!ReadNpy(path, axes, tensor, error, block))
      return LocatedError(op.loc, error);
    return SetResults(op, {std::move(tensor)});
  }
  if (!WriteNpy(path, axes, tensor, error)) return LocatedError(op.loc, error);
  delta_shard_barrier();  // the others wait for the file
  return Error::success();
}

bool ReadNpy(const std::string& path, const std::vector<int64_t>& axes,
             Tensor& tensor, std::string& error, const NpyBlock& block) {
  std::vector<const char*> names;
  for (const Dim* dim : tensor.dims) names.push_back(dim->name.c_str());
  int64_t rank = static_cast<int64_t>(tensor.shape.size());
  char message[1024];
  int status = 0;
  if (tensor.HasFloatStorage()) {
    status = delta_npy_read_block(
        path.c_str(), DELTA_ELEM_F64, rank, tensor.shape.data(), names.data(),
        axes.data(), block.dim, block.global, block.offset,
        tensor.floats.data(), message, sizeof message);
    if (tensor.elem == ElemKind::F32)
      for (double& value : tensor.floats)
        value = static_cast<double>(static_cast<float>(value));
  } else {
    status = delta_npy_read_block(
        path.c_str(), DELTA_ELEM_I64, rank, tensor.shape.data(), names.data(),
        axes.data(), block.dim, block.global, block.offset, tensor.ints.data(),
        message, sizeof message);
  }
  if (status != 0) error = message;
  return status == 0;
}

bool WriteNpy(const std::string& path, const std::vector<int64_t>& axes,
              const Tensor& tensor, std::string& error) {
  int64_t rank = static_cast<int64_t>(tensor.shape.size());
  char message[1024];
  auto write = [&](int32_t kind, const void* data) {
    return delta_npy_write(path.c_str(), kind, data, rank, tensor.shape.data(),
                           axes.data(), message, sizeof message);
  };
  int status = 0;
  switch (tensor.elem) {
    case ElemKind::F32: {
      std::vector<float> data(tensor.floats.begin(), tensor.floats.end());
      status = write(DELTA_ELEM_F32, data.data());
      break;
    }
    case ElemKind::F64:
      status = write(DELTA_ELEM_F64, tensor.floats.data());
      break;
    case ElemKind::I32: {
      std::vector<int32_t> data;
      for (int64_t value : tensor.ints)
        data.push_back(static_cast<int32_t>(value));
      status = write(DELTA_ELEM_I32, data.data());
      break;
    }
    case ElemKind::Bool: {
      std::vector<unsigned char> data;
      for (int64_t value : tensor.ints) data.push_back(value != 0 ? 1 : 0);
      status = write(DELTA_ELEM_BOOL, data.data());
      break;
    }
    default:
      status = write(DELTA_ELEM_I64, tensor.ints.data());
      break;
  }
  if (status != 0) error = message;
  return status == 0;
}

}  // namespace delta::interpreter

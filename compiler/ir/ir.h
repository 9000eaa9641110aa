// The typed SSA IR: values whose types are element types over sets of named
// dims, ops with structured regions, functions and modules. Every pass takes
// and returns this IR; see docs/internals/ir.md for the design.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/base/dim_set.h"

namespace delta::ir {

enum class OpKind {
#define DELTA_OP(Name, ...) Name,
#include "compiler/ir/ops.def"
};

// What ops.def says of each op; the meaning of each column is there.
enum class OpArity { Unary, Binary, Ternary, Other };
enum class OpElements { Float, Numeric, Bool, Any };
enum class OpDerivative { Partials, None, Linear, Structural };
enum OpFlag : unsigned {
  kExact = 1u << 0,
  kMathCall = 1u << 1,
  kLibm = 1u << 2,
  kCompare = 1u << 3,
  kEffect = 1u << 4,
  kMayFail = 1u << 5,
  kFailsOnIntegers = 1u << 6,
  kMovesNoData = 1u << 7,
};
struct OpInfo {
  llvm::StringRef mnemonic;
  OpArity arity;
  OpElements elements;
  OpDerivative derivative;
  unsigned flags;
  bool Has(OpFlag flag) const { return (flags & flag) != 0; }
};
const OpInfo& InfoOf(OpKind kind);

inline llvm::StringRef OpMnemonic(OpKind kind) { return InfoOf(kind).mnemonic; }
inline bool HasFlag(OpKind kind, OpFlag flag) { return InfoOf(kind).Has(flag); }
inline bool IsElementwiseUnary(OpKind kind) {
  return InfoOf(kind).arity == OpArity::Unary;
}
inline bool IsElementwiseBinary(OpKind kind) {
  return InfoOf(kind).arity == OpArity::Binary;
}
// Unary, binary and select: one result element per point of the operands.
inline bool IsElementwise(OpKind kind) {
  return InfoOf(kind).arity != OpArity::Other;
}

enum class ElemKind { F32, F64, I32, I64, Bool, Index };

llvm::StringRef ElemName(ElemKind kind);
inline bool IsFloat(ElemKind kind) {
  return kind == ElemKind::F32 || kind == ElemKind::F64;
}
inline bool IsInteger(ElemKind kind) {
  return kind == ElemKind::I32 || kind == ElemKind::I64;
}

class Value;
class Op;
class Block;
class Function;
class Module;

// A named dimension. Its size is a compile-time constant, or the i64 value
// `size` of the function that declares it (a size parameter or local dim).
struct Dim {
  std::string name;
  int64_t order = 0;  // canonical order: printing and memory layout
  std::optional<int64_t> constant;
  Value* size = nullptr;
  // Split across the processes of a sharded run (docs/distributed.md).
  // Until the distribute pass, constant/size give the whole dim; the pass
  // moves a constant to global_constant, so that code after it asks the
  // runtime for the extent of the block a process holds.
  bool sharded = false;
  std::optional<int64_t> global_constant;
};

// A set of dims, sorted by canonical order (the same set as sema's DimSet,
// over the IR's dims).
using DimList = SortedDimSet<Dim>;

// Element kind over a set of dims. A scalar has no dims.
struct Type {
  ElemKind elem = ElemKind::F32;
  const Dim* index_dim = nullptr;  // for ElemKind::Index
  DimList dims;

  bool IsScalar() const { return dims.empty(); }
  Type WithDims(DimList new_dims) const {
    Type type = *this;
    type.dims = std::move(new_dims);
    return type;
  }
  bool operator==(const Type& other) const {
    return elem == other.elem && index_dim == other.index_dim &&
           dims == other.dims;
  }
  bool operator!=(const Type& other) const { return !(*this == other); }
};

std::string TypeString(const Type& type);

// A region's index arguments: an index of each dim of `dims`, in order.
template <typename Dims>
std::vector<Type> IndexTypes(const Dims& dims) {
  std::vector<Type> types;
  for (const Dim* dim : dims) types.push_back(Type{ElemKind::Index, dim, {}});
  return types;
}

// A source location for run-time errors, resolved at lowering so that the
// IR does not depend on the source manager.
// One call that an op was inlined through: `caller` called `callee` at
// file:line:column. A call that the compiler made (AD calls the primal
// from a copy of it) has no line: it is not shown, but it keeps the name of
// the function the ops came from.
struct CallSite {
  std::string callee;
  std::string caller;
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
};

struct Loc {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
  // The calls this op was inlined through, innermost first, so that a
  // run-time error can show the chain of calls (Note [Call chains]); null
  // for none. Shared and never changed: every op copied through the same
  // calls holds the same chain, and copying a location stays cheap.
  std::shared_ptr<const std::vector<CallSite>> inlined_at;
  bool IsValid() const { return line != 0; }
};

// The chain of calls under a run-time error at `loc`, one line each
// ("  in f at a.dl:3:9", "  called from main at a.dl:7:3"), or "" for an
// op that was not inlined and runs in no call. `active` holds the calls
// still running when calls are not inlined (-O0), innermost first. The
// interpreter and compiled code print the same.
std::string CallChainText(const Loc& loc, llvm::ArrayRef<CallSite> active = {});
// One line of such a chain: "  called from main at a.dl:7:3\n".
std::string CalledFromText(const CallSite& site);
// The site of `call` (an op of `caller`) for the chain: what inlining
// records, and what a call that is not inlined pushes at run time.
CallSite SiteOfCall(const Op& call, const Function& caller);

// An SSA value: the result of an op or an argument of a block.
class Value {
 public:
  Type type;
  Op* def = nullptr;       // null for block arguments
  Block* block = nullptr;  // the block whose argument this is
  unsigned index = 0;      // result or argument position
  std::string name;        // a hint for printing (the user's name)
};

enum class ReduceKind { Sum, Prod, Max, Min, Argmax, Argmin };
llvm::StringRef ReduceName(ReduceKind kind);
// argmax and argmin: their result is an index of the one dim they reduce.
inline bool IsArgExtremum(ReduceKind kind) {
  return kind == ReduceKind::Argmax || kind == ReduceKind::Argmin;
}

// One part of a print: literal text or the next operand.
struct PrintItem {
  bool is_value = false;
  std::string text;
};

class Op {
 public:
  OpKind kind;
  std::vector<Value*> operands;
  std::vector<Value*> results;
  std::vector<std::unique_ptr<Block>> regions;
  Block* parent = nullptr;
  Loc loc;

  // Attributes; which ones an op uses is documented in ops.def.
  std::vector<const Dim*> dims;
  double float_value = 0;
  int64_t int_value = 0;
  ReduceKind reduce = ReduceKind::Sum;
  Function* callee = nullptr;
  // A call that reverse-mode AD keeps as a call and recomputes in the
  // backward sweep instead of storing its intermediates (`checkpoint(f)`).
  bool checkpoint = false;
  std::vector<PrintItem> print_items;

  explicit Op(OpKind kind) : kind(kind) {}
  Value* result(unsigned i = 0) const { return results[i]; }
  Block* region(unsigned i) const { return regions[i].get(); }
};

// A straight-line list of ops with arguments; a region is one block that
// ends with a yield (or return in a function body).
class Block {
 public:
  std::vector<Value*> args;
  std::vector<std::unique_ptr<Op>> ops;
  Op* parent = nullptr;  // the op that owns this region; null for a body
  Function* function = nullptr;

  Op* terminator() const { return ops.empty() ? nullptr : ops.back().get(); }
};

// What an AD-derived function computes (docs/internals/ad.md); lowering
// creates it with an empty body and the AD pass fills it.
struct Derivative {
  enum class Mode { Gradient, Vjp, Jvp };
  Mode mode = Mode::Gradient;
  Function* primal = nullptr;
  // Gradient: which primal parameters (by parameter leaf) are differentiated.
  // Jvp: which parameter leaves take a tangent (the others are constants
  // whose tangent is zero); empty means every float parameter.
  std::vector<bool> wrt;
  bool with_value = false;  // Gradient: also return the primal results
};

class Function {
 public:
  std::string name;
  bool is_export = false;
  // A lambda lowered to a function of its own: no user can call it by name,
  // so it goes when nothing calls it (opt::InlineCalls).
  bool anonymous = false;
  std::optional<Derivative> derivative;
  // The @vjp rule of this function, if it has one: it takes the primal's
  // parameters, its results and their cotangents, and returns the
  // cotangents of the float parameter leaves.
  Function* custom_vjp = nullptr;
  // Every dim this function declares; the first size_params.size() are its
  // size parameters, whose sizes are the i64 values in `size_params` (those
  // values are not block arguments; callers pass sizes through call dims).
  std::vector<Dim*> dims;
  std::vector<Value*> size_params;
  std::vector<Value*> params;  // the arguments of `body`
  std::vector<std::string> param_names;
  std::vector<Type> result_types;
  std::unique_ptr<Block> body;
  Module* module = nullptr;

  Value* NewValue(Type type, std::string name = "");
  // Appends a parameter: an argument of the body, with its name.
  Value* AddParam(Type type, std::string name = "");
  Dim* NewDim(std::string name, std::optional<int64_t> constant, Value* size);
  // A new dim laid out outside every ordinary dim (a tape's steps: each
  // step's slice is contiguous); see Module::NextOuterDimOrder.
  Dim* NewOuterDim(std::string name, std::optional<int64_t> constant,
                   Value* size);
  // A copy of `dim` (constant size or none yet) under `name`, outermost if
  // `dim` was: inlining and differentiation keep a tape's layout.
  Dim* CopyDim(const Dim& dim, std::string name);

 private:
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Dim>> owned_dims_;
};

// A parameter of the program's `main`, filled from the command line
// (docs/language/io.md): a scalar that is one of main's IR parameters, in
// order, or a file path, which has no IR value (a read_npy or write_npy
// names it by its position: Note [Path arguments]).
//
// Note [Path arguments]: the IR has no string values, so the read_npy or
// write_npy of a file named by main's parameter number k (counting every
// parameter) carries print_items {{true, "k"}} instead of the literal's
// {{false, "file.npy"}}; generated code and the interpreter take the text
// from the runtime's delta_path_arg(k) (runtime/args.h).
struct ProgramParam {
  std::string name;
  std::optional<ElemKind> elem;  // empty: a path
};

// A size that main takes from a file before it runs,
// `dim n = npy_extent(data, 0);` (docs/language/io.md): the extent of axis
// `axis` of the .npy file named by main's parameter `path_param` (a path).
// Each is one more i64 parameter of main's IR function, after those of
// main_params; `loc` is the npy_extent's, for errors.
struct FileExtent {
  int64_t path_param = 0;
  int64_t axis = 0;
  Loc loc;
};

class Module {
 public:
  std::string name;
  std::vector<std::unique_ptr<Function>> functions;
  std::vector<std::unique_ptr<Dim>> dims;  // module-level constant dims
  std::vector<ProgramParam> main_params;   // every parameter of `main`
  std::vector<FileExtent> main_extents;    // sizes main reads from files

  Function* AddFunction(std::string name);
  Function* FindFunction(llvm::StringRef name) const;
  Dim* AddDim(std::string name, int64_t size);
  // Whether a module dim is sharded (`@shard dim`, docs/distributed.md).
  bool IsSharded() const;
  // The next canonical position for a new dim, shared by all functions.
  int64_t NextDimOrder() { return next_dim_order_++; }
  // A position before every ordinary dim and after the outer dims made
  // before: the outermost in memory. A loop's tape steps are made before
  // those of the loops in its body, so a nested tape is laid out
  // [outer steps, inner steps, ...] and each outer step's slice is
  // contiguous.
  int64_t NextOuterDimOrder() {
    return kOuterDimBase + next_outer_dim_order_++;
  }

 private:
  static constexpr int64_t kOuterDimBase = INT64_MIN / 2;
  int64_t next_dim_order_ = 0;
  int64_t next_outer_dim_order_ = 0;
};

}  // namespace delta::ir

// Semantic types: scalars and index types over unordered sets of named dims,
// tuples, structs, function values, and flexible literal types.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/base/dim_set.h"
#include "compiler/base/span.h"

namespace delta::ast {
class StructDecl;
}

namespace delta::sema {

struct Callable;
struct StructInfo;
struct ModuleInfo;

// A dimension: a name with a size. Two DimInfos are never the same dim.
struct DimInfo {
  enum class Kind { Module, SizeParam, Local };
  Kind kind = Kind::Module;
  llvm::StringRef name;
  Span span;
  // Canonical position: the order in which dims were declared (imported
  // modules first). Printing and memory layout go by it.
  uint32_t order = 0;
  std::optional<int64_t> constant_size;  // known at compile time
  // `@shard dim`: split across the processes of a run (docs/distributed.md).
  bool sharded = false;
  const ModuleInfo* module = nullptr;  // where a module dim lives
};

// A set of dims, kept sorted by canonical order (lowering turns it into
// the IR's DimList, the same set over the IR's dims).
using DimSet = SortedDimSet<DimInfo>;

// A type parameter of a generic function (docs/language/generics.md):
// `P: space`, inside the body any vector space whose leaves are `leaf`
// (f32, or the function's float parameter `T`), or `T: float`.
enum class ScalarKind { F32, F64, I32, I64, Bool, Float };

struct TypeParamInfo {
  llvm::StringRef name;
  Span span;
  ScalarKind leaf = ScalarKind::F32;  // `P: space`: the kind of its leaves
};

// `Float` is a generic function's float type parameter `T` (`[T: float]`):
// f32 or f64, chosen at each call (Note [Float type parameters]).
llvm::StringRef ScalarName(ScalarKind kind);
bool IsFloat(ScalarKind kind);
bool IsInteger(ScalarKind kind);

// A flexible literal type `{int}` or `{float}`, solved by unification.
using LitVarId = uint32_t;

class Type {
 public:
  enum class Kind {
    Error,      // after a reported error; compatible with everything
    Scalar,     // f32[dims]
    Index,      // an index of `index_dim`, possibly over dims: vocab[batch]
    LitVar,     // {int}[dims] / {float}[dims]
    Tuple,      // (T1, T2); lifting is pushed into the elements
    Struct,     // Name[args][lift dims]
    Function,   // a compile-time function value
    TypeParam,  // `P` of a generic function's `[P: space]`
  };

  Kind kind = Kind::Error;
  ScalarKind scalar = ScalarKind::F32;      // Scalar
  const DimInfo* index_dim = nullptr;       // Index
  LitVarId var = 0;                         // LitVar
  DimSet dims;                              // leaves: array dims; Struct: lift
  std::vector<const Type*> elements;        // Tuple
  const StructInfo* struct_info = nullptr;  // Struct
  std::vector<const DimInfo*> struct_args;  // Struct: size arguments
  // Struct: the float argument of a struct with `T: float` (`Dense[f64, i,
  // o]`; Float is the enclosing function's `T`); F32 for every other struct.
  ScalarKind struct_float = ScalarKind::F32;
  const Callable* callable = nullptr;         // Function
  const TypeParamInfo* type_param = nullptr;  // TypeParam

  bool IsError() const { return kind == Kind::Error; }
  bool IsLeaf() const {
    return kind == Kind::Scalar || kind == Kind::Index || kind == Kind::LitVar;
  }
  bool IsUnit() const { return kind == Kind::Tuple && elements.empty(); }
  bool IsScalarOf(ScalarKind k) const {
    return kind == Kind::Scalar && scalar == k && dims.empty();
  }
};

// Owns every type. Types are immutable once made.
class TypeContext {
 public:
  TypeContext();
  const Type* Error() const { return error_; }
  const Type* Unit() const { return unit_; }
  const Type* Scalar(ScalarKind kind, DimSet dims = {});
  const Type* Index(const DimInfo* dim, DimSet dims = {});
  const Type* LitVar(LitVarId var, DimSet dims = {});
  const Type* Tuple(std::vector<const Type*> elements);
  const Type* Struct(const StructInfo* info, std::vector<const DimInfo*> args,
                     DimSet lift = {}, ScalarKind float_arg = ScalarKind::F32);
  const Type* Function(const Callable* callable);
  const Type* TypeParam(const TypeParamInfo* param);

  // `type` with its leaf dims (or struct lift dims) replaced.
  const Type* WithDims(const Type* type, DimSet dims);
  DimInfo* NewDim(DimInfo info);
  uint32_t NextDimOrder() { return next_dim_order_++; }

 private:
  const Type* Make(Type type);
  std::vector<std::unique_ptr<Type>> types_;
  std::vector<std::unique_ptr<DimInfo>> dims_;
  const Type* error_;
  const Type* unit_;
  uint32_t next_dim_order_ = 0;
};

}  // namespace delta::sema

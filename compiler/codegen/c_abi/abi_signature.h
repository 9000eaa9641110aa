// The C view of a module's `export fn`s: which C parameters, structs and
// argument slots each one has. The header writer and the entry wrappers
// both read it, so the declaration and the definition cannot disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"
#include "compiler/sema/program.h"

namespace delta::c_abi {

// A dim as the signature writes it: a size parameter (by position), a
// constant, or the sharded dim (kSharded; constant: its global size).
struct AbiDim {
  static constexpr int kSharded = -2;  // DELTA_ABI_SHARDED (context.h)
  std::string name;
  int size_param = -1;
  int64_t constant = 0;
};

// One array or scalar leaf of a parameter or result.
struct AbiLeaf {
  std::string path;    // "p.l1.w" for messages and comments
  std::string c_name;  // "p_l1_w": its name as a C parameter or in DLPack
  std::string field;   // "w": its field name inside a C struct
  ir::ElemKind elem = ir::ElemKind::F32;
  std::vector<AbiDim> dims;          // written order
  std::vector<int> canonical_order;  // written position of each memory dim
  std::optional<AbiDim> index_dim;   // for index leaves
  std::string delta_type;            // "f32[n, feat]"
  int slot = 0;                      // see DeltaAbiLeaf in runtime/context.h
  int offset = -1;
  int dl_slot = 0;
};

// A C struct for a Delta struct type: fields in declaration order, each an
// array (pointer then sizes), a scalar, or a nested struct by value. Two
// instantiations with the same C fields share one.
struct AbiStruct {
  std::string c_name;      // "model_Mlp"
  std::string delta_type;  // "Mlp"
  struct Field {
    std::string decl;     // "float* w; int64_t w_sizes[2];"
    std::string comment;  // what the sizes are
  };
  std::vector<Field> fields;
  int64_t size = 0;
  int64_t align = 1;
};

// A C-level parameter: a leaf passed directly, or a pointer to a struct
// whose leaves are leaves[first, first + count).
struct AbiParam {
  std::string c_name;
  std::string delta_type;
  int struct_index = -1;  // into AbiModule::structs; -1 for a direct leaf
  int first = 0;
  int count = 1;
};

struct AbiEntry {
  const ir::Function* function = nullptr;
  std::string delta_name;
  std::string c_name;     // "model_loss"
  std::string signature;  // the Delta declaration as written
  std::string doc;        // the comment lines above it
  std::vector<std::string> size_params;
  std::vector<int> explicit_size_slot;  // per size parameter, or -1
  std::vector<AbiParam> params, results;
  std::vector<AbiLeaf> param_leaves, result_leaves;
  int num_slots = 0;                // plain entry: slots after the context
  int num_dl_slots = 0;             // DLPack entry
  bool result_sizes_query = false;  // some result dim is a size parameter
};

struct AbiModule {
  std::string prefix;        // "model": C names start with it
  std::string macro_prefix;  // "MODEL"
  std::string source_name;   // "model.dl"
  std::vector<std::pair<std::string, int64_t>> constant_dims;
  std::string sharded_dim;  // the @shard dim, if any (also a constant dim)
  std::vector<AbiStruct> structs;
  std::vector<AbiEntry> entries;
};

// One argument of a C entry after the context, in order; the wrappers
// store argument i in slot i.
struct CArg {
  enum class Kind { Size, Pointer, Scalar };
  Kind kind = Kind::Pointer;
  ir::ElemKind elem = ir::ElemKind::F32;  // Scalar
  std::string c_type;                     // "const float*", "int64_t"
  std::string name;
};

// The arguments of the plain entry and of the DLPack entry.
std::vector<CArg> PlainArgs(const AbiModule& abi, const AbiEntry& entry);
std::vector<CArg> DlpackArgs(const AbiEntry& entry);

// The C type of an element ("float", "bool", "int64_t" for an index).
std::string CElemType(ir::ElemKind elem);

// The C identifier for a library built from `stem` (non-identifier
// characters become `_`).
std::string LibraryPrefix(const std::string& stem);

// Describes every `export fn` of the main module of `program`, whose IR is
// `module`. Returns false with `error` set for a signature the C ABI cannot
// express (a function-typed parameter).
bool DescribeLibrary(const sema::Program& program, const ir::Module& module,
                     const std::string& prefix, AbiModule& abi,
                     std::string& error);

}  // namespace delta::c_abi

// Builds the C view of each `export fn` from its checked declaration (for
// the written dim order and struct shapes) and its IR (for the layout).
#include "compiler/codegen/c_abi/abi_signature.h"

#include <llvm/ADT/ScopeExit.h>
#include <llvm/ADT/StringExtras.h>

#include <map>

namespace delta::c_abi {
namespace {

// A module dim's whole size; the distribute pass moved a sharded dim's to
// global_constant.
int64_t GlobalSize(const ir::Dim& dim) {
  return dim.constant.value_or(dim.global_constant.value_or(0));
}

using NameMap = std::map<std::string, std::string>;

std::string Substitute(const NameMap& names, llvm::StringRef name) {
  auto it = names.find(name.str());
  return it == names.end() ? name.str() : it->second;
}

// The dims written in `brackets`, renamed through `names`.
std::vector<std::string> WrittenDims(const std::vector<ast::DimList>& brackets,
                                     size_t first, const NameMap& names) {
  std::vector<std::string> dims;
  for (size_t i = first; i < brackets.size(); ++i)
    for (const ast::Ident& dim : brackets[i])
      dims.push_back(Substitute(names, dim.name));
  return dims;
}

// C and C++ keywords a Delta name could be; they get a trailing `_`.
bool IsCKeyword(const std::string& name) {
  static const char* const kKeywords[] = {
      "auto",     "break",    "case",     "char",    "class",  "const",
      "continue", "default",  "delete",   "do",      "double", "else",
      "enum",     "extern",   "float",    "goto",    "inline", "int",
      "long",     "new",      "operator", "private", "public", "register",
      "restrict", "return",   "short",    "signed",  "sizeof", "static",
      "switch",   "template", "this",     "typedef", "union",  "unsigned",
      "void",     "volatile", "bool",     "true",    "false",  "ctx"};
  for (const char* keyword : kKeywords)
    if (name == keyword) return true;
  return false;
}

int64_t AlignTo(int64_t offset, int64_t align) {
  return (offset + align - 1) / align * align;
}

std::string ElemText(const AbiLeaf& leaf) {
  if (leaf.index_dim) return leaf.index_dim->name;
  return ir::ElemName(leaf.elem).str();
}

std::string LeafTypeText(const AbiLeaf& leaf) {
  std::string text = ElemText(leaf);
  if (leaf.dims.empty()) return text;
  text += "[";
  for (size_t i = 0; i < leaf.dims.size(); ++i)
    text += (i ? ", " : "") + leaf.dims[i].name;
  return text + "]";
}

// "Dense[feat, hidden]": a struct type with its size (and float) arguments.
std::string InstanceText(const sema::Type* type) {
  std::string text = type->struct_info->decl->name.name.str();
  std::string args;
  if (type->struct_info->float_generic &&
      type->struct_float != sema::ScalarKind::F32)
    args = sema::ScalarName(type->struct_float).str();
  for (const sema::DimInfo* arg : type->struct_args)
    args += (args.empty() ? "" : ", ") + arg->name.str();
  return args.empty() ? text : text + "[" + args + "]";
}

// A leaf found by walking a declared type, before its IR facts are known.
struct PendingLeaf {
  std::string path, c_name, field;
  std::vector<std::string> written;
};

class Describer {
 public:
  Describer(const sema::Program& program, AbiModule& abi, std::string& error)
      : program_(program), abi_(abi), error_(error) {}

  bool DescribeEntry(const sema::FnInfo& fn, const ir::Function& function);

 private:
  // Adds the C parameters of one Delta parameter (or the result).
  bool AddParam(const sema::Type* type, const ast::TypeExpr* expr,
                const std::string& c_name, const std::string& path,
                std::vector<std::string> lifts);
  // Walks a struct type into C fields; returns its AbiModule::structs index
  // and appends its leaves with offsets from the struct's start.
  int BuildStruct(const sema::Type* type, const ast::TypeExpr* expr,
                  const NameMap& names, std::vector<std::string> lifts,
                  const std::string& path, std::vector<PendingLeaf>& leaves,
                  std::vector<int64_t>& offsets);
  void AddFields(const sema::Type* type, const ast::TypeExpr* expr,
                 const NameMap& names, const std::vector<std::string>& lifts,
                 const std::string& path, const std::string& field,
                 AbiStruct& c_struct, int64_t& cursor,
                 std::vector<PendingLeaf>& leaves,
                 std::vector<int64_t>& offsets);
  bool Resolve(const ir::Type& type, const PendingLeaf& pending, AbiLeaf& leaf);
  bool Unsupported(const std::string& what) {
    error_ = entry_->delta_name + ": " + what +
             " cannot be passed through the C ABI";
    return false;
  }

  const sema::Program& program_;
  AbiModule& abi_;
  std::string& error_;
  // The `T` of the float-generic struct whose fields are being described.
  sema::ScalarKind struct_float_ = sema::ScalarKind::F32;
  AbiEntry* entry_ = nullptr;
  const ir::Function* function_ = nullptr;
  std::vector<PendingLeaf>* pending_ = nullptr;
  std::vector<AbiLeaf>* leaves_ = nullptr;
  std::vector<AbiParam>* params_ = nullptr;
};

bool Describer::AddParam(const sema::Type* type, const ast::TypeExpr* expr,
                         const std::string& c_name, const std::string& path,
                         std::vector<std::string> lifts) {
  NameMap no_names;
  switch (type->kind) {
    case sema::Type::Kind::Tuple: {
      if (expr) {
        std::vector<std::string> more = WrittenDims(expr->brackets, 0, {});
        lifts.insert(lifts.end(), more.begin(), more.end());
      }
      for (size_t i = 0; i < type->elements.size(); ++i) {
        const ast::TypeExpr* element =
            expr && i < expr->elements.size() ? expr->elements[i] : nullptr;
        if (!AddParam(type->elements[i], element,
                      c_name + "_" + std::to_string(i),
                      path + "." + std::to_string(i), lifts))
          return false;
      }
      return true;
    }
    case sema::Type::Kind::Struct: {
      std::vector<PendingLeaf> leaves;
      std::vector<int64_t> offsets;
      int index =
          BuildStruct(type, expr, no_names, lifts, path, leaves, offsets);
      AbiParam param;
      param.c_name = c_name;
      param.delta_type = InstanceText(type);
      param.struct_index = index;
      param.first = static_cast<int>(pending_->size());
      param.count = static_cast<int>(leaves.size());
      for (size_t i = 0; i < leaves.size(); ++i) {
        pending_->push_back(leaves[i]);
        AbiLeaf leaf;
        leaf.offset = static_cast<int>(offsets[i]);
        leaves_->push_back(leaf);
      }
      params_->push_back(param);
      return true;
    }
    case sema::Type::Kind::Function:
      return Unsupported("a function-typed parameter");
    default:
      break;
  }
  PendingLeaf leaf;
  leaf.path = path;
  leaf.c_name = c_name;
  if (expr) leaf.written = WrittenDims(expr->brackets, 0, no_names);
  leaf.written.insert(leaf.written.end(), lifts.begin(), lifts.end());
  AbiParam param;
  param.c_name = c_name;
  param.first = static_cast<int>(pending_->size());
  pending_->push_back(leaf);
  leaves_->push_back(AbiLeaf());
  params_->push_back(param);
  return true;
}

int Describer::BuildStruct(const sema::Type* type, const ast::TypeExpr* expr,
                           const NameMap& names, std::vector<std::string> lifts,
                           const std::string& path,
                           std::vector<PendingLeaf>& leaves,
                           std::vector<int64_t>& offsets) {
  const sema::StructInfo* info = type->struct_info;
  // A field's `T` is this instance's float type (a nested `Dense[T, …]`
  // keeps the outer one).
  sema::ScalarKind saved_float = struct_float_;
  if (info->float_generic && type->struct_float != sema::ScalarKind::Float)
    struct_float_ = type->struct_float;
  auto restore = llvm::make_scope_exit([&] { struct_float_ = saved_float; });
  // The fields are written in terms of the struct's size parameters.
  NameMap field_names;
  for (size_t i = 0; i < info->size_params.size(); ++i)
    if (i < type->struct_args.size())
      field_names[info->size_params[i]->name.str()] =
          type->struct_args[i]->name.str();
  if (expr) {
    std::vector<std::string> more =
        WrittenDims(expr->brackets, expr->first_lift, names);
    lifts.insert(lifts.begin(), more.begin(), more.end());
  }
  AbiStruct c_struct;
  // The C struct serves every instantiation: it is documented generically.
  c_struct.delta_type = info->decl->name.name.str();
  std::string generic = info->float_generic ? "T" : "";
  for (size_t i = 0; i < info->size_params.size(); ++i)
    generic += (generic.empty() ? "" : ", ") + info->size_params[i]->name.str();
  if (!generic.empty()) c_struct.delta_type += "[" + generic + "]";
  int64_t cursor = 0;
  for (size_t i = 0; i < info->field_types.size(); ++i) {
    const ast::TypeExpr* field_expr =
        i < info->decl->fields.size() ? info->decl->fields[i].type : nullptr;
    std::string field = info->field_names[i].str();
    AddFields(info->field_types[i], field_expr, field_names, lifts,
              path + "." + field, field, c_struct, cursor, leaves, offsets);
  }
  c_struct.size = AlignTo(cursor, c_struct.align);
  // Two instantiations with the same C layout share one C struct.
  std::string base = abi_.prefix + "_" + info->decl->name.name.str();
  int same_name = 0;
  for (size_t i = 0; i < abi_.structs.size(); ++i) {
    AbiStruct& other = abi_.structs[i];
    if (other.c_name.rfind(base, 0) != 0) continue;
    bool same = other.fields.size() == c_struct.fields.size();
    for (size_t f = 0; same && f < other.fields.size(); ++f)
      same = other.fields[f].decl == c_struct.fields[f].decl;
    if (same) return static_cast<int>(i);
    ++same_name;
  }
  c_struct.c_name =
      same_name == 0 ? base : base + "_" + std::to_string(same_name + 1);
  abi_.structs.push_back(std::move(c_struct));
  return static_cast<int>(abi_.structs.size() - 1);
}

void Describer::AddFields(const sema::Type* type, const ast::TypeExpr* expr,
                          const NameMap& names,
                          const std::vector<std::string>& lifts,
                          const std::string& path, const std::string& field,
                          AbiStruct& c_struct, int64_t& cursor,
                          std::vector<PendingLeaf>& leaves,
                          std::vector<int64_t>& offsets) {
  if (type->kind == sema::Type::Kind::Tuple) {
    std::vector<std::string> inner = lifts;
    if (expr) {
      std::vector<std::string> more = WrittenDims(expr->brackets, 0, names);
      inner.insert(inner.begin(), more.begin(), more.end());
    }
    for (size_t i = 0; i < type->elements.size(); ++i)
      AddFields(type->elements[i],
                expr && i < expr->elements.size() ? expr->elements[i] : nullptr,
                names, inner, path + "." + std::to_string(i),
                field + "_" + std::to_string(i), c_struct, cursor, leaves,
                offsets);
    return;
  }
  if (type->kind == sema::Type::Kind::Struct) {
    std::vector<PendingLeaf> inner;
    std::vector<int64_t> inner_offsets;
    int index =
        BuildStruct(type, expr, names, lifts, path, inner, inner_offsets);
    const AbiStruct& nested = abi_.structs[index];
    cursor = AlignTo(cursor, nested.align);
    for (size_t i = 0; i < inner.size(); ++i) {
      leaves.push_back(inner[i]);
      offsets.push_back(cursor + inner_offsets[i]);
    }
    c_struct.fields.push_back(
        {nested.c_name + " " + field + ";", InstanceText(type)});
    c_struct.align = std::max(c_struct.align, nested.align);
    cursor += nested.size;
    return;
  }
  PendingLeaf leaf;
  leaf.path = path;
  leaf.c_name = field;
  leaf.field = field;
  if (expr) leaf.written = WrittenDims(expr->brackets, 0, names);
  leaf.written.insert(leaf.written.end(), lifts.begin(), lifts.end());
  // The C declaration needs the element type, known from sema here.
  std::string c_type = "int64_t";
  int64_t size = 8;
  if (type->kind == sema::Type::Kind::Scalar) {
    // `T` is the struct's float argument (an export fn is never generic).
    sema::ScalarKind scalar =
        type->scalar == sema::ScalarKind::Float ? struct_float_ : type->scalar;
    switch (scalar) {
      case sema::ScalarKind::F32:
      case sema::ScalarKind::Float:
        c_type = "float", size = 4;
        break;
      case sema::ScalarKind::F64:
        c_type = "double";
        break;
      case sema::ScalarKind::I32:
        c_type = "int32_t", size = 4;
        break;
      case sema::ScalarKind::I64:
        break;
      case sema::ScalarKind::Bool:
        c_type = "bool", size = 1;
        break;
    }
  }
  // The comment names the struct's own dims (`i, o`), not this instance's.
  std::vector<std::string> local;
  if (expr) local = WrittenDims(expr->brackets, 0, {});
  local.insert(local.end(), lifts.begin(), lifts.end());
  std::string written_text;
  for (size_t i = 0; i < local.size(); ++i)
    written_text += (i ? ", " : "") + local[i];
  if (leaf.written.empty()) {
    cursor = AlignTo(cursor, size);
    offsets.push_back(cursor);
    cursor += size;
    c_struct.align = std::max(c_struct.align, size);
    c_struct.fields.push_back({c_type + " " + field + ";", ""});
  } else {
    cursor = AlignTo(cursor, 8);
    offsets.push_back(cursor);
    cursor += 8 * (1 + static_cast<int64_t>(leaf.written.size()));
    c_struct.align = std::max<int64_t>(c_struct.align, 8);
    c_struct.fields.push_back({c_type + "* " + field + "; int64_t " + field +
                                   "_sizes[" +
                                   std::to_string(leaf.written.size()) + "];",
                               "sizes of " + written_text});
  }
  leaves.push_back(leaf);
}

// Fills a leaf's element kind, dims and layout from its IR type.
bool Describer::Resolve(const ir::Type& type, const PendingLeaf& pending,
                        AbiLeaf& leaf) {
  leaf.path = pending.path;
  leaf.c_name = pending.c_name;
  leaf.field = pending.field;
  leaf.elem = type.elem;
  auto abi_dim = [&](const ir::Dim* dim) {
    AbiDim result;
    result.name = dim->name;
    for (size_t i = 0; i < function_->size_params.size(); ++i)
      if (function_->dims[i] == dim) result.size_param = static_cast<int>(i);
    if (result.size_param < 0) result.constant = GlobalSize(*dim);
    if (dim->sharded) result.size_param = AbiDim::kSharded;
    return result;
  };
  if (type.elem == ir::ElemKind::Index)
    leaf.index_dim = abi_dim(type.index_dim);
  // The written order, matched by name to the IR dims; where the names do
  // not match (an unforeseen spelling), memory order is the written order.
  std::vector<int> position(pending.written.size(), -1);
  bool matched = pending.written.size() == type.dims.size();
  for (size_t w = 0; matched && w < pending.written.size(); ++w) {
    for (size_t k = 0; k < type.dims.size(); ++k)
      if (type.dims[k]->name == pending.written[w]) position[w] = k;
    matched = position[w] >= 0;
  }
  leaf.canonical_order.assign(type.dims.size(), 0);
  for (size_t w = 0; w < type.dims.size(); ++w) {
    size_t k = matched ? static_cast<size_t>(position[w]) : w;
    leaf.canonical_order[k] = static_cast<int>(w);
    leaf.dims.push_back(abi_dim(type.dims[k]));
  }
  leaf.delta_type = LeafTypeText(leaf);
  return true;
}

bool Describer::DescribeEntry(const sema::FnInfo& fn,
                              const ir::Function& function) {
  const ast::FnDecl* decl = fn.decl;
  AbiEntry entry;
  entry.function = &function;
  entry.delta_name = decl->name.name.str();
  entry.c_name = abi_.prefix + "_" + entry.delta_name;
  entry_ = &entry;
  function_ = &function;
  // The declaration as written, up to its body, on one line.
  if (decl->span.IsValid() && decl->body && decl->body->span.IsValid()) {
    llvm::StringRef text(decl->span.begin,
                         decl->body->span.begin - decl->span.begin);
    llvm::SmallVector<llvm::StringRef, 8> words;
    text.split(words, ' ', -1, false);
    for (llvm::StringRef word : words) {
      llvm::StringRef trimmed = word.trim();
      if (trimmed.empty()) continue;
      if (!entry.signature.empty()) entry.signature += " ";
      entry.signature += trimmed.str();
    }
    // The `//` lines just above it document the entry.
    unsigned buffer =
        program_.sources.FindBufferContainingLoc(decl->span.Start());
    if (buffer) {
      const char* start =
          program_.sources.getMemoryBuffer(buffer)->getBufferStart();
      llvm::StringRef before(start, decl->span.begin - start);
      llvm::SmallVector<llvm::StringRef, 16> lines;
      before.split(lines, '\n');
      if (!lines.empty()) lines.pop_back();  // the declaration's own line
      std::vector<std::string> doc;
      while (!lines.empty() && lines.back().trim().starts_with("//")) {
        doc.insert(doc.begin(), lines.back()
                                    .trim()
                                    .drop_while([](char c) { return c == '/'; })
                                    .trim()
                                    .str());
        lines.pop_back();
      }
      for (const std::string& line : doc) entry.doc += line + "\n";
    }
  }
  for (const sema::DimInfo* size : fn.signature.size_params)
    entry.size_params.push_back(size->name.str());
  // Explicit size parameters (no parameter's dims say them) come first in
  // both entries.
  std::vector<bool> mentioned(entry.size_params.size(), false);
  auto mark = [&](const ir::Type& type) {
    for (const ir::Dim* dim : type.dims)
      for (size_t i = 0; i < function.size_params.size(); ++i)
        if (function.dims[i] == dim) mentioned[i] = true;
    if (type.index_dim)
      for (size_t i = 0; i < function.size_params.size(); ++i)
        if (function.dims[i] == type.index_dim) mentioned[i] = true;
  };
  for (const ir::Value* param : function.params) mark(param->type);
  for (size_t i = 0; i < entry.size_params.size(); ++i) {
    entry.explicit_size_slot.push_back(mentioned[i] ? -1 : entry.num_slots);
    if (!mentioned[i]) ++entry.num_slots;
  }
  int explicit_slots = entry.num_slots;

  std::vector<PendingLeaf> pending_params, pending_results;
  pending_ = &pending_params;
  leaves_ = &entry.param_leaves;
  params_ = &entry.params;
  for (size_t i = 0; i < fn.signature.params.size(); ++i) {
    const ast::TypeExpr* expr =
        i < decl->params.size() ? decl->params[i].type : nullptr;
    std::string name = fn.signature.param_names[i].str();
    if (IsCKeyword(name) || llvm::StringRef(name).starts_with("result"))
      name += "_";
    if (!AddParam(fn.signature.params[i], expr, name, name, {})) return false;
  }
  pending_ = &pending_results;
  leaves_ = &entry.result_leaves;
  params_ = &entry.results;
  const sema::Type* result = fn.signature.result;
  if (result && !result->IsUnit() &&
      !AddParam(result, decl->result_type, "result", "result", {}))
    return false;
  if (pending_params.size() != function.params.size() ||
      pending_results.size() != function.result_types.size()) {
    error_ = entry.delta_name +
             ": internal: the C signature does not match the IR function";
    return false;
  }
  for (size_t i = 0; i < pending_params.size(); ++i)
    Resolve(function.params[i]->type, pending_params[i], entry.param_leaves[i]);
  for (size_t i = 0; i < pending_results.size(); ++i) {
    Resolve(function.result_types[i], pending_results[i],
            entry.result_leaves[i]);
    for (const AbiDim& dim : entry.result_leaves[i].dims)
      entry.result_sizes_query |= dim.size_param >= 0;
  }
  // Scalar results take one slot (a pointer), not 1 + rank; recount the
  // plain slots now that ranks are known, and number the DLPack slots.
  int slot = explicit_slots;
  int dl_slot = explicit_slots;
  auto number = [&](std::vector<AbiParam>& params,
                    std::vector<AbiLeaf>& leaves) {
    for (AbiParam& param : params) {
      if (param.struct_index >= 0) {
        for (int i = param.first; i < param.first + param.count; ++i) {
          leaves[i].slot = slot;
          leaves[i].dl_slot = dl_slot++;
        }
        ++slot;
        continue;
      }
      AbiLeaf& leaf = leaves[param.first];
      param.delta_type = leaf.delta_type;
      leaf.slot = slot;
      leaf.dl_slot = dl_slot++;
      slot += 1 + static_cast<int>(leaf.dims.size());
    }
  };
  number(entry.params, entry.param_leaves);
  number(entry.results, entry.result_leaves);
  entry.num_slots = slot;
  entry.num_dl_slots = dl_slot;
  abi_.entries.push_back(std::move(entry));
  return true;
}

}  // namespace

std::string CElemType(ir::ElemKind elem) {
  switch (elem) {
    case ir::ElemKind::F32:
      return "float";
    case ir::ElemKind::F64:
      return "double";
    case ir::ElemKind::I32:
      return "int32_t";
    case ir::ElemKind::Bool:
      return "bool";
    default:
      return "int64_t";
  }
}

std::vector<CArg> PlainArgs(const AbiModule& abi, const AbiEntry& entry) {
  std::vector<CArg> args;
  for (size_t i = 0; i < entry.size_params.size(); ++i)
    if (entry.explicit_size_slot[i] >= 0)
      args.push_back({CArg::Kind::Size, ir::ElemKind::I64, "int64_t",
                      entry.size_params[i]});
  auto add = [&](const std::vector<AbiParam>& params,
                 const std::vector<AbiLeaf>& leaves, bool is_result) {
    for (const AbiParam& param : params) {
      if (param.struct_index >= 0) {
        std::string type = abi.structs[param.struct_index].c_name + "*";
        args.push_back({CArg::Kind::Pointer, ir::ElemKind::I64,
                        is_result ? type : "const " + type, param.c_name});
        continue;
      }
      const AbiLeaf& leaf = leaves[param.first];
      std::string elem = CElemType(leaf.elem);
      if (leaf.dims.empty() && !is_result) {
        args.push_back({CArg::Kind::Scalar, leaf.elem, elem, param.c_name});
        continue;
      }
      args.push_back({CArg::Kind::Pointer, leaf.elem,
                      (is_result ? "" : "const ") + elem + "*", param.c_name});
      for (const AbiDim& dim : leaf.dims)
        args.push_back({CArg::Kind::Size, ir::ElemKind::I64, "int64_t",
                        param.c_name + "_" + dim.name});
    }
  };
  add(entry.params, entry.param_leaves, false);
  add(entry.results, entry.result_leaves, true);
  return args;
}

std::vector<CArg> DlpackArgs(const AbiEntry& entry) {
  std::vector<CArg> args;
  for (size_t i = 0; i < entry.size_params.size(); ++i)
    if (entry.explicit_size_slot[i] >= 0)
      args.push_back({CArg::Kind::Size, ir::ElemKind::I64, "int64_t",
                      entry.size_params[i]});
  auto add = [&](const std::vector<AbiLeaf>& leaves, bool is_result) {
    for (const AbiLeaf& leaf : leaves) {
      // "p.l1.w" -> "p_l1_w": struct leaves become separate tensors.
      std::string name = leaf.path;
      for (char& c : name)
        if (c == '.') c = '_';
      if (leaf.dims.empty() && !is_result)
        args.push_back(
            {CArg::Kind::Scalar, leaf.elem, CElemType(leaf.elem), name});
      else if (leaf.dims.empty())
        args.push_back(
            {CArg::Kind::Pointer, leaf.elem, CElemType(leaf.elem) + "*", name});
      else
        args.push_back({CArg::Kind::Pointer, leaf.elem,
                        is_result ? "DLTensor*" : "const DLTensor*", name});
    }
  };
  add(entry.param_leaves, false);
  add(entry.result_leaves, true);
  return args;
}

std::string LibraryPrefix(const std::string& stem) {
  std::string prefix;
  for (char c : stem) prefix += llvm::isAlnum(c) || c == '_' ? c : '_';
  if (prefix.empty() || llvm::isDigit(prefix[0])) prefix = "_" + prefix;
  return prefix;
}

bool DescribeLibrary(const sema::Program& program, const ir::Module& module,
                     const std::string& prefix, AbiModule& abi,
                     std::string& error) {
  abi.prefix = prefix;
  abi.macro_prefix = llvm::StringRef(prefix).upper();
  const sema::ModuleInfo* main = program.main_module;
  if (!main) {
    error = "no main module";
    return false;
  }
  abi.source_name = main->path;
  for (const auto& dim : module.dims) {
    // Dims the compiler made (the distribute pass's "shard.fold") have
    // names no C macro can take, and no argument has them.
    if (!llvm::all_of(dim->name,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      continue;
    if (dim->constant || dim->global_constant)
      abi.constant_dims.emplace_back(dim->name, GlobalSize(*dim));
    if (dim->sharded) abi.sharded_dim = dim->name;
  }
  Describer describer(program, abi, error);
  for (const ast::Decl* decl : main->ast->decls) {
    auto* fn = llvm::dyn_cast<ast::FnDecl>(decl);
    if (!fn || !fn->is_export || !fn->symbol) continue;
    const ir::Function* function = module.FindFunction(fn->name.name);
    if (!function) {
      error = fn->name.name.str() + ": internal: no IR for this export";
      return false;
    }
    if (!describer.DescribeEntry(*fn->symbol->fn, *function)) return false;
  }
  return true;
}

}  // namespace delta::c_abi

// Prints IR as text: one op per line, regions indented, values numbered per
// function in order of definition.
#include "compiler/ir/printer.h"

#include <llvm/ADT/DenseMap.h>

#include <charconv>

namespace delta::ir {
namespace {

// The shortest text that reads back to the same value of its own type.
std::string ShortestFloat(double value, ElemKind kind) {
  char buffer[64];
  auto result = kind == ElemKind::F32
                    ? std::to_chars(buffer, buffer + sizeof buffer,
                                    static_cast<float>(value))
                    : std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

class Printer {
 public:
  explicit Printer(llvm::raw_ostream& out) : out_(out) {}

  void Function(const ir::Function& function) {
    names_.clear();
    next_ = 0;
    out_ << (function.is_export ? "export func @" : "func @") << function.name;
    if (!function.size_params.empty()) {
      out_ << "[";
      for (size_t i = 0; i < function.size_params.size(); ++i) {
        out_ << (i ? ", " : "") << function.dims[i]->name << " = ";
        Define(function.size_params[i]);
      }
      out_ << "]";
    }
    out_ << "(";
    for (size_t i = 0; i < function.params.size(); ++i) {
      out_ << (i ? ", " : "");
      Define(function.params[i]);
      out_ << ": " << TypeString(function.params[i]->type);
    }
    out_ << ") -> ";
    PrintTypes(function.result_types);
    out_ << " {\n";
    for (const auto& op : function.body->ops) Op(*op, 1);
    out_ << "}\n";
  }

 private:
  void Indent(int depth) {
    for (int i = 0; i < depth; ++i) out_ << "  ";
  }
  void Define(const Value* value) {
    names_[value] = next_++;
    Use(value);
  }
  void Use(const Value* value) {
    auto it = names_.find(value);
    if (it == names_.end()) {
      out_ << "%<undefined>";
      return;
    }
    out_ << "%" << it->second;
  }
  void PrintTypes(const std::vector<Type>& types) {
    if (types.size() == 1) {
      out_ << TypeString(types[0]);
      return;
    }
    out_ << "(";
    for (size_t i = 0; i < types.size(); ++i)
      out_ << (i ? ", " : "") << TypeString(types[i]);
    out_ << ")";
  }
  void Dims(const std::vector<const Dim*>& dims, const char* separator) {
    out_ << " [";
    for (size_t i = 0; i < dims.size(); ++i)
      out_ << (i ? separator : "") << dims[i]->name;
    out_ << "]";
  }

  void Op(const ir::Op& op, int depth) {
    Indent(depth);
    for (size_t i = 0; i < op.results.size(); ++i) {
      out_ << (i ? ", " : "");
      Define(op.results[i]);
    }
    if (!op.results.empty()) out_ << " = ";
    out_ << OpMnemonic(op.kind);
    switch (op.kind) {
      case OpKind::Reduce:
      case OpKind::Allreduce:
        out_ << "." << ReduceName(op.reduce);
        break;
      case OpKind::Const:
        if (IsFloat(op.results[0]->type.elem)) {
          out_ << " "
               << ShortestFloat(op.float_value, op.results[0]->type.elem);
        } else if (op.results[0]->type.elem == ElemKind::Bool) {
          out_ << (op.int_value ? " true" : " false");
        } else {
          out_ << " " << op.int_value;
        }
        break;
      case OpKind::Call:
        out_ << " @" << op.callee->name;
        break;
      default:
        break;
    }
    if (op.kind == OpKind::Call && !op.dims.empty()) {
      out_ << " [";
      for (size_t i = 0; i < op.dims.size(); ++i)
        out_ << (i ? ", " : "") << op.callee->dims[i]->name << ": "
             << op.dims[i]->name;
      out_ << "]";
    } else if (!op.dims.empty()) {
      Dims(op.dims, op.kind == OpKind::Rename ? " -> " : ", ");
    }
    if (op.kind == OpKind::Print) {
      size_t next = 0;
      for (size_t i = 0; i < op.print_items.size(); ++i) {
        out_ << (i ? ", " : " ");
        if (op.print_items[i].is_value)
          Use(op.operands[next++]);
        else
          out_ << '"' << op.print_items[i].text << '"';
      }
    } else {
      // read_npy and write_npy: the path, then the operands.
      bool path = (op.kind == OpKind::ReadNpy || op.kind == OpKind::WriteNpy) &&
                  !op.print_items.empty();
      // Note [Path arguments]: `arg k`, main's parameter k.
      if (path && op.print_items[0].is_value)
        out_ << " arg " << op.print_items[0].text;
      else if (path)
        out_ << " \"" << op.print_items[0].text << '"';
      for (size_t i = 0; i < op.operands.size(); ++i) {
        out_ << (i || path ? ", " : " ");
        Use(op.operands[i]);
      }
    }
    for (const auto& region : op.regions) {
      out_ << " {\n";
      Indent(depth);
      out_ << "^(";
      for (size_t i = 0; i < region->args.size(); ++i) {
        out_ << (i ? ", " : "");
        Define(region->args[i]);
        out_ << ": " << TypeString(region->args[i]->type);
      }
      out_ << "):\n";
      for (const auto& inner : region->ops) Op(*inner, depth + 1);
      Indent(depth);
      out_ << "}";
    }
    if (!op.results.empty()) {
      out_ << " : ";
      std::vector<Type> types;
      for (const Value* result : op.results) types.push_back(result->type);
      PrintTypes(types);
    }
    out_ << "\n";
  }

  llvm::raw_ostream& out_;
  llvm::DenseMap<const Value*, unsigned> names_;
  unsigned next_ = 0;
};

}  // namespace

void PrintFunction(const Function& function, llvm::raw_ostream& out) {
  Printer(out).Function(function);
}

void PrintModule(const Module& module, llvm::raw_ostream& out) {
  for (const auto& dim : module.dims)
    out << (dim->sharded ? "@shard dim " : "dim ") << dim->name << " = "
        << *dim->constant << "\n";
  for (const auto& function : module.functions) {
    out << "\n";
    PrintFunction(*function, out);
  }
}

}  // namespace delta::ir

// `dlc check --types`: every top-level definition with its type.
#include "compiler/sema/checker.h"

namespace delta::sema {
namespace {

class TypePrinter {
 public:
  TypePrinter(const Program& program, llvm::raw_ostream& out)
      : program_(program), out_(out) {}

  // Types are resolved once a declaration is checked.
  std::string Type(const sema::Type* type) { return FormatType(type); }

  void Print(const PrintTypesOptions& options) {
    const ModuleInfo* module = program_.main_module;
    if (!module || !module->ast) return;
    for (const ast::Decl* decl : module->ast->decls) {
      if (auto* import = llvm::dyn_cast<ast::ImportDecl>(decl)) {
        out_ << "import " << import->module.name;
        if (import->alias) out_ << " as " << import->alias->name;
        out_ << "\n";
      } else if (auto* dim = llvm::dyn_cast<ast::DimDecl>(decl)) {
        if (!dim->symbol) continue;
        out_ << "dim " << dim->name.name;
        if (dim->symbol->dim->constant_size)
          out_ << " = " << *dim->symbol->dim->constant_size;
        out_ << "\n";
      } else if (auto* s = llvm::dyn_cast<ast::StructDecl>(decl)) {
        if (!s->symbol) continue;
        const StructInfo* info = s->symbol->struct_info;
        out_ << "struct " << s->name.name;
        if (info->float_generic) {  // `T` first, as a struct type writes it
          out_ << "[T: float";
          for (const DimInfo* param : info->size_params)
            out_ << ", " << param->name;
          out_ << "]";
        } else {
          PrintSizeParams(info->size_params);
        }
        out_ << " {";
        for (size_t i = 0; i < info->field_names.size(); ++i)
          out_ << (i ? ", " : " ") << info->field_names[i] << ": "
               << Type(info->field_types[i]);
        out_ << (info->field_names.empty() ? "}" : " }") << "\n";
      } else if (auto* fn = llvm::dyn_cast<ast::FnDecl>(decl)) {
        if (!fn->symbol) continue;
        PrintFn(fn->symbol->fn, options);
      } else if (llvm::isa<ast::LetDecl>(decl)) {
        auto it = module->let_symbols.find(decl);
        if (it == module->let_symbols.end()) continue;
        for (const Symbol* symbol : it->second)
          out_ << "let " << symbol->name << ": "
               << Type(symbol->type ? symbol->type : program_.types.Error())
               << "\n";
      }
    }
  }

 private:
  void PrintSizeParams(const std::vector<const DimInfo*>& params,
                       const std::vector<const sema::Type*>& type_params = {},
                       bool float_generic = false) {
    if (params.empty() && type_params.empty() && !float_generic) return;
    out_ << "[";
    for (size_t i = 0; i < params.size(); ++i)
      out_ << (i ? ", " : "") << params[i]->name;
    for (size_t i = 0; i < type_params.size(); ++i)
      out_ << (i || !params.empty() ? ", " : "")
           << type_params[i]->type_param->name << ": space";
    if (float_generic)
      out_ << (params.empty() && type_params.empty() ? "" : ", ") << "T: float";
    out_ << "]";
  }

  void PrintFn(const FnInfo* fn, const PrintTypesOptions& options) {
    const ast::FnDecl* decl = fn->decl;
    if (fn->vjp_rule_for)
      out_ << "@vjp(" << fn->vjp_rule_for->decl->name.name << ") ";
    if (decl->is_export) out_ << "export ";
    out_ << "fn " << decl->name.name;
    PrintSizeParams(fn->signature.size_params, fn->signature.type_params,
                    fn->signature.float_generic);
    out_ << "(";
    for (size_t i = 0; i < fn->signature.params.size(); ++i) {
      bool is_path = i < fn->path_params.size() && fn->path_params[i];
      out_ << (i ? ", " : "") << fn->signature.param_names[i] << ": "
           << (is_path ? "path" : Type(fn->signature.params[i]));
    }
    out_ << ") -> " << Type(fn->signature.result) << "\n";
    if (!options.locals) return;
    size_t params = decl->params.size();
    for (size_t i = params; i < fn->locals.size(); ++i) {
      const Symbol* local = fn->locals[i];
      out_ << "  let " << local->name << ": "
           << Type(local->type ? local->type : program_.types.Error()) << "\n";
    }
  }

  const Program& program_;
  llvm::raw_ostream& out_;
};

}  // namespace

void PrintTypes(const Program& program, llvm::raw_ostream& out,
                const PrintTypesOptions& options) {
  TypePrinter(program, out).Print(options);
}

}  // namespace delta::sema

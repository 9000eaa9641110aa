// The Checker's own machinery, shared by every part of sema: the prelude
// of builtin names, symbols and scopes, lookup of unknown names with a
// suggestion, binding under the shadowing rules, and the end of a
// declaration (literals defaulted, integer literals range-checked).
#include "compiler/sema/checker.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

namespace delta::sema {

const Symbol* Scope::LookupLocal(llvm::StringRef name) const {
  auto it = names_.find(name);
  return it == names_.end() ? nullptr : it->second;
}

const Symbol* Scope::Lookup(llvm::StringRef name) const {
  for (const Scope* scope = this; scope; scope = scope->parent_)
    if (const Symbol* symbol = scope->LookupLocal(name)) return symbol;
  return nullptr;
}

Checker::Checker(Program& program, DiagnosticEngine& diags,
                 const CheckOptions& options)
    : program_(program), diags_(diags), options_(options) {
  prelude_ = NewScope(nullptr);
  static const char* const kBuiltinNames[] = {
#define DELTA_BUILTIN(Name, spelling) spelling,
#include "compiler/sema/builtins.def"
  };
  int index = 0;
  for (const char* name : kBuiltinNames) {
    Symbol* symbol = NewSymbol(Symbol::Kind::Builtin, name, Span{});
    symbol->builtin = static_cast<Builtin>(index++);
    prelude_->Add(symbol);
  }
}

Symbol* Checker::NewSymbol(Symbol::Kind kind, llvm::StringRef name, Span span) {
  Symbol& symbol = program_.symbols.emplace_back();
  symbol.kind = kind;
  symbol.name = name;
  symbol.span = span;
  return &symbol;
}

Scope* Checker::NewScope(const Scope* parent) {
  return &program_.scopes.emplace_back(parent);
}

std::string Checker::SourceText(Span span) {
  if (!span.IsValid() || span.end < span.begin) return "";
  return std::string(span.begin, span.end);
}

void Checker::ReportUnknown(const ast::Ident& name, const Scope* scope,
                            llvm::StringRef what) {
  // Suggest the closest visible name.
  std::string best;
  unsigned best_distance = 3;
  // Only on an error: try every symbol name that is visible from `scope`.
  // Suggest only names of the kind that is wanted here.
  auto fits = [&](const Symbol& symbol) {
    using K = Symbol::Kind;
    if (what == "dim") return symbol.kind == K::Dim;
    if (what == "type")
      return symbol.kind == K::Dim || symbol.kind == K::Struct;
    if (what == "struct") return symbol.kind == K::Struct;
    if (what == "module") return symbol.kind == K::Module;
    if (what == "function") return symbol.kind == K::Function;
    return symbol.kind != K::Struct && symbol.kind != K::Module;
  };
  std::vector<llvm::StringRef> candidates;
  for (const Symbol& symbol : program_.symbols)
    if (fits(symbol) && scope->Lookup(symbol.name) == &symbol)
      candidates.push_back(symbol.name);
  for (llvm::StringRef candidate : candidates) {
    unsigned distance = name.name.edit_distance(candidate, true, best_distance);
    if (distance < best_distance && candidate != name.name) {
      best_distance = distance;
      best = candidate.str();
    }
  }
  // A module that exists but is not imported (`math.softmax(z)` without
  // `import math;`): say so, rather than suggest a name that looks alike.
  if (what != "dim" && what != "type" && !name.name.empty()) {
    for (const std::string& dir : options_.stdlib_dirs) {
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, name.name + ".dl");
      if (!llvm::sys::fs::exists(path)) continue;
      Error(DiagKind::UnknownName, name.span,
            "unknown name `" + name.name.str() + "`: `" + name.name.str() +
                "` is a module of the standard library; add `import " +
                name.name.str() + ";` at the top of the file");
      return;
    }
  }
  std::string hint = best.empty() ? "" : "; did you mean `" + best + "`?";
  // An undeclared dim: declare it, or take it as a size parameter.
  if (what == "dim" && best.empty())
    hint = "; declare it (dim " + name.name.str() +
           " = …;) or make it a size parameter (fn f[" + name.name.str() +
           "](…))";
  auto diag =
      Error(DiagKind::UnknownName, name.span,
            "unknown " + what.str() + " `" + name.name.str() + "`" + hint);
  if (!best.empty()) diag.Fix(name.span, best);
}

std::string Checker::FieldHint(const StructInfo* info, llvm::StringRef name) {
  std::string best;
  unsigned best_distance = 3;
  for (llvm::StringRef field : info->field_names) {
    // Close for its length: `wieght` is `weight`, but `c` is not `a`.
    unsigned distance = name.edit_distance(field, true, best_distance);
    if (distance < best_distance && 2 * distance <= name.size()) {
      best_distance = distance;
      best = field.str();
    }
  }
  return best.empty() ? "" : "; did you mean `" + best + "`?";
}

const Scope* Checker::Bind(const Scope* scope, Symbol* symbol,
                           Context& context) {
  if (const Symbol* existing = scope->Lookup(symbol->name)) {
    if (existing->kind == Symbol::Kind::Dim) {
      Error(DiagKind::ShadowsDim, symbol->span,
            "`" + symbol->name.str() +
                "` would shadow a dim; dims and values share one namespace")
          .Note(existing->span,
                "dim `" + symbol->name.str() + "` is declared here");
      // Bind it all the same, so that later uses are not errors too.
    }
  }
  Scope* inner = NewScope(scope);
  inner->Add(symbol);
  if (context.function && symbol->kind != Symbol::Kind::Function)
    context.function->locals.push_back(symbol);
  return inner;
}

void Checker::ResolveRecorded() {
  literals_.DefaultFrom(0);
  for (const sema::Type** slot : slots_)
    if (*slot) *slot = Resolve(*slot);
  slots_.clear();
  for (const ast::IntLitExpr* literal : int_literals_) {
    const Type* type = Resolve(literal->type);
    if (type->kind != Type::Kind::Scalar || !IsInteger(type->scalar)) continue;
    uint64_t max = type->scalar == ScalarKind::I32 ? INT32_MAX : INT64_MAX;
    if (negated_literals_.contains(literal)) ++max;
    if (literal->value > max)
      Error(DiagKind::LiteralOutOfRange, literal->span,
            "integer literal " + std::to_string(literal->value) +
                " does not fit in " + ScalarName(type->scalar).str());
  }
  int_literals_.clear();
  negated_literals_.clear();
}

}  // namespace delta::sema

// Answers the language server's questions from the typed AST: the innermost
// node at a position, the symbol a name refers to, the names in scope.
#include "compiler/lsp/analysis.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include "compiler/compile/compile.h"
#include "compiler/format/format.h"
#include "compiler/lsp/builtin_docs.h"
#include "compiler/sema/format_type.h"
#include "compiler/sema/program.h"

namespace delta::lsp {
namespace {

constexpr const char* kKeywords[] = {
    "fn",    "export", "struct", "dim",    "let", "loop", "for",  "in",
    "while", "if",     "else",   "import", "as",  "true", "false"};

constexpr const char* kBuiltins[] = {
#define DELTA_BUILTIN(Name, spelling) spelling,
#include "compiler/sema/builtins.def"
};

// LSP CompletionItemKind values.
enum CompletionKind {
  kFunctionKind = 3,
  kVariableKind = 6,
  kModuleKind = 9,
  kKeywordKind = 14,
  kStructKind = 22,
  kTypeParameterKind = 25,
};

std::string DescribeSymbol(const sema::Symbol* symbol) {
  using Kind = sema::Symbol::Kind;
  switch (symbol->kind) {
    case Kind::Dim: {
      std::string out = "dim " + symbol->name.str();
      if (symbol->dim && symbol->dim->constant_size)
        out += " = " + std::to_string(*symbol->dim->constant_size);
      return out;
    }
    case Kind::Value:
      return symbol->name.str() + ": " +
             (symbol->type ? sema::FormatType(symbol->type) : "?");
    case Kind::Function: {
      // `fn score[n](a: f32[n], b: f32[n]) -> f32`: the declaration's own
      // names, not only the types.
      std::string out = "fn " + symbol->name.str();
      if (!symbol->fn || !symbol->fn->signature_ready) return out;
      const sema::Signature& signature = symbol->fn->signature;
      if (!signature.size_params.empty()) {
        out += "[";
        for (size_t i = 0; i < signature.size_params.size(); ++i)
          out += (i ? ", " : "") + signature.size_params[i]->name.str();
        out += "]";
      }
      out += "(";
      for (size_t i = 0; i < signature.params.size(); ++i)
        out += (i ? ", " : "") + signature.param_names[i].str() + ": " +
               sema::FormatType(signature.params[i]);
      return out + ") -> " + sema::FormatType(signature.result);
    }
    case Kind::Struct:
      return "struct " + symbol->name.str();
    case Kind::Module:
      return "import " + symbol->name.str();
    case Kind::Builtin:
      if (const BuiltinDoc* doc = FindBuiltinDoc(symbol->name))
        return std::string(doc->forms) + "  // builtin: " + doc->doc;
      return "builtin " + symbol->name.str();
    case Kind::TypeParam:
      return "type parameter " + symbol->name.str() +
             (symbol->type && symbol->type->kind == sema::Type::Kind::Scalar
                  ? ": float (f32 or f64, chosen at each call)"
                  : ": space");
  }
  return symbol->name.str();
}

// The innermost node whose span holds the position.
struct Hit {
  Span span;
  std::string hover;
  Span target;  // the declaration a name refers to
};

// Finds the innermost name or expression at a position; or, made with a
// declaration's span, every name that refers to that declaration.
class Finder {
 public:
  explicit Finder(const char* position) : position_(position) {}
  explicit Finder(Span declaration) : references_of_(declaration) {}

  void Decl(const ast::Decl* decl) {
    if (!Holds(decl->span)) return;
    if (auto* d = llvm::dyn_cast<ast::DimDecl>(decl)) {
      if (d->symbol)
        Offer(d->name.span, DescribeSymbol(d->symbol), d->name.span);
      Expr(d->size);
    } else if (auto* d = llvm::dyn_cast<ast::StructDecl>(decl)) {
      if (d->symbol)
        Offer(d->name.span, DescribeSymbol(d->symbol), d->name.span);
      for (const ast::FieldDecl& field : d->fields) Type(field.type);
    } else if (auto* d = llvm::dyn_cast<ast::FnDecl>(decl)) {
      if (d->symbol)
        Offer(d->name.span, DescribeSymbol(d->symbol), d->name.span);
      for (const ast::Attribute& attribute : d->attributes)
        for (const ast::Expr* arg : attribute.args) Expr(arg);
      Params(d->params);
      if (d->result_type) Type(d->result_type);
      Expr(d->body);
    } else if (auto* d = llvm::dyn_cast<ast::LetDecl>(decl)) {
      Pattern(d->pattern);
      if (d->annotation) Type(d->annotation);
      Expr(d->value);
    } else if (auto* d = llvm::dyn_cast<ast::ImportDecl>(decl)) {
      if (d->symbol) Offer(d->module.span, DescribeSymbol(d->symbol), {});
    }
  }

  const std::optional<Hit>& best() const { return best_; }
  const std::vector<Span>& references() const { return references_; }

 private:
  bool Holds(Span span) const {
    if (references_of_.IsValid()) return span.IsValid();
    return span.IsValid() && span.begin <= position_ && position_ <= span.end;
  }

  void Offer(Span span, std::string hover, Span target) {
    if (references_of_.IsValid()) {
      if (target.begin == references_of_.begin && span.IsValid())
        references_.push_back(span);
      return;
    }
    if (!Holds(span)) return;
    if (best_ && span.end - span.begin > best_->span.end - best_->span.begin)
      return;
    best_ = Hit{span, std::move(hover), target};
  }

  void Params(const std::vector<ast::Param>& params) {
    for (const ast::Param& param : params) {
      if (param.symbol)
        Offer(param.name.span, DescribeSymbol(param.symbol), param.name.span);
      if (param.type) Type(param.type);
    }
  }

  void Type(const ast::TypeExpr* type) {
    if (!type || !Holds(type->span)) return;
    if (type->type) Offer(type->span, sema::FormatType(type->type), {});
    for (const ast::TypeExpr* element : type->elements) Type(element);
  }

  void Pattern(const ast::Pattern* pattern) {
    if (!pattern || !Holds(pattern->span)) return;
    if (pattern->kind == ast::Pattern::Kind::Name && pattern->type)
      Offer(pattern->span,
            pattern->name.name.str() + ": " + sema::FormatType(pattern->type),
            pattern->span);
    for (const ast::Pattern* element : pattern->elements) Pattern(element);
  }

  void Stmt(const ast::Stmt* stmt) {
    if (!Holds(stmt->span)) return;
    if (auto* s = llvm::dyn_cast<ast::LetStmt>(stmt)) {
      Pattern(s->pattern);
      if (s->annotation) Type(s->annotation);
      Expr(s->value);
    } else if (auto* s = llvm::dyn_cast<ast::DimStmt>(stmt)) {
      if (s->symbol)
        Offer(s->name.span, DescribeSymbol(s->symbol), s->name.span);
      Expr(s->size);
    } else if (auto* s = llvm::dyn_cast<ast::ExprStmt>(stmt)) {
      Expr(s->expr);
    }
  }

  void Expr(const ast::Expr* expr) {
    if (!expr || !Holds(expr->span)) return;
    if (auto* e = llvm::dyn_cast<ast::NameExpr>(expr)) {
      if (e->symbol) {
        std::string hover = DescribeSymbol(e->symbol);
        if (e->symbol->kind == sema::Symbol::Kind::Value && expr->type)
          hover = e->name.name.str() + ": " + sema::FormatType(expr->type);
        Offer(expr->span, hover, e->symbol->span);
      } else if (expr->type) {
        Offer(expr->span, sema::FormatType(expr->type), {});
      }
      return;
    }
    if (expr->type && expr->type->kind != sema::Type::Kind::Error)
      Offer(expr->span, sema::FormatType(expr->type), {});
    switch (expr->kind) {
      case ast::Expr::Kind::Unary:
        Expr(llvm::cast<ast::UnaryExpr>(expr)->operand);
        break;
      case ast::Expr::Kind::Binary: {
        auto* e = llvm::cast<ast::BinaryExpr>(expr);
        Expr(e->lhs);
        Expr(e->rhs);
        break;
      }
      case ast::Expr::Kind::Call: {
        auto* e = llvm::cast<ast::CallExpr>(expr);
        Expr(e->callee);
        for (const ast::Arg& arg : e->args) Expr(arg.value);
        break;
      }
      case ast::Expr::Kind::Index: {
        auto* e = llvm::cast<ast::IndexExpr>(expr);
        Expr(e->base);
        for (const ast::IndexEntry& entry : e->entries) Expr(entry.value);
        break;
      }
      case ast::Expr::Kind::Field: {
        auto* e = llvm::cast<ast::FieldExpr>(expr);
        if (e->module_member)
          Offer(e->field.span, DescribeSymbol(e->module_member),
                e->module_member->span);
        Expr(e->base);
        break;
      }
      case ast::Expr::Kind::TupleIndex:
        Expr(llvm::cast<ast::TupleIndexExpr>(expr)->base);
        break;
      case ast::Expr::Kind::Tuple:
        for (const ast::Expr* e : llvm::cast<ast::TupleExpr>(expr)->elements)
          Expr(e);
        break;
      case ast::Expr::Kind::StructLit: {
        auto* e = llvm::cast<ast::StructLitExpr>(expr);
        for (const ast::FieldInit& field : e->fields) Expr(field.value);
        Expr(e->base);
        break;
      }
      case ast::Expr::Kind::ArrayLit: {
        auto* e = llvm::cast<ast::ArrayLitExpr>(expr);
        if (e->dim_info) {
          std::string hover = "dim " + e->dim_info->name.str();
          if (e->dim_info->constant_size)
            hover += " = " + std::to_string(*e->dim_info->constant_size);
          Offer(e->dim.span, hover, e->dim_info->span);
        }
        for (const ast::Expr* element : e->elements) Expr(element);
        break;
      }
      case ast::Expr::Kind::Block: {
        auto* e = llvm::cast<ast::BlockExpr>(expr);
        for (const ast::Stmt* stmt : e->stmts) Stmt(stmt);
        Expr(e->result);
        break;
      }
      case ast::Expr::Kind::If: {
        auto* e = llvm::cast<ast::IfExpr>(expr);
        Expr(e->condition);
        Expr(e->then_block);
        Expr(e->else_branch);
        break;
      }
      case ast::Expr::Kind::Loop: {
        auto* e = llvm::cast<ast::LoopExpr>(expr);
        Pattern(e->state);
        Expr(e->init);
        Pattern(e->iterator);
        Expr(e->domain);
        Expr(e->range_lo);
        Expr(e->range_hi);
        Expr(e->condition);
        Expr(e->body);
        break;
      }
      case ast::Expr::Kind::For: {
        auto* e = llvm::cast<ast::ForExpr>(expr);
        for (const ast::ForBinding& binding : e->bindings) {
          Pattern(binding.variable);
          Expr(binding.domain);
        }
        Expr(e->body);
        break;
      }
      case ast::Expr::Kind::Lambda: {
        auto* e = llvm::cast<ast::LambdaExpr>(expr);
        Params(e->params);
        Expr(e->body);
        break;
      }
      default:
        break;
    }
  }

  const char* position_ = nullptr;
  std::optional<Hit> best_;
  Span references_of_;
  std::vector<Span> references_;
};

// The names `module` declares; its imports too unless they are members of
// another module (after `nn.`, nn's own imports cannot be named).
void AddDeclNames(const ast::Module& module, const std::string& prefix,
                  std::vector<CompletionInfo>& items, bool with_imports) {
  for (const ast::Decl* decl : module.decls) {
    if (auto* d = llvm::dyn_cast<ast::DimDecl>(decl)) {
      items.push_back({prefix + d->name.name.str(), kTypeParameterKind,
                       d->symbol ? DescribeSymbol(d->symbol) : "dim"});
    } else if (auto* d = llvm::dyn_cast<ast::StructDecl>(decl)) {
      items.push_back({prefix + d->name.name.str(), kStructKind, "struct"});
    } else if (auto* d = llvm::dyn_cast<ast::FnDecl>(decl)) {
      items.push_back({prefix + d->name.name.str(), kFunctionKind,
                       d->symbol ? DescribeSymbol(d->symbol) : "fn"});
    } else if (auto* d = llvm::dyn_cast<ast::ImportDecl>(decl)) {
      if (!with_imports) continue;
      items.push_back({(d->alias ? d->alias->name : d->module.name).str(),
                       kModuleKind, "import " + d->module.name.str()});
    } else if (auto* d = llvm::dyn_cast<ast::LetDecl>(decl)) {
      std::vector<const ast::Pattern*> stack = {d->pattern};
      while (!stack.empty()) {
        const ast::Pattern* pattern = stack.back();
        stack.pop_back();
        if (!pattern) continue;
        if (pattern->kind == ast::Pattern::Kind::Name)
          items.push_back(
              {prefix + pattern->name.name.str(), kVariableKind,
               pattern->type ? sema::FormatType(pattern->type) : ""});
        for (const ast::Pattern* element : pattern->elements)
          stack.push_back(element);
      }
    }
  }
}

}  // namespace

Analysis::Analysis(std::string path, std::string text,
                   const std::vector<std::string>& stdlib_dirs)
    : path_(std::move(path)), text_(std::move(text)) {
  sema::CheckOptions options;
  llvm::SmallString<256> folder = llvm::sys::path::parent_path(path_);
  if (!folder.empty()) options.stdlib_dirs.push_back(folder.str().str());
  options.stdlib_dirs.insert(options.stdlib_dirs.end(), stdlib_dirs.begin(),
                             stdlib_dirs.end());
  checked_ = sema::CheckSource(text_, path_, sources_, diags_, options);
  // A checked program also goes through the front half, unoptimized, so that
  // what lowering and differentiation reject shows in the editor as it does
  // in `dlc run`.
  if (checked_.program && checked_.ok && !diags_.HasErrors()) {
    compile::CompileOptions compile_options;
    compile_options.optimize = false;
    compile::Compile(*checked_.program, diags_, compile_options);
  }
  for (unsigned id = 1; id <= sources_.getNumBuffers(); ++id) {
    const llvm::MemoryBuffer* buffer = sources_.getMemoryBuffer(id);
    if (buffer->getBufferIdentifier() == path_) {
      buffer_start_ = buffer->getBufferStart();
      buffer_size_ = buffer->getBufferSize();
      break;
    }
  }
  for (const Diagnostic& diagnostic : diags_.emitted()) {
    DiagnosticInfo info;
    std::optional<Location> where = LocationOf(diagnostic.span);
    std::string message = diagnostic.message;
    if (where && where->path == path_) {
      info.range = where->range;
    } else if (where) {
      message = where->path + ":" +
                std::to_string(where->range.start.line + 1) + ": " + message;
    }
    Severity severity = DiagSeverity(diagnostic.kind);
    info.severity = severity == Severity::Error     ? 1
                    : severity == Severity::Warning ? 2
                                                    : 3;
    info.code = DiagCode(diagnostic.kind).str();
    info.message = message;
    for (const DiagNote& note : diagnostic.notes)
      info.message += "\nnote: " + note.message;
    diagnostics_.push_back(std::move(info));
  }
}

namespace {

// LSP counts a position's character in UTF-16 code units (its default
// encoding); the source is UTF-8. The bytes of the character at `p`.
int Utf8Length(unsigned char lead) {
  return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

int Utf16Units(const char* begin, const char* end) {
  int units = 0;
  for (const char* p = begin; p < end; p += Utf8Length(*p))
    units += Utf8Length(*p) == 4 ? 2 : 1;  // beyond the BMP: a pair
  return units;
}

}  // namespace

const char* Analysis::PointerAt(Position position) const {
  if (!buffer_start_) return nullptr;
  llvm::StringRef text(buffer_start_, buffer_size_);
  size_t offset = 0;
  for (int line = 0; line < position.line; ++line) {
    size_t newline = text.find('\n', offset);
    if (newline == llvm::StringRef::npos) return nullptr;
    offset = newline + 1;
  }
  size_t line_end = text.find('\n', offset);
  if (line_end == llvm::StringRef::npos) line_end = text.size();
  const char* pointer = buffer_start_ + offset;
  const char* end = buffer_start_ + line_end;
  for (int units = 0; units < position.character && pointer < end;) {
    units += Utf8Length(*pointer) == 4 ? 2 : 1;
    pointer = std::min(pointer + Utf8Length(*pointer), end);
  }
  return pointer;
}

std::optional<Location> Analysis::LocationOf(Span span) const {
  if (!span.IsValid()) return std::nullopt;
  unsigned id = sources_.FindBufferContainingLoc(span.Start());
  if (!id) return std::nullopt;
  auto position = [&](const char* pointer) {
    auto [line, column] =
        sources_.getLineAndColumn(llvm::SMLoc::getFromPointer(pointer), id);
    return Position{int(line) - 1, Utf16Units(pointer - (column - 1), pointer)};
  };
  Location location;
  location.path = sources_.getMemoryBuffer(id)->getBufferIdentifier().str();
  location.range = {position(span.begin), position(span.end)};
  return location;
}

std::optional<std::string> Analysis::Hover(Position position) const {
  const char* pointer = PointerAt(position);
  if (!pointer || !checked_.program || !checked_.program->main_module ||
      !checked_.program->main_module->ast)
    return std::nullopt;
  Finder finder(pointer);
  for (const ast::Decl* decl : checked_.program->main_module->ast->decls)
    finder.Decl(decl);
  if (!finder.best()) return std::nullopt;
  std::string docs = DocComment(finder.best()->target);
  return "```delta\n" + finder.best()->hover + "\n```" +
         (docs.empty() ? "" : "\n\n" + docs);
}

std::string Analysis::DocComment(Span declaration) const {
  // The `///` lines right above the declaration's line (attributes such as
  // @vjp(f) may stand between), in the buffer that holds it.
  if (!declaration.IsValid()) return "";
  unsigned id = sources_.FindBufferContainingLoc(declaration.Start());
  if (id == 0) return "";
  llvm::StringRef buffer = sources_.getMemoryBuffer(id)->getBuffer();
  llvm::StringRef before = buffer.take_front(
      static_cast<size_t>(declaration.begin - buffer.begin()));
  before = before.take_front(before.rfind('\n') + 1);  // whole lines only
  std::vector<std::string> lines;
  while (!before.empty()) {
    before = before.drop_back();  // the newline ending the previous line
    size_t start = before.rfind('\n');
    start = start == llvm::StringRef::npos ? 0 : start + 1;
    llvm::StringRef line = before.substr(start).trim();
    before = before.take_front(start);
    if (line.starts_with("@")) continue;
    if (!line.consume_front("///")) break;
    lines.push_back(line.ltrim().str());
  }
  std::string text;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    text += (text.empty() ? "" : " ") + *it;
  return text;
}

std::optional<Location> Analysis::Definition(Position position) const {
  const char* pointer = PointerAt(position);
  if (!pointer || !checked_.program || !checked_.program->main_module ||
      !checked_.program->main_module->ast)
    return std::nullopt;
  Finder finder(pointer);
  for (const ast::Decl* decl : checked_.program->main_module->ast->decls)
    finder.Decl(decl);
  if (!finder.best()) return std::nullopt;
  return LocationOf(finder.best()->target);
}

std::vector<Location> Analysis::References(Position position) const {
  std::vector<Location> locations;
  const char* pointer = PointerAt(position);
  if (!pointer || !checked_.program || !checked_.program->main_module ||
      !checked_.program->main_module->ast)
    return locations;
  Finder finder(pointer);
  for (const ast::Decl* decl : checked_.program->main_module->ast->decls)
    finder.Decl(decl);
  if (!finder.best() || !finder.best()->target.IsValid()) return locations;
  // The declaration itself is one of the names that refer to it.
  Finder collector(finder.best()->target);
  for (const ast::Decl* decl : checked_.program->main_module->ast->decls)
    collector.Decl(decl);
  for (Span span : collector.references())
    if (std::optional<Location> location = LocationOf(span))
      locations.push_back(*location);
  return locations;
}

std::vector<CompletionInfo> Analysis::Completion(Position position) const {
  std::vector<CompletionInfo> items;
  const char* pointer = PointerAt(position);
  const sema::Program* program = checked_.program.get();
  // After `nn.`: the members of that imported module.
  if (pointer && program && pointer > buffer_start_) {
    const char* p = pointer;
    while (p > buffer_start_ &&
           (std::isalnum((unsigned char)p[-1]) || p[-1] == '_'))
      --p;
    if (p > buffer_start_ && p[-1] == '.') {
      const char* end = p - 1;
      const char* begin = end;
      while (begin > buffer_start_ &&
             (std::isalnum((unsigned char)begin[-1]) || begin[-1] == '_'))
        --begin;
      llvm::StringRef qualifier(begin, size_t(end - begin));
      for (const sema::ModuleInfo& module : program->modules) {
        if (module.is_main || !module.ast) continue;
        bool named = module.name == qualifier;
        if (program->main_module && program->main_module->ast) {
          for (const ast::Decl* decl : program->main_module->ast->decls)
            if (auto* import = llvm::dyn_cast<ast::ImportDecl>(decl))
              named |= import->alias && import->alias->name == qualifier &&
                       import->module.name == module.name;
        }
        if (named) AddDeclNames(*module.ast, "", items, /*with_imports=*/false);
      }
      if (!items.empty()) return items;
    }
  }
  for (const char* keyword : kKeywords)
    items.push_back({keyword, kKeywordKind, "keyword"});
  for (const char* builtin : kBuiltins)
    items.push_back({builtin, kFunctionKind, "builtin"});
  for (const char* scalar : {"f32", "f64", "i32", "i64", "bool"})
    items.push_back({scalar, kStructKind, "scalar type"});
  if (!program || !program->main_module || !program->main_module->ast)
    return items;
  AddDeclNames(*program->main_module->ast, "", items, /*with_imports=*/true);
  // The parameters, size parameters and locals of the enclosing function.
  for (const sema::FnInfo& fn : program->functions) {
    if (!fn.decl || fn.module != program->main_module || !pointer) continue;
    if (!(fn.decl->span.begin <= pointer && pointer <= fn.decl->span.end))
      continue;
    for (const ast::Ident& size : fn.decl->size_params)
      items.push_back({size.name.str(), kTypeParameterKind, "size parameter"});
    for (const sema::Symbol* local : fn.locals) {
      if (local->span.IsValid() && local->span.begin > pointer) continue;
      items.push_back({local->name.str(),
                       local->kind == sema::Symbol::Kind::Dim
                           ? kTypeParameterKind
                           : kVariableKind,
                       DescribeSymbol(local)});
    }
  }
  return items;
}

std::optional<SignatureInfo> Analysis::Signature(const std::string& text,
                                                 Position position) const {
  // The offset of `position` in `text`, counted as PointerAt does.
  size_t offset = 0;
  for (int line = 0; line < position.line; ++line) {
    offset = text.find('\n', offset);
    if (offset == std::string::npos) return std::nullopt;
    ++offset;
  }
  size_t line_end = std::min(text.find('\n', offset), text.size());
  for (int units = 0; units < position.character && offset < line_end;) {
    units += Utf8Length(text[offset]) == 4 ? 2 : 1;
    offset += Utf8Length(text[offset]);
  }
  // Back to the unclosed `(`, counting the commas of this call.
  int depth = 0;
  int commas = 0;
  size_t open = std::string::npos;
  for (size_t i = std::min(offset, text.size()); i-- > 0;) {
    char c = text[i];
    if (c == ')' || c == ']' || c == '}') {
      ++depth;
    } else if (c == '(' || c == '[' || c == '{') {
      if (depth == 0) {
        if (c == '(') open = i;
        break;
      }
      --depth;
    } else if (c == ',' && depth == 0) {
      ++commas;
    } else if (c == ';' && depth == 0) {
      break;
    }
  }
  if (open == std::string::npos) return std::nullopt;
  // The callee: `name` or `module.name` right before the parenthesis.
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  size_t end = open;
  size_t begin = end;
  while (begin > 0 && is_name_char(text[begin - 1])) --begin;
  llvm::StringRef name(text.data() + begin, end - begin);
  llvm::StringRef module;
  if (begin > 1 && text[begin - 1] == '.') {
    size_t module_begin = begin - 1;
    while (module_begin > 0 && is_name_char(text[module_begin - 1]))
      --module_begin;
    module =
        llvm::StringRef(text.data() + module_begin, begin - 1 - module_begin);
  }
  const sema::Program* program = checked_.program.get();
  if (name.empty() || !program || !program->main_module ||
      !program->main_module->scope)
    return std::nullopt;
  const sema::Symbol* symbol = nullptr;
  if (module.empty()) {
    symbol = program->main_module->scope->Lookup(name);
  } else if (const sema::Symbol* m =
                 program->main_module->scope->Lookup(module);
             m && m->kind == sema::Symbol::Kind::Module && m->module &&
             m->module->scope) {
    symbol = m->module->scope->LookupLocal(name);
  }
  if (!symbol || symbol->kind != sema::Symbol::Kind::Function || !symbol->fn ||
      !symbol->fn->signature_ready)
    return std::nullopt;
  SignatureInfo info;
  info.label = DescribeSymbol(symbol);
  const sema::Signature& signature = symbol->fn->signature;
  for (size_t i = 0; i < signature.params.size(); ++i)
    info.params.push_back(signature.param_names[i].str() + ": " +
                          sema::FormatType(signature.params[i]));
  info.active = commas;
  info.docs = DocComment(symbol->span);
  return info;
}

bool Analysis::has_program() const {
  if (!checked_.program) return false;
  // E01xx: the lexer and the parser; a module that did not parse has lost
  // some of its names.
  for (const DiagnosticInfo& info : diagnostics_)
    if (llvm::StringRef(info.code).starts_with("E01")) return false;
  return true;
}

std::vector<SymbolInfo> Analysis::Symbols() const {
  // LSP SymbolKind values.
  enum {
    kModule = 2,
    kVariable = 13,
    kConstant = 14,
    kFunction = 12,
    kStruct = 23
  };
  std::vector<SymbolInfo> symbols;
  const sema::Program* program = checked_.program.get();
  if (!program || !program->main_module || !program->main_module->ast)
    return symbols;
  auto add = [&](const ast::Decl* decl, const ast::Ident& name, int kind,
                 std::string detail) {
    std::optional<Location> whole = LocationOf(decl->span);
    std::optional<Location> named = LocationOf(name.span);
    if (!whole || !named || whole->path != path_) return;
    symbols.push_back(
        {name.name.str(), kind, std::move(detail), whole->range, named->range});
  };
  for (const ast::Decl* decl : program->main_module->ast->decls) {
    if (auto* d = llvm::dyn_cast<ast::FnDecl>(decl))
      add(d, d->name, kFunction, d->symbol ? DescribeSymbol(d->symbol) : "");
    else if (auto* d = llvm::dyn_cast<ast::StructDecl>(decl))
      add(d, d->name, kStruct, "struct");
    else if (auto* d = llvm::dyn_cast<ast::DimDecl>(decl))
      add(d, d->name, kConstant, d->symbol ? DescribeSymbol(d->symbol) : "dim");
    else if (auto* d = llvm::dyn_cast<ast::ImportDecl>(decl))
      add(d, d->alias ? *d->alias : d->module, kModule,
          "import " + d->module.name.str());
    else if (auto* d = llvm::dyn_cast<ast::LetDecl>(decl);
             d && d->pattern->kind == ast::Pattern::Kind::Name)
      add(d, d->pattern->name, kVariable,
          d->pattern->type ? sema::FormatType(d->pattern->type) : "");
  }
  return symbols;
}

std::optional<std::string> Analysis::Formatted() const {
  // The document's errors are already published; none are printed here.
  return format::FormatSource(text_, path_, llvm::nulls());
}

Range Analysis::WholeDocument() const {
  int lines = static_cast<int>(llvm::StringRef(text_).count('\n'));
  size_t last = text_.rfind('\n');
  const char* start = text_.data() + (last == std::string::npos ? 0 : last + 1);
  return {{0, 0}, {lines, Utf16Units(start, text_.data() + text_.size())}};
}

}  // namespace delta::lsp

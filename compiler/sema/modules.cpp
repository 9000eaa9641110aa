// Loading modules: reading a file or a string, finding an import beside
// its importer or in the standard library (and reporting cycles), and the
// entry points CheckFile and CheckSource that check a main module.
#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <functional>

#include "compiler/sema/checker.h"
#include "compiler/syntax/parse.h"

namespace delta::sema {

ModuleInfo* Checker::LoadModule(const std::string& path, bool is_main) {
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(path, real)) real = path;
  if (auto it = loaded_modules_.find(real); it != loaded_modules_.end())
    return it->second;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    Error(DiagKind::CannotReadFile, Span{},
          "cannot read `" + path + "`: " + buffer.getError().message());
    return nullptr;
  }
  unsigned id = program_.sources.AddNewSourceBuffer(std::move(*buffer), {});
  ModuleInfo& module = program_.modules.emplace_back();
  module.path = path;
  module.name = llvm::sys::path::stem(path).str();
  module.is_main = is_main;
  loaded_modules_[real] = &module;
  module.ast = ParseModule(program_.sources, id, program_.arena, diags_);
  return &module;
}

ModuleInfo* Checker::LoadSource(llvm::StringRef text, llvm::StringRef name) {
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(text, name);
  unsigned id = program_.sources.AddNewSourceBuffer(std::move(buffer), {});
  ModuleInfo& module = program_.modules.emplace_back();
  module.path = name.str();
  module.name = llvm::sys::path::stem(name).str();
  module.is_main = true;
  module.ast = ParseModule(program_.sources, id, program_.arena, diags_);
  return &module;
}

ModuleInfo* Checker::ResolveImport(ast::ImportDecl* decl,
                                   ModuleInfo* importer) {
  std::string file = decl->module.name.str() + ".dl";
  std::vector<std::string> candidates;
  llvm::SmallString<256> beside(llvm::sys::path::parent_path(importer->path));
  llvm::sys::path::append(beside, file);
  candidates.push_back(beside.str().str());
  for (const std::string& dir : options_.stdlib_dirs) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    candidates.push_back(path.str().str());
  }
  for (const std::string& candidate : candidates) {
    if (!llvm::sys::fs::exists(candidate)) continue;
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(candidate, real)) real = candidate;
    if (llvm::is_contained(import_stack_, real.str().str())) {
      Error(DiagKind::ImportCycle, decl->module.span,
            "module `" + decl->module.name.str() +
                "` imports itself through a cycle");
      return nullptr;
    }
    if (auto it = loaded_modules_.find(real); it != loaded_modules_.end())
      return it->second;
    ModuleInfo* module = LoadModule(candidate, /*is_main=*/false);
    if (module) CheckModule(module);
    return module;
  }
  std::string searched;
  for (const std::string& candidate : candidates)
    searched += "\n  " + candidate;
  Error(DiagKind::ImportNotFound, decl->module.span,
        "cannot find module `" + decl->module.name.str() +
            "`; looked for:" + searched);
  return nullptr;
}

namespace {

CheckResult Run(llvm::SourceMgr& sources, DiagnosticEngine& diags,
                const CheckOptions& options,
                const std::function<ModuleInfo*(Checker&)>& load) {
  CheckResult result;
  result.program = std::make_shared<Program>(sources);
  Checker checker(*result.program, diags, options);
  unsigned errors_before = diags.error_count();
  ModuleInfo* module = load(checker);
  if (!module) return result;
  result.program->main_module = module;
  // After syntax errors, checking would mostly report their echoes (a
  // dropped `let` becomes an unknown name), so stop here.
  if (diags.error_count() != errors_before) return result;
  checker.CheckModule(module);
  result.ok = diags.error_count() == errors_before;
  return result;
}

}  // namespace

CheckResult CheckFile(llvm::StringRef path, llvm::SourceMgr& sources,
                      DiagnosticEngine& diags, const CheckOptions& options) {
  return Run(sources, diags, options, [&](Checker& checker) {
    return checker.LoadModule(path.str(), /*is_main=*/true);
  });
}

CheckResult CheckSource(llvm::StringRef text, llvm::StringRef name,
                        llvm::SourceMgr& sources, DiagnosticEngine& diags,
                        const CheckOptions& options) {
  return Run(sources, diags, options,
             [&](Checker& checker) { return checker.LoadSource(text, name); });
}

}  // namespace delta::sema

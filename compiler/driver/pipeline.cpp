// The stages of each `dlc` command, in order: check, the front half
// (compile/compile.h), then code generation or the interpreter.
#include "compiler/driver/pipeline.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/ToolOutputFile.h>

#include <optional>

#include "compiler/base/timings.h"
#include "compiler/codegen/c_abi/library.h"
#include "compiler/codegen/cuda/host_launch.h"
#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/jit.h"
#include "compiler/codegen/llvm/object.h"
#include "compiler/compile/compile.h"
#include "compiler/diagnostics/diagnostics.h"
#include "compiler/driver/compile_cache.h"
#include "compiler/ir/printer.h"
#include "compiler/sema/program.h"
#include "compiler/sema/sema.h"
#include "runtime/distributed.h"
#include "runtime/format.h"

namespace delta::driver {

namespace {

// An interpreter's run-time error ("file:line:col: error: …", then the
// chain of calls) with the source line and caret under its first line, as
// compiled code's errors show them.
std::string WithRunTimeErrorExcerpt(llvm::StringRef message) {
  auto [first, chain] = message.split('\n');
  std::string text = first.str() + "\n";
  llvm::StringRef head = first.split(": error: ").first;
  auto [rest, column_text] = head.rsplit(':');
  auto [file, line_text] = rest.rsplit(':');
  int line = 0;
  int column = 0;
  if (!file.empty() && !line_text.getAsInteger(10, line) &&
      !column_text.getAsInteger(10, column))
    text += runtime::SourceExcerpt(file.str().c_str(), line, column);
  if (!chain.empty()) text += chain.str() + "\n";
  return text;
}

bool UseColor(ColorMode mode) {
  switch (mode) {
    case ColorMode::Always:
      return true;
    case ColorMode::Never:
      return false;
    case ColorMode::Auto:
      // NO_COLOR (no-color.org) is the users' common way to opt out.
      return llvm::sys::Process::StandardErrHasColors() &&
             !llvm::sys::Process::GetEnv("NO_COLOR");
  }
  return false;
}

// `dlc build` and `dlc run` share the stages up to optimized IR: check, then
// the front half (compile/compile.h). `module` is null after diagnostics,
// and until CompileChecked.
struct Compiled {
  sema::CheckResult checked;
  std::unique_ptr<ir::Module> module;
};

// What `dlc build` and `dlc run` set up first: the sources and diagnostics,
// and with --time-passes the timings, printed when the command ends (for
// `dlc run`, the JIT prints them before main starts).
struct CommandSession {
  CommandSession(const CommonOptions& common, bool time_passes,
                 llvm::raw_ostream& err)
      : common(common),
        diags(sources, err, common.diagnostics, UseColor(common.color)),
        err(err) {
    if (time_passes) timings.emplace();
  }
  ~CommandSession() {
    if (timings) timings->Flush(err);
  }
  codegen::CodegenTimings* timing() { return timings ? &*timings : nullptr; }

  // Reads, parses and checks the file and its imports (into `sources`,
  // where the cache key finds them). False after diagnostics.
  bool Check(const std::string& input, Compiled& compiled) {
    auto start = Clock::now();
    sema::CheckOptions check_options;
    check_options.stdlib_dirs = common.stdlib_dirs;
    compiled.checked = sema::CheckFile(input, sources, diags, check_options);
    if (timings)
      timings->steps.Add("check (read, parse, names, types)",
                         SecondsSince(start));
    return compiled.checked.ok && !diags.HasErrors();
  }

  const CommonOptions& common;
  llvm::SourceMgr sources;
  DiagnosticEngine diags;
  std::optional<codegen::CodegenTimings> timings;
  llvm::raw_ostream& err;
};

// Lowers, differentiates, verifies and optimizes the checked program.
// Printed IR and timings go to stderr. False after diagnostics.
bool CompileChecked(Compiled& compiled, int opt_level,
                    const OptimizerOptions& optimizer, DiagnosticEngine& diags,
                    llvm::raw_ostream& err, codegen::CodegenTimings* timings) {
  auto start = Clock::now();
  compile::CompileOptions options;
  options.pipeline.opt_level = opt_level;
  options.pipeline.print_after = optimizer.print_after;
  options.pipeline.time_passes = optimizer.time_passes;
  options.pipeline.verify_each |= optimizer.verify_each;
  options.pass_log = &err;
  compiled.module = compile::Compile(*compiled.checked.program, diags, options);
  if (timings != nullptr)
    timings->steps.Add("lower, differentiate, optimize the IR (passes above)",
                       SecondsSince(start));
  return compiled.module != nullptr;
}

// The cache for a command whose output is of a `cached_form`. It is off
// when the user wants to see the IR or verify it, which needs the
// compilation.
CompileCache OpenCache(bool cached_form, const CacheOptions& cache,
                       const OptimizerOptions& optimizer) {
  bool on =
      cached_form && optimizer.print_after.empty() && !optimizer.verify_each;
  return CompileCache(on ? cache.dir : "", cache.max_bytes);
}

// The entry under `key`, timed as a hit or a miss.
std::optional<CacheEntry> LookUp(const CompileCache& cache,
                                 const std::string& key,
                                 codegen::CodegenTimings* timings) {
  auto start = Clock::now();
  std::optional<CacheEntry> entry = cache.Load(key);
  if (timings != nullptr)
    timings->steps.Add(std::string("compilation cache: ") +
                           (entry ? "hit " : "miss ") + cache.PathOf(key),
                       SecondsSince(start));
  return entry;
}

void StoreTimed(const CompileCache& cache, const std::string& key,
                const CacheEntry& entry, codegen::CodegenTimings* timings) {
  auto start = Clock::now();
  cache.Store(key, entry);
  if (timings != nullptr)
    timings->steps.Add("compilation cache: store", SecondsSince(start));
}

// Opens `path` for writing ("-" is stdout).
std::unique_ptr<llvm::ToolOutputFile> OpenOutput(const std::string& path,
                                                 llvm::raw_ostream& err) {
  std::error_code error;
  auto file = std::make_unique<llvm::ToolOutputFile>(path, error,
                                                     llvm::sys::fs::OF_Text);
  if (error) {
    err << "dlc: error: cannot write '" << path << "': " << error.message()
        << "\n";
    return nullptr;
  }
  return file;
}

// `dlc build --emit=llvm|asm|obj` and executables: native code for the host
// through LLVM, linked with the runtime for an executable.
ExitStatus BuildNative(const ir::Module& module,
                       const BuildCommandOptions& options,
                       llvm::raw_ostream& err, codegen::CodegenTimings* timings,
                       codegen::HostHooks* hooks = nullptr) {
  llvm::LLVMContext context;
  codegen::CodegenOptions codegen_options;
  codegen_options.timings = timings;
  codegen_options.opt_level = options.opt_level;
  // Objects and assembly carry the C `main` too, so that linking them with
  // the runtime gives the same program as `dlc build`.
  codegen_options.emit_c_main = true;
  codegen_options.hooks = hooks;
  std::unique_ptr<llvm::Module> llvm_module =
      codegen::EmitLLVM(module, context, codegen_options);
  if (options.emit == Emit::Llvm) {
    auto file = OpenOutput(options.output, err);
    if (!file) return kExitCompileError;
    llvm_module->print(file->os(), nullptr);
    file->keep();
    return kExitSuccess;
  }
  std::string error;
  if (options.emit == Emit::Asm || options.emit == Emit::Obj) {
    llvm::SmallString<0> code;
    llvm::raw_svector_ostream code_stream(code);
    if (!codegen::EmitMachineCode(*llvm_module, options.opt_level,
                                  options.emit == Emit::Asm
                                      ? llvm::CodeGenFileType::AssemblyFile
                                      : llvm::CodeGenFileType::ObjectFile,
                                  code_stream, error, timings)) {
      err << "dlc: error: " << error << "\n";
      return kExitCompileError;
    }
    auto file = OpenOutput(options.output, err);
    if (!file) return kExitCompileError;
    file->os() << code.str();
    file->keep();
    return kExitSuccess;
  }
  std::vector<std::string> objects;
  codegen::TemporaryObjects files;
  if (!codegen::EmitObjects(*llvm_module, options.opt_level, objects, error,
                            timings) ||
      !files.Write(objects, error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  static int anchor;
  std::string runtime = codegen::FindRuntimeLibrary(
      llvm::sys::fs::getMainExecutable(nullptr, &anchor));
  auto start = Clock::now();
  if (!codegen::LinkExecutable(files.paths(), options.output, runtime, error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  if (timings != nullptr)
    timings->steps.Add("link the executable", SecondsSince(start));
  return kExitSuccess;
}

// `dlc build --lib FILE.dl -o DIR`: DIR/libNAME.so, DIR/libNAME.a and
// DIR/NAME.h for the `export fn`s (docs/embedding.md).
ExitStatus BuildLibrary(const Compiled& compiled,
                        const BuildCommandOptions& options,
                        llvm::raw_ostream& err,
                        codegen::CodegenTimings* timings,
                        codegen::HostHooks* hooks = nullptr) {
  static int anchor;
  if (options.output == "-") {
    err << "dlc: error: --lib writes a folder (libNAME.so, libNAME.a, "
           "NAME.h), not standard output: give -o a folder\n";
    return kExitUsage;
  }
  c_abi::LibraryOptions library;
  library.output_dir = options.output;
  library.name = llvm::sys::path::stem(options.input).str();
  library.runtime_library = codegen::FindRuntimeLibrary(
      llvm::sys::fs::getMainExecutable(nullptr, &anchor));
  library.opt_level = options.opt_level;
  library.hooks = hooks;
  library.timings = timings;
  std::string error;
  if (!c_abi::WriteLibrary(*compiled.checked.program, *compiled.module, library,
                           error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  return kExitSuccess;
}

// Links `object` in memory and runs its `main`: the exit status of
// `dlc run`.
ExitStatus RunMainObject(const codegen::MainObject& object,
                         const std::vector<std::string>& argv,
                         llvm::raw_ostream& out, llvm::raw_ostream& err,
                         codegen::CodegenTimings* timings) {
  out.flush();
  std::string error;
  int status = 0;
  if (!codegen::RunObject(object, argv, status, error, timings)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  return status == 0 ? kExitSuccess : kExitCompileError;
}

// `dlc run` without --interp: compiles `main` to an object (stored in
// `cache` under `key` if enabled), links it in memory and runs it. The
// program prints through the runtime (C stdio); a run-time error exits with
// status 1 from inside the program.
ExitStatus RunNative(const ir::Module& module, int opt_level,
                     const std::vector<std::string>& argv,
                     llvm::raw_ostream& out, llvm::raw_ostream& err,
                     codegen::CodegenTimings* timings,
                     const CompileCache& cache, const std::string& key,
                     codegen::HostHooks* hooks = nullptr) {
  codegen::CodegenOptions codegen_options;
  codegen_options.opt_level = opt_level;
  codegen_options.hooks = hooks;
  codegen_options.timings = timings;
  codegen::MainObject object;
  std::string error;
  if (!codegen::CompileMain(module, codegen_options, object, error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  if (cache.enabled()) {
    CacheEntry entry;
    for (const std::string& code : object.objects)
      entry.files.emplace_back("main.o", code);
    if (object.vector_math) entry.files.emplace_back("libmvec", "");
    StoreTimed(cache, key, entry, timings);
  }
  return RunMainObject(object, argv, out, err, timings);
}

// --target=cuda: the module's kernels as PTX (docs/gpu.md). Null after
// reporting an error.
template <typename Options>
std::unique_ptr<cuda::CudaCompilation> CompileCuda(const ir::Module& module,
                                                   const Options& options,
                                                   llvm::raw_ostream& err) {
  cuda::CudaOptions cuda_options;
  cuda_options.gpu_arch = options.gpu_arch;
  cuda_options.opt_level = options.opt_level;
  cuda_options.min_work = options.gpu_min_work;
  std::string error;
  auto compilation = cuda::CompileKernels(module, cuda_options, error);
  if (!compilation) err << "dlc: error: " << error << "\n";
  return compilation;
}

// `dlc build --target=cuda`: PTX with --emit=ptx, otherwise the CPU forms
// with host code that launches the kernels.
ExitStatus BuildCuda(const ir::Module& module,
                     const BuildCommandOptions& options, llvm::raw_ostream& err,
                     codegen::CodegenTimings* timings) {
  auto compilation = CompileCuda(module, options, err);
  if (!compilation) return kExitCompileError;
  if (options.emit == Emit::Ptx) {
    auto file = OpenOutput(options.output, err);
    if (!file) return kExitCompileError;
    file->os() << cuda::Ptx(*compilation);
    file->keep();
    return kExitSuccess;
  }
  return BuildNative(module, options, err, timings, &cuda::Hooks(*compilation));
}

// The files a cached `dlc build` writes: the executable, or the library's
// files in the output folder.
std::vector<std::string> BuildOutputs(const BuildCommandOptions& options) {
  if (options.emit == Emit::Executable) return {options.output};
  std::vector<std::string> paths;
  for (const std::string& file :
       c_abi::LibraryFiles(llvm::sys::path::stem(options.input).str())) {
    llvm::SmallString<256> path(options.output);
    llvm::sys::path::append(path, file);
    paths.push_back(path.str().str());
  }
  return paths;
}

// Writes a cached build's files where the build would have; false if one
// cannot be written (the build then runs).
bool WriteCachedOutputs(const CacheEntry& entry,
                        const BuildCommandOptions& options) {
  if (options.emit == Emit::Library &&
      llvm::sys::fs::create_directories(options.output))
    return false;
  if (!WriteEntryFiles(entry, BuildOutputs(options))) return false;
  if (options.emit == Emit::Executable)
    llvm::sys::fs::setPermissions(
        options.output, llvm::sys::fs::all_read | llvm::sys::fs::all_exe |
                            llvm::sys::fs::owner_write);
  return true;
}

// Builds the forms that need no cache decision.
ExitStatus BuildCompiled(const Compiled& compiled,
                         const BuildCommandOptions& options,
                         llvm::raw_ostream& err,
                         codegen::CodegenTimings* timings) {
  switch (options.emit) {
    case Emit::Ir: {
      auto file = OpenOutput(options.output, err);
      if (!file) return kExitCompileError;
      ir::PrintModule(*compiled.module, file->os());
      file->keep();
      return kExitSuccess;
    }
    case Emit::Library:
      if (options.target == "cuda") {
        // The library embeds the kernels' PTX; each context owns its device
        // session (docs/gpu.md).
        auto compilation = CompileCuda(*compiled.module, options, err);
        if (!compilation) return kExitCompileError;
        return BuildLibrary(compiled, options, err, timings,
                            &cuda::Hooks(*compilation));
      }
      if (options.target != "cpu") break;
      return BuildLibrary(compiled, options, err, timings);
    case Emit::Ptx:
      if (options.target != "cuda") {
        err << "dlc: error: --emit=ptx needs --target=cuda\n";
        return kExitUsage;
      }
      return BuildCuda(*compiled.module, options, err, timings);
    case Emit::Llvm:
    case Emit::Asm:
    case Emit::Obj:
    case Emit::Executable:
      if (options.target == "cuda")
        return BuildCuda(*compiled.module, options, err, timings);
      if (options.target != "cpu") break;
      return BuildNative(*compiled.module, options, err, timings);
    default:
      break;
  }
  err << "dlc: this form of 'build' is not implemented yet\n";
  return kExitUsage;
}

}  // namespace

ExitStatus Build(const BuildCommandOptions& options, llvm::raw_ostream& out,
                 llvm::raw_ostream& err) {
  (void)out;
  CommandSession session(options.common, options.optimizer.time_passes, err);
  DiagnosticEngine& diags = session.diags;
  codegen::CodegenTimings* timing = session.timing();
  Compiled compiled;
  if (!session.Check(options.input, compiled)) return kExitCompileError;
  // Executables and CPU libraries are cached (Note [Compilation cache]).
  bool cached_form =
      (options.emit == Emit::Executable || options.emit == Emit::Library) &&
      options.target == "cpu" && options.output != "-";
  CompileCache cache = OpenCache(cached_form, options.cache, options.optimizer);
  std::string key;
  if (cache.enabled()) {
    static int anchor;
    std::string runtime = codegen::FindRuntimeLibrary(
        llvm::sys::fs::getMainExecutable(nullptr, &anchor));
    key = CompilationKey(
        session.sources,
        {options.emit == Emit::Library ? "lib" : "exe",
         llvm::sys::path::stem(options.input).str(),
         "-O" + std::to_string(options.opt_level), FileIdentity(runtime)});
    if (std::optional<CacheEntry> entry = LookUp(cache, key, timing))
      if (WriteCachedOutputs(*entry, options)) return kExitSuccess;
  }
  if (!CompileChecked(compiled, options.opt_level, options.optimizer, diags,
                      err, timing))
    return kExitCompileError;
  ExitStatus status = BuildCompiled(compiled, options, err, timing);
  if (status == kExitSuccess && cache.enabled()) {
    if (std::optional<CacheEntry> entry = ReadEntryFiles(BuildOutputs(options)))
      StoreTimed(cache, key, *entry, timing);
  }
  return status;
}

ExitStatus Run(const RunCommandOptions& options, llvm::raw_ostream& out,
               llvm::raw_ostream& err) {
  CommandSession session(options.common, options.optimizer.time_passes, err);
  DiagnosticEngine& diags = session.diags;
  codegen::CodegenTimings* timing = session.timing();
  Compiled compiled;
  if (!session.Check(options.input, compiled)) return kExitCompileError;
  // The program's argv: its name (for a usage message), then ARGS, which
  // fill main's parameters (docs/language/io.md).
  std::vector<std::string> argv = {llvm::sys::path::stem(options.input).str()};
  argv.insert(argv.end(), options.args.begin(), options.args.end());
  // Compiled CPU code is cached (Note [Compilation cache]).
  bool native_cpu = !options.interpret && options.target == "cpu";
  CompileCache cache = OpenCache(native_cpu, options.cache, options.optimizer);
  std::string key;
  if (cache.enabled()) {
    key = CompilationKey(session.sources,
                         {"run", "-O" + std::to_string(options.opt_level)});
    if (std::optional<CacheEntry> entry = LookUp(cache, key, timing)) {
      codegen::MainObject object;
      for (const auto& [name, code] : entry->files)
        if (name == "main.o") object.objects.push_back(code);
      object.vector_math = entry->Find("libmvec") != nullptr;
      if (!object.objects.empty())
        return RunMainObject(object, argv, out, err, timing);
    }
  }
  if (!CompileChecked(compiled, options.opt_level, options.optimizer, diags,
                      err, timing))
    return kExitCompileError;
  if (!compiled.module->FindFunction("main")) {
    diags.Report(DiagKind::NoMain, Span{},
                 "'" + options.input + "' has no fn main() to run");
    return kExitCompileError;
  }
  if (!options.interpret && options.target == "cuda") {
    auto compilation = CompileCuda(*compiled.module, options, err);
    if (!compilation) return kExitCompileError;
    return RunNative(*compiled.module, options.opt_level, argv, out, err,
                     timing, cache, key, &cuda::Hooks(*compilation));
  }
  if (!options.interpret)
    return RunNative(*compiled.module, options.opt_level, argv, out, err,
                     timing, cache, key);
  if (compiled.module->IsSharded()) delta_shard_init();
  llvm::Expected<int> status =
      interpreter::RunMain(*compiled.module, out, argv);
  out.flush();
  if (!status) {
    std::string message = llvm::toString(status.takeError());
    err << WithRunTimeErrorExcerpt(message);
    // The other processes of a sharded run would wait for this one.
    err.flush();
    delta_shard_abort(1);
    return kExitCompileError;
  }
  delta_shard_finalize();
  return *status == 0 ? kExitSuccess : kExitCompileError;
}

ExitStatus Check(const CheckCommandOptions& options, llvm::raw_ostream& out,
                 llvm::raw_ostream& err) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources, err, options.common.diagnostics,
                         UseColor(options.common.color));

  // 1. Read, parse and check the file and its imports (sema reads the files
  //    itself so that the main file and imports take the same path).
  sema::CheckOptions check_options;
  check_options.stdlib_dirs = options.common.stdlib_dirs;
  sema::CheckResult checked =
      sema::CheckFile(options.input, sources, diags, check_options);
  if (checked.program == nullptr && !diags.HasErrors()) {
    // The contract is "exit 1 with a diagnostic", whichever layer noticed.
    diags.Report(DiagKind::CannotReadFile, Span{},
                 "cannot read '" + options.input + "'");
  }
  if (!checked.ok || diags.HasErrors()) return kExitCompileError;

  // 2. With --types, the typed top-level definitions.
  if (options.print_types) {
    sema::PrintTypesOptions print_options;
    print_options.locals = options.print_locals;
    sema::PrintTypes(*checked.program, out, print_options);
  }
  out.flush();
  return kExitSuccess;
}

}  // namespace delta::driver

// The stages of each `dlc` command, in order: check, the front half
// (compile/compile.h), then code generation or the interpreter.
#include "compiler/driver/pipeline.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/ToolOutputFile.h>

#include "compiler/codegen/c_abi/library.h"
#include "compiler/codegen/cuda/host_launch.h"
#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/jit.h"
#include "compiler/codegen/llvm/object.h"
#include "compiler/compile/compile.h"
#include "compiler/diagnostics/diagnostics.h"
#include "compiler/ir/printer.h"
#include "compiler/sema/program.h"
#include "compiler/sema/sema.h"

namespace delta::driver {

namespace {

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
// the front half (compile/compile.h). `module` is null after diagnostics.
struct Compiled {
  sema::CheckResult checked;
  std::unique_ptr<ir::Module> module;
};

Compiled CheckAndCompile(const std::string& input, const CommonOptions& common,
                         int opt_level, const OptimizerOptions& optimizer,
                         DiagnosticEngine& diags, llvm::raw_ostream& err) {
  Compiled compiled;
  // 1. Read, parse and check the file and its imports.
  sema::CheckOptions check_options;
  check_options.stdlib_dirs = common.stdlib_dirs;
  compiled.checked =
      sema::CheckFile(input, diags.sources(), diags, check_options);
  if (!compiled.checked.ok || diags.HasErrors()) return compiled;
  // 2. Lower, differentiate, verify and optimize. Printed IR and timings go
  //    to stderr.
  compile::CompileOptions options;
  options.pipeline.opt_level = opt_level;
  options.pipeline.print_after = optimizer.print_after;
  options.pipeline.time_passes = optimizer.time_passes;
  options.pipeline.verify_each |= optimizer.verify_each;
  options.pass_log = &err;
  compiled.module = compile::Compile(*compiled.checked.program, diags, options);
  return compiled;
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
                       llvm::raw_ostream& err,
                       codegen::HostHooks* hooks = nullptr) {
  llvm::LLVMContext context;
  codegen::CodegenOptions codegen_options;
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
  llvm::SmallString<0> code;
  llvm::raw_svector_ostream code_stream(code);
  std::string error;
  if (!codegen::EmitMachineCode(*llvm_module, options.opt_level,
                                options.emit == Emit::Asm
                                    ? llvm::CodeGenFileType::AssemblyFile
                                    : llvm::CodeGenFileType::ObjectFile,
                                code_stream, error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  if (options.emit == Emit::Asm || options.emit == Emit::Obj) {
    auto file = OpenOutput(options.output, err);
    if (!file) return kExitCompileError;
    file->os() << code.str();
    file->keep();
    return kExitSuccess;
  }
  llvm::SmallString<128> object;
  if (std::error_code code_error =
          llvm::sys::fs::createTemporaryFile("delta", "o", object)) {
    err << "dlc: error: cannot create a temporary file: "
        << code_error.message() << "\n";
    return kExitCompileError;
  }
  llvm::FileRemover remove_object(object);
  {
    std::error_code code_error;
    llvm::raw_fd_ostream object_stream(object, code_error);
    object_stream << code.str();
    if (code_error || object_stream.has_error()) {
      err << "dlc: error: cannot write '" << object << "'\n";
      object_stream.clear_error();
      return kExitCompileError;
    }
  }
  static int anchor;
  std::string runtime = codegen::FindRuntimeLibrary(
      llvm::sys::fs::getMainExecutable(nullptr, &anchor));
  if (!codegen::LinkExecutable(object.str().str(), options.output, runtime,
                               error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  return kExitSuccess;
}

// `dlc build --lib FILE.dl -o DIR`: DIR/libNAME.so, DIR/libNAME.a and
// DIR/NAME.h for the `export fn`s (docs/embedding.md).
ExitStatus BuildLibrary(const Compiled& compiled,
                        const BuildCommandOptions& options,
                        llvm::raw_ostream& err,
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
  std::string error;
  if (!c_abi::WriteLibrary(*compiled.checked.program, *compiled.module, library,
                           error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  return kExitSuccess;
}

// `dlc run` without --interp: compiles `main` with the JIT and runs it. The
// program prints through the runtime (C stdio); a run-time error exits with
// status 1 from inside the program.
ExitStatus RunNative(const ir::Module& module, int opt_level,
                     const std::vector<std::string>& argv,
                     llvm::raw_ostream& out, llvm::raw_ostream& err,
                     codegen::HostHooks* hooks = nullptr) {
  out.flush();
  codegen::CodegenOptions codegen_options;
  codegen_options.opt_level = opt_level;
  codegen_options.hooks = hooks;
  std::string error;
  int status = 0;
  if (!codegen::RunMain(module, codegen_options, argv, status, error)) {
    err << "dlc: error: " << error << "\n";
    return kExitCompileError;
  }
  return status == 0 ? kExitSuccess : kExitCompileError;
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
                     const BuildCommandOptions& options,
                     llvm::raw_ostream& err) {
  auto compilation = CompileCuda(module, options, err);
  if (!compilation) return kExitCompileError;
  if (options.emit == Emit::Ptx) {
    auto file = OpenOutput(options.output, err);
    if (!file) return kExitCompileError;
    file->os() << cuda::Ptx(*compilation);
    file->keep();
    return kExitSuccess;
  }
  return BuildNative(module, options, err, &cuda::Hooks(*compilation));
}

}  // namespace

ExitStatus Build(const BuildCommandOptions& options, llvm::raw_ostream& out,
                 llvm::raw_ostream& err) {
  (void)out;
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources, err, options.common.diagnostics,
                         UseColor(options.common.color));
  Compiled compiled =
      CheckAndCompile(options.input, options.common, options.opt_level,
                      options.optimizer, diags, err);
  if (!compiled.module) return kExitCompileError;
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
        return BuildLibrary(compiled, options, err, &cuda::Hooks(*compilation));
      }
      if (options.target != "cpu") break;
      return BuildLibrary(compiled, options, err);
    case Emit::Ptx:
      if (options.target != "cuda") {
        err << "dlc: error: --emit=ptx needs --target=cuda\n";
        return kExitUsage;
      }
      return BuildCuda(*compiled.module, options, err);
    case Emit::Llvm:
    case Emit::Asm:
    case Emit::Obj:
    case Emit::Executable:
      if (options.target == "cuda")
        return BuildCuda(*compiled.module, options, err);
      if (options.target != "cpu") break;
      return BuildNative(*compiled.module, options, err);
    default:
      break;
  }
  err << "dlc: this form of 'build' is not implemented yet\n";
  return kExitUsage;
}

ExitStatus Run(const RunCommandOptions& options, llvm::raw_ostream& out,
               llvm::raw_ostream& err) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources, err, options.common.diagnostics,
                         UseColor(options.common.color));
  Compiled compiled =
      CheckAndCompile(options.input, options.common, options.opt_level,
                      options.optimizer, diags, err);
  if (!compiled.module) return kExitCompileError;
  if (!compiled.module->FindFunction("main")) {
    diags.Report(DiagKind::NoMain, Span{},
                 "'" + options.input + "' has no fn main() to run");
    return kExitCompileError;
  }
  // The program's argv: its name (for a usage message), then ARGS, which
  // fill main's parameters (docs/language/io.md).
  std::vector<std::string> argv = {llvm::sys::path::stem(options.input).str()};
  argv.insert(argv.end(), options.args.begin(), options.args.end());
  if (!options.interpret && options.target == "cuda") {
    auto compilation = CompileCuda(*compiled.module, options, err);
    if (!compilation) return kExitCompileError;
    return RunNative(*compiled.module, options.opt_level, argv, out, err,
                     &cuda::Hooks(*compilation));
  }
  if (!options.interpret)
    return RunNative(*compiled.module, options.opt_level, argv, out, err);
  llvm::Expected<int> status =
      interpreter::RunMain(*compiled.module, out, argv);
  out.flush();
  if (!status) {
    err << llvm::toString(status.takeError()) << "\n";
    return kExitCompileError;
  }
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

// Builds a Delta library: the object with the entry wrappers, then a .so
// (linked with clang, runtime symbols hidden by a version script) and a .a
// (one relocatable object with the runtime merged in and every symbol but
// the prefixed entries made local), and the header. See
// docs/internals/c_abi.md.
#include "compiler/codegen/c_abi/library.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/c_abi/abi_signature.h"
#include "compiler/codegen/c_abi/entry_wrappers.h"
#include "compiler/codegen/c_abi/header_writer.h"
#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/object.h"

namespace delta::c_abi {
namespace {

std::string FindTool(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (auto path = llvm::sys::findProgramByName(name)) return *path;
  return "";
}

bool Execute(const std::vector<std::string>& args, std::string& error) {
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(args[0], refs, std::nullopt, {}, 0, 0,
                                         &message);
  if (status == 0) return true;
  error = "'" + args[0] + "' failed" + (message.empty() ? "" : ": " + message);
  return false;
}

bool WriteFile(const std::string& path, llvm::StringRef text,
               std::string& error) {
  std::error_code code;
  llvm::raw_fd_ostream out(path, code);
  if (!code) out << text;
  if (code || out.has_error()) {
    out.clear_error();
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

// A temporary file removed when this goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  std::optional<llvm::FileRemover> remover;
  bool Create(const char* suffix, std::string& error) {
    if (std::error_code code =
            llvm::sys::fs::createTemporaryFile("delta-lib", suffix, path)) {
      error = "cannot create a temporary file: " + code.message();
      return false;
    }
    remover.emplace(path);
    return true;
  }
};

// What linking the runtime needs: the sanitizers' flags for a runtime
// built with them, MPI's libraries where MPI was found.
std::vector<std::string> RuntimeLinkFlags() {
  std::vector<std::string> flags;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(DELTA_RUNTIME_LINK_FLAGS).split(parts, ' ', -1, false);
  for (llvm::StringRef part : parts) flags.push_back(part.str());
  return flags;
}

bool LinkShared(const std::vector<std::string>& objects,
                const std::string& output, const AbiModule& abi,
                const std::string& runtime, bool device, std::string& error) {
  std::string linker = FindTool({"clang-19", "clang", "cc"});
  if (linker.empty()) {
    error = "no C compiler to link with (clang-19, clang or cc)";
    return false;
  }
  // Only the prefixed names are exported; the runtime copy inside is
  // private to this library.
  TempFile script;
  if (!script.Create("map", error) ||
      !WriteFile(script.path.str().str(),
                 "{\n  global: " + abi.prefix + "_*;\n  local: *;\n};\n",
                 error))
    return false;
  std::vector<std::string> args = {linker, "-shared", "-o", output};
  args.insert(args.end(), objects.begin(), objects.end());
  args.insert(args.end(),
              {runtime, "-Wl,--version-script=" + script.path.str().str(),
               "-Wl,--exclude-libs,ALL", "-Wl,-soname,lib" + abi.prefix + ".so",
               // The runtime's line tables are of no use to embedders (and
               // DWARF 5 trips older valgrind).
               "-Wl,--strip-debug", "-lstdc++", "-lm", "-lpthread"});
  // The CUDA runtime loads the driver with dlopen (in libc since glibc
  // 2.34, in libdl before).
  if (device) args.push_back("-ldl");
  std::vector<std::string> link_flags = RuntimeLinkFlags();
  args.insert(args.end(), link_flags.begin(), link_flags.end());
  // Every symbol must resolve now, except the sanitizers' (their runtime
  // comes with the executable).
  if (!DELTA_RUNTIME_SANITIZED) args.push_back("-Wl,-z,defs");
  return Execute(args, error);
}

bool ArchiveStatic(const std::vector<std::string>& objects,
                   const std::string& output, const AbiModule& abi,
                   const std::string& runtime, std::string& error) {
  std::string linker = FindTool({"clang-19", "clang", "cc"});
  std::string objcopy =
      FindTool({"llvm-objcopy-19", "llvm-objcopy", "objcopy"});
  std::string ar = FindTool({"llvm-ar-19", "llvm-ar", "ar"});
  if (linker.empty() || objcopy.empty() || ar.empty()) {
    error = "building a static library needs clang, objcopy and ar";
    return false;
  }
  // One relocatable object holding the entries and the runtime members they
  // need; then every defined symbol but PREFIX_* becomes local, so that two
  // Delta archives link into one program without clashes.
  TempFile merged;
  if (!merged.Create("o", error)) return false;
  std::string merged_path = merged.path.str().str();
  std::vector<std::string> localize = {
      objcopy, "--strip-debug", "--wildcard",
      "--keep-global-symbol=" + abi.prefix + "_*"};
  // An ASan-instrumented runtime shares one registration flag (a common
  // symbol) with the rest of the program; made local, it points nowhere.
  if (DELTA_RUNTIME_SANITIZED)
    localize.push_back("--keep-global-symbol=___asan_globals_registered");
  localize.push_back(merged_path);
  std::vector<std::string> merge = {linker, "-r", "-nostdlib", "-o",
                                    merged_path};
  merge.insert(merge.end(), objects.begin(), objects.end());
  merge.push_back(runtime);
  if (!Execute(merge, error) || !Execute(localize, error)) return false;
  llvm::sys::fs::remove(output);
  return Execute({ar, "rcs", output, merged_path}, error);
}

}  // namespace

bool WriteLibrary(const sema::Program& program, const ir::Module& module,
                  const LibraryOptions& options, std::string& error) {
  AbiModule abi;
  if (!DescribeLibrary(program, module, LibraryPrefix(options.name), abi,
                       error))
    return false;
  if (std::error_code code =
          llvm::sys::fs::create_directories(options.output_dir)) {
    error = "cannot create '" + options.output_dir + "': " + code.message();
    return false;
  }
  auto in_dir = [&](const std::string& file) {
    llvm::SmallString<256> path(options.output_dir);
    llvm::sys::path::append(path, file);
    return path.str().str();
  };
  // The header, the shared library, the static library.
  std::vector<std::string> files = LibraryFiles(options.name);
  if (!WriteFile(in_dir(files[0]), WriteHeader(abi), error)) return false;

  llvm::LLVMContext context;
  codegen::CodegenOptions codegen_options;
  codegen_options.opt_level = options.opt_level;
  codegen_options.hooks = options.hooks;
  codegen_options.timings = options.timings;
  codegen_options.library = true;
  std::unique_ptr<llvm::Module> llvm_module =
      codegen::EmitLLVM(module, context, codegen_options);
  EmitEntryWrappers(abi, *llvm_module, options.hooks != nullptr);
  std::vector<std::string> objects;
  codegen::TemporaryObjects object_files;
  if (!codegen::EmitObjects(*llvm_module, options.opt_level, objects, error,
                            options.timings) ||
      !object_files.Write(objects, error))
    return false;
  auto start = Clock::now();
  const std::vector<std::string>& object_paths = object_files.paths();
  bool linked =
      LinkShared(object_paths, in_dir(files[1]), abi, options.runtime_library,
                 options.hooks != nullptr, error) &&
      ArchiveStatic(object_paths, in_dir(files[2]), abi,
                    options.runtime_library, error);
  if (options.timings != nullptr)
    options.timings->steps.Add("link the shared and static libraries",
                               SecondsSince(start));
  return linked;
}

std::vector<std::string> LibraryFiles(const std::string& name) {
  std::string prefix = LibraryPrefix(name);
  return {prefix + ".h", "lib" + prefix + ".so", "lib" + prefix + ".a"};
}

}  // namespace delta::c_abi

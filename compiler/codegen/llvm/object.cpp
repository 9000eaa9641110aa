// Object and assembly emission, and linking executables with the runtime.
#include "compiler/codegen/llvm/object.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/Program.h>

#include "compiler/codegen/llvm/target.h"

namespace delta::codegen {

bool EmitMachineCode(llvm::Module& module, int opt_level,
                     llvm::CodeGenFileType type, llvm::raw_pwrite_stream& out,
                     std::string& error, CodegenTimings* timings) {
  auto start = Clock::now();
  std::unique_ptr<llvm::TargetMachine> machine =
      CreateHostTargetMachine(opt_level, error);
  if (machine == nullptr) return false;
  // The code generator still runs on the legacy pass manager in LLVM 19.
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr, type)) {
    error = "the host target cannot emit this file type";
    return false;
  }
  passes.run(module);
  if (timings != nullptr)
    timings->steps.Add("machine code -O" + std::to_string(opt_level),
                       SecondsSince(start));
  return true;
}

std::string FindRuntimeLibrary(const std::string& executable) {
  if (std::optional<std::string> path =
          llvm::sys::Process::GetEnv("DELTA_RUNTIME_LIBRARY"))
    return *path;
  llvm::SmallString<256> beside = llvm::sys::path::parent_path(executable);
  llvm::sys::path::append(beside, "..", "lib", "libdelta_runtime.a");
  if (llvm::sys::fs::exists(beside)) return beside.str().str();
  return DELTA_RUNTIME_LIBRARY;
}

bool LinkExecutable(const std::string& object, const std::string& output,
                    const std::string& runtime_library, std::string& error) {
  std::string linker;
  for (const char* name : {"clang-19", "clang", "cc"}) {
    if (auto path = llvm::sys::findProgramByName(name)) {
      linker = *path;
      break;
    }
  }
  if (linker.empty()) {
    error = "no C compiler to link with (clang-19, clang or cc)";
    return false;
  }
  std::vector<std::string> args = {linker, object,     runtime_library,
                                   "-o",   output,     "-lstdc++",
                                   "-lm",  "-lpthread"};
  // A runtime built with sanitizers needs their libraries at link time.
  llvm::SmallVector<llvm::StringRef, 4> extra;
  llvm::StringRef(DELTA_RUNTIME_LINK_FLAGS).split(extra, ' ', -1, false);
  for (llvm::StringRef flag : extra) args.push_back(flag.str());
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::string message;
  int status =
      llvm::sys::ExecuteAndWait(linker, refs, std::nullopt, {}, 0, 0, &message);
  if (status != 0) {
    error = "linking failed (" + linker + ")" +
            (message.empty() ? "" : ": " + message);
    return false;
  }
  return true;
}

}  // namespace delta::codegen

// Object and assembly emission, and linking executables with the runtime.
#include "compiler/codegen/llvm/object.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/Program.h>

#include <algorithm>

#include "compiler/codegen/llvm/target.h"

namespace delta::codegen {
namespace {

// Note [Large functions in code generation]: X86's domain reassignment
// (which moves scalar logic between general and AVX-512 mask registers)
// costs more than linearly in a function's size: on GradBench ht's
// Jacobian, 35k instructions after LLVM's optimizer, it took 44% of code
// generation (3.9 of 8.9 s user time, `llc-19 -O3 -time-passes`), more
// than instruction selection and register allocation together. A module
// with a function above this budget is compiled without it; the others,
// every benchmark case among them (the largest, bench/cases/mlp.dl, has
// 11k), get the same machine code as before.
constexpr unsigned kDomainReassignmentMaxInstructions = 15000;

unsigned LargestFunction(const llvm::Module& module) {
  unsigned largest = 0;
  for (const llvm::Function& function : module)
    largest = std::max(largest, function.getInstructionCount());
  return largest;
}

// Sets LLVM's -disable-x86-domain-reassignment for the scope (a global
// option; code generation here is single-threaded).
class DomainReassignmentOff {
 public:
  explicit DomainReassignmentOff(bool off) {
    auto& options = llvm::cl::getRegisteredOptions();
    auto it = options.find("disable-x86-domain-reassignment");
    if (!off || it == options.end()) return;
    option_ = static_cast<llvm::cl::opt<bool>*>(it->second);
    saved_ = *option_;
    *option_ = true;
  }
  ~DomainReassignmentOff() {
    if (option_ != nullptr) *option_ = saved_;
  }

 private:
  llvm::cl::opt<bool>* option_ = nullptr;
  bool saved_ = false;
};

}  // namespace

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
  unsigned largest = LargestFunction(module);
  bool large = largest > kDomainReassignmentMaxInstructions;
  {
    DomainReassignmentOff off(large);
    passes.run(module);
  }
  if (timings != nullptr)
    timings->steps.Add(
        "machine code -O" + std::to_string(opt_level) +
            (large ? " (largest function " + std::to_string(largest) +
                         " instructions: no domain "
                         "reassignment)"
                   : ""),
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

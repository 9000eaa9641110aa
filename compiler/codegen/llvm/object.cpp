// Object and assembly emission, and linking executables with the runtime.
#include "compiler/codegen/llvm/object.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/Threading.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <thread>

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

// Note [Loop strength reduction in large modules]: LLVM's loop strength
// reduction (which rewrites a loop's address arithmetic into induction
// variables) costs a few ms per loop nest whatever its size; GradBench ht's
// 160 outlined chunks, most with a vector loop, its epilogue and a scalar
// remainder, spent 0.35-0.45 s of 1.3 s of machine code in it and in what
// it leaves to the passes after it (`llc-19 -O3 -disable-lsr`). A module of
// this many instructions or more is compiled without it; x86's addressing
// modes take base + index * scale as they are. Every benchmark case and
// example is below the budget and compiles as before.
constexpr unsigned kStrengthReductionMaxInstructions = 20000;

// Sets the LLVM boolean option `name` (a global: code generation reads
// it; set before its threads start) to true for the scope, if `on`.
class ScopedFlag {
 public:
  ScopedFlag(llvm::StringRef name, bool on) {
    auto& options = llvm::cl::getRegisteredOptions();
    auto it = options.find(name);
    if (!on || it == options.end()) return;
    option_ = static_cast<llvm::cl::opt<bool>*>(it->second);
    saved_ = *option_;
    *option_ = true;
  }
  ~ScopedFlag() {
    if (option_ != nullptr) *option_ = saved_;
  }
  ScopedFlag(const ScopedFlag&) = delete;
  ScopedFlag& operator=(const ScopedFlag&) = delete;

 private:
  llvm::cl::opt<bool>* option_ = nullptr;
  bool saved_ = false;
};

// The code generator's budgets for `module` (Notes [Large functions in
// code generation] and [Loop strength reduction in large modules]), in
// force while this lives.
struct CodegenBudgets {
  explicit CodegenBudgets(const llvm::Module& module)
      : largest(LargestFunction(module)),
        total(module.getInstructionCount()),
        domain_reassignment("disable-x86-domain-reassignment",
                            largest > kDomainReassignmentMaxInstructions),
        strength_reduction("disable-lsr",
                           total >= kStrengthReductionMaxInstructions) {}
  // What --time-passes says of them.
  std::string Text() const {
    std::string text;
    if (total >= kStrengthReductionMaxInstructions)
      text += " (" + std::to_string(total) +
              " instructions: no loop strength reduction)";
    if (largest > kDomainReassignmentMaxInstructions)
      text += " (largest function " + std::to_string(largest) +
              " instructions: no domain reassignment)";
    return text;
  }
  unsigned largest;
  unsigned total;
  ScopedFlag domain_reassignment;
  ScopedFlag strength_reduction;
};

// Note [Parallel code generation]: a module of at least this many
// instructions (after LLVM's optimizer) is compiled to machine code as
// kPartitions objects on as many threads: GradBench ht's four entry points
// took 6-12 s in one. Each function goes whole to one partition, the
// largest first to the partition with the fewest instructions so far, so
// that the split, and with it the objects, depend only on the module, not
// on the machine. Functions and variables that were local to the module
// become hidden globals named delta.local.NAME, so that partitions can
// refer to each other's; the objects are linked together (dlc run's JIT,
// executables) or merged into one (libraries). Smaller modules, every
// benchmark case among them, are compiled whole as before, and so is every
// module in a process that may run on one CPU only (`taskset -c 1`): there
// the partitions only cost their bitcode's round trip (ht's library 0.95
// -> 0.79 s of machine code on one core).
constexpr unsigned kPartitionMinInstructions = 20000;
constexpr size_t kPartitions = 2;

// Runs the code generator (the legacy pass manager in LLVM 19) for the host.
bool RunCodeGenerator(llvm::Module& module, int opt_level,
                      llvm::CodeGenFileType type, llvm::raw_pwrite_stream& out,
                      std::string& error) {
  std::unique_ptr<llvm::TargetMachine> machine =
      CreateHostTargetMachine(opt_level, error);
  if (machine == nullptr) return false;
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr, type)) {
    error = "the host target cannot emit this file type";
    return false;
  }
  passes.run(module);
  return true;
}

std::string MachineCodeStep(int opt_level, const CodegenBudgets& budgets,
                            size_t partitions) {
  std::string step = "machine code -O" + std::to_string(opt_level);
  if (partitions > 1)
    step += ", " + std::to_string(partitions) + " partitions in parallel";
  return step + budgets.Text();
}

// The partitions of `module` as bitcode (see Note [Parallel code
// generation]); `module` keeps its code with its locals made hidden.
std::vector<llvm::SmallVector<char, 0>> Partition(llvm::Module& module) {
  for (llvm::GlobalValue& value : module.global_values()) {
    if (value.isDeclaration() || !value.hasLocalLinkage()) continue;
    value.setName("delta.local." + value.getName());
    value.setLinkage(llvm::GlobalValue::ExternalLinkage);
    value.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  // Largest first; in module order among equals.
  struct Sized {
    unsigned size;
    size_t order;
    const llvm::Function* function;
  };
  std::vector<Sized> functions;
  for (const llvm::Function& function : module)
    if (!function.isDeclaration())
      functions.push_back(
          {function.getInstructionCount(), functions.size(), &function});
  std::sort(functions.begin(), functions.end(),
            [](const Sized& a, const Sized& b) {
              return a.size != b.size ? a.size > b.size : a.order < b.order;
            });
  llvm::DenseMap<const llvm::GlobalValue*, size_t> partition_of;
  std::vector<unsigned> sizes(kPartitions, 0);
  for (const Sized& sized : functions) {
    size_t lightest = static_cast<size_t>(
        std::min_element(sizes.begin(), sizes.end()) - sizes.begin());
    partition_of[sized.function] = lightest;
    sizes[lightest] += sized.size;
  }
  std::vector<llvm::SmallVector<char, 0>> parts(kPartitions);
  for (size_t k = 0; k < kPartitions; ++k) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue* value) {
          auto it = partition_of.find(value);
          // Variables and aliases go to the first partition.
          return it == partition_of.end() ? k == 0 : it->second == k;
        });
    llvm::raw_svector_ostream out(parts[k]);
    llvm::WriteBitcodeToFile(*part, out);
  }
  return parts;
}

}  // namespace

bool EmitMachineCode(llvm::Module& module, int opt_level,
                     llvm::CodeGenFileType type, llvm::raw_pwrite_stream& out,
                     std::string& error, CodegenTimings* timings) {
  auto start = Clock::now();
  CodegenBudgets budgets(module);
  bool emitted = RunCodeGenerator(module, opt_level, type, out, error);
  if (emitted && timings != nullptr)
    timings->steps.Add(MachineCodeStep(opt_level, budgets, 1),
                       SecondsSince(start));
  return emitted;
}

bool EmitObjects(llvm::Module& module, int opt_level,
                 std::vector<std::string>& objects, std::string& error,
                 CodegenTimings* timings) {
  objects.clear();
  unsigned total = module.getInstructionCount();
  if (total < kPartitionMinInstructions ||
      llvm::hardware_concurrency().compute_thread_count() < kPartitions) {
    llvm::SmallString<0> code;
    llvm::raw_svector_ostream out(code);
    if (!EmitMachineCode(module, opt_level, llvm::CodeGenFileType::ObjectFile,
                         out, error, timings))
      return false;
    objects.push_back(code.str().str());
    return true;
  }
  auto start = Clock::now();
  CodegenBudgets budgets(module);
  std::vector<llvm::SmallVector<char, 0>> parts = Partition(module);
  std::vector<llvm::SmallString<0>> codes(parts.size());
  std::vector<std::string> errors(parts.size());
  std::vector<char> ok(parts.size(), 0);
  {
    auto compile = [&](size_t k) {
      // Each thread has its own context: LLVMContext is not thread-safe.
      llvm::LLVMContext context;
      auto part = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(
              llvm::StringRef(parts[k].data(), parts[k].size()), "partition"),
          context);
      if (!part) {
        errors[k] = llvm::toString(part.takeError());
        return;
      }
      llvm::raw_svector_ostream out(codes[k]);
      ok[k] = RunCodeGenerator(
          **part, opt_level, llvm::CodeGenFileType::ObjectFile, out, errors[k]);
    };
    std::vector<std::thread> threads;
    for (size_t k = 1; k < parts.size(); ++k) threads.emplace_back(compile, k);
    compile(0);
    for (std::thread& thread : threads) thread.join();
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!ok[k]) {
      error = errors[k];
      return false;
    }
    objects.push_back(codes[k].str().str());
  }
  if (timings != nullptr)
    timings->steps.Add(MachineCodeStep(opt_level, budgets, parts.size()),
                       SecondsSince(start));
  return true;
}

TemporaryObjects::~TemporaryObjects() {
  for (const std::string& path : paths_) llvm::sys::fs::remove(path);
}

bool TemporaryObjects::Write(const std::vector<std::string>& objects,
                             std::string& error) {
  for (const std::string& object : objects) {
    llvm::SmallString<128> path;
    if (std::error_code code =
            llvm::sys::fs::createTemporaryFile("delta", "o", path)) {
      error = "cannot create a temporary file: " + code.message();
      return false;
    }
    paths_.push_back(path.str().str());
    std::error_code code;
    llvm::raw_fd_ostream out(path, code);
    out << object;
    out.close();
    if (code || out.has_error()) {
      out.clear_error();
      error = "cannot write '" + paths_.back() + "'";
      return false;
    }
  }
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

bool LinkExecutable(const std::vector<std::string>& objects,
                    const std::string& output,
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
  std::vector<std::string> args = {linker};
  args.insert(args.end(), objects.begin(), objects.end());
  args.insert(args.end(),
              {runtime_library, "-o", output, "-lstdc++", "-lm", "-lpthread"});
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

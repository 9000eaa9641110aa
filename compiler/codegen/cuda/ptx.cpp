// NVPTX TargetMachine, libdevice for transcendental math, PTX emission.
#include "compiler/codegen/cuda/ptx.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/target.h"
#include "compiler/ir/ir.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace delta::cuda {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

// The libdevice name of a math function the CPU code calls (an LLVM
// intrinsic the NVPTX target cannot lower, or a libm function).
std::string DeviceMathName(llvm::Function& callee) {
  llvm::Type* type = callee.getReturnType();
  bool is_float = type->isFloatTy();
  auto name = [&](llvm::StringRef base) {
    return ("__nv_" + base + (is_float ? "f" : "")).str();
  };
  switch (callee.getIntrinsicID()) {
    case llvm::Intrinsic::exp:
      return name("exp");
    case llvm::Intrinsic::log:
      return name("log");
    case llvm::Intrinsic::sin:
      return name("sin");
    case llvm::Intrinsic::cos:
      return name("cos");
    case llvm::Intrinsic::pow:
      return name("pow");
    case llvm::Intrinsic::powi:
      return name("powi");
    case llvm::Intrinsic::not_intrinsic:
      break;
    default:
      return "";
  }
  // The ops that ops.def computes with libm, and frem's fmod.
  std::vector<llvm::StringRef> bases = {"fmod"};
#define DELTA_OP(Name, ...)                     \
  if (ir::HasFlag(ir::OpKind::Name, ir::kLibm)) \
    bases.push_back(ir::OpMnemonic(ir::OpKind::Name));
#include "compiler/ir/ops.def"
  llvm::StringRef libm = callee.getName();
  for (llvm::StringRef base : bases)
    if (libm == base || libm == (base + "f").str()) return name(base);
  return "";
}

// Redirects math calls to libdevice and links the functions used.
bool LinkDeviceMath(llvm::Module& module, std::string& error) {
  std::vector<std::pair<llvm::Function*, std::string>> renames;
  for (llvm::Function& function : module)
    if (function.isDeclaration()) {
      std::string name = DeviceMathName(function);
      if (!name.empty()) renames.emplace_back(&function, name);
    }
  if (renames.empty()) return true;
  for (auto& [function, name] : renames) {
    llvm::FunctionCallee target =
        module.getOrInsertFunction(name, function->getFunctionType());
    function->replaceAllUsesWith(target.getCallee());
    function->eraseFromParent();
  }
  std::string path = FindLibdevice();
  if (path.empty()) {
    error =
        "the kernels need libdevice for their math (set DELTA_LIBDEVICE or "
        "install the CUDA toolkit)";
    return false;
  }
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> libdevice =
      llvm::parseIRFile(path, diagnostic, module.getContext());
  if (!libdevice) {
    error = "cannot read libdevice '" + path +
            "': " + diagnostic.getMessage().str();
    return false;
  }
  libdevice->setTargetTriple(module.getTargetTriple());
  libdevice->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(libdevice),
                                llvm::Linker::LinkOnlyNeeded)) {
    error = "cannot link libdevice '" + path + "'";
    return false;
  }
  // Only the kernels are entries; the rest may be inlined and deleted.
  for (llvm::Function& function : module)
    if (!function.isDeclaration() &&
        function.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  return true;
}

std::unique_ptr<llvm::TargetMachine> CreateMachine(const std::string& arch,
                                                   int opt_level,
                                                   std::string& error) {
  static const bool initialized = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    return true;
  }();
  (void)initialized;
  const llvm::Target* target =
      llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (target == nullptr) return nullptr;
  llvm::TargetOptions options;
  auto level = llvm::CodeGenOpt::getLevel(opt_level).value_or(
      llvm::CodeGenOptLevel::Default);
  // PTX ISA 8.0 (CUDA 12.0) covers sm_60 … sm_90 and every ptxas since.
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      kTriple, arch, "+ptx80", options, std::nullopt, std::nullopt, level));
}

}  // namespace

std::string FindLibdevice() {
  std::vector<std::string> candidates;
  if (auto path = llvm::sys::Process::GetEnv("DELTA_LIBDEVICE"))
    candidates.push_back(*path);
  if (auto home = llvm::sys::Process::GetEnv("CUDA_HOME"))
    candidates.push_back(*home + "/nvvm/libdevice/libdevice.10.bc");
  candidates.push_back("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  for (const std::string& candidate : candidates)
    if (llvm::sys::fs::exists(candidate)) return candidate;
  return "";
}

bool IsSupportedArch(const std::string& arch) {
  llvm::StringRef rest(arch);
  unsigned version = 0;
  return rest.consume_front("sm_") && !rest.getAsInteger(10, version) &&
         version >= 60 && version <= 120;
}

bool EmitPtx(llvm::Module& module, const std::string& arch, int opt_level,
             std::string& ptx, std::string& error) {
  int level = opt_level < 1 ? 1 : opt_level;
  std::unique_ptr<llvm::TargetMachine> machine =
      CreateMachine(arch, level, error);
  if (machine == nullptr) return false;
  module.setTargetTriple(kTriple);
  module.setDataLayout(machine->createDataLayout());
  // Denormals are kept (no flush to zero), as on the CPU.
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz",
                       static_cast<uint32_t>(0));
  if (!LinkDeviceMath(module, error)) return false;
  codegen::OptimizeModule(module, *machine, level);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream stream(text);
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, stream, nullptr,
                                   llvm::CodeGenFileType::AssemblyFile)) {
    error = "the NVPTX target cannot emit PTX";
    return false;
  }
  passes.run(module);
  ptx = text.str().str();
  return true;
}

}  // namespace delta::cuda

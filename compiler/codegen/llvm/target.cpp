// The host TargetMachine and LLVM's standard optimization pipeline.
#include "compiler/codegen/llvm/target.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

namespace delta::codegen {

std::unique_ptr<llvm::TargetMachine> CreateHostTargetMachine(
    int opt_level, std::string& error) {
  static const bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    return true;
  }();
  (void)initialized;
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target* target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr) return nullptr;
  // The host's own CPU and features, so that loops vectorize with the widest
  // vectors the machine has; executables are for this machine too (a
  // portable --cpu option can come later).
  std::string features;
  for (const auto& feature : llvm::sys::getHostCPUFeatures())
    features += (feature.second ? "+" : "-") + feature.first().str() + ",";
  if (!features.empty()) features.pop_back();
  llvm::TargetOptions target_options;
  auto level = llvm::CodeGenOpt::getLevel(opt_level).value_or(
      llvm::CodeGenOptLevel::Default);
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features, target_options,
      llvm::Reloc::PIC_, std::nullopt, level));
}

void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine,
                    int opt_level) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  llvm::OptimizationLevel level = llvm::OptimizationLevel::O2;
  switch (opt_level) {
    case 0:
      level = llvm::OptimizationLevel::O0;
      break;
    case 1:
      level = llvm::OptimizationLevel::O1;
      break;
    case 3:
      level = llvm::OptimizationLevel::O3;
      break;
    default:
      break;
  }
  llvm::ModulePassManager passes =
      level == llvm::OptimizationLevel::O0
          ? builder.buildO0DefaultPipeline(level)
          : builder.buildPerModuleDefaultPipeline(level);
  passes.run(module, modules);
}

}  // namespace delta::codegen

// The host TargetMachine and LLVM's standard optimization pipeline.
#include "compiler/codegen/llvm/target.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <vector>

namespace delta::codegen {
namespace {

// The own time of each LLVM pass and analysis (not counting the passes it
// runs inside it, as pass managers and adaptors do), summed by name.
class PassClock {
 public:
  explicit PassClock(llvm::PassInstrumentationCallbacks& callbacks) {
    callbacks.registerBeforeNonSkippedPassCallback(
        [this](llvm::StringRef name, llvm::Any) { Begin(name); });
    callbacks.registerAfterPassCallback(
        [this](llvm::StringRef, llvm::Any, const llvm::PreservedAnalyses&) {
          End();
        });
    callbacks.registerAfterPassInvalidatedCallback(
        [this](llvm::StringRef, const llvm::PreservedAnalyses&) { End(); });
    callbacks.registerBeforeAnalysisCallback(
        [this](llvm::StringRef name, llvm::Any) { Begin(name); });
    callbacks.registerAfterAnalysisCallback(
        [this](llvm::StringRef, llvm::Any) { End(); });
  }

  // The `count` slowest names, then the rest as one row.
  void Report(Timings& timings, size_t count) const {
    std::vector<std::pair<std::string, double>> rows;
    for (const auto& entry : seconds_)
      rows.emplace_back(entry.getKey().str(), entry.getValue());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    double rest = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (i < count)
        timings.Add(rows[i].first, rows[i].second);
      else
        rest += rows[i].second;
    }
    if (rows.size() > count)
      timings.Add("(" + std::to_string(rows.size() - count) + " others)", rest);
  }

 private:
  void Begin(llvm::StringRef name) {
    auto now = Clock::now();
    if (!stack_.empty()) Charge(stack_.back(), now);
    stack_.push_back({name.str(), now});
  }
  void End() {
    if (stack_.empty()) return;
    auto now = Clock::now();
    Charge(stack_.back(), now);
    stack_.pop_back();
    if (!stack_.empty()) stack_.back().start = now;
  }
  struct Frame {
    std::string name;
    Clock::time_point start;
  };
  void Charge(Frame& frame, Clock::time_point now) {
    seconds_[frame.name] +=
        std::chrono::duration<double>(now - frame.start).count();
    frame.start = now;
  }
  std::vector<Frame> stack_;
  llvm::StringMap<double> seconds_;
};

// Note [Vector math]: at -O3 the loop vectorizer may replace calls to exp,
// log, sin, cos, tan, tanh and pow by glibc's vector math library, libmvec
// (4 ulp, docs/performance.md). LLVM 19's LIBMVEC_X86 table maps exp, log,
// sin, cos, tan and pow, f32 and f64, to the SSE ('b') and AVX2 ('d')
// variants only. kExtraVariants adds the AVX-512 ('e') ones, which the
// vectorizer picks on hosts whose tuning uses 512-bit vectors (znver4),
// and tanh, erf, erfc, log1p, expm1 and atan2 (libmvec since glibc 2.35)
// in every width. A variant is offered only where the CPU has its vectors:
// on an AVX2 machine (Zen 3) the vectorizer chose _ZGVeN8v_exp for f64
// loops, and its wrapper is an illegal instruction there
// (lang-tests/run/vector_math_f*.dl stopped with SIGILL). tan and those need
// glibc 2.35, so older ones get no vector math. Executables and libraries
// get libmvec from `-lm` (glibc's libm.so links it as needed); the JIT
// loads it (jit.cpp). Other -O levels keep scalar libm, bitwise equal to
// the interpreter.
#define DELTA_VECTOR_VARIANT(scalar, vector, lanes, params)          \
  llvm::VecDesc(scalar, vector, llvm::ElementCount::getFixed(lanes), \
                /*Masked=*/false, "_ZGV_LLVM_N" #lanes params)
const llvm::VecDesc kExtraVariants[] = {
    DELTA_VECTOR_VARIANT("llvm.exp.f32", "_ZGVeN16v_expf", 16, "v"),
    DELTA_VECTOR_VARIANT("llvm.exp.f64", "_ZGVeN8v_exp", 8, "v"),
    DELTA_VECTOR_VARIANT("llvm.log.f32", "_ZGVeN16v_logf", 16, "v"),
    DELTA_VECTOR_VARIANT("llvm.log.f64", "_ZGVeN8v_log", 8, "v"),
    DELTA_VECTOR_VARIANT("llvm.sin.f32", "_ZGVeN16v_sinf", 16, "v"),
    DELTA_VECTOR_VARIANT("llvm.sin.f64", "_ZGVeN8v_sin", 8, "v"),
    DELTA_VECTOR_VARIANT("llvm.cos.f32", "_ZGVeN16v_cosf", 16, "v"),
    DELTA_VECTOR_VARIANT("llvm.cos.f64", "_ZGVeN8v_cos", 8, "v"),
    DELTA_VECTOR_VARIANT("llvm.pow.f32", "_ZGVeN16vv_powf", 16, "vv"),
    DELTA_VECTOR_VARIANT("llvm.pow.f64", "_ZGVeN8vv_pow", 8, "vv"),
    DELTA_VECTOR_VARIANT("tanf", "_ZGVeN16v_tanf", 16, "v"),
    DELTA_VECTOR_VARIANT("tan", "_ZGVeN8v_tan", 8, "v"),
    DELTA_VECTOR_VARIANT("tanhf", "_ZGVbN4v_tanhf", 4, "v"),
    DELTA_VECTOR_VARIANT("tanhf", "_ZGVdN8v_tanhf", 8, "v"),
    DELTA_VECTOR_VARIANT("tanhf", "_ZGVeN16v_tanhf", 16, "v"),
    DELTA_VECTOR_VARIANT("tanh", "_ZGVbN2v_tanh", 2, "v"),
    DELTA_VECTOR_VARIANT("tanh", "_ZGVdN4v_tanh", 4, "v"),
    DELTA_VECTOR_VARIANT("tanh", "_ZGVeN8v_tanh", 8, "v"),
// The builtins added with glibc 2.35's libmvec, in every width: SSE ('b'),
// AVX2 ('d') and AVX-512 ('e'), f32 and f64.
#define DELTA_LIBMVEC_ALL_WIDTHS(name, params)                              \
  DELTA_VECTOR_VARIANT(name "f", "_ZGVbN4" params "_" name "f", 4, params), \
      DELTA_VECTOR_VARIANT(name "f", "_ZGVdN8" params "_" name "f", 8,      \
                           params),                                         \
      DELTA_VECTOR_VARIANT(name "f", "_ZGVeN16" params "_" name "f", 16,    \
                           params),                                         \
      DELTA_VECTOR_VARIANT(name, "_ZGVbN2" params "_" name, 2, params),     \
      DELTA_VECTOR_VARIANT(name, "_ZGVdN4" params "_" name, 4, params),     \
      DELTA_VECTOR_VARIANT(name, "_ZGVeN8" params "_" name, 8, params)
    DELTA_LIBMVEC_ALL_WIDTHS("erf", "v"),
    DELTA_LIBMVEC_ALL_WIDTHS("erfc", "v"),
    DELTA_LIBMVEC_ALL_WIDTHS("log1p", "v"),
    DELTA_LIBMVEC_ALL_WIDTHS("expm1", "v"),
    DELTA_LIBMVEC_ALL_WIDTHS("atan2", "vv"),
#undef DELTA_LIBMVEC_ALL_WIDTHS
};
#undef DELTA_VECTOR_VARIANT

// kExtraVariants whose vectors `machine` has: 'e' needs AVX-512, 'd' AVX2
// (Note [Vector math]).
std::vector<llvm::VecDesc> HostVariants(const llvm::TargetMachine& machine) {
  const llvm::MCSubtargetInfo& subtarget = *machine.getMCSubtargetInfo();
  bool avx512 = subtarget.checkFeatures("+avx512f");
  bool avx2 = subtarget.checkFeatures("+avx2");
  std::vector<llvm::VecDesc> variants;
  for (const llvm::VecDesc& variant : kExtraVariants) {
    char isa = variant.getVectorFnName()[4];  // _ZGV<isa>N<lanes>...
    if ((isa == 'e' && !avx512) || (isa == 'd' && !avx2)) continue;
    variants.push_back(variant);
  }
  return variants;
}

bool HasLibmvec(const llvm::Triple& triple) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
  return triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux();
#else
  (void)triple;
  return false;
#endif
}

}  // namespace

void InitializeHostTarget() {
  static const bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    return true;
  }();
  (void)initialized;
}

std::unique_ptr<llvm::TargetMachine> CreateHostTargetMachine(
    int opt_level, std::string& error) {
  InitializeHostTarget();
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
  // Note [No gathers]: with the inner loop over a few elements unrolled,
  // LLVM vectorized the loop around it with AVX-512 gathers and scatters of
  // stride d (a GMM reduction over d = 10 inside a loop over K); on these
  // machines those cost more than the scalar loads they replace, and the
  // cost model does not know it. Preferring none makes it vectorize the
  // unit-stride loops instead: GMM d10 K25 objective 0.70 -> 0.50 ms.
  features += "+prefer-no-gather,+prefer-no-scatter";
  llvm::TargetOptions target_options;
  auto level = llvm::CodeGenOpt::getLevel(opt_level).value_or(
      llvm::CodeGenOptLevel::Default);
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features, target_options,
      llvm::Reloc::PIC_, std::nullopt, level));
}

void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine,
                    int opt_level, bool vector_math, Timings* pass_timings) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  // Registered before the builder's default, which then is not added.
  const llvm::Triple& triple = machine.getTargetTriple();
  if (vector_math && HasLibmvec(triple)) {
    llvm::TargetLibraryInfoImpl library_info(triple);
    library_info.addVectorizableFunctionsFromVecLib(
        llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
    library_info.addVectorizableFunctions(HostVariants(machine));
    functions.registerPass(
        [library_info] { return llvm::TargetLibraryAnalysis(library_info); });
  }
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  llvm::PassInstrumentationCallbacks callbacks;
  std::optional<PassClock> clock;
  if (pass_timings != nullptr) clock.emplace(callbacks);
  llvm::PassBuilder builder(&machine, tuning, std::nullopt,
                            pass_timings ? &callbacks : nullptr);
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
  if (clock) clock->Report(*pass_timings, /*count=*/12);
}

bool UsesVectorMath(const llvm::Module& module) {
  for (const llvm::Function& function : module)
    if (function.isDeclaration() && function.getName().starts_with("_ZGV"))
      return true;
  return false;
}

}  // namespace delta::codegen

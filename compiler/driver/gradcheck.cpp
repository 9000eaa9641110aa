// Gradient checks: random inputs, derivative functions run by the
// interpreter in the program's own precision, central finite differences
// run by the interpreter in f64.
#include "compiler/driver/gradcheck.h"

#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/transforms/ad/forward.h"
#include "compiler/transforms/ad/reverse.h"

namespace delta::driver {
namespace {

using interpreter::Tensor;

llvm::Error Failure(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string FormatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

// Creates an empty derivative function of `primal` with its signature set
// up, as lowering does for `grad`/`jvp`/`vjp` in a program.
ir::Function* AddDerivative(ir::Module& module, ir::Function& primal,
                            ir::Derivative::Mode mode,
                            const std::string& suffix) {
  std::string name = primal.name + ".gradcheck." + suffix;
  std::string unique = name;
  for (int n = 1; module.FindFunction(unique); ++n)
    unique = name + "." + std::to_string(n);
  ir::Function* function = module.AddFunction(unique);
  ir::Derivative derivative;
  derivative.mode = mode;
  derivative.primal = &primal;
  function->derivative = derivative;
  if (mode == ir::Derivative::Mode::Jvp)
    ad::SetUpJvpSignature(primal, *function);
  else
    ad::SetUpReverseSignature(*function);
  return function;
}

// Mersenne Twister bits are specified exactly, unlike the standard
// distributions, so a seed gives the same inputs on every platform.
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  double Uniform(double low, double high) {
    double unit = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    return low + (high - low) * unit;
  }
  int64_t Integer(int64_t low, int64_t high) {
    auto count = static_cast<uint64_t>(high - low) + 1;
    return low + static_cast<int64_t>(engine_() % count);
  }

 private:
  std::mt19937_64 engine_;
};

// A tensor of `type` (whose dims have constant sizes) filled with zeros.
Tensor Zeros(const ir::Type& type) {
  Tensor tensor;
  tensor.elem = type.elem;
  tensor.index_dim = type.index_dim;
  tensor.dims = type.dims;
  size_t count = 1;
  for (const ir::Dim* dim : type.dims) {
    tensor.shape.push_back(*dim->constant);
    count *= static_cast<size_t>(*dim->constant);
  }
  if (tensor.HasFloatStorage())
    tensor.floats.assign(count, 0);
  else
    tensor.ints.assign(count, 0);
  return tensor;
}

// Random float values, representable in the tensor's own element type so
// that the f32 and the f64 evaluations see the same point.
void FillFloats(Tensor& tensor, Random& random, double low, double high) {
  for (double& value : tensor.floats) {
    value = random.Uniform(low, high);
    if (tensor.elem == ir::ElemKind::F32)
      value = static_cast<double>(static_cast<float>(value));
  }
}

// `[a=1, b=0]` for element `element` of `tensor`; empty for a scalar.
std::string Coordinates(const Tensor& tensor, size_t element) {
  if (tensor.dims.empty()) return "";
  std::vector<int64_t> coords(tensor.shape.size());
  auto rest = static_cast<int64_t>(element);
  for (size_t k = tensor.shape.size(); k-- > 0;) {
    coords[k] = tensor.shape[k] ? rest % tensor.shape[k] : 0;
    rest = tensor.shape[k] ? rest / tensor.shape[k] : 0;
  }
  std::string text = "[";
  for (size_t k = 0; k < coords.size(); ++k) {
    if (k) text += ", ";
    text += tensor.dims[k]->name + "=" + std::to_string(coords[k]);
  }
  return text + "]";
}

double Dot(const Tensor& a, const Tensor& b) {
  double total = 0;
  for (size_t i = 0; i < a.floats.size() && i < b.floats.size(); ++i)
    total += a.floats[i] * b.floats[i];
  return total;
}

class Checker {
 public:
  Checker(const ir::Module& module, const GradcheckPlan& plan,
          const GradcheckOptions& options, GradcheckCalls& calls)
      : module_(module),
        plan_(plan),
        primal_(*plan.primal),
        options_(options),
        calls_(calls),
        random_(options.seed) {}

  GradcheckReport Run() {
    MakeInputs();
    llvm::Error error = RunChecks();
    if (error) {
      report_.ok = false;
      report_.failure = llvm::toString(std::move(error));
    } else if (!report_.ok) {
      report_.failure = std::to_string(failed_) + " of " +
                        std::to_string(report_.compared) +
                        " values differ; worst: " + worst_failure_;
    }
    return report_;
  }

 private:
  llvm::Error RunChecks() {
    if (plan_.gradient)
      if (llvm::Error error = CheckGradient()) return error;
    if (plan_.jvp)
      if (llvm::Error error = CheckJvpAndVjp()) return error;
    if (plan_.hvp)
      if (llvm::Error error = CheckHvp()) return error;
    if (plan_.gradient_of_gradient)
      if (llvm::Error error = CheckGradientOfGradient()) return error;
    return llvm::Error::success();
  }

  void MakeInputs() {
    for (size_t i = 0; i < primal_.params.size(); ++i) {
      const ir::Type& type = primal_.params[i]->type;
      Tensor arg = Zeros(type);
      if (arg.HasFloatStorage()) {
        FillFloats(arg, random_, options_.float_low, options_.float_high);
        float_leaves_.push_back(i);
        Tensor tangent = Zeros(type);
        FillFloats(tangent, random_, -1, 1);
        tangents_.push_back(std::move(tangent));
      } else if (type.elem == ir::ElemKind::Index) {
        int64_t size = *type.index_dim->constant;
        for (int64_t& value : arg.ints)
          value = size > 0 ? random_.Integer(0, size - 1) : 0;
      } else if (type.elem == ir::ElemKind::Bool) {
        for (int64_t& value : arg.ints) value = random_.Integer(0, 1);
      } else {
        for (int64_t& value : arg.ints)
          value = random_.Integer(options_.int_low, options_.int_high);
      }
      args_.push_back(std::move(arg));
    }
  }

  llvm::Expected<std::vector<Tensor>> Evaluate(const ir::Function& function,
                                               std::vector<Tensor> args,
                                               bool in_f64,
                                               size_t result_count) {
    if (calls_.replay) {
      if (calls_.next >= calls_.calls.size() ||
          calls_.calls[calls_.next].function != &function)
        return Failure("internal error: the replayed gradient check of " +
                       primal_.name + " diverged");
      return calls_.calls[calls_.next++].results;
    }
    GradcheckCall call;
    call.function = &function;
    call.derivative = !in_f64;
    if (call.derivative) call.args = args;
    std::string printed;
    llvm::raw_string_ostream out(printed);
    interpreter::InterpreterOptions options;
    options.f32_as_f64 = in_f64;
    interpreter::Interpreter interpreter(module_, out, options);
    auto results = interpreter.Call(function, std::move(args));
    if (!results)
      return Failure("running " + function.name + (in_f64 ? " in f64" : "") +
                     ": " + llvm::toString(results.takeError()));
    if (results->size() != result_count)
      return Failure("internal error: " + function.name + " gave " +
                     std::to_string(results->size()) + " results, expected " +
                     std::to_string(result_count));
    call.results = *results;
    calls_.calls.push_back(std::move(call));
    return results;
  }

  // The inputs moved by `scale` times the tangents along every float leaf.
  std::vector<Tensor> Shifted(double scale) const {
    std::vector<Tensor> args = args_;
    for (size_t k = 0; k < float_leaves_.size(); ++k) {
      Tensor& arg = args[float_leaves_[k]];
      for (size_t e = 0; e < arg.floats.size(); ++e)
        arg.floats[e] += scale * tangents_[k].floats[e];
    }
    return args;
  }

  // The inputs followed by the tangent of every float leaf.
  std::vector<Tensor> WithTangents() const {
    std::vector<Tensor> args = args_;
    args.insert(args.end(), tangents_.begin(), tangents_.end());
    return args;
  }

  std::string LeafName(size_t param) const {
    auto name_of = [&](size_t i) {
      return i < primal_.param_names.size() ? primal_.param_names[i]
                                            : "arg" + std::to_string(i);
    };
    std::string name = name_of(param);
    // Struct and tuple parameters are flattened into leaves of one name.
    int ordinal = 0, count = 0;
    for (size_t i = 0; i < primal_.params.size(); ++i) {
      if (name_of(i) != name) continue;
      ++count;
      if (i <= param) ++ordinal;
    }
    return count > 1 ? name + "." + std::to_string(ordinal) : name;
  }

  void Compare(double derivative, double reference, const std::string& what) {
    ++report_.compared;
    double error = std::fabs(derivative - reference);
    double allowed = options_.abs_tol + options_.rel_tol * std::fabs(reference);
    if (std::isnan(error)) error = std::numeric_limits<double>::infinity();
    if (error > report_.worst_error) report_.worst_error = error;
    if (error <= allowed) return;
    report_.ok = false;
    ++failed_;
    double ratio = error / allowed;
    if (ratio > worst_ratio_) {
      worst_ratio_ = ratio;
      worst_failure_ = what + " = " + FormatNumber(derivative) +
                       ", finite difference " + FormatNumber(reference) +
                       " (error " + FormatNumber(error) + " > tolerance " +
                       FormatNumber(allowed) + ")";
    }
  }

  // (a) Each gradient entry against (f(x + h e_i) - f(x - h e_i)) / 2h.
  llvm::Error CheckGradient() {
    auto gradients =
        Evaluate(*plan_.gradient, args_, false, float_leaves_.size());
    if (!gradients) return gradients.takeError();
    double h = options_.step;
    for (size_t k = 0; k < float_leaves_.size(); ++k) {
      size_t param = float_leaves_[k];
      for (size_t e = 0; e < args_[param].floats.size(); ++e) {
        std::vector<Tensor> plus = args_, minus = args_;
        plus[param].floats[e] += h;
        minus[param].floats[e] -= h;
        auto f_plus = Evaluate(primal_, std::move(plus), true, 1);
        if (!f_plus) return f_plus.takeError();
        auto f_minus = Evaluate(primal_, std::move(minus), true, 1);
        if (!f_minus) return f_minus.takeError();
        double reference =
            ((*f_plus)[0].floats[0] - (*f_minus)[0].floats[0]) / (2 * h);
        Compare((*gradients)[k].floats.at(e), reference,
                "grad d/d" + LeafName(param) + Coordinates(args_[param], e));
      }
    }
    return llvm::Error::success();
  }

  // (b) The JVP tangent in a random direction v against
  // (f(x + h v) - f(x - h v)) / 2h, and the pullback of a random cotangent
  // dy through <pullback(dy), v> = <dy, J v>.
  llvm::Error CheckJvpAndVjp() {
    size_t result_count = primal_.result_types.size();
    std::vector<size_t> float_results;
    for (size_t r = 0; r < result_count; ++r)
      if (ir::IsFloat(primal_.result_types[r].elem)) float_results.push_back(r);
    auto jvp = Evaluate(*plan_.jvp, WithTangents(), false,
                        result_count + float_results.size());
    if (!jvp) return jvp.takeError();
    double h = options_.step;
    auto f_plus = Evaluate(primal_, Shifted(h), true, result_count);
    if (!f_plus) return f_plus.takeError();
    auto f_minus = Evaluate(primal_, Shifted(-h), true, result_count);
    if (!f_minus) return f_minus.takeError();
    std::vector<Tensor> directional;
    for (size_t j = 0; j < float_results.size(); ++j) {
      size_t r = float_results[j];
      Tensor reference = (*f_plus)[r];
      for (size_t e = 0; e < reference.floats.size(); ++e)
        reference.floats[e] =
            ((*f_plus)[r].floats[e] - (*f_minus)[r].floats.at(e)) / (2 * h);
      const Tensor& tangent = (*jvp)[result_count + j];
      std::string what = result_count > 1
                             ? "jvp of result " + std::to_string(r + 1)
                             : std::string("jvp");
      for (size_t e = 0; e < reference.floats.size(); ++e)
        Compare(tangent.floats.at(e), reference.floats[e],
                what + Coordinates(reference, e));
      directional.push_back(std::move(reference));
    }
    if (!plan_.vjp) return llvm::Error::success();
    std::vector<Tensor> vjp_args = args_;
    std::vector<Tensor> cotangents;
    for (size_t r : float_results) {
      Tensor dy = Zeros(primal_.result_types[r]);
      FillFloats(dy, random_, -1, 1);
      vjp_args.push_back(dy);
      cotangents.push_back(std::move(dy));
    }
    auto pulled =
        Evaluate(*plan_.vjp, std::move(vjp_args), false, float_leaves_.size());
    if (!pulled) return pulled.takeError();
    double pulled_dot_v = 0, dy_dot_jv = 0;
    for (size_t k = 0; k < float_leaves_.size(); ++k)
      pulled_dot_v += Dot((*pulled)[k], tangents_[k]);
    for (size_t j = 0; j < cotangents.size(); ++j)
      dy_dot_jv += Dot(cotangents[j], directional[j]);
    Compare(pulled_dot_v, dy_dot_jv, "vjp <pullback(dy), v> vs <dy, J v>");
    return llvm::Error::success();
  }

  // jvp(grad(f)) in direction v against (grad f(x + h v) - grad f(x - h v))
  // / 2h, the gradients in f64.
  llvm::Error CheckHvp() {
    size_t count = float_leaves_.size();
    auto hvp = Evaluate(*plan_.hvp, WithTangents(), false, 2 * count);
    if (!hvp) return hvp.takeError();
    double h = options_.step;
    auto g_plus = Evaluate(*plan_.gradient, Shifted(h), true, count);
    if (!g_plus) return g_plus.takeError();
    auto g_minus = Evaluate(*plan_.gradient, Shifted(-h), true, count);
    if (!g_minus) return g_minus.takeError();
    for (size_t k = 0; k < count; ++k) {
      const Tensor& plus = (*g_plus)[k];
      for (size_t e = 0; e < plus.floats.size(); ++e) {
        double reference =
            (plus.floats[e] - (*g_minus)[k].floats.at(e)) / (2 * h);
        Compare((*hvp)[count + k].floats.at(e), reference,
                "hvp d/d" + LeafName(float_leaves_[k]) + Coordinates(plus, e));
      }
    }
    return llvm::Error::success();
  }

  // grad(grad(f)) of a function of one scalar against the finite difference
  // of grad(f) in f64.
  llvm::Error CheckGradientOfGradient() {
    auto second = Evaluate(*plan_.gradient_of_gradient, args_, false, 1);
    if (!second) return second.takeError();
    double h = options_.step;
    size_t param = float_leaves_[0];
    std::vector<Tensor> plus = args_, minus = args_;
    plus[param].floats[0] += h;
    minus[param].floats[0] -= h;
    auto g_plus = Evaluate(*plan_.gradient, std::move(plus), true, 1);
    if (!g_plus) return g_plus.takeError();
    auto g_minus = Evaluate(*plan_.gradient, std::move(minus), true, 1);
    if (!g_minus) return g_minus.takeError();
    double reference =
        ((*g_plus)[0].floats[0] - (*g_minus)[0].floats[0]) / (2 * h);
    Compare((*second)[0].floats.at(0), reference,
            "grad(grad) d2/d" + LeafName(param) + "2");
    return llvm::Error::success();
  }

  const ir::Module& module_;
  const GradcheckPlan& plan_;
  const ir::Function& primal_;
  const GradcheckOptions& options_;
  GradcheckCalls& calls_;
  Random random_;
  std::vector<Tensor> args_;
  std::vector<size_t> float_leaves_;  // positions in args_
  std::vector<Tensor> tangents_;      // one per float leaf
  GradcheckReport report_;
  int failed_ = 0;
  double worst_ratio_ = 0;
  std::string worst_failure_;
};

}  // namespace

llvm::Expected<GradcheckPlan> PlanGradcheck(ir::Module& module,
                                            llvm::StringRef name, bool hvp) {
  ir::Function* primal = module.FindFunction(name);
  if (!primal || primal->derivative)
    return Failure("no function '" + name.str() + "' to check");
  if (!primal->size_params.empty())
    return Failure("'" + name.str() +
                   "' has size parameters; gradcheck needs constant dims");
  bool has_float_param = false;
  for (const ir::Value* param : primal->params) {
    for (const ir::Dim* dim : param->type.dims)
      if (!dim->constant)
        return Failure("dim " + dim->name + " of '" + name.str() +
                       "' has no constant size");
    if (param->type.index_dim && !param->type.index_dim->constant)
      return Failure("dim " + param->type.index_dim->name + " of '" +
                     name.str() + "' has no constant size");
    has_float_param |= ir::IsFloat(param->type.elem);
  }
  if (!has_float_param)
    return Failure("'" + name.str() + "' has no float parameter");
  bool scalar_result = primal->result_types.size() == 1 &&
                       ir::IsFloat(primal->result_types[0].elem) &&
                       primal->result_types[0].IsScalar();
  bool float_result = false;
  for (const ir::Type& type : primal->result_types)
    float_result |= ir::IsFloat(type.elem);
  if (hvp && !scalar_result)
    return Failure("gradcheck-hvp needs '" + name.str() +
                   "' to return a float scalar");

  using Mode = ir::Derivative::Mode;
  GradcheckPlan plan;
  plan.primal = primal;
  ir::Function* gradient = nullptr;
  if (scalar_result)
    plan.gradient = gradient =
        AddDerivative(module, *primal, Mode::Gradient, "grad");
  plan.jvp = AddDerivative(module, *primal, Mode::Jvp, "jvp");
  if (float_result) plan.vjp = AddDerivative(module, *primal, Mode::Vjp, "vjp");
  if (hvp) {
    plan.hvp = AddDerivative(module, *gradient, Mode::Jvp, "hvp");
    if (gradient->result_types.size() == 1 &&
        gradient->result_types[0].IsScalar())
      plan.gradient_of_gradient =
          AddDerivative(module, *gradient, Mode::Gradient, "grad2");
  }
  return plan;
}

GradcheckReport RunGradcheck(const ir::Module& module,
                             const GradcheckPlan& plan,
                             const GradcheckOptions& options,
                             GradcheckCalls& calls) {
  return Checker(module, plan, options, calls).Run();
}

}  // namespace delta::driver

// Element math: what each elementwise op computes at one point, with the
// floating-point and integer semantics of docs/internals/ir.md.
#include <llvm/IR/Intrinsics.h>
#include <llvm/Support/ErrorHandling.h>

#include <cmath>

#include "compiler/codegen/llvm/emitter.h"

namespace delta::codegen {
namespace {

bool IsSignedInteger(ir::ElemKind kind) {
  return kind == ir::ElemKind::I32 || kind == ir::ElemKind::I64 ||
         kind == ir::ElemKind::Index;
}

}  // namespace

llvm::Value* FunctionEmitter::CallIntrinsic(llvm::Intrinsic::ID id,
                                            llvm::Value* x, llvm::Value* y) {
  return y == nullptr ? builder_.CreateUnaryIntrinsic(id, x)
                      : builder_.CreateBinaryIntrinsic(id, x, y);
}

llvm::Value* FunctionEmitter::CallLibm(llvm::StringRef name,
                                       llvm::ArrayRef<llvm::Value*> args) {
  llvm::Type* type = args[0]->getType();
  std::vector<llvm::Type*> params(args.size(), type);
  llvm::FunctionCallee callee = module_.module->getOrInsertFunction(
      type->isFloatTy() ? (name + "f").str() : name.str(),
      llvm::FunctionType::get(type, params, false));
  auto* function = llvm::cast<llvm::Function>(callee.getCallee());
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::WillReturn);
  function->setMemoryEffects(llvm::MemoryEffects::none());
  return builder_.CreateCall(callee, args);
}

llvm::Value* FunctionEmitter::EmitConst(const ir::Op& op) {
  ir::ElemKind elem = op.results[0]->type.elem;
  llvm::Type* type = RegisterType(elem);
  if (ir::IsFloat(elem)) return llvm::ConstantFP::get(type, op.float_value);
  if (elem == ir::ElemKind::Bool) return builder_.getInt1(op.int_value != 0);
  return llvm::ConstantInt::get(type, static_cast<uint64_t>(op.int_value),
                                /*IsSigned=*/true);
}

llvm::Value* FunctionEmitter::EmitConvert(llvm::Value* x, ir::ElemKind from,
                                          ir::ElemKind to) {
  llvm::Type* type = RegisterType(to);
  if (x->getType() == type) return x;
  bool from_float = ir::IsFloat(from);
  bool to_float = ir::IsFloat(to);
  if (from_float && to_float) return builder_.CreateFPCast(x, type);
  if (to == ir::ElemKind::Bool)
    return from_float ? builder_.CreateFCmpUNE(
                            x, llvm::ConstantFP::get(x->getType(), 0.0))
                      : builder_.CreateICmpNE(
                            x, llvm::ConstantInt::get(x->getType(), 0));
  if (to_float)
    return from == ir::ElemKind::Bool ? builder_.CreateUIToFP(x, type)
                                      : builder_.CreateSIToFP(x, type);
  if (from_float) {
    // Truncates and saturates; NaN becomes 0 (docs/internals/ir.md).
    return builder_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat,
                                    {type, x->getType()}, {x});
  }
  return from == ir::ElemKind::Bool ? builder_.CreateZExt(x, type)
                                    : builder_.CreateSExtOrTrunc(x, type);
}

llvm::Value* FunctionEmitter::EmitUnaryScalar(const ir::Op& op,
                                              llvm::Value* x) {
  ir::ElemKind elem = op.operands[0]->type.elem;
  if (op.kind == ir::OpKind::Convert)
    return EmitConvert(x, elem, op.results[0]->type.elem);
  if (op.kind == ir::OpKind::Not) return builder_.CreateNot(x);
  if (ir::IsFloat(elem)) return EmitFloatMath(op.kind, x);
  llvm::Type* type = x->getType();
  switch (op.kind) {
    case ir::OpKind::Neg:
      return builder_.CreateNeg(x);  // wraps: no nsw
    case ir::OpKind::Abs:
      return CallIntrinsic(llvm::Intrinsic::abs, x, builder_.getFalse());
    case ir::OpKind::Floor:
    case ir::OpKind::Ceil:
    case ir::OpKind::Round:
      return x;
    case ir::OpKind::Sign: {
      llvm::Value* zero = llvm::ConstantInt::get(type, 0);
      return builder_.CreateSub(
          builder_.CreateZExt(builder_.CreateICmpSGT(x, zero), type),
          builder_.CreateZExt(builder_.CreateICmpSLT(x, zero), type));
    }
    case ir::OpKind::Relu:
      return builder_.CreateSelect(
          builder_.CreateICmpSGT(x, llvm::ConstantInt::get(type, 0)), x,
          llvm::ConstantInt::get(type, 0));
    default:
      // Sema applies float math to floats only; any other is done in f64.
      return EmitConvert(
          EmitFloatMath(op.kind, EmitConvert(x, elem, ir::ElemKind::F64)),
          ir::ElemKind::F64, elem);
  }
}

// Note [Fast tanh]: at -O3, tanh is computed inline, so that the loop
// vectorizer widens it to any width and a loop's scalar remainder costs an
// exp, not a call of glibc's tanh (5x an exp; LSTM's 14-lane maps spent
// most of their time in those remainders). Below |x| = 0.55 it is the
// Taylor series x (1 + c1 x^2 + c2 x^4 + ...), cut where the next term is
// below an ulp (17 terms for f64, 8 for f32; tanh's coefficients alternate
// and shrink, so the first omitted term bounds the error); above, it is
// sign(x) (1 - 2 / (exp(2|x|) + 1)), whose result is at least 0.5, so the
// subtraction loses nothing and exp's error (4 ulp in libmvec) carries
// over about unchanged. Overflow of exp gives 1; NaN stays NaN; -0 stays
// -0. lang-tests/run/vector_math_f*.dl check it against the interpreter.
constexpr double kTanhF64Series[] = {
    -0.3333333333333333,    0.13333333333333333,    -0.05396825396825397,
    0.021869488536155203,   -0.008863235529902197,  0.003592128036572481,
    -0.0014558343870513183, 0.000590027440945586,   -0.00023912911424355248,
    9.691537956929451e-05,  -3.927832388331683e-05, 1.5918905069328964e-05,
    -6.451689215655431e-06, 2.6147711512907546e-06, -1.0597268320104654e-06,
    4.294911078273806e-07,  -1.7406618963571648e-07};
constexpr double kTanhF32Series[] = {
    -0.3333333333333333,    0.13333333333333333,   -0.05396825396825397,
    0.021869488536155203,   -0.008863235529902197, 0.003592128036572481,
    -0.0014558343870513183, 0.000590027440945586};

llvm::Value* FunctionEmitter::EmitFastTanh(llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto constant = [&](double value) {
    return llvm::ConstantFP::get(type, value);
  };
  llvm::ArrayRef<double> series = type->isFloatTy()
                                      ? llvm::ArrayRef<double>(kTanhF32Series)
                                      : llvm::ArrayRef<double>(kTanhF64Series);
  auto fma = [&](llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return builder_.CreateIntrinsic(llvm::Intrinsic::fma, {type}, {a, b, c});
  };
  llvm::Value* x2 = builder_.CreateFMul(x, x);
  llvm::Value* poly = constant(series.back());
  for (size_t i = series.size() - 1; i-- > 0;)
    poly = fma(poly, x2, constant(series[i]));
  llvm::Value* near_zero = builder_.CreateFMul(x, fma(poly, x2, constant(1.0)));
  llvm::Value* ax = CallIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* e =
      CallIntrinsic(llvm::Intrinsic::exp, builder_.CreateFAdd(ax, ax));
  llvm::Value* far = builder_.CreateFSub(
      constant(1.0), builder_.CreateFDiv(
                         constant(2.0), builder_.CreateFAdd(e, constant(1.0))));
  far = CallIntrinsic(llvm::Intrinsic::copysign, far, x);
  // Unordered: NaN takes the far branch, which keeps it NaN.
  return builder_.CreateSelect(builder_.CreateFCmpOLT(ax, constant(0.55)),
                               near_zero, far);
}

// Note [Fast lgamma]: glibc's vector library has no lgamma, so at -O3 it
// is computed inline from log and sin, which vectorize: below 1/2 the
// reflection lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); then, for
// w < 30, lgamma(w) = lgamma(w + 6) - log(w (w + 1) ... (w + 5)); and at
// z >= 6.5 Stirling's series (z - 1/2) log z - z + log(2 pi) / 2 + 1/(12 z)
// - 1/(360 z^3) + ... to z^-13, whose first omitted term is below 1e-13.
// Poles (0, -1, -2, ...) and infinities give +inf, 1 and 2 give 0, NaN
// stays NaN. The error is a few ulp of the result, except where the
// recurrence or the reflection subtracts nearly equal values (near the
// zeros at 1 and 2, and between the poles): there it is a few ulp of those
// values, absolute (lang-tests/run/lgamma_vector*.dl: 1e-13 relative plus
// 1e-14 absolute in f64, 4e-6 plus 8e-6 in f32, against libm).
constexpr double kStirlingSeries[] = {1.0 / 12,    -1.0 / 360, 1.0 / 1260,
                                      -1.0 / 1680, 1.0 / 1188, -691.0 / 360360,
                                      1.0 / 156};

llvm::Value* FunctionEmitter::EmitFastLgamma(llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto constant = [&](double value) {
    return llvm::ConstantFP::get(type, value);
  };
  auto add = [&](llvm::Value* a, double b) {
    return builder_.CreateFAdd(a, constant(b));
  };
  llvm::Value* reflect = builder_.CreateFCmpOLT(x, constant(0.5));
  llvm::Value* w =
      builder_.CreateSelect(reflect, builder_.CreateFSub(constant(1.0), x), x);
  // The six steps of the recurrence, skipped for a large w.
  llvm::Value* product = w;
  for (int k = 1; k < 6; ++k) product = builder_.CreateFMul(product, add(w, k));
  llvm::Value* large = builder_.CreateFCmpOGT(w, constant(30.0));
  llvm::Value* z = builder_.CreateSelect(large, w, add(w, 6.0));
  llvm::Value* steps = builder_.CreateSelect(
      large, constant(0.0), CallIntrinsic(llvm::Intrinsic::log, product));
  llvm::Value* r = builder_.CreateFDiv(constant(1.0), z);
  llvm::Value* r2 = builder_.CreateFMul(r, r);
  llvm::Value* series = constant(kStirlingSeries[6]);
  for (int k = 5; k >= 0; --k)
    series = add(builder_.CreateFMul(series, r2), kStirlingSeries[k]);
  llvm::Value* stirling = builder_.CreateFAdd(
      builder_.CreateFSub(
          builder_.CreateFMul(add(z, -0.5),
                              CallIntrinsic(llvm::Intrinsic::log, z)),
          z),
      add(builder_.CreateFMul(series, r), 0.91893853320467274178));
  llvm::Value* of_w = builder_.CreateFSub(stirling, steps);
  llvm::Value* pi = constant(3.14159265358979323846);
  llvm::Value* sine = CallIntrinsic(
      llvm::Intrinsic::fabs,
      CallIntrinsic(llvm::Intrinsic::sin, builder_.CreateFMul(pi, x)));
  llvm::Value* reflected = builder_.CreateFSub(
      CallIntrinsic(llvm::Intrinsic::log, builder_.CreateFDiv(pi, sine)), of_w);
  llvm::Value* result = builder_.CreateSelect(reflect, reflected, of_w);
  // Poles and infinities: +inf.
  llvm::Value* inf = constant(INFINITY);
  llvm::Value* pole = builder_.CreateAnd(
      builder_.CreateFCmpOLE(x, constant(0.0)),
      builder_.CreateFCmpOEQ(CallIntrinsic(llvm::Intrinsic::floor, x), x));
  llvm::Value* infinite =
      builder_.CreateFCmpOEQ(CallIntrinsic(llvm::Intrinsic::fabs, x), inf);
  // lgamma(1) = lgamma(2) = 0 exactly, as libm gives them.
  llvm::Value* zero =
      builder_.CreateOr(builder_.CreateFCmpOEQ(x, constant(1.0)),
                        builder_.CreateFCmpOEQ(x, constant(2.0)));
  result = builder_.CreateSelect(zero, constant(0.0), result);
  return builder_.CreateSelect(builder_.CreateOr(pole, infinite), inf, result);
}

llvm::Value* FunctionEmitter::EmitFloatMath(ir::OpKind kind, llvm::Value* x) {
  llvm::Type* type = x->getType();
  switch (kind) {
    case ir::OpKind::Neg:
      return builder_.CreateFNeg(x);
    case ir::OpKind::Exp:
      return CallIntrinsic(llvm::Intrinsic::exp, x);
    case ir::OpKind::Log:
      return CallIntrinsic(llvm::Intrinsic::log, x);
    case ir::OpKind::Sin:
      return CallIntrinsic(llvm::Intrinsic::sin, x);
    case ir::OpKind::Cos:
      return CallIntrinsic(llvm::Intrinsic::cos, x);
    case ir::OpKind::Tanh:
      if (module_.fast_math) return EmitFastTanh(x);
      return CallLibm("tanh", {x});
    case ir::OpKind::Lgamma:
      if (module_.fast_math) return EmitFastLgamma(x);
      return CallLibm("lgamma", {x});
    case ir::OpKind::Sqrt:
      return CallIntrinsic(llvm::Intrinsic::sqrt, x);
    case ir::OpKind::Abs:
      return CallIntrinsic(llvm::Intrinsic::fabs, x);
    case ir::OpKind::Floor:
      return CallIntrinsic(llvm::Intrinsic::floor, x);
    case ir::OpKind::Ceil:
      return CallIntrinsic(llvm::Intrinsic::ceil, x);
    case ir::OpKind::Round:
      return CallIntrinsic(llvm::Intrinsic::round, x);
    case ir::OpKind::Sign: {
      // ±0 and NaN (unordered compares false) are themselves.
      llvm::Value* zero = llvm::ConstantFP::get(type, 0.0);
      return builder_.CreateSelect(
          builder_.CreateFCmpOGT(x, zero), llvm::ConstantFP::get(type, 1.0),
          builder_.CreateSelect(builder_.CreateFCmpOLT(x, zero),
                                llvm::ConstantFP::get(type, -1.0), x));
    }
    case ir::OpKind::Sigmoid: {
      llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
      llvm::Value* e =
          CallIntrinsic(llvm::Intrinsic::exp, builder_.CreateFNeg(x));
      return builder_.CreateFDiv(one, builder_.CreateFAdd(one, e));
    }
    case ir::OpKind::Relu: {
      // NaN propagates (unordered compares true); relu(-0) is +0.
      llvm::Value* zero = llvm::ConstantFP::get(type, 0.0);
      return builder_.CreateSelect(builder_.CreateFCmpUGT(x, zero), x, zero);
    }
    case ir::OpKind::StopGradient:
      return x;
    default:
      // ops.def's kLibm ops without an LLVM intrinsic: tan, ...
      if (ir::HasFlag(kind, ir::kLibm))
        return CallLibm(ir::OpMnemonic(kind), {x});
      llvm::report_fatal_error("codegen: not a unary op: " +
                               ir::OpMnemonic(kind));
  }
}

// x ^ y of floats. At -O3, where y is an integer converted (`t ^ f64(j)`
// over an index j), llvm.powi: square and multiply, about 3x faster than
// pow and within a few roundings of it (docs/internals/codegen.md); -O2
// keeps pow, bitwise the interpreter's. powi takes an i32: a wider integer
// outside its range takes pow.
llvm::Value* FunctionEmitter::EmitPow(llvm::Value* x, llvm::Value* y) {
  if (!module_.fast_math) return CallIntrinsic(llvm::Intrinsic::pow, x, y);
  auto* conversion = llvm::dyn_cast<llvm::CastInst>(y);
  bool is_signed = llvm::isa_and_nonnull<llvm::SIToFPInst>(conversion);
  if (!is_signed && !llvm::isa_and_nonnull<llvm::UIToFPInst>(conversion))
    return CallIntrinsic(llvm::Intrinsic::pow, x, y);
  llvm::Value* n = conversion->getOperand(0);
  llvm::Type* i32 = builder_.getInt32Ty();
  auto powi = [&](llvm::Value* exponent) {
    return builder_.CreateIntrinsic(llvm::Intrinsic::powi, {x->getType(), i32},
                                    {x, exponent});
  };
  unsigned bits = n->getType()->getScalarSizeInBits();
  if (bits < 32 || (bits == 32 && is_signed))
    return powi(is_signed ? builder_.CreateSExt(n, i32)
                          : builder_.CreateZExt(n, i32));
  llvm::Value* narrow = builder_.CreateTrunc(n, i32);
  llvm::Value* widened = is_signed ? builder_.CreateSExt(narrow, n->getType())
                                   : builder_.CreateZExt(narrow, n->getType());
  llvm::Value* fits = builder_.CreateICmpEQ(widened, n);
  if (!is_signed)  // n must fit in a signed i32 either way
    fits = builder_.CreateAnd(
        fits, builder_.CreateICmpSGE(narrow, llvm::ConstantInt::get(i32, 0)));
  auto* small = llvm::BasicBlock::Create(context_, "powi", llvm_function_);
  auto* large = llvm::BasicBlock::Create(context_, "pow", llvm_function_);
  auto* join = llvm::BasicBlock::Create(context_, "pow.join", llvm_function_);
  builder_.CreateCondBr(fits, small, large);
  builder_.SetInsertPoint(small);
  llvm::Value* by_squaring = powi(narrow);
  builder_.CreateBr(join);
  builder_.SetInsertPoint(large);
  llvm::Value* general = CallIntrinsic(llvm::Intrinsic::pow, x, y);
  builder_.CreateBr(join);
  builder_.SetInsertPoint(join);
  llvm::PHINode* result = builder_.CreatePHI(x->getType(), 2);
  result->addIncoming(by_squaring, small);
  result->addIncoming(general, large);
  return result;
}

llvm::Value* FunctionEmitter::EmitBinaryScalar(const ir::Op& op, llvm::Value* a,
                                               llvm::Value* b) {
  ir::ElemKind elem = op.operands[0]->type.elem;
  bool is_float = ir::IsFloat(elem);
  llvm::Type* type = a->getType();
  switch (op.kind) {
    case ir::OpKind::Add:
      return is_float ? builder_.CreateFAdd(a, b) : builder_.CreateAdd(a, b);
    case ir::OpKind::Sub:
      return is_float ? builder_.CreateFSub(a, b) : builder_.CreateSub(a, b);
    case ir::OpKind::Mul:
      return is_float ? builder_.CreateFMul(a, b) : builder_.CreateMul(a, b);
    case ir::OpKind::Div:
    case ir::OpKind::Rem: {
      bool is_div = op.kind == ir::OpKind::Div;
      if (is_float)
        return is_div ? builder_.CreateFDiv(a, b) : builder_.CreateFRem(a, b);
      if (elem == ir::ElemKind::Bool) return is_div ? a : builder_.getFalse();
      llvm::Value* zero = llvm::ConstantInt::get(type, 0);
      // The interpreter's message, for `%` too.
      EmitCheck(builder_.CreateICmpNE(b, zero), op.loc,
                "integer division by zero");
      // MIN / -1 overflows (undefined in LLVM); it wraps to MIN, and
      // MIN % -1 is 0. Dividing by 1 instead keeps the division defined.
      llvm::Value* minus_one = builder_.CreateICmpEQ(
          b, llvm::ConstantInt::get(type, static_cast<uint64_t>(-1), true));
      llvm::Value* divisor =
          builder_.CreateSelect(minus_one, llvm::ConstantInt::get(type, 1), b);
      if (is_div)
        return builder_.CreateSelect(minus_one, builder_.CreateNeg(a),
                                     builder_.CreateSDiv(a, divisor));
      return builder_.CreateSelect(minus_one, zero,
                                   builder_.CreateSRem(a, divisor));
    }
    case ir::OpKind::Pow: {
      if (is_float) return EmitPow(a, b);
      llvm::Value* wide_a = EmitConvert(a, elem, ir::ElemKind::F64);
      llvm::Value* wide_b = EmitConvert(b, elem, ir::ElemKind::F64);
      return EmitConvert(CallIntrinsic(llvm::Intrinsic::pow, wide_a, wide_b),
                         ir::ElemKind::F64, elem);
    }
    case ir::OpKind::Max:
    case ir::OpKind::Min:
      return ReduceCombine(op.kind == ir::OpKind::Max ? ir::ReduceKind::Max
                                                      : ir::ReduceKind::Min,
                           elem, a, b);
    case ir::OpKind::Eq:
      return is_float ? builder_.CreateFCmpOEQ(a, b)
                      : builder_.CreateICmpEQ(a, b);
    case ir::OpKind::Ne:
      return is_float ? builder_.CreateFCmpUNE(a, b)
                      : builder_.CreateICmpNE(a, b);
    case ir::OpKind::Lt:
      return is_float                ? builder_.CreateFCmpOLT(a, b)
             : IsSignedInteger(elem) ? builder_.CreateICmpSLT(a, b)
                                     : builder_.CreateICmpULT(a, b);
    case ir::OpKind::Le:
      return is_float                ? builder_.CreateFCmpOLE(a, b)
             : IsSignedInteger(elem) ? builder_.CreateICmpSLE(a, b)
                                     : builder_.CreateICmpULE(a, b);
    case ir::OpKind::Gt:
      return is_float                ? builder_.CreateFCmpOGT(a, b)
             : IsSignedInteger(elem) ? builder_.CreateICmpSGT(a, b)
                                     : builder_.CreateICmpUGT(a, b);
    case ir::OpKind::Ge:
      return is_float                ? builder_.CreateFCmpOGE(a, b)
             : IsSignedInteger(elem) ? builder_.CreateICmpSGE(a, b)
                                     : builder_.CreateICmpUGE(a, b);
    case ir::OpKind::And:
      return builder_.CreateAnd(a, b);
    case ir::OpKind::Or:
      return builder_.CreateOr(a, b);
    default:
      // ops.def's kLibm ops without an LLVM intrinsic: atan2, ...
      if (ir::HasFlag(op.kind, ir::kLibm) && is_float)
        return CallLibm(ir::OpMnemonic(op.kind), {a, b});
      llvm::report_fatal_error("codegen: not a binary op: " +
                               ir::OpMnemonic(op.kind));
  }
}

llvm::Value* FunctionEmitter::ReduceIdentity(ir::ReduceKind kind,
                                             ir::ElemKind elem) {
  llvm::Type* type = RegisterType(elem);
  bool is_float = ir::IsFloat(elem);
  switch (kind) {
    case ir::ReduceKind::Sum:
      return is_float ? llvm::ConstantFP::get(type, 0.0)
                      : llvm::ConstantInt::get(type, 0);
    case ir::ReduceKind::Prod:
      return is_float ? llvm::ConstantFP::get(type, 1.0)
                      : llvm::ConstantInt::get(type, 1);
    case ir::ReduceKind::Max:
    case ir::ReduceKind::Argmax:
      if (is_float) return llvm::ConstantFP::getInfinity(type, true);
      if (elem == ir::ElemKind::Bool) return builder_.getFalse();
      return llvm::ConstantInt::get(
          type, llvm::APInt::getSignedMinValue(type->getIntegerBitWidth()));
    case ir::ReduceKind::Min:
    case ir::ReduceKind::Argmin:
      if (is_float) return llvm::ConstantFP::getInfinity(type, false);
      if (elem == ir::ElemKind::Bool) return builder_.getTrue();
      return llvm::ConstantInt::get(
          type, llvm::APInt::getSignedMaxValue(type->getIntegerBitWidth()));
  }
  return llvm::Constant::getNullValue(type);
}

llvm::Value* FunctionEmitter::ReduceCombine(ir::ReduceKind kind,
                                            ir::ElemKind elem, llvm::Value* acc,
                                            llvm::Value* x) {
  bool is_float = ir::IsFloat(elem);
  bool is_bool = elem == ir::ElemKind::Bool;
  switch (kind) {
    case ir::ReduceKind::Sum:
      if (is_bool) return builder_.CreateOr(acc, x);
      return is_float ? builder_.CreateFAdd(acc, x)
                      : builder_.CreateAdd(acc, x);
    case ir::ReduceKind::Prod:
      if (is_bool) return builder_.CreateAnd(acc, x);
      return is_float ? builder_.CreateFMul(acc, x)
                      : builder_.CreateMul(acc, x);
    case ir::ReduceKind::Max:
    case ir::ReduceKind::Argmax:
      // llvm.maximum propagates NaN, as max must (language.md section 5).
      if (is_float) return CallIntrinsic(llvm::Intrinsic::maximum, acc, x);
      return CallIntrinsic(
          is_bool ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, acc, x);
    case ir::ReduceKind::Min:
    case ir::ReduceKind::Argmin:
      if (is_float) return CallIntrinsic(llvm::Intrinsic::minimum, acc, x);
      return CallIntrinsic(
          is_bool ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, acc, x);
  }
  return acc;
}

}  // namespace delta::codegen

// The error that automatic differentiation fails with: what it could not do
// and the source location of the op concerned, so that callers report it at
// a real span (compiler/compile/compile.cpp) instead of pasting the location
// into the text.
#pragma once

#include <llvm/Support/Error.h>

#include <string>

#include "compiler/ir/ir.h"

namespace delta::ad {

class AdError : public llvm::ErrorInfo<AdError> {
 public:
  enum class Kind {
    // A valid program that AD cannot differentiate yet: a user-facing
    // limitation.
    Unsupported,
    // IR that AD does not expect: a compiler bug.
    Internal,
  };

  AdError(Kind kind, ir::Loc loc, std::string message)
      : kind_(kind), loc_(std::move(loc)), message_(std::move(message)) {}

  Kind kind() const { return kind_; }
  // The op's source location; invalid when the error concerns no op.
  const ir::Loc& loc() const { return loc_; }
  // The message without the location.
  const std::string& text() const { return message_; }

  // "FILE:LINE:COL: MESSAGE" (or the message alone without a location), for
  // callers that only print the error.
  void log(llvm::raw_ostream& os) const override;
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

  static char ID;

 private:
  Kind kind_;
  ir::Loc loc_;
  std::string message_;
};

}  // namespace delta::ad

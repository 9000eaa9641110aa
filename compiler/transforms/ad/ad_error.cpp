// The error of automatic differentiation, with the op's location.
#include "compiler/transforms/ad/ad_error.h"

namespace delta::ad {

char AdError::ID = 0;

void AdError::log(llvm::raw_ostream& os) const {
  if (loc_.IsValid())
    os << loc_.file << ":" << loc_.line << ":" << loc_.column << ": ";
  os << message_;
}

}  // namespace delta::ad

// How types, dims, signatures and function values are written in messages
// and in `dlc check --types`.
#pragma once

#include <string>

#include "compiler/sema/symbols.h"
#include "compiler/sema/types.h"

namespace delta::sema {

class LiteralSolver;

// `literals` resolves flexible literal types; without it they print as
// `{int}` / `{float}` only if already resolved by the caller.
std::string FormatType(const Type* type, LiteralSolver* literals = nullptr);
std::string FormatDims(const DimSet& dims);
std::string FormatSignature(const Signature& signature,
                            LiteralSolver* literals = nullptr);
std::string FormatCallableName(const Callable* callable);

}  // namespace delta::sema

// Writes NAME.h, the self-contained C99 header of a Delta library.
#pragma once

#include <string>

#include "compiler/codegen/c_abi/abi_signature.h"

namespace delta::c_abi {

// The header for `abi`: status codes, the context, one C struct per Delta
// struct, and for each export a plain entry, a DLPack entry (declared when
// dlpack/dlpack.h was included first) and, where results have
// size-parameter dims, a query of the result sizes; each documented with
// its Delta signature and dims. A thin C++ wrapper sits under __cplusplus.
std::string WriteHeader(const AbiModule& abi);

}  // namespace delta::c_abi

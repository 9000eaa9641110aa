# The embedding test (ctest `embedding`): builds examples/embed-c and
# examples/embed-cpp against a dlc build tree through find_package(Delta),
# with AddressSanitizer and UBSan (LeakSanitizer fails them on any leak),
# runs them (the --target=cuda build of embed-c without a driver), compiles
# each generated header as C and C++ with -Wall -Wextra -pedantic -Werror,
# and checks with nm that the libraries export only their prefixed names.
# Usage:
#   cmake -DDelta_DIR=build/release -DSOURCE_DIR=. -DWORK_DIR=/tmp/x
#         -P cmake/TestEmbedding.cmake
cmake_minimum_required(VERSION 3.20)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("$ ${ARGN}\n${out}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(sanitize "-fsanitize=address,undefined -fno-sanitize-recover=all")
foreach(example embed-c embed-cpp)
  set(build "${WORK_DIR}/${example}")
  run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/${example}" -B "${build}"
      -G Ninja -DDelta_DIR=${Delta_DIR} -DCMAKE_C_COMPILER=clang-19
      -DCMAKE_CXX_COMPILER=clang++-19 "-DCMAKE_C_FLAGS=${sanitize}"
      "-DCMAKE_CXX_FLAGS=${sanitize}")
  run(${CMAKE_COMMAND} --build "${build}")
endforeach()

set(ENV{ASAN_OPTIONS} "detect_leaks=1")
run("${WORK_DIR}/embed-c/embed_c")
run("${WORK_DIR}/embed-c/embed_c_static")
run("${WORK_DIR}/embed-cpp/embed_cpp")
# The --target=cuda build of the same library, without a driver: a clean
# error status and message from the first call, nothing leaked.
set(ENV{DELTA_CUDA_DRIVER} "/nonexistent/libcuda.so.1")
run("${WORK_DIR}/embed-c/embed_c_cuda")
unset(ENV{DELTA_CUDA_DRIVER})
if(NOT last_output MATCHES
   "no GPU: error: no CUDA device: cannot load the CUDA driver")
  message(FATAL_ERROR "embed_c_cuda: no 'no CUDA device' error")
endif()

# Each header compiles warning-free as C99 and C++ with both compilers;
# with dlpack.h first, the DLPack entries are checked too.
set(headers "${WORK_DIR}/embed-c/delta/model/model.h"
            "${WORK_DIR}/embed-cpp/delta/scale/scale.h"
            "${WORK_DIR}/embed-cpp/delta/norms/norms.h")
foreach(header ${headers})
  get_filename_component(name "${header}" NAME)
  get_filename_component(dir "${header}" DIRECTORY)
  file(WRITE "${WORK_DIR}/plain_${name}.c" "#include \"${name}\"\n")
  file(WRITE "${WORK_DIR}/dlpack_${name}.c"
       "#include <dlpack/dlpack.h>\n#include \"${name}\"\n")
  foreach(source plain_${name}.c dlpack_${name}.c)
    foreach(compiler gcc clang-19)
      run(${compiler} -std=c99 -Wall -Wextra -pedantic -Werror -I "${dir}"
          -fsyntax-only "${WORK_DIR}/${source}")
    endforeach()
    foreach(compiler g++ clang++-19)
      run(${compiler} -x c++ -std=c++11 -Wall -Wextra -pedantic -Werror
          -I "${dir}" -fsyntax-only "${WORK_DIR}/${source}")
    endforeach()
  endforeach()
endforeach()

# Only PREFIX_* is visible: no delta.* function, no runtime symbol.
foreach(pair "embed-c/delta/model/libmodel.so;model"
             "embed-c/delta/model_cuda/libmodel.so;model"
             "embed-c/delta/model_static/libmodel.a;model"
             "embed-cpp/delta/scale/libscale.so;scale"
             "embed-cpp/delta/norms/libnorms.a;norms")
  list(GET pair 0 library)
  list(GET pair 1 prefix)
  if(library MATCHES "\\.so$")
    run(nm -D --defined-only "${WORK_DIR}/${library}")
  else()
    run(nm -g --defined-only "${WORK_DIR}/${library}")
  endif()
  string(REGEX MATCHALL "[0-9a-f]+ [A-Z] [^\n]+" symbols "${last_output}")
  foreach(symbol ${symbols})
    # Sanitizer builds keep ASan's shared registration flag global.
    if(NOT symbol MATCHES " ${prefix}_[A-Za-z0-9_]+$" AND
       NOT symbol MATCHES " C ___asan_globals_registered$")
      message(FATAL_ERROR "${library} exports '${symbol}'")
    endif()
  endforeach()
endforeach()
message("embedding: all checks passed")

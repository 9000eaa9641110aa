# find_package(Delta): the `dlc` compiler and delta_add_library(), which
# compiles a .dl file into a library target of a C or C++ project. Works
# from an install prefix (<prefix>/lib/cmake/Delta) and from a build tree
# (Delta_DIR=build/<preset>). See docs/embedding.md.
cmake_minimum_required(VERSION 3.20)

find_program(DELTA_DLC dlc
  HINTS "${CMAKE_CURRENT_LIST_DIR}/bin" "${CMAKE_CURRENT_LIST_DIR}/../../../bin"
  NO_DEFAULT_PATH)
if(NOT DELTA_DLC)
  set(Delta_FOUND FALSE)
  set(Delta_NOT_FOUND_MESSAGE "no dlc beside ${CMAKE_CURRENT_LIST_FILE}")
  return()
endif()
set(Delta_FOUND TRUE)
find_package(Threads REQUIRED)

# delta_add_library(TARGET FILE.dl [STATIC] [DLC_FLAGS flag...])
#
# Runs `dlc build --lib FILE.dl` at build time and defines TARGET, an
# imported library (shared unless STATIC) whose include directory holds
# NAME.h (NAME: the file's stem). The .dl files beside FILE.dl are
# dependencies too, since imports resolve there.
function(delta_add_library target source)
  cmake_parse_arguments(arg "STATIC" "" "DLC_FLAGS" ${ARGN})
  get_filename_component(source "${source}" ABSOLUTE)
  get_filename_component(stem "${source}" NAME_WE)
  get_filename_component(folder "${source}" DIRECTORY)
  # The same C identifier as dlc's prefix (non-identifier characters: _).
  string(MAKE_C_IDENTIFIER "${stem}" name)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/delta/${target}")
  file(MAKE_DIRECTORY "${dir}")
  file(GLOB neighbours CONFIGURE_DEPENDS "${folder}/*.dl")
  set(outputs "${dir}/lib${name}.so" "${dir}/lib${name}.a" "${dir}/${name}.h")
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND "${DELTA_DLC}" build --lib "${source}" -o "${dir}" ${arg_DLC_FLAGS}
    DEPENDS "${source}" ${neighbours} "${DELTA_DLC}"
    COMMENT "dlc build --lib ${stem}.dl"
    VERBATIM)
  add_custom_target(${target}_dlc DEPENDS ${outputs})
  if(arg_STATIC)
    add_library(${target} STATIC IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LOCATION "${dir}/lib${name}.a"
      # The runtime inside the archive is C++ (and --target=cuda dlopens).
      INTERFACE_LINK_LIBRARIES "stdc++;m;Threads::Threads;${CMAKE_DL_LIBS}")
  else()
    add_library(${target} SHARED IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LOCATION "${dir}/lib${name}.so"
      IMPORTED_SONAME "lib${name}.so")
  endif()
  set_target_properties(${target} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${dir}")
  add_dependencies(${target} ${target}_dlc)
endfunction()

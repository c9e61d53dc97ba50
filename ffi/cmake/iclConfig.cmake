# CMake package config of the icl C/C++ API (installed by ffi/install.sh into
# <prefix>/lib/cmake/icl/). Usage:
#
#   find_package(icl REQUIRED)            # with -DCMAKE_PREFIX_PATH=<prefix>
#   target_link_libraries(app PRIVATE icl::icl)         # shared library, C API (icl.h)
#   target_link_libraries(app PRIVATE icl::icl_static)  # static library, C API and C++ API (icl.hpp)
#
# The C++ API (the cxx bridge in icl.hpp) is only in the static library: Rust's shared libraries
# export C symbols only.
get_filename_component(_icl_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(icl_INCLUDE_DIRS "${_icl_prefix}/include")
set(icl_LIBRARY "${_icl_prefix}/lib/libicl_ffi.so")
set(icl_STATIC_LIBRARY "${_icl_prefix}/lib/libicl_ffi.a")

foreach(_f "${icl_INCLUDE_DIRS}/icl.h" "${icl_LIBRARY}" "${icl_STATIC_LIBRARY}")
  if(NOT EXISTS "${_f}")
    set(icl_FOUND FALSE)
    set(icl_NOT_FOUND_MESSAGE "icl: ${_f} is missing (install with ffi/install.sh)")
    return()
  endif()
endforeach()

if(NOT TARGET icl::icl)
  add_library(icl::icl SHARED IMPORTED)
  set_target_properties(icl::icl PROPERTIES
    IMPORTED_LOCATION "${icl_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${icl_INCLUDE_DIRS}")
endif()

if(NOT TARGET icl::icl_static)
  add_library(icl::icl_static STATIC IMPORTED)
  set_target_properties(icl::icl_static PROPERTIES
    IMPORTED_LOCATION "${icl_STATIC_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${icl_INCLUDE_DIRS}"
    IMPORTED_LINK_INTERFACE_LANGUAGES "CXX"
    INTERFACE_LINK_LIBRARIES "stdc++;pthread;dl;m;rt;util")
endif()

set(icl_LIBRARIES icl::icl)
set(icl_FOUND TRUE)
unset(_icl_prefix)

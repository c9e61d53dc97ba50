// The C API (icl.h) from C++: ffi/tests/c/header.c compiled as C++17, so a C++ program can link
// the shared library (the C++ API of icl.hpp is in the static library only).
#include "../c/header.c"

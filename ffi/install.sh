#!/bin/sh
# Install the icl C/C++ API into PREFIX: headers, static and shared libraries, pkg-config files
# (icl.pc: shared library; icl-static.pc: static library) and the CMake package (icl::icl,
# icl::icl_static).
#
#   cargo build --release -p icl-ffi
#   ffi/install.sh /usr/local                   # libraries from target/release
#   ffi/install.sh ~/.local target/debug        # or from another build folder
#
# Then (ffi/README.md, "Link an installed icl"):
#   cc app.c $(pkg-config --cflags --libs icl) -o app          # shared
#   cc app.c $(pkg-config --cflags --libs icl-static) -o app   # static
# or find_package(icl) with CMAKE_PREFIX_PATH=PREFIX.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:?usage: install.sh PREFIX [LIBDIR]}
libdir=${2:-${CARGO_TARGET_DIR:-$here/../target}/release}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/../Cargo.toml" | head -n 1)
native=$(cat "$here/native-libs")
native_cmake=$(echo "$native" | sed -e 's/^-l//' -e 's/ -l/;/g')
for f in "$libdir/libicl_ffi.a" "$libdir/libicl_ffi.so"; do
  [ -f "$f" ] || { echo "install.sh: $f not found (build with cargo build -p icl-ffi)" >&2; exit 1; }
done
mkdir -p "$prefix/include/icl" "$prefix/include/rust" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/icl"
prefix=$(cd "$prefix" && pwd)
cp "$here/include/icl.h" "$here/include/icl.hpp" "$prefix/include/"
cp "$here/include/icl/bridge.h" "$here/include/icl/progress.h" "$prefix/include/icl/"
cp "$here/include/rust/cxx.h" "$prefix/include/rust/"
cp "$libdir/libicl_ffi.a" "$libdir/libicl_ffi.so" "$prefix/lib/"
for pc in icl icl-static; do
  sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@NATIVE_LIBS@|$native|g" \
    "$here/$pc.pc.in" > "$prefix/lib/pkgconfig/$pc.pc"
done
sed -e "s|@NATIVE_LIBS@|$native_cmake|g" "$here/cmake/iclConfig.cmake.in" > "$prefix/lib/cmake/icl/iclConfig.cmake"
sed -e "s|@VERSION@|$version|g" "$here/cmake/iclConfigVersion.cmake.in" > "$prefix/lib/cmake/icl/iclConfigVersion.cmake"
echo "installed icl $version into $prefix"

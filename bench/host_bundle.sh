#!/usr/bin/env bash
# Packs kiln's Python package for another host that has PyTorch but no package manager for kiln's
# dependencies (the GPU machine's 16-core host, issue 13's benchmark): the build tree's libkiln, the
# shared libraries it needs that a stock Ubuntu lacks (fmt, oneDNN, OpenCL's loader), kiln's
# headers (generated kernels include them), and the module kiln._kiln built for that host's Python
# version, into one .tar.xz.
#
#   bench/host_bundle.sh PYTHON OUT.tar.xz [BUILD]
# PYTHON: an interpreter of the host's Python version (major.minor) with nanobind installed.
# On the host: tar xJf OUT.tar.xz -C DIR; PYTHONPATH=DIR/py LD_LIBRARY_PATH=DIR/lib python3 bench/run_backend.py ...
set -euo pipefail
python=$1
out=$2
build=${3:-build}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
mkdir -p "$work/module"
cat > "$work/module/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(kiln_module LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(kiln REQUIRED CONFIG)
find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(COMMAND "\${Python_EXECUTABLE}" -m nanobind --cmake_dir OUTPUT_VARIABLE nanobind_ROOT
                OUTPUT_STRIP_TRAILING_WHITESPACE)
find_package(nanobind CONFIG REQUIRED)
file(GLOB sources $repo/python/src/*.cpp)
nanobind_add_module(kiln_python NB_STATIC \${sources})
set_target_properties(kiln_python PROPERTIES OUTPUT_NAME _kiln INSTALL_RPATH "\\\$ORIGIN/../../lib"
                      BUILD_WITH_INSTALL_RPATH ON)
target_include_directories(kiln_python PRIVATE $repo)
target_link_libraries(kiln_python PRIVATE kiln::kiln)
CMAKE
cmake -S "$work/module" -B "$work/module/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DPython_EXECUTABLE="$python" >/dev/null
cmake --build "$work/module/build" >/dev/null

bundle=$work/bundle
mkdir -p "$bundle/lib" "$bundle/py/kiln" "$bundle/py/kiln-0.1.0.dist-info"
cp -a "$work/prefix/include" "$bundle/include"
cp -L "$work/prefix/lib/libkiln.so" "$bundle/lib/"
# The libraries libkiln needs beyond glibc, libstdc++, libgomp and zlib (which Ubuntu has).
for lib in $(ldd "$bundle/lib/libkiln.so" | awk '/=> \//{print $3}'); do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libgomp.so*|libz.so*|libdl.so*|libpthread.so*) ;;
    *) cp -L "$lib" "$bundle/lib/" ;;
  esac
done
cp "$repo"/python/kiln/*.py "$bundle/py/kiln/"
cp "$work"/module/build/_kiln*.so "$bundle/py/kiln/"
printf 'Metadata-Version: 2.1\nName: kiln\nVersion: 0.1.0\n' > "$bundle/py/kiln-0.1.0.dist-info/METADATA"
printf '[torch_dynamo_backends]\nkiln = kiln.backend:kiln_backend\n' > "$bundle/py/kiln-0.1.0.dist-info/entry_points.txt"
tar cJf "$out" -C "$bundle" .
echo "$out: $(du -h "$out" | cut -f1) ($(ls "$bundle/lib" | tr '\n' ' '))"

# Sourced by scripts/gpu_bundle.sh and bench/device_bundle.sh: packs binaries already copied under
# WORK/build with libkiln.so and the shared libraries they need that a stock Ubuntu lacks (fmt,
# oneDNN, OpenCL's loader; not the C and C++ runtimes, OpenMP or zlib) into one .tar.xz.
#   pack_bundle OUT.tar.xz WORK BUILD
pack_bundle() {
  local out=$1 work=$2 build=$3 lib
  mkdir -p "$work/lib"
  cp -L "$build/src/kiln/libkiln.so" "$work/lib/"
  for lib in $(ldd "$work/lib/libkiln.so" $(find "$work/build" -type f -perm -u+x) | awk '/=> \//{print $3}' | sort -u); do
    case $(basename "$lib") in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libgomp.so*|libz.so*|libdl.so*|libpthread.so*|libkiln.so) ;;
      *) cp -L "$lib" "$work/lib/" ;;
    esac
  done
  tar cJf "$out" -C "$work" .
  echo "$out: $(du -h "$out" | cut -f1) ($(ls "$work/lib" | tr '\n' ' '))"
}

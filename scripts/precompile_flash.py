#!/usr/bin/env python3
"""Compiles kiln::attention's flash kernel (src/kiln/kernels/cuda/flash_attention.cu) ahead of time,
with NVRTC, for the variants most calls take, so that libkiln carries their cubins and a first call
(a compiled graph's cold start) loads one instead of waiting a second for NVRTC. Any other variant,
or a GPU of another architecture, is still compiled at its first call (kernels/cuda/attention.cpp).

    precompile_flash.py SOURCE OUT_DIR [--nvrtc DIR[:DIR...]] [--arch sm_80,sm_90]

A variant NVRTC cannot compile (an NVRTC too old for the architecture) is left out, with a warning.
Writes OUT_DIR/flash_attention_cubins.S (each cubin by .incbin, between two symbols) and
OUT_DIR/flash_attention_cubins.inc (KILN_FLASH_CUBINS(X): X(arch, options, begin, end) per cubin).
The options are those the runtime passes NVRTC for the variant, joined by spaces: the table's key.
NVRTC is looked for in the DIRs, then where kiln looks at run time (KILN_CUDA_HOME, CUDA's default
install location); without it both files are written with no cubin.

The variants: float16 and bfloat16 queries; head sizes 64 and 128; no mask (causal or not), a mask
of the queries' dtype, a float32 mask; each with the default shape (kernels/cuda/attention.h:
4 warps, 2 row tiles up to head size 64 else 1, 64 keys a tile). Standard library only.
"""

import argparse
import concurrent.futures
import ctypes
import glob
import os
import sys


def variants():
    for half in (0, 1):
        for d in (64, 128):
            for mask, causal in ((0, 0), (0, 1), (1, 0), (2, 0)):
                yield [
                    "-std=c++17",
                    f"-DKILN_ATT_HALF={half}",
                    f"-DKILN_ATT_D={d}",
                    f"-DKILN_ATT_MASK={mask}",
                    f"-DKILN_ATT_CAUSAL={causal}",
                    "-DKILN_ATT_WARPS=4",
                    f"-DKILN_ATT_MT={2 if d <= 64 else 1}",
                    "-DKILN_ATT_KEYS=64",
                ]


def nvrtc_directories(given):
    """`given` first (the pinned wheel's, from CMake), then where the runtime also looks
    (cuda/nvrtc.cpp): KILN_CUDA_HOME, CUDA's default install location (and, last, the loader's path)."""
    dirs = [d for d in given.split(":") if d]
    home = os.environ.get("KILN_CUDA_HOME")
    if home:
        dirs += [os.path.join(home, "lib64"), os.path.join(home, "lib")]
    return dirs + ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]


def load_nvrtc(directories):
    for directory in directories:
        libraries = sorted(glob.glob(os.path.join(directory, "libnvrtc.so*")))
        if not libraries:
            continue
        # NVRTC opens its builtins library by name: loaded first from the same directory, it is found.
        for path in sorted(glob.glob(os.path.join(directory, "libnvrtc-builtins.so*"))):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
        for path in libraries:
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    for name in ("libnvrtc.so.13", "libnvrtc.so"):  # the dynamic loader's own path, last
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def compile_cubin(nvrtc, source, arch, options):
    prog = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source, b"flash_attention.cu", 0, None, None) != 0:
        raise RuntimeError("nvrtcCreateProgram failed")
    try:
        opts = [o.encode() for o in options + [f"--gpu-architecture={arch}"]]
        array = (ctypes.c_char_p * len(opts))(*opts)
        result = nvrtc.nvrtcCompileProgram(prog, len(opts), array)
        if result != 0:
            size = ctypes.c_size_t()
            nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed for {arch} {' '.join(options)}:\n{log.value.decode()}")
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return cubin.raw
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("out_dir")
    ap.add_argument("--nvrtc", default="")
    ap.add_argument("--arch", default="sm_80,sm_90")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    nvrtc = load_nvrtc(nvrtc_directories(args.nvrtc))
    jobs = []
    if nvrtc is not None:
        jobs = [(arch, options) for arch in args.arch.split(",") for options in variants()]
    with open(args.source, "rb") as f:
        source = f.read()
    def attempt(job):
        try:
            return compile_cubin(nvrtc, source, *job)
        except (RuntimeError, AttributeError, OSError) as e:  # an NVRTC that cannot: the variant waits
            print(f"precompile_flash: {job[0]} {' '.join(job[1])} left out: {e}", file=sys.stderr)
            return None

    # ctypes releases the GIL around each call: NVRTC compiles on every core.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        built = list(pool.map(attempt, jobs))
    jobs = [job for job, cubin in zip(jobs, built) if cubin is not None]
    cubins = [cubin for cubin in built if cubin is not None]
    asm = ["// Generated by scripts/precompile_flash.py: kiln::attention's flash kernel, compiled by NVRTC.",
           '.section .rodata', '.balign 16']
    inc = ["// Generated by scripts/precompile_flash.py: the cubins of flash_attention_cubins.S.",
           "// KILN_FLASH_CUBINS(X): X(arch, NVRTC options, first byte, one past the last) per cubin."]
    entries = []
    for i, ((arch, options), cubin) in enumerate(zip(jobs, cubins)):
        path = os.path.abspath(os.path.join(args.out_dir, f"flash_attention_{arch}_{i}.cubin"))
        with open(path, "wb") as f:
            f.write(cubin)
        name = f"kiln_flash_cubin_{i}"
        asm += [f".global {name}_begin", f".hidden {name}_begin", f".global {name}_end", f".hidden {name}_end",
                f"{name}_begin:", f'.incbin "{path}"', f"{name}_end:", ".balign 16"]
        inc.append(f'extern "C" const char {name}_begin[], {name}_end[];')
        entries.append(f'  X("{arch}", "{" ".join(options)}", {name}_begin, {name}_end)')
    asm.append('.section .note.GNU-stack,"",@progbits')
    inc.append("#define KILN_FLASH_CUBINS(X)" + (" \\\n" + " \\\n".join(entries) if entries else ""))
    for name, lines in (("flash_attention_cubins.S", asm), ("flash_attention_cubins.inc", inc)):
        text = "\n".join(lines) + "\n"
        with open(os.path.join(args.out_dir, name), "w") as f:
            f.write(text)
    print(f"precompile_flash: {len(cubins)} cubins" + ("" if nvrtc else " (no NVRTC)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

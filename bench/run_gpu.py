#!/usr/bin/env python3
"""The GPU suite (make bench-gpu): the GPU rows of shared/reference/torch_baseline.py that kiln runs
for kiln compiled (bench/gpu_bench.cpp), PyTorch eager and torch.compile, in one run on one GPU.

  run_gpu.py --kiln-bench BUILD/bench/kiln_gpu_bench [--workloads a,b] [--reps N] [--out FILE.md]
             [--torch-profile]

Where the time goes: --torch-profile prints torch.compile's kernels with their device time, and
KILN_CUDA_PROFILE=1 in the environment makes kiln_gpu_bench print kiln's (both on stderr).

For each workload: its inputs (seeded, bench/torch_suite.py's shapes at scale 1, the GPU rows'
shapes) and expected outputs are written as raw files (bench/raw_tensors.h) — PyTorch eager's
outputs on the GPU within torch.testing's default tolerance, or for the rows that sum long runs
(`reductions`, the GEMM rows) a float64 reference with twice PyTorch's own error as tolerance
(torch_suite.py's rule); PyTorch eager and
torch.compile are checked against them, then timed with CUDA events (median of REPS after warm-up;
torch.compile's cold compile is its first call's wall time with an empty Inductor cache); then
kiln_gpu_bench checks and times kiln's compiled code on the same files (a call's time: ten calls
back to back until the device is done, over ten; bench/gpu_bench.cpp). Last, the device-to-device
copy bandwidth (copy_ of 512 MiB, read + write) is measured in the same run, and each row's bytes
(its inputs read once and its outputs written once) over its time is given as a fraction of it.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_suite as ts  # noqa: E402  (sets TORCHINDUCTOR_CACHE_DIR only when run as a script)
import torch  # noqa: E402

MEMORY_BOUND = ["pointwise_chain", "softmax", "layernorm", "rmsnorm_bf16", "reductions"]
BF16 = torch.bfloat16
# The GPU rows whose shapes or dtypes differ from torch_suite.py's at scale 1 (torch_baseline.py's GPU
# row: bfloat16, M=8192 D=4096 H=16384).
GPU_INPUTS = {
    "gelu_mlp": lambda: (ts.randn(8192, 4096, dtype=BF16), ts.randn(16384, 4096, scale=0.02, dtype=BF16),
                         ts.randn(16384, dtype=BF16), ts.randn(4096, 16384, scale=0.02, dtype=BF16),
                         ts.randn(4096, dtype=BF16)),
    "attention_naive": lambda: tuple(ts.randn(8, 16, 1024, 64, dtype=BF16) for _ in range(3)),
    "gpt2_block_fwd": lambda: (ts.randn(8, 1024, 1024, dtype=BF16),) + tuple(t.to(BF16) for t in ts.gpt2_inputs()[1:]),
}


def cuda_ms(fn, args, reps, warmup):
    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def copy_bandwidth(mib=512, reps=20):
    x = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = cuda_ms(lambda: y.copy_(x), (), reps, 3)
    return 2 * x.numel() / (ms / 1e3)


def profile_kernels(name, fn, args, calls=10):
    """torch.compile's kernels for `name` and their device time over `calls` calls (stderr): the
    counterpart of kiln's KILN_CUDA_PROFILE=1."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*args)
        torch.cuda.synchronize()
    sys.stderr.write(f"torch.compile {name}, {calls} calls:\n")
    sys.stderr.write(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15) + "\n")


def check(name, got, expected, tolerances):
    for i, (g, e, (atol, rtol, max_rmse)) in enumerate(zip(got, expected, tolerances)):
        ok, problem, *_ = ts.compare(g.detach().cpu(), e, atol, rtol, max_rmse)
        if not ok:
            raise SystemExit(f"{name}: output {i}: {problem}")


def prepare(name, dir):
    fn, make_inputs = ts.WORKLOADS[name]
    torch.manual_seed(0)
    inputs = GPU_INPUTS[name]() if name in GPU_INPUTS else make_inputs(1)
    gpu = [t.cuda() for t in inputs]
    with torch.no_grad():
        eager = [t.cpu() for t in ts.as_list(fn(*gpu))]
        if name in ts.FLOAT64_REFERENCE:
            reference = [t.cpu() for t in ts.as_list(fn(*(t.double() for t in gpu)))]
            compiled = [t.cpu() for t in ts.as_list(torch.compile(fn)(*gpu))]
            torch._dynamo.reset()
    os.makedirs(dir, exist_ok=True)
    lines = [f"workload {name}", "scale 1"]
    for i, t in enumerate(inputs):
        ts.write_raw(os.path.join(dir, f"input{i}.bin"), t)
        head, sizes = ts.tensor_fields(f"input{i}.bin", t)
        lines.append(" ".join(["input"] + head + sizes))
    expected, tolerances = [], []
    for i, out in enumerate(eager):
        if name not in ts.FLOAT64_REFERENCE:
            want, basis = out, "torch_eager_cuda"
            (atol, rtol), max_rmse = ts.DEFAULT_TOLERANCE[out.dtype], -1.0
        else:
            want, basis = reference[i], "float64_reference"
            e, c = ts.error_against(out, want), ts.error_against(compiled[i], want)
            atol, rtol = 2 * max(e[0], c[0]) + ts.DEFAULT_TOLERANCE[torch.float32][0], 0.0
            max_rmse = 2 * max(e[1], c[1]) + ts.DEFAULT_TOLERANCE[torch.float32][0] / 10
        ts.write_raw(os.path.join(dir, f"expected{i}.bin"), want)
        head, sizes = ts.tensor_fields(f"expected{i}.bin", want)
        lines.append(" ".join(["output"] + head + [f"{atol:.9g}", f"{rtol:.9g}", f"{max_rmse:.9g}", basis] + sizes))
        expected.append(want)
        tolerances.append((atol, rtol, max_rmse))
    with open(os.path.join(dir, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    moved = sum(t.numel() * t.element_size() for t in inputs) + sum(t.numel() * t.element_size() for t in eager)
    return fn, gpu, expected, tolerances, moved


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln-bench", required=True)
    ap.add_argument("--workloads", default=",".join(MEMORY_BOUND + ["gelu_mlp", "attention_naive", "gpt2_block_fwd"]))
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--out", default="")
    ap.add_argument("--torch-profile", action="store_true",
                    help="also print torch.compile's kernels and their device time (stderr)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kiln-gpu-suite-")
    rows, dirs = {}, []
    for name in args.workloads.split(","):
        dir = os.path.join(root, name)
        fn, gpu, expected, tolerances, moved = prepare(name, dir)
        with torch.no_grad():
            check(name + " (torch eager)", ts.as_list(fn(*gpu)), expected, tolerances)
            eager_ms = cuda_ms(fn, gpu, args.reps, 5)
            with ts.fresh_inductor_cache():
                torch._dynamo.reset()
                compiled = torch.compile(fn)
                start = time.perf_counter()
                first = ts.as_list(compiled(*gpu))
                torch.cuda.synchronize()
                compile_s = time.perf_counter() - start
                check(name + " (torch.compile)", first, expected, tolerances)
                compiled_ms = cuda_ms(compiled, gpu, args.reps, 5)
                if args.torch_profile:
                    profile_kernels(name, compiled, gpu)
        rows[name] = dict(workload=name, bytes=moved, torch_eager_ms=eager_ms, torch_compile_ms=compiled_ms,
                          torch_cold_compile_s=compile_s)
        dirs += ["--dir", dir]
        del gpu
        torch.cuda.empty_cache()
    bandwidth = copy_bandwidth()
    kiln = subprocess.run([args.kiln_bench, "--reps", str(args.reps)] + dirs, capture_output=True, text=True)
    sys.stderr.write(kiln.stderr)
    for line in kiln.stdout.splitlines():
        r = json.loads(line)
        rows[r["workload"]].update(r)
    header = (f"GPU: {torch.cuda.get_device_name()}, PyTorch {torch.__version__}; device-to-device copy "
              f"{bandwidth / 1e9:.0f} GB/s (read + write), measured in this run. kiln: wall time of 10 calls back "
              f"to back until the device is done, over 10; PyTorch: CUDA events. Medians of {args.reps}.\n\n")
    table = ["| workload | torch eager ms | torch.compile ms | kiln ms | torch.compile / kiln | kiln % of copy BW "
             "| torch.compile % of copy BW | kiln cold compile s | torch.compile cold compile s |",
             "|---|---|---|---|---|---|---|---|---|"]
    ratios = []
    def pct(r, ms):
        if r["workload"] not in MEMORY_BOUND:
            return "-"  # GEMM-bound
        return f"{100 * r['bytes'] / (ms / 1e3) / bandwidth:.0f}%"

    for r in rows.values():
        k = r.get("kiln_ms")
        ratio = r["torch_compile_ms"] / k if k else None
        if ratio:
            ratios.append(ratio)
        table.append(f"| {r['workload']} | {r['torch_eager_ms']:.3f} | {r['torch_compile_ms']:.3f} | "
                     f"{k:.3f} | {ratio:.2f}x | {pct(r, k)} | {pct(r, r['torch_compile_ms'])} | "
                     f"{r.get('kiln_cold_compile_s', float('nan')):.2f} | {r['torch_cold_compile_s']:.2f} |"
                     if k else f"| {r['workload']} | {r['torch_eager_ms']:.3f} | {r['torch_compile_ms']:.3f} | "
                     f"failed | | | | | {r['torch_cold_compile_s']:.2f} |")
    geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else 0.0
    text = header + "\n".join(table) + f"\n\nGeometric mean of torch.compile time / kiln time: {geomean:.2f}x\n"
    print(text)
    print(json.dumps(list(rows.values())))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return kiln.returncode


if __name__ == "__main__":
    sys.exit(main())

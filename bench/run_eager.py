#!/usr/bin/python3
"""`make bench`: runs kiln's eager benchmark and PyTorch's on the same machine in one invocation,
alternating the two twice, and prints per-op medians, kiln/PyTorch time ratios and the fraction of
the measured copy bandwidth each memory-bound op reaches.

Bytes per op are what the op must move: each input read once and each output written once
(add: 3 x 64 MiB; exp, gelu, softmax, layer_norm: 2 x 64 MiB; sum/amax over dim 1: 64 MiB).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import cpu_model  # noqa: E402

BYTES = {"add": 3, "mul": 3, "exp": 2, "gelu": 2, "sum_dim1": 1, "amax_dim1": 1, "softmax": 2, "layer_norm": 2}
ONE = 4096 * 4096 * 4


def run_kiln(build, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
    out = subprocess.run([f"{build}/bench/kiln_eager_bench", "--benchmark_format=json",
                          "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true",
                          "--benchmark_min_time=0.5", "--benchmark_filter=-gemm_linear"],  # those: gemm_probe.py
                         env=env, check=True, capture_output=True, text=True).stdout
    results = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            results[b["run_name"].split("/")[0]] = b["real_time"]  # milliseconds
    return results


def run_torch(python, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([python, os.path.join(os.path.dirname(__file__), "torch_eager.py"),
                          str(threads)], env=env, check=True, capture_output=True, text=True).stdout
    results, meta = {}, {}
    for line in out.splitlines():
        r = json.loads(line)
        if r["name"] == "_meta":
            meta = r
        else:
            results[r["name"]] = r
    return results, meta


def main():
    p = argparse.ArgumentParser()
    venv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv", "bin", "python")
    p.add_argument("--build", default="build")
    p.add_argument("--python", default=venv if os.path.exists(venv) else "python3",
                   help="the interpreter whose PyTorch is the peer (default: the repo's .venv, pinned PyTorch)")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--output", help="also write the report (Markdown) to this file")
    args = p.parse_args()

    kiln_runs, torch_runs, meta = [], [], {}
    for _ in range(args.rounds):
        kiln_runs.append(run_kiln(args.build, args.threads))
        t, meta = run_torch(args.python, args.threads)
        torch_runs.append(t)

    def med(runs, key, field=None):
        vals = [(r[key][field] if field else r[key]) for r in runs if key in r and (not field or field in r[key])]
        return statistics.median(vals) if vals else None

    lines = []
    emit = lambda text="": (print(text), lines.append(text))
    copy_ms = med(kiln_runs, "copy_bandwidth")
    copy_gbs = 2 * ONE / (copy_ms * 1e-3) / 1e9
    emit(f"machine: {cpu_model()}, {args.threads} threads; PyTorch {meta.get('torch')} ({meta.get('threads')} threads); "
         f"medians of {args.rounds} alternating rounds")
    emit(f"measured copy bandwidth (read + write): {copy_gbs:.1f} GB/s")
    emit()
    emit("| op | kiln ms | PyTorch ms | kiln / PyTorch | PyTorch out= ms | kiln / out= | kiln GB/s | % of copy BW |")
    emit("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for name in ["add", "mul", "exp", "gelu", "sum_dim1", "amax_dim1", "softmax", "layer_norm", "mm_2048"]:
        k = med(kiln_runs, name)
        t = med(torch_runs, name, "ms")
        t_out = med(torch_runs, name, "ms_out")
        ratio = k / t
        worst = max(worst, ratio)
        out_cols = f"{t_out:.2f} | {k / t_out:.2f}" if t_out else "- | -"
        if name in BYTES:
            gbs = BYTES[name] * ONE / (k * 1e-3) / 1e9
            bw = f"{gbs:.1f} | {100 * gbs / copy_gbs:.0f}%"
        else:
            gflops = 2 * 2048 ** 3 / (k * 1e-3) / 1e9
            bw = f"{gflops:.0f} GFLOP/s | -"
        emit(f"| {name} | {k:.2f} | {t:.2f} | {ratio:.2f} | {out_cols} | {bw} |")
    emit()
    emit(f"slowest kiln/PyTorch ratio: {worst:.2f} (target: <= 1.10)")
    if args.output:
        with open(args.output, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The compiled CPU suite (`make bench`): kiln eager and kiln compiled (kiln_compiled_bench)
against PyTorch eager and torch.compile where available (torch_suite.py), on the same machine in
one invocation, same shapes (the baseline's first dimension divided by --scale). Writes a markdown
table (bench/results/compiled_cpu.md unless --out) with times, kiln compiled vs torch.compile, the
fraction of measured copy bandwidth for memory-bound rows, and compile times.

Bytes counted for memory-bound rows, as torch_baseline.py counts them: one read and one write of
the big tensor (reductions: one read, although it is read twice)."""
import argparse
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import cpu_model  # noqa: E402

MEMORY_BOUND = {"pointwise_chain": (2, 4), "softmax": (2, 4), "layernorm": (2, 4), "rmsnorm_bf16": (2, 2),
                "reductions": (1, 4)}
SHAPES = {"pointwise_chain": (8192, 8192), "softmax": (16384, 4096), "layernorm": (16384, 4096),
          "rmsnorm_bf16": (16384, 4096), "reductions": (8192, 8192)}


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--scale", type=int, default=8)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--only", default="")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--out", default="bench/results/compiled_cpu.md")
    a = p.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    kiln = {r["name"]: r for r in json_lines(subprocess.run(
        [f"{a.build}/bench/kiln_compiled_bench", "--scale", str(a.scale), "--reps", str(a.reps), "--only", a.only],
        env=env, check=True, capture_output=True, text=True).stdout)}
    torch_rows = json_lines(subprocess.run(
        [a.python, os.path.join(os.path.dirname(__file__), "torch_suite.py"), str(a.scale), str(a.reps), a.only],
        env=env, check=True, capture_output=True, text=True).stdout)
    meta = next(r for r in torch_rows if r["name"] == "_meta")
    torch = {r["name"]: r for r in torch_rows if r["name"] != "_meta"}
    bw = meta["copy_GBps"]
    lines = [f"# Compiled CPU suite: {cpu_model()}, {a.threads} threads, PyTorch {meta['torch']}",
             "",
             f"Shapes: torch_baseline.py's CPU shapes with the first dimension divided by {a.scale} "
             f"(gelu_mlp: M a quarter of that). Median of {a.reps} runs. Copy bandwidth {bw:.1f} GB/s "
             "(torch copy_ of 512 MiB, read + write).",
             "",
             "| workload | torch eager ms | torch.compile ms | kiln eager ms | kiln compiled ms | torch.compile / kiln | "
             "kiln % of copy BW | kiln cold compile s | kiln warm start ms | torch.compile cold s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    ratios = []
    for name, k in kiln.items():
        t = torch.get(name, {})
        tc = t.get("torch_compiled_s")
        ref = tc if tc else t.get("torch_eager_s")
        ratio = ref / k["kiln_compiled_s"] if ref else float("nan")
        if ref:
            ratios.append(ratio)
        frac = "-"
        if name in MEMORY_BOUND:
            rows, cols = SHAPES[name]
            nbytes = MEMORY_BOUND[name][0] * (rows // a.scale) * cols * MEMORY_BOUND[name][1]
            frac = f"{100 * nbytes / k['kiln_compiled_s'] / 1e9 / bw:.0f}%"
        fmt = lambda v: f"{v * 1e3:.2f}" if v else "-"
        lines.append(f"| {name} | {fmt(t.get('torch_eager_s'))} | {fmt(tc)} | {fmt(k['kiln_eager_s'])} | "
                     f"{fmt(k['kiln_compiled_s'])} | {ratio:.2f} | {frac} | {k['cold_compile_s']:.2f} | "
                     f"{k['warm_start_s'] * 1e3:.1f} | {t.get('torch_compile_cold_s', float('nan')):.1f} |")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    against = "torch.compile" if any(r.get("torch_compiled_s") for r in torch.values()) else "PyTorch eager (no torch.compile here)"
    lines += ["", f"Geometric mean of {against} time / kiln compiled time: {geo:.2f} (above 1: kiln faster).", ""]
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

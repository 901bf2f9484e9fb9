#!/usr/bin/env python3
"""torch.compile(backend="kiln") against PyTorch eager and torch.compile() (Inductor), CPU (issue 13).

The zoo (tests/models/export_models.py) runs in PROCESSES separate processes (bench/backend_one.py),
each running every model under eager, Inductor and kiln on the same inputs with the same threads,
checking every compiled result against eager before timing it; the order of the two compilers
alternates between processes. The table reports, per model, the median of the process medians
(min-max over processes) in milliseconds and each model's cold compile (its first call, on caches
empty at the process's start), each compiler's one-time start-up in a process apart, and the
geometric means of Inductor / kiln.

Usage: run_backend.py --python .venv/bin/python [--models mlp,cnn,...] [--processes 3]
                      [--threads N] [--reps 20] [--out bench/results/backend_cpu.md] [--report-from X.jsonl]
The interpreter must import torch and kiln (PYTHONPATH=build/python for the build tree).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ["mlp", "cnn", "transformer_encoder_layer", "gpt_block", "resnet18", "mobilenet_v3_small", "gpt2", "bert", "vit"]


def spread(values, fmt="{:.3f}"):
    med = statistics.median(values)
    if len(values) == 1:
        return med, fmt.format(med)
    return med, f"{fmt.format(med)} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def report(rows: list[dict]) -> str:
    by_model: dict[str, list[dict]] = {}
    for r in rows:
        by_model.setdefault(r["model"], []).append(r)
    head = rows[0]
    lines = [
        f"PyTorch {head['torch']}, {head['threads']} threads; ms: median of process medians (min-max), "
        f"{max(len(v) for v in by_model.values())} processes per model; cold: first call, fresh caches, s.",
        "",
        "| model | eager | torch.compile | kiln | torch.compile / kiln | torch.compile cold s | kiln cold s | cold ratio | kiln fallbacks |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    speed, cold = [], []
    for model in [m for m in MODELS if m in by_model] + sorted(set(by_model) - set(MODELS)):
        rs = by_model[model]
        e, e_text = spread([r["eager"]["median_ms"] for r in rs])
        i, i_text = spread([r["inductor"]["median_ms"] for r in rs])
        k, k_text = spread([r["kiln"]["median_ms"] for r in rs])
        ic, ic_text = spread([r["inductor"]["first_s"] for r in rs], "{:.2f}")
        kc, kc_text = spread([r["kiln"]["first_s"] for r in rs], "{:.2f}")
        fallbacks = sorted({op for r in rs for op in r["kiln"].get("fallback_ops", {})})
        speed.append(i / k)
        cold.append(ic / kc)
        lines.append(f"| {model} | {e_text} | {i_text} | {k_text} | **{i / k:.2f}** | {ic_text} | {kc_text} | "
                     f"{ic / kc:.1f} | {', '.join(fallbacks) or '-'} |")
    geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
    lines += ["", f"Geometric mean of torch.compile / kiln: **{geo(speed):.2f}** (run time), **{geo(cold):.1f}** (cold compile)."]
    startups: dict[str, list[float]] = {}
    for r in {id(r["startup_s"]): r for r in rows}.values():
        for name, seconds in r["startup_s"].items():
            startups.setdefault(name, []).append(seconds)
    lines += ["", "One-time start-up in a process (s; first compile of a small function, not in the cold column): " +
              ", ".join(f"{name} {spread(v, '{:.2f}')[1]}" for name, v in startups.items()) + "."]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=str(HERE / "results" / "backend_cpu.md"))
    ap.add_argument("--report-from", nargs="*")
    a = ap.parse_args()
    rows = []
    if a.report_from:
        for path in a.report_from:
            rows += [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    else:
        jsonl = Path(a.out).with_suffix(".jsonl")
        jsonl.parent.mkdir(parents=True, exist_ok=True)
        with jsonl.open("w") as sink:
            for p in range(a.processes):
                order = "eager,inductor,kiln" if p % 2 == 0 else "eager,kiln,inductor"
                cmd = [a.python, str(HERE / "backend_one.py"), "--models", a.models, "--order", order,
                       "--threads", str(a.threads), "--reps", str(a.reps)]
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
                for line in proc.stdout:
                    row = json.loads(line)
                    rows.append(row)
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                    print(f"{row['model']} [{order}]: eager {row['eager']['median_ms']:.3f} ms, inductor "
                          f"{row['inductor']['median_ms']:.3f} ms, kiln {row['kiln']['median_ms']:.3f} ms; cold "
                          f"{row['inductor']['first_s']:.1f} s / {row['kiln']['first_s']:.1f} s", flush=True)
                if proc.wait() != 0:
                    sys.exit(f"process {p} failed (exit {proc.returncode})")
    text = report(rows)
    Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

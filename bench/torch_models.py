#!/usr/bin/env python3
"""One PyTorch process of the model benchmark (bench/run_models.py): loads a `.pt2` archive with
torch.export.load, runs its module eagerly or under torch.compile (Inductor, CPU) on the given .npy
inputs, writes the outputs as .npy (for the check against kiln), and prints one JSON line: the first
call's time (torch.compile: the cold compile, with a fresh Inductor cache) and the median, min and
max of REPS calls after WARMUP.

Usage: torch_models.py MODEL.pt2 --mode eager|compile --inputs A.npy [B.npy ...] --out DIR
                       [--reps N] [--warmup N] [--threads N]
"""
import argparse
import json
import os
import statistics
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--mode", choices=["eager", "compile"], required=True)
    ap.add_argument("--inputs", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    # A cold compile: nothing cached from earlier processes.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor_cache_"))
    import numpy as np
    import torch

    torch.set_num_threads(a.threads)
    inputs = [torch.from_numpy(np.load(p)) for p in a.inputs]
    module = torch.export.load(a.model).module()
    fn = torch.compile(module) if a.mode == "compile" else module

    with torch.no_grad():
        start = time.perf_counter()
        out = fn(*inputs)
        first_ms = (time.perf_counter() - start) * 1e3
        for _ in range(a.warmup):
            fn(*inputs)
        times = []
        for _ in range(a.reps):
            start = time.perf_counter()
            out = fn(*inputs)
            times.append((time.perf_counter() - start) * 1e3)
    outs = out if isinstance(out, (tuple, list)) else [out]
    os.makedirs(a.out, exist_ok=True)
    for i, t in enumerate(outs):
        np.save(os.path.join(a.out, f"output_{i}.npy"), t.detach().numpy())
    print(json.dumps({"first_ms": first_ms, "median_ms": statistics.median(times), "min_ms": min(times),
                      "max_ms": max(times), "torch": torch.__version__, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()

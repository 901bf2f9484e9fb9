#!/usr/bin/python3
"""PyTorch eager on the same workloads as bench/eager_bench.cpp; prints one JSON object per line:
{"name", "ms" (median), "ms_out" (median with a preallocated out= tensor, where PyTorch has one)}."""
import json
import statistics
import sys
import time

import torch

N = 4096


def timed(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    a, b = torch.randn(N, N), torch.randn(N, N)
    w, bias = torch.randn(N), torch.randn(N)
    out = torch.empty(N, N)
    row = torch.empty(N)
    m1, m2 = torch.randn(2048, 2048), torch.randn(2048, 2048)
    mm_out = torch.empty(2048, 2048)
    work = {
        "add": (lambda: torch.add(a, b), lambda: torch.add(a, b, out=out)),
        "mul": (lambda: torch.mul(a, b), lambda: torch.mul(a, b, out=out)),
        "exp": (lambda: torch.exp(a), lambda: torch.exp(a, out=out)),
        "gelu": (lambda: torch.nn.functional.gelu(a), None),
        "sum_dim1": (lambda: torch.sum(a, 1), lambda: torch.sum(a, 1, out=row)),
        "amax_dim1": (lambda: torch.amax(a, 1), lambda: torch.amax(a, 1, out=row)),
        "softmax": (lambda: torch._softmax(a, 1, False), None),
        "layer_norm": (lambda: torch.native_layer_norm(a, [N], w, bias, 1e-5), None),
        "mm_2048": (lambda: torch.mm(m1, m2), lambda: torch.mm(m1, m2, out=mm_out)),
    }
    with torch.no_grad():
        for name, (plain, with_out) in work.items():
            r = reps if name != "mm_2048" else max(3, reps // 4)
            result = {"name": name, "ms": timed(plain, r)}
            if with_out is not None:
                result["ms_out"] = timed(with_out, r)
            print(json.dumps(result), flush=True)
    print(json.dumps({"name": "_meta", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "blas": "see torch.__config__", "config": torch.__config__.show()}), flush=True)


if __name__ == "__main__":
    main()

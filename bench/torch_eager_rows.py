#!/usr/bin/python3
"""PyTorch eager on kiln_eager_bench's softmax_rows and suite/* rows (same shapes, dtypes and names):
softmax(x, -1) on [2048 | 16384, 4096] float32 and bfloat16, and the compiled suite's other eager
workloads (bench/torch_suite.py) at scales 8 and 1. One JSON object per row: the median, min and max
of REPS calls after a warm-up. Run it with the PyTorch under comparison and the same allocator
environment and thread count as kiln, e.g.
  MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 .venv/bin/python bench/torch_eager_rows.py 2 20 [FILTER]"""
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_suite import timed_reps  # noqa: E402


def timed(fn, reps, warmup=5):
    """The times of REPS calls after WARMUP, in ms."""
    return [t * 1e3 for t in timed_reps(fn, warmup, reps)]


def rows():
    """(name, inputs, function) in kiln_eager_bench's order and naming."""
    for rows in (2048, 16384):
        for bf16 in (0, 1):
            yield (f"softmax_rows/rows:{rows}/bf16:{bf16}",
                   lambda rows=rows, bf16=bf16: (torch.randn(rows, 4096).to(torch.bfloat16 if bf16 else torch.float32),),
                   lambda x: torch.softmax(x, -1))
    for scale in (8, 1):
        yield (f"suite/pointwise_chain/scale:{scale}",
               lambda s=scale: (torch.randn(8192 // s, 8192), torch.randn(8192), torch.randn(8192)),
               lambda x, a, b: F.gelu(x * a + b) * torch.sigmoid(x))
        yield (f"suite/layernorm/scale:{scale}",
               lambda s=scale: (torch.randn(16384 // s, 4096), torch.randn(4096), torch.randn(4096)),
               lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b))
        yield (f"suite/rmsnorm_bf16/scale:{scale}",
               lambda s=scale: (torch.randn(16384 // s, 4096).bfloat16(), torch.randn(4096).bfloat16()),
               lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w)
        yield (f"suite/reductions/scale:{scale}",
               lambda s=scale: (torch.randn(8192 // s, 8192),),
               lambda x: (x.sum(0), *torch.var_mean(x, 1)))


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    pattern = sys.argv[3] if len(sys.argv) > 3 else ""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, make, fn in rows():
            if pattern not in name:
                continue
            inputs = make()
            t = timed(lambda: fn(*inputs), reps)
            print(json.dumps({"name": name, "ms": statistics.median(t), "min_ms": min(t), "max_ms": max(t)}), flush=True)
            del inputs
    print(json.dumps({"name": "_meta", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "capability": torch.backends.cpu.get_cpu_capability()}), flush=True)


if __name__ == "__main__":
    main()

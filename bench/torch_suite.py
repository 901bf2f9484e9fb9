#!/usr/bin/python3
"""PyTorch side of the compiled CPU suite (the workloads of shared/reference/torch_baseline.py with
the same shapes kiln_compiled_bench uses): eager, and torch.compile where PyTorch has it, with cold
compile time in an empty Inductor cache. One JSON line per workload, plus a _meta line with the
measured copy bandwidth. Usage: torch_suite.py SCALE REPS [ONLY]"""
import json
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

scale, reps = int(sys.argv[1]), int(sys.argv[2])
only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 and sys.argv[3] else None
torch.manual_seed(0)


def R(*shape, dtype=torch.float32, s=1.0):
    return (torch.randn(*shape) * s).to(dtype)


def median(fn, args, reps):
    for _ in range(2):
        fn(*args)
    t = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args)
        t.append(time.perf_counter() - start)
    t.sort()
    return t[len(t) // 2]


def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def attn(q, k, v):
    return torch.softmax((q @ k.transpose(-1, -2)) * 0.125, -1) @ v


class Block(torch.nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.h = h
        s.ln1 = torch.nn.LayerNorm(d)
        s.qkv = torch.nn.Linear(d, 3 * d)
        s.proj = torch.nn.Linear(d, d)
        s.ln2 = torch.nn.LayerNorm(d)
        s.fc = torch.nn.Linear(d, 4 * d)
        s.out = torch.nn.Linear(4 * d, d)

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, s.h, C // s.h).transpose(1, 2) for t in (q, k, v))
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1)
        a = torch.softmax((q @ k.transpose(-2, -1)) * (C // s.h) ** -0.5 + mask, -1) @ v
        x = x + s.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + s.out(F.gelu(s.fc(s.ln2(x))))


M = 8192 // scale // 4
blk = Block(1024, 16).eval()
W = {
    "pointwise_chain": (lambda x, a, b: F.gelu(x * a + b) * torch.sigmoid(x), (R(8192 // scale, 8192), R(8192), R(8192))),
    "softmax": (lambda x: torch.softmax(x, dim=-1), (R(16384 // scale, 4096),)),
    "layernorm": (lambda x, w, b: F.layer_norm(x, (4096,), w, b), (R(16384 // scale, 4096), R(4096), R(4096))),
    "rmsnorm_bf16": (rms, (R(16384 // scale, 4096, dtype=torch.bfloat16), R(4096, dtype=torch.bfloat16))),
    "reductions": (lambda x: (x.sum(0), torch.var_mean(x, 1)), (R(8192 // scale, 8192),)),
    "gelu_mlp": (lambda x, w1, b1, w2, b2: F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2),
                 (R(M, 4096), R(16384, 4096, s=0.02), R(16384), R(4096, 16384, s=0.02), R(4096))),
    "attention_naive": (attn, tuple(R(1, 16, 1024, 64) for _ in range(3))),
    "gpt2_block_fwd": (lambda x: blk(x), (R(1, 1024, 1024),)),
}

a = torch.empty(2 ** 27, dtype=torch.float32)
b = torch.empty_like(a)
a.fill_(1)
t = median(lambda: b.copy_(a), (), 10)
print(json.dumps({"name": "_meta", "torch": torch.__version__, "threads": torch.get_num_threads(),
                  "copy_GBps": 2 * a.numel() * 4 / t / 1e9}), flush=True)
del a, b

has_compile = hasattr(torch, "compile")
for name, (fn, args) in W.items():
    if only and name not in only:
        continue
    row = {"name": name}
    with torch.no_grad():
        row["torch_eager_s"] = median(fn, args, reps)
        if has_compile:
            try:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
                torch._dynamo.reset()
                start = time.perf_counter()
                cf = torch.compile(fn)
                cf(*args)
                row["torch_compile_cold_s"] = time.perf_counter() - start
                row["torch_compiled_s"] = median(cf, args, reps)
            except Exception as e:  # report, do not hide
                row["torch_compile_error"] = repr(e)[:200]
    print(json.dumps(row), flush=True)

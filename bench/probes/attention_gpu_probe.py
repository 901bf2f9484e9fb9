"""PyTorch's side of bench/probes/attention_gpu_probe.cpp: F.scaled_dot_product_attention on the same
problems (bfloat16 [B, H, L, D] queries, keys and values; plain, is_causal, and GPT-2's additive
[L, L] -inf mask), each backend PyTorch picks by default, timed with CUDA events (median of 20
batches of 10 calls), with the TFLOP/s of the useful work (4 B H L S D, half of it when causal or
masked). Run on the GPU machine beside the probe:
    python3 bench/probes/attention_gpu_probe.py [B H L D]   (default 8 16 1024 64)
"""
import sys

import torch
import torch.nn.functional as F


def time_ms(f):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 10)
    return sorted(times)[len(times) // 2]


def main():
    b, h, l, d = (int(x) for x in sys.argv[1:5]) if len(sys.argv) > 4 else (8, 16, 1024, 64)
    torch.manual_seed(7)
    q, k, v = (torch.randn(b, h, l, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    mask = torch.triu(torch.full((l, l), float("-inf"), device="cuda", dtype=torch.bfloat16), 1)
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: B={b} H={h} L=S={l} D={d} bfloat16")
    for name, kwargs, useful in (("plain", {}, 1.0), ("causal", {"is_causal": True}, 0.5),
                                 ("mask", {"attn_mask": mask}, 0.5)):
        ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, **kwargs))
        print(f"{name:7} torch sdpa: {ms:.4f} ms  {4 * b * h * l * l * d * useful / ms / 1e9:6.1f} TFLOP/s (useful)")


if __name__ == "__main__":
    main()

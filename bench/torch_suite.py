#!/usr/bin/env python3
"""The PyTorch side of the compiled CPU suite (bench/run_compiled.py drives it): the workloads of
shared/reference/torch_baseline.py in PyTorch eager and torch.compile, on the same inputs as kiln.

  torch_suite.py prepare --workload NAME --scale S --dir DIR [--workload NAME --scale S --dir DIR ...]
      Generates each workload's inputs (seeded) and its expected outputs, and writes them to DIR as raw
      little-endian files with a manifest.txt (format: bench/raw_tensors.h), for both sides to load.
      Expected outputs and tolerances:
        - most rows: PyTorch eager's outputs, within torch.testing.assert_close's default tolerance for
          the dtype (float32 atol 1e-5 rtol 1.3e-6, bfloat16 atol 1e-5 rtol 1.6e-2).
        - rows that sum long runs of terms (FLOAT64_REFERENCE: the three GEMM rows, and reductions,
          whose sum(0) adds 1024 to 8192 terms): the workload computed in float64 on the same inputs.
          Float32 implementations that sum in different orders (oneDNN's and PyTorch's GEMMs; a
          sequential and a blocked column sum) differ by more than the default tolerance: PyTorch's
          own eager sum(0) is 2.6x that tolerance away from float64 at full shapes, and torch.compile's
          26x. PyTorch's float32 error is measured on its two results, eager and torch.compile, two
          ways: the largest absolute error E and the root-mean-square error R against float64 (the
          larger of the two results' each time). A result must be within twice PyTorch's error, each
          way: |got - ref| <= 2E + 1e-5 everywhere, and RMSE <= 2R + 1e-6 (the additive terms are
          float32's default atol and a tenth of it, floors for when PyTorch is exact). "Twice the
          float32 error against float64, as RMSE" is the idea of Inductor's own accuracy check; the
          elementwise bound keeps one wrong element from hiding in a mean.
      Prints one JSON object per workload describing what it wrote.

  torch_suite.py time --dir DIR [--dir DIR ...] [--reps N] [--min-ms MS] [--warmup N] [--settle-ms MS] [--check-only]
      One measuring process over the workloads given, in the same order as kiln_compiled_bench: the
      first torch.compile in the process, of the first workload (an empty TORCHINDUCTOR_CACHE_DIR;
      includes Inductor's one-time start-up); then for each workload a later cold compile
      (torch._dynamo.reset() and a fresh Inductor cache), both as the wall time of the first call, a
      sync (what the compile wrote goes to storage now, not beside the timed calls), a pause of
      --settle-ms (default 0), and eager and compiled medians of REPS calls after WARMUP, and of
      more while they add up to less than --min-ms (default 0); last the copy bandwidth (copy_ of
      512 MiB).
      Every result is checked against the expected outputs before any time is taken; on a mismatch it
      prints why on stderr, skips the workloads after it and exits 3. One JSON object per workload
      measured on stdout (with check_failed and the comparisons made for one that failed).

Runs on any PyTorch 2.x with NumPy; nothing else."""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

# The first compile in this process must find an empty Inductor cache: set before torch is imported.
# (run_compiled.py also gives each process its own TMPDIR and removes it afterwards: Inductor's compile
# workers can write into a cache directory after this process removed it.)
_FIRST_CACHE_DIR = tempfile.mkdtemp(prefix="inductor-bench-") if __name__ == "__main__" else None
if _FIRST_CACHE_DIR:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _FIRST_CACHE_DIR

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# (atol, rtol) of torch.testing.assert_close for each dtype.
DEFAULT_TOLERANCE = {torch.float32: (1e-5, 1.3e-6), torch.bfloat16: (1e-5, 1.6e-2), torch.float64: (1e-7, 1e-7)}
FLOAT64_REFERENCE = {"reductions", "gelu_mlp", "attention_naive", "gpt2_block_fwd"}
DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float64: "float64"}
DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}


# ---- The workloads: a function of tensors, and its inputs at a scale (the first dimension of the
# baseline's CPU shapes divided by the scale; gelu_mlp's M a quarter of that; attention_naive and
# gpt2_block_fwd have the baseline's CPU shapes at every scale).

def pointwise_chain(x, a, b):
    return F.gelu(x * a + b) * torch.sigmoid(x)


def softmax(x):
    return torch.softmax(x, dim=-1)


def layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def reductions(x):
    return (x.sum(0), *torch.var_mean(x, 1))


def gelu_mlp(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


def attention(q, k, v):
    return torch.softmax((q @ k.transpose(-1, -2)) * 0.125, -1) @ v


def gpt2_block(x, ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b, heads=16):
    """torch_baseline.py's Block.forward with its parameters as arguments (as kiln's version takes them)."""
    B, T, C = x.shape
    q, k, v = F.linear(F.layer_norm(x, (C,), ln1_w, ln1_b), qkv_w, qkv_b).split(C, dim=2)
    q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
    mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype, device=x.device), 1)
    a = torch.softmax((q @ k.transpose(-2, -1)) * (C // heads) ** -0.5 + mask, -1) @ v
    x = x + F.linear(a.transpose(1, 2).reshape(B, T, C), proj_w, proj_b)
    return x + F.linear(F.gelu(F.linear(F.layer_norm(x, (C,), ln2_w, ln2_b), fc_w, fc_b)), out_w, out_b)


def randn(*shape, dtype=torch.float32, scale=1.0):
    return (torch.randn(*shape) * scale).to(dtype)


def gpt2_inputs(C=1024):
    return (randn(1, 1024, C), randn(C), randn(C), randn(3 * C, C, scale=0.02), randn(3 * C),
            randn(C, C, scale=0.02), randn(C), randn(C), randn(C), randn(4 * C, C, scale=0.02), randn(4 * C),
            randn(C, 4 * C, scale=0.02), randn(C))


WORKLOADS = {
    "pointwise_chain": (pointwise_chain, lambda s: (randn(8192 // s, 8192), randn(8192), randn(8192))),
    "softmax": (softmax, lambda s: (randn(16384 // s, 4096),)),
    "layernorm": (layernorm, lambda s: (randn(16384 // s, 4096), randn(4096), randn(4096))),
    "rmsnorm_bf16": (rmsnorm, lambda s: (randn(16384 // s, 4096, dtype=torch.bfloat16),
                                         randn(4096, dtype=torch.bfloat16))),
    "reductions": (reductions, lambda s: (randn(8192 // s, 8192),)),
    "gelu_mlp": (gelu_mlp, lambda s: (randn(8192 // s // 4, 4096), randn(16384, 4096, scale=0.02), randn(16384),
                                      randn(4096, 16384, scale=0.02), randn(4096))),
    "attention_naive": (attention, lambda s: tuple(randn(1, 16, 1024, 64) for _ in range(3))),
    "gpt2_block_fwd": (gpt2_block, lambda s: gpt2_inputs()),
}


def as_list(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


# ---- Raw files and the manifest (bench/raw_tensors.h).

def write_raw(path, t):
    t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tofile(path)


def read_raw(path, dtype, sizes):
    data = torch.from_numpy(np.fromfile(path, dtype=np.uint8))
    return data.view(dtype).reshape(sizes)


def tensor_fields(file, t):
    return [file, DTYPE_NAMES[t.dtype]], [str(len(t.shape))] + [str(s) for s in t.shape]


def read_manifest(dir):
    m = {"inputs": [], "outputs": []}
    with open(os.path.join(dir, "manifest.txt")) as f:
        for line in f:
            fields = line.split()
            if not fields:
                continue
            if fields[0] in ("workload", "scale"):
                m[fields[0]] = fields[1] if fields[0] == "workload" else int(fields[1])
            elif fields[0] == "input":
                sizes = [int(s) for s in fields[4:4 + int(fields[3])]]
                m["inputs"].append(read_raw(os.path.join(dir, fields[1]), DTYPES[fields[2]], sizes))
            elif fields[0] == "output":
                sizes = [int(s) for s in fields[8:8 + int(fields[7])]]
                m["outputs"].append({"tensor": read_raw(os.path.join(dir, fields[1]), DTYPES[fields[2]], sizes),
                                     "atol": float(fields[3]), "rtol": float(fields[4]),
                                     "max_rmse": float(fields[5]), "basis": fields[6]})
    return m


# ---- Comparison, as assert_close defines closeness (|got - expected| <= atol + rtol |expected|, NaN
# never close, infinities only equal to themselves), computed in float64.

def compare(got, expected, atol, rtol, max_rmse=-1.0, chunk=1 << 22):
    """(ok, problem, max_abs, max_rel, rmse); max_rmse < 0: no RMSE bound. In chunks of `chunk`
    elements (float64 copies of whole 256 MiB outputs would add gigabytes to the process)."""
    if tuple(got.shape) != tuple(expected.shape):
        inf = float("inf")
        return False, f"sizes {list(got.shape)} where {list(expected.shape)} were expected", inf, inf, inf
    flat_got, flat_expected = got.detach().reshape(-1), expected.reshape(-1)
    max_abs = max_rel = squares = 0.0
    failures, worst, worst_excess = 0, -1, -1.0
    for lo in range(0, flat_got.numel(), chunk):
        a = flat_got[lo:lo + chunk].to(torch.float64)
        e = flat_expected[lo:lo + chunk].to(torch.float64)
        inf = torch.isinf(a) | torch.isinf(e)
        diff = torch.where(inf, torch.where(a == e, 0.0, float("inf")), (a - e).abs()).nan_to_num(nan=float("inf"))
        bound = atol + rtol * e.abs()
        close = torch.where(inf, a == e, diff <= bound)
        max_abs = max(max_abs, diff.max().item())
        squares += diff.pow(2).sum().item()
        nonzero = e != 0
        if nonzero.any():
            max_rel = max(max_rel, (diff[nonzero] / e[nonzero].abs()).max().item())
        bad = int((~close).sum())
        if bad:
            failures += bad
            excess = torch.where(close, -1.0, diff / bound)
            i = int(excess.argmax())
            if excess[i].item() > worst_excess:
                worst, worst_excess = lo + i, excess[i].item()
    rmse = (squares / flat_got.numel()) ** 0.5 if flat_got.numel() else 0.0
    if failures:
        index = [int(i) for i in np.unravel_index(worst, tuple(got.shape))] if got.dim() else []
        return (False, f"{failures} of {got.numel()} elements outside the tolerance; worst at {index}: got "
                f"{flat_got[worst].item():.9g}, expected {flat_expected[worst].item():.9g}", max_abs, max_rel, rmse)
    if max_rmse >= 0 and not rmse <= max_rmse:
        return False, f"RMSE {rmse:.3g} above its bound {max_rmse:.3g}", max_abs, max_rel, rmse
    return True, "", max_abs, max_rel, rmse


def error_against(got, reference):
    """(largest absolute error, RMSE) of `got` against `reference`, in float64."""
    diff = got.to(torch.float64) - reference.to(torch.float64)
    return diff.abs().max().item(), diff.pow(2).mean().sqrt().item()


# ---- prepare

def prepare(name, scale, dir):
    start = time.perf_counter()
    fn, make_inputs = WORKLOADS[name]
    torch.manual_seed(0)
    inputs = make_inputs(scale)
    with torch.no_grad():
        eager = as_list(fn(*inputs))
        if name in FLOAT64_REFERENCE:
            reference = as_list(fn(*(t.to(torch.float64) for t in inputs)))
            compiled = as_list(torch.compile(fn)(*inputs))
    os.makedirs(dir, exist_ok=True)
    lines = [f"workload {name}", f"scale {scale}"]
    described = {"workload": name, "scale": scale, "inputs": [], "outputs": []}
    for i, t in enumerate(inputs):
        write_raw(os.path.join(dir, f"input{i}.bin"), t)
        head, sizes = tensor_fields(f"input{i}.bin", t)
        lines.append(" ".join(["input"] + head + sizes))
        described["inputs"].append({"dtype": head[1], "sizes": list(t.shape)})
    for i, out in enumerate(eager):
        row = {"dtype": DTYPE_NAMES[out.dtype], "sizes": list(out.shape)}
        if name not in FLOAT64_REFERENCE:
            expected, basis = out, "torch_eager"
            (atol, rtol), max_rmse = DEFAULT_TOLERANCE[out.dtype], -1.0
        else:
            expected, basis = reference[i], "float64_reference"
            eager_error, compiled_error = error_against(out, expected), error_against(compiled[i], expected)
            atol = 2 * max(eager_error[0], compiled_error[0]) + DEFAULT_TOLERANCE[torch.float32][0]
            rtol = 0.0
            max_rmse = 2 * max(eager_error[1], compiled_error[1]) + DEFAULT_TOLERANCE[torch.float32][0] / 10
            row.update(torch_eager_max_abs_err=eager_error[0], torch_eager_rmse=eager_error[1],
                       torch_compile_max_abs_err=compiled_error[0], torch_compile_rmse=compiled_error[1])
        write_raw(os.path.join(dir, f"expected{i}.bin"), expected)
        head, sizes = tensor_fields(f"expected{i}.bin", expected)
        lines.append(" ".join(["output"] + head + [f"{atol:.9g}", f"{rtol:.9g}", f"{max_rmse:.9g}", basis] + sizes))
        row.update(atol=atol, rtol=rtol, max_rmse=max_rmse, basis=basis)
        described["outputs"].append(row)
    with open(os.path.join(dir, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    described["prepare_s"] = time.perf_counter() - start
    described["torch"] = torch.__version__
    print(json.dumps(described), flush=True)


# ---- time

class CheckFailure(Exception):
    pass


def median(values):
    return statistics.median(values) if values else None


MAX_CALLS = 2000  # the most timed calls min_ms adds up to (as kiln_compiled_bench's kMaxCalls)


def timed_reps(run, warmup, reps, min_ms=0):
    """Seconds of each of `reps` calls after `warmup`, and of more while they add up to less than `min_ms`."""
    for _ in range(warmup):
        run()
    times, total = [], 0.0
    while len(times) < reps or (total * 1e3 < min_ms and len(times) < MAX_CALLS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        total += times[-1]
    return times


def copy_bandwidth(mib=512, reps=10):
    """Bytes per second of torch's copy_ between two float32 tensors of `mib` MiB (read + write)."""
    src = torch.empty(mib << 18, dtype=torch.float32)
    src.fill_(1)
    dst = torch.empty_like(src)
    times = timed_reps(lambda: dst.copy_(src), 2, reps)
    return 2 * src.numel() * 4 / statistics.median(times), times


def fresh_inductor_cache():
    """A context with an empty Inductor cache directory and Inductor's in-memory caches cleared."""
    import torch._inductor.utils as inductor_utils
    return (getattr(inductor_utils, "fresh_cache", None) or inductor_utils.fresh_inductor_cache)()


def measure(dir, reps, warmup, check_only, first, settle_ms=0, min_ms=0):
    """One workload's measurements (a JSON-able dict); `first`: its first compile is the process's first.
    Raises CheckFailure (with the row so far) when a result is outside its tolerance."""
    m = read_manifest(dir)
    name, inputs = m["workload"], m["inputs"]
    fn = WORKLOADS[name][0]
    row = {"side": "torch", "workload": name, "scale": m["scale"], "torch": torch.__version__,
           "threads": torch.get_num_threads(), "first_in_process": first, "first_compile_s": None,
           "check_failed": None, "checks": []}

    def check(result, outputs):
        outputs = as_list(outputs)
        if len(outputs) != len(m["outputs"]):
            raise CheckFailure(f"{name} (scale {m['scale']}): {result} returned {len(outputs)} outputs, "
                               f"{len(m['outputs'])} expected")
        for i, (got, want) in enumerate(zip(outputs, m["outputs"])):
            ok, problem, max_abs, max_rel, rmse = compare(got, want["tensor"], want["atol"], want["rtol"],
                                                          want["max_rmse"])
            row["checks"].append({"result": result, "output": i, "ok": ok, "max_abs_err": max_abs,
                                  "max_rel_err": max_rel, "rmse": rmse})
            if not ok:
                raise CheckFailure(
                    f"{name} (scale {m['scale']}): {result}, output {i} ({DTYPE_NAMES.get(got.dtype, got.dtype)}"
                    f"{list(got.shape)}): max abs err {max_abs:.3g}, max rel err {max_rel:.3g}, RMSE {rmse:.3g}; "
                    f"tolerance atol {want['atol']:.3g} rtol {want['rtol']:.3g}"
                    + (f" RMSE {want['max_rmse']:.3g}" if want["max_rmse"] >= 0 else "")
                    + f" against {want['basis']}; {problem}")

    def first_call(what):
        compiled = torch.compile(fn)
        start = time.perf_counter()
        outputs = compiled(*inputs)
        seconds = time.perf_counter() - start
        check(what, outputs)
        return compiled, seconds

    try:
        with torch.no_grad():
            if first or check_only:
                _, seconds = first_call("torch.compile (first compile in process)" if first else "torch.compile")
                if first:
                    row["first_compile_s"] = seconds
            if not check_only:
                torch._dynamo.reset()
                with fresh_inductor_cache():
                    compiled, row["cold_compile_s"] = first_call("torch.compile (later cold compile)")
                    os.sync()  # as kiln_compiled_bench: the compile's files are written back before timing
                    time.sleep(settle_ms / 1e3)
                    check("torch eager", fn(*inputs))
                    row["eager_times_s"] = timed_reps(lambda: fn(*inputs), warmup, reps, min_ms)
                    row["compiled_times_s"] = timed_reps(lambda: compiled(*inputs), warmup, reps, min_ms)
                row["eager_s"] = median(row["eager_times_s"])
                row["compiled_s"] = median(row["compiled_times_s"])
            else:
                check("torch eager", fn(*inputs))
    except CheckFailure as e:  # the comparisons made are reported too (nothing of this workload was timed)
        row["check_failed"] = str(e)
        print(f"CHECK FAILED: {e}", file=sys.stderr)
    return row


def time_process(dirs, reps, warmup, check_only, settle_ms=0, min_ms=0):
    """Measures each workload in turn (stopping at one that fails its check), then the copy bandwidth;
    prints one JSON object per workload measured. Returns the exit status (3: a check failed)."""
    rows = []
    for dir in dirs:
        rows.append(measure(dir, reps, warmup, check_only, first=not rows, settle_ms=settle_ms, min_ms=min_ms))
        if rows[-1]["check_failed"]:
            break
    copy, copy_times = (None, [])
    if not check_only and not rows[-1]["check_failed"]:
        copy, copy_times = copy_bandwidth()
    for row in rows:
        row["copy_GBps"] = copy / 1e9 if copy else None
        row["copy_times_s"] = copy_times
        print(json.dumps(row), flush=True)
    return 3 if rows[-1]["check_failed"] else 0


def main():
    assert sys.byteorder == "little", "the raw files are little-endian"
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--workload", required=True, choices=list(WORKLOADS), action="append",
                      help="repeat --workload, --scale and --dir together to prepare several in one process")
    prep.add_argument("--scale", type=int, required=True, action="append")
    prep.add_argument("--dir", required=True, action="append")
    timing = sub.add_parser("time")
    timing.add_argument("--dir", required=True, action="append", help="a prepared workload (repeat for more)")
    timing.add_argument("--reps", type=int, default=10)
    timing.add_argument("--warmup", type=int, default=2)
    timing.add_argument("--settle-ms", type=int, default=0, help="a pause after each cold compile, before timing")
    timing.add_argument("--min-ms", type=float, default=0,
                        help=f"timed calls go on past --reps while they add up to less (at most {MAX_CALLS} calls)")
    timing.add_argument("--check-only", action="store_true")
    a = p.parse_args()
    try:
        if a.command == "prepare":
            if not len(a.workload) == len(a.scale) == len(a.dir):
                p.error("prepare: give --workload, --scale and --dir the same number of times")
            for name, scale, dir in zip(a.workload, a.scale, a.dir):
                prepare(name, scale, dir)
        else:
            status = time_process(a.dir, a.reps, a.warmup, a.check_only, a.settle_ms, a.min_ms)
    finally:
        if _FIRST_CACHE_DIR:
            shutil.rmtree(_FIRST_CACHE_DIR, ignore_errors=True)
    sys.exit(status if a.command == "time" else 0)


if __name__ == "__main__":
    main()

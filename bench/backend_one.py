#!/usr/bin/env python3
"""One process of the backend benchmark (bench/run_backend.py): models of the zoo
(tests/models/export_models.py's SPECS), each under PyTorch eager, torch.compile() (Inductor) and
torch.compile(backend="kiln"), in the order given, same threads, same inputs. Prints one JSON line
per model.

Every compiled result is checked against eager PyTorch (its error bound is 4x float32 eager's error
against a float64 run of the model, at least 1e-4 relative) before its times count; a mismatch exits
non-zero. Compiles are cold: the process starts with empty Inductor and kiln caches (temporary
directories). Each compiler's one-time start-up in the process (Dynamo's, then Inductor's and kiln's:
imports, worker pools) is paid first by compiling a small function, and reported apart
(`startup_s`), so that `first_s` — a model's first call: capture, AOT autograd, compilation, one run —
is that model's compile.
"""
import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True, help="comma-separated names of SPECS")
    ap.add_argument("--order", default="eager,inductor,kiln")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor_cache_")
    os.environ["KILN_CACHE_DIR"] = tempfile.mkdtemp(prefix="kiln_cache_")
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch

    torch.set_num_threads(a.threads)
    sys.path.insert(0, str(REPO / "tests" / "models"))
    import export_models

    def flat(out):
        if isinstance(out, torch.Tensor):
            return [out]
        if isinstance(out, dict) or hasattr(out, "values"):
            return [t for t in out.values() if isinstance(t, torch.Tensor)]
        return [t for t in out if isinstance(t, torch.Tensor)]

    def compiled(name, fn):
        return fn if name == "eager" else torch.compile(fn) if name == "inductor" else torch.compile(fn, backend="kiln")

    # One-time start-up of each compiler in this process, on a function no model shares.
    startup = {}
    x = torch.randn(3, 5)
    for name in ["eager_dynamo"] + [n for n in a.order.split(",") if n != "eager"]:
        start = time.perf_counter()
        fn = torch.compile(lambda t: torch.sin(t) * 3 + 1, backend="eager") if name == "eager_dynamo" else compiled(
            name, lambda t: torch.cos(t) * 2 - 1)
        fn(x)
        startup[name] = time.perf_counter() - start

    for model_name in a.models.split(","):
        spec = next(s for s in export_models.SPECS if s.name == model_name)
        torch.manual_seed(0)
        model, inputs = spec.build()
        model.eval()
        with torch.no_grad():
            reference = flat(model(*inputs))
            model64 = copy.deepcopy(model).double()
            exact = flat(model64(*[t.double() if t.is_floating_point() else t for t in inputs]))
        bounds = [max(1e-4, 4 * (r.double() - e).abs().max().item()) for r, e in zip(reference, exact)]
        result = {"model": model_name, "torch": torch.__version__, "threads": torch.get_num_threads(),
                  "order": a.order, "startup_s": startup}
        for name in a.order.split(","):
            fn = compiled(name, model)
            with torch.no_grad():
                start = time.perf_counter()
                out = flat(fn(*inputs))
                first = time.perf_counter() - start
                for got, want, bound in zip(out, reference, bounds):
                    err = (got.double() - want.double()).abs().max().item()
                    scale = max(1.0, want.double().abs().max().item())
                    if not err <= bound * scale:
                        print(f"{model_name} {name}: max error {err:.3g} exceeds {bound * scale:.3g}", file=sys.stderr)
                        sys.exit(1)
                for _ in range(a.warmup):
                    fn(*inputs)
                times = []
                for _ in range(a.reps):
                    start = time.perf_counter()
                    fn(*inputs)
                    times.append((time.perf_counter() - start) * 1e3)
            result[name] = {"first_s": first, "median_ms": statistics.median(times), "min_ms": min(times),
                            "max_ms": max(times)}
            if name == "kiln":
                import kiln.backend

                result[name]["fallback_ops"] = dict(kiln.backend.stats["fallback_ops"])
                kiln.backend.reset_stats()
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

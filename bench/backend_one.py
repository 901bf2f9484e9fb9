#!/usr/bin/env python3
"""One process of the backend benchmark (bench/run_backend.py): one model of the zoo
(tests/models/export_models.py's SPECS) under PyTorch eager, torch.compile() (Inductor) and
torch.compile(backend="kiln"), in the order given, same threads, same inputs. Prints one JSON line.

Every compiled result is checked against eager PyTorch (float64 error bound as the model fixtures
derive it, at least 1e-4 relative) before its times count; a mismatch exits non-zero. Each compiler
starts cold: fresh Inductor and kiln caches (temporary directories), and Dynamo's own one-time set-up
is paid first by a throwaway compile with backend="eager", so that neither compiler's first-call time
carries it. `first_s` is the first call (capture, AOT autograd, compilation, one run).
"""
import argparse
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
    ap.add_argument("--model", required=True)
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

    spec = next(s for s in export_models.SPECS if s.name == a.model)
    torch.manual_seed(0)
    model, inputs = spec.build()
    model.eval()

    def flat(out):
        if isinstance(out, torch.Tensor):
            return [out]
        if isinstance(out, dict) or hasattr(out, "values"):
            return [t for t in out.values() if isinstance(t, torch.Tensor)]
        return [t for t in out if isinstance(t, torch.Tensor)]

    with torch.no_grad():
        reference = flat(model(*inputs))
        model64 = __import__("copy").deepcopy(model).double()
        exact = flat(model64(*[t.double() if t.is_floating_point() else t for t in inputs]))
    bounds = [max(1e-4, 4 * (r.double() - e).abs().max().item()) for r, e in zip(reference, exact)]

    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))  # Dynamo's one-time set-up
    result = {"model": a.model, "torch": torch.__version__, "threads": torch.get_num_threads(), "order": a.order}
    for name in a.order.split(","):
        if name == "eager":
            fn = model
        elif name == "inductor":
            fn = torch.compile(model)
        else:
            fn = torch.compile(model, backend="kiln")
        with torch.no_grad():
            start = time.perf_counter()
            out = flat(fn(*inputs))
            first = time.perf_counter() - start
            for got, want, bound in zip(out, reference, bounds):
                err = (got.double() - want.double()).abs().max().item()
                scale = max(1.0, want.double().abs().max().item())
                if not err <= bound * scale:
                    print(f"{a.model} {name}: max error {err:.3g} exceeds {bound * scale:.3g}", file=sys.stderr)
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
    print(json.dumps(result))


if __name__ == "__main__":
    main()

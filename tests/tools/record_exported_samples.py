"""Records PyTorch's OpInfo and module_db samples as exported programs, for kiln's replay of them.

Each OpInfo of PyTorch's op_db (torch.testing._internal.common_methods_invocations) that runs on the
CPU in float32 (else int64, else bool) gives its first samples; each sample becomes a module whose
forward calls the op on the sample's tensors (the other arguments are constants), exported with
`torch.export.export` as a user would (the default IR, composite ops kept) and again after
`run_decompositions()`. Recorded in DIR: `<k>.pt2`, `<k>_core.pt2`, `<k>/input_<i>.npy`,
`<k>/output_<i>.npy` (PyTorch's eager result), `<k>/strides.txt` (the strides of PyTorch's outputs,
a line each), `<k>/ref_<i>.npy` (the same call with the float tensors in float64, where a float
input is narrower: the reference PyTorch's own float32 result is judged by) and `index.tsv` (k,
OpInfo name, variant, input and output counts, and `values`, or `metadata` where PyTorch leaves the
values undefined: the empty family and random draws).

With `--modules`, the samples are PyTorch's module_db's instead (torch.testing._internal.common_modules):
each module built with its sample's constructor arguments, in eval mode, exported on its forward
inputs (weights in the archive), its outputs flattened.

The recordings are committed, compressed (tests/data/exported_samples/, made by
scripts/record_exported_samples.sh), and replayed by `kiln_exported_samples_test`
(tests/exported/, docs/opinfo_replay.md); `--check-stamp` fails when they were made by another
version of this script or of PyTorch.

Usage: python tests/tools/record_exported_samples.py --out DIR [--modules] [--samples N] [--only NAME]...
       python tests/tools/record_exported_samples.py --stamp | --check-stamp FILE
"""
import argparse
import collections
import copy
import hashlib
import os
import sys
import warnings

import numpy as np
import torch

DTYPES = [torch.float32, torch.int64, torch.bool]


class Sample(torch.nn.Module):
    """Calls `fn` with the sample's arguments, its tensors taken from forward's inputs."""

    def __init__(self, fn, args, kwargs):
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def forward(self, *tensors):
        it = iter(tensors)
        args = [next(it) if isinstance(a, torch.Tensor) else a for a in self.args]
        return self.fn(*args, **self.kwargs)


def flat_tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in out):
        return list(out)
    return None


def float64_reference(module, tensors, eager):
    """The call with its float32/float16 tensors in float64, where it has one and PyTorch runs it
    with outputs of the eager ones' sizes; None otherwise."""
    if not any(t.dtype in (torch.float32, torch.float16) for t in tensors):
        return None
    wide = tuple(t.double() if t.dtype in (torch.float32, torch.float16) else t for t in tensors)
    try:
        wide_module = copy.deepcopy(module).double()  # a module's parameters too
        with torch.no_grad():
            ref = flat_tensors(wide_module(*wide))
    except Exception:  # noqa: BLE001
        return None
    if ref is None or len(ref) != len(eager) or any(r.shape != e.shape for r, e in zip(ref, eager)):
        return None
    return ref


def numpy_holds(eager):
    """Whether the eager outputs are tensors a .npy file holds (dense, real, no bfloat16)."""
    return bool(eager) and not any(t.layout != torch.strided or t.dtype in (torch.bfloat16, torch.complex32) or
                                   t.is_complex() or t.is_quantized for t in eager)


# OpInfos whose values PyTorch does not determine: uninitialized memory (the empty family) or random
# draws. Their replay compares dtypes and sizes only.
VALUES_UNDEFINED = {
    "empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided", "resize_",
    "resize_as_", "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal",
    "normal.in_place", "normal.number_mean", "uniform", "rand_like", "randn", "randn_like", "randint",
    "randint_like", "nn.functional.alpha_dropout", "nn.functional.dropout", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.feature_alpha_dropout.with_train", "nn.functional.rrelu",
}


def write_index(out_dir, index):
    with open(os.path.join(out_dir, "index.tsv"), "w") as f:
        for row in index:
            f.write("\t".join(str(c) for c in row) + "\n")


def save_sample(out_dir, index, module, tensors, eager, skipped, name, variant):
    """Exports `module` on `tensors` (the default IR and after run_decompositions()) and saves both
    with the inputs, PyTorch's outputs and the float64 reference; False where PyTorch cannot."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = torch.export.export(module, tensors, strict=False)
            core = ep.run_decompositions()
    except Exception:  # noqa: BLE001
        skipped["torch.export failed"] += 1
        return False
    k = f"{len(index):05d}"
    try:
        torch.export.save(ep, os.path.join(out_dir, f"{k}.pt2"))
        torch.export.save(core, os.path.join(out_dir, f"{k}_core.pt2"))
    except Exception:  # noqa: BLE001
        skipped["torch.export.save failed"] += 1
        return False
    os.makedirs(os.path.join(out_dir, k), exist_ok=True)
    for i, t in enumerate(tensors):
        np.save(os.path.join(out_dir, k, f"input_{i}.npy"), t.contiguous().numpy())
    for i, t in enumerate(eager):
        np.save(os.path.join(out_dir, k, f"output_{i}.npy"), t.contiguous().numpy())
    with open(os.path.join(out_dir, k, "strides.txt"), "w") as f:  # PyTorch's layouts, a line per output
        f.writelines(" ".join(str(s) for s in t.stride()) + "\n" for t in eager)
    for i, t in enumerate(float64_reference(module, tensors, eager) or []):
        np.save(os.path.join(out_dir, k, f"ref_{i}.npy"), t.contiguous().numpy())
    values = "metadata" if (name + ("." + variant if variant else "")) in VALUES_UNDEFINED else "values"
    index.append((k, name, variant, len(tensors), len(eager), values))
    return True


class ModuleCall(torch.nn.Module):
    """Calls `module` with the sample's forward arguments, its tensors taken from forward's inputs;
    the outputs flattened (an LSTM's (out, (h, c)) is three tensors)."""

    def __init__(self, module, args, kwargs):
        super().__init__()
        self.module, self.args, self.kwargs = module, args, kwargs

    def forward(self, *tensors):
        it = iter(tensors)
        args = [next(it) if isinstance(a, torch.Tensor) else a for a in self.args]
        return tuple(torch.utils._pytree.tree_leaves(self.module(*args, **self.kwargs)))


def record_modules(out_dir, samples_per_module, only):
    """PyTorch's module_db samples (torch.testing._internal.common_modules), each module in eval mode
    with its constructor's arguments, exported on its forward inputs as a user would."""
    from torch.testing._internal.common_modules import module_db
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    index = []
    skipped = collections.Counter()
    for info in module_db:
        if only and info.name not in only:
            continue
        if torch.float32 not in info.dtypes:
            skipped["no float32"] += 1
            continue
        try:
            inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=False,
                                             training=False)
        except Exception:  # noqa: BLE001
            skipped["sample generator failed"] += 1
            continue
        for mi in inputs[:samples_per_module]:
            if mi.forward_input is None:
                continue
            c, f = mi.constructor_input, mi.forward_input
            args = list(f.args)
            if any(isinstance(a, torch.Tensor) and (a.layout != torch.strided or a.is_quantized) for a in args):
                skipped["inputs not dense strided tensors"] += 1
                continue
            if any(isinstance(a, (list, tuple)) for a in args) or any(isinstance(v, torch.Tensor)
                                                                       for v in f.kwargs.values()):
                skipped["tensor lists or tensor keyword arguments"] += 1
                continue
            try:
                module = ModuleCall(info.module_cls(*c.args, **c.kwargs).eval(), args, f.kwargs)
                tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
                with torch.no_grad():
                    eager = flat_tensors(module(*tensors))
            except Exception:  # noqa: BLE001
                skipped["PyTorch raised"] += 1
                continue
            if not numpy_holds(eager):
                skipped["outputs not tensors numpy holds"] += 1
                continue
            save_sample(out_dir, index, module, tensors, eager, skipped, info.name, "")
    write_index(out_dir, index)
    print(f"recorded {len(index)} samples of {len({r[1] for r in index})} modules; skipped: {dict(skipped)}")


def record(out_dir, samples_per_op, only):
    from torch.testing._internal.common_methods_invocations import op_db
    os.makedirs(out_dir, exist_ok=True)
    index = []
    skipped = collections.Counter()
    for info in op_db:
        if only and info.name not in only:
            continue
        dtype = next((d for d in DTYPES if d in info.supported_dtypes("cpu")), None)
        if dtype is None:
            skipped["no float32, int64 or bool on the CPU"] += 1
            continue
        try:
            samples = list(info.sample_inputs("cpu", dtype, requires_grad=False))[:samples_per_op]
        except Exception:  # noqa: BLE001 - a sample generator that fails is PyTorch's
            skipped["sample generator failed"] += 1
            continue
        for j, s in enumerate(samples):
            args = [s.input, *s.args]
            if any(isinstance(a, torch.Tensor) and (a.layout != torch.strided or a.is_quantized) for a in args):
                skipped["inputs not dense strided tensors"] += 1
                continue
            if any(isinstance(a, (list, tuple)) and any(isinstance(t, torch.Tensor) for t in a) for a in args):
                skipped["tensor lists as arguments"] += 1
                continue
            if any(isinstance(v, torch.Tensor) for v in s.kwargs.values()):
                skipped["tensors as keyword arguments"] += 1
                continue
            module = Sample(info.op, args, s.kwargs)
            tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
            try:
                with torch.no_grad():
                    eager = flat_tensors(module(*tensors))
            except Exception:  # noqa: BLE001
                skipped["PyTorch raised"] += 1
                continue
            if not numpy_holds(eager):
                skipped["outputs not tensors numpy holds"] += 1
                continue
            save_sample(out_dir, index, module, tensors, eager, skipped, info.name, info.variant_test_name)
    write_index(out_dir, index)
    print(f"recorded {len(index)} samples of {len({r[1] for r in index})} OpInfos; skipped: {dict(skipped)}")


def stamp():
    """What the committed recording was made by: this script's SHA-256 and PyTorch's version."""
    with open(__file__, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return f"{digest} torch {torch.__version__}"


def check_stamp(path):
    with open(path) as f:
        recorded = f.read().strip()
    if recorded != stamp():
        print(f"{path}: the exported samples were recorded by another recorder or PyTorch ({recorded}; now "
              f"{stamp()}): record them again with scripts/record_exported_samples.sh", file=sys.stderr)
        return 1
    print(f"{path} is current")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--only", action="append")
    parser.add_argument("--stamp", action="store_true", help="print what a recording is stamped with")
    parser.add_argument("--check-stamp", metavar="FILE", help="whether FILE's stamp is this recorder's and PyTorch's")
    parser.add_argument("--modules", action="store_true", help="record module_db's samples, not op_db's")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.stamp:
        print(stamp())
    elif args.check_stamp:
        return check_stamp(args.check_stamp)
    elif args.modules:
        record_modules(args.out, args.samples, set(args.only or []))
    else:
        record(args.out, args.samples, set(args.only or []))


if __name__ == "__main__":
    sys.exit(main())

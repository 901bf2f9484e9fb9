"""Records PyTorch's own test samples as calls of Core ATen overloads, for kiln's replay test.

Walks PyTorch's OpInfo database (torch.testing._internal.common_methods_invocations.op_db): for each
OpInfo, each dtype kiln has that the OpInfo supports on the CPU, and its first samples, runs the op
under a TorchDispatchMode that applies PyTorch's Core ATen decompositions and records every call of an
overload in tests/data/core_aten_ops.tsv: its arguments (tensors with dtype, sizes, strides and storage
offset, so non-contiguous and overlapping inputs stay so) and PyTorch's outputs, or the error PyTorch
raised. Calls are capped per overload and deduplicated, so the replay stays fast.

Usage: python tests/tools/record_opinfo.py --out DIR [--per-overload N] [--samples N]
Writes DIR/calls.txt (the index) and DIR/data.bin (tensor bytes), and DIR/derivatives.txt (the backward
ops of each overload's derivative: derivatives.py); docs/opinfo_replay.md is the format.
Run with the pinned PyTorch of scripts/requirements.txt (.venv/bin/python); make test does.
"""
import argparse
import itertools
import math
import os
import sys
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derivatives import DerivativeProbe  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

DTYPES = {
    torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
    torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
    torch.float64: "float64", torch.complex64: "complex64", torch.complex128: "complex128",
}
# kiln's complex tensors are storage only (docs/dtypes.md): calls with a complex tensor or dtype are
# recorded for these overloads only; for every other overload such a call is skipped, as before.
COMPLEX_OVERLOADS = {"aten::_fft_r2c", "aten::_fft_c2r"}
# The dtypes samples are drawn in (others only where an op's outputs or arguments have them).
SAMPLE_DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.bfloat16, torch.float16,
                 torch.uint8]
# Ops whose values are random: recorded for their sizes and dtypes only (the replay checks those).
# Overloads allowed more calls than --per-overload: their targeted samples (kernel_samples) come
# after the OpInfo ones and would otherwise find the cap reached.
EXTRA_CALLS = {"aten::grid_sampler_2d": 80, "aten::col2im": 10, "aten::_embedding_bag": 60, "aten::convolution": 60,
               "aten::convolution_backward": 60, "aten::native_layer_norm_backward": 40,
               "aten::native_group_norm_backward": 40, "aten::embedding_dense_backward": 20,
               "aten::avg_pool2d_backward": 30, "aten::_adaptive_avg_pool2d_backward": 20,
               "aten::_fft_r2c": 30, "aten::_fft_c2r": 30}
RANDOM = {"aten::native_dropout", "aten::rand", "aten::randn", "aten::randperm", "aten::bernoulli.p",
          "aten::bernoulli", "aten::normal.Tensor_float", "aten::uniform"}


def core_overloads():
    names = set()
    with open(os.path.join(REPO, "tests", "data", "core_aten_ops.tsv")) as f:
        next(f)
        for line in f:
            names.add("aten::" + line.split("\t")[0])
    return names


class Unsupported(Exception):
    """An argument the format has no spelling for (complex, a SymInt, a sparse tensor, ...)."""


class Writer:
    def __init__(self, out_dir):
        self.index = open(os.path.join(out_dir, "calls.txt"), "w")
        self.data = open(os.path.join(out_dir, "data.bin"), "wb")
        self.offset = 0
        self.allow_complex = False  # set per call: may its tensors and dtypes be complex?
        self.index.write("kiln-opinfo-recording 1\n")

    def tensor(self, t, lines):
        """Appends t's whole storage (as_strided may reach past its elements); returns the token naming it."""
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.device.type != "cpu":
            raise Unsupported(f"tensor {type(t).__name__}")
        if t.dtype not in DTYPES or t.is_neg() or t.is_conj() or (t.dtype.is_complex and not self.allow_complex):
            raise Unsupported(f"dtype {t.dtype}")
        if any(s < 0 for s in t.stride()):
            raise Unsupported("negative stride")
        storage = t.detach().untyped_storage()
        raw = bytes(storage) if storage.nbytes() else b""
        self.data.write(raw)
        token = "T%d" % len(lines)
        lines.append("tensor %s %s [%s] [%s] %d %d %d" % (
            token, DTYPES[t.dtype], ",".join(map(str, t.shape)), ",".join(map(str, t.stride())), t.storage_offset(),
            self.offset, len(raw)))
        self.offset += len(raw)
        return token

    def value(self, v, lines):
        if v is None:
            return "none"
        if isinstance(v, torch.Tensor):
            return self.tensor(v, lines)
        if isinstance(v, bool):
            return "b:%d" % v
        if isinstance(v, int):
            return "i:%d" % v
        if isinstance(v, float):
            return "f:" + v.hex() if math.isfinite(v) else "f:" + repr(v)
        if isinstance(v, (list, tuple)):
            return "[" + ",".join(self.value(x, lines) for x in v) + "]"
        if isinstance(v, torch.dtype):
            if v not in DTYPES or (v.is_complex and not self.allow_complex):
                raise Unsupported(f"dtype {v}")
            return "dtype:" + DTYPES[v]
        if isinstance(v, torch.device):
            return "device:" + v.type
        if isinstance(v, torch.layout):
            return "layout:" + str(v).split(".")[-1]
        if isinstance(v, torch.memory_format):
            return "memory_format:" + str(v).split(".")[-1]
        if isinstance(v, str):
            if any(c in v for c in " \n,[]="):
                raise Unsupported("string with separators")
            return "s:" + v
        raise Unsupported(type(v).__name__)

    def call(self, name, source, args, kwargs, out, error, ref=None):
        self.allow_complex = name in COMPLEX_OVERLOADS
        lines = []
        tokens = [self.value(a, lines) for a in args]
        tokens += ["%s=%s" % (k, self.value(v, lines)) for k, v in kwargs.items()]
        if error is None:
            # A tuple is several returns; a list is one Tensor[] return.
            outs = self.value(list(out) if isinstance(out, tuple) else [out], lines)
        if ref is not None:
            refs = self.value(list(ref) if isinstance(ref, tuple) else [ref], lines)
        self.index.write("call %s %s\n" % (name, source))
        for line in lines:
            self.index.write("  " + line + "\n")
        self.index.write("  args " + " ".join(tokens) + "\n")
        if error is None:
            self.index.write("  out " + outs + "\n")
            if ref is not None:
                self.index.write("  ref " + refs + "\n")
        else:
            self.index.write("  raises " + " ".join(error.split())[:200] + "\n")
        self.index.write("end\n")


def signature(args, kwargs):
    """What makes two calls the same for deduplication: dtypes, sizes, strides and the scalars."""
    def sig(v):
        if isinstance(v, torch.Tensor):
            return ("T", v.dtype, tuple(v.shape), tuple(v.stride()), v.storage_offset())
        if isinstance(v, (list, tuple)):
            return tuple(sig(x) for x in v)
        if isinstance(v, float) and math.isnan(v):
            return "nan"
        return v
    return (sig(list(args)), tuple(sorted((k, sig(v)) for k, v in kwargs.items())))


def float64_reference(func, name, args, kwargs, out):
    """The call again with every floating tensor argument in float64, its floating outputs rounded to
    PyTorch's output dtypes: what the replay accepts where PyTorch's own low-precision kernel is less
    accurate. None where there is no 16- or 32-bit floating tensor, or the float64 call fails."""
    flat, _ = torch.utils._pytree.tree_flatten((args, kwargs))
    narrow = {torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64,
              torch.complex64: torch.complex128}
    if not any(isinstance(t, torch.Tensor) and t.dtype in narrow for t in flat):
        return None
    if name.startswith("aten::empty") or name == "aten::resize_":
        return None
    wide = lambda v: v.to(narrow[v.dtype]) if isinstance(v, torch.Tensor) and v.dtype in narrow else v
    try:
        a, k = torch.utils._pytree.tree_map(wide, (args, kwargs))
        ref = func(*a, **k)
        got = list(out) if isinstance(out, (tuple, list)) else [out]
        ref_flat = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        if len(got) != len(ref_flat):
            return None
        rounded = []
        for g, r in zip(got, ref_flat):
            if g is None and r is None:  # an undefined result (a backward's masked-off output)
                rounded.append(None)
            elif isinstance(g, torch.Tensor) and isinstance(r, torch.Tensor) and g.shape == r.shape:
                rounded.append(r.to(g.dtype) if g.dtype.is_floating_point or g.dtype.is_complex else g)
            else:
                return None
        return tuple(rounded) if isinstance(out, tuple) else (rounded if isinstance(out, list) else rounded[0])
    except Exception:
        return None


class CoreAtenMode(TorchDispatchMode):
    """Runs code with PyTorch's Core ATen decompositions applied to every op that is not Core ATen,
    so what reaches core_call is Core ATen wherever PyTorch can make it so. Subclasses see each call
    of a Core ATen overload in core_call (python/tests/test_ops.py uses it to learn which overloads an
    OpInfo sample reaches)."""

    def __init__(self, core=None, decompositions=None):
        super().__init__()
        if decompositions is None:
            from torch._decomp import core_aten_decompositions
            decompositions = core_aten_decompositions()
        self.core = core_overloads() if core is None else core
        # A plain dict: PyTorch 2.13's table (CustomDecompTable) fills itself on first [] or `in`,
        # and its .get() answers None until then, so no decomposition would ever run.
        self.decompositions = dict(decompositions)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.name()
        self.any_call(func, name, args, kwargs)
        if name not in self.core:
            decomposition = self.decompositions.get(func)
            if decomposition is not None:
                with self:
                    return decomposition(*args, **kwargs)
            return func(*args, **kwargs)
        return self.core_call(func, name, args, kwargs)

    def any_call(self, func, name, args, kwargs):
        """Sees every call, Core ATen or not, before it is decomposed or run."""

    def core_call(self, func, name, args, kwargs):
        return func(*args, **kwargs)


def opinfo_samples(dtypes=SAMPLE_DTYPES, samples=4, errors=None, generate_all=True, only=None, seed=None):
    """The OpInfo samples the recording is made from: (OpInfo, dtype, sample number, SampleInput) for
    each OpInfo of op_db, each of `dtypes` it supports on the CPU, and its first `samples` samples.
    A sample generator that raises is skipped (counted in errors[0] when errors is a list).
    The recording uses the defaults; python/tests/test_ops.py passes the others:
    generate_all=False stops each generator after `samples` (the recording generates every sample and
    keeps the first, so its random values depend on that; stopping is several times faster, as some
    OpInfos generate hundreds); `only`, a set of (opinfo_name(info), dtype), generates those only;
    seed(info, dtype), an int, seeds PyTorch's generator before each, so a sample's values do not
    depend on which others were generated."""
    from torch.testing._internal.common_methods_invocations import op_db

    for info in op_db:
        supported = info.supported_dtypes("cpu")
        for dtype in dtypes:
            if dtype not in supported or (only is not None and (opinfo_name(info), dtype) not in only):
                continue
            if seed is not None:
                torch.manual_seed(seed(info, dtype))
            try:
                generated = info.sample_inputs("cpu", dtype, requires_grad=False)
                chosen = list(generated)[:samples] if generate_all else list(itertools.islice(generated, samples))
            except Exception:
                if errors is not None:
                    errors[0] += 1
                continue
            for k, s in enumerate(chosen):
                yield info, dtype, k, s


def opinfo_name(info):
    """An OpInfo's name with its variant, as the recording's sources spell it."""
    return info.name + ("." + info.variant_test_name if info.variant_test_name else "")


class Recorder(CoreAtenMode):
    def __init__(self, writer, core, decompositions, per_overload):
        super().__init__(core, decompositions)
        self.writer, self.per_overload = writer, per_overload
        self.count = {}
        self.seen = set()
        self.source = ""
        self.derivatives = DerivativeProbe(core, decompositions)

    def any_call(self, func, name, args, kwargs):
        if name == "aten::_embedding_bag_forward_only":
            self.also_as_embedding_bag(args, kwargs)

    def core_call(self, func, name, args, kwargs):
        key = (name, signature(args, kwargs))
        record = self.count.get(name, 0) < self.cap(name) and key not in self.seen
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            if record:
                self.record(func, name, key, args, kwargs, None, "%s: %s" % (type(e).__name__, e))
            raise
        if record:
            self.record(func, name, key, args, kwargs, out, None)
        return out

    def cap(self, name):
        return self.per_overload + EXTRA_CALLS.get(name, 0)

    def also_as_embedding_bag(self, args, kwargs):
        """F.embedding_bag calls _embedding_bag_forward_only (not Core ATen) when the weight needs no
        grad; the same arguments are recorded as a call of the Core ATen _embedding_bag."""
        func = torch.ops.aten._embedding_bag.default
        key = ("aten::_embedding_bag", signature(args, kwargs))
        if self.count.get("aten::_embedding_bag", 0) >= self.cap("aten::_embedding_bag") or key in self.seen:
            return
        try:
            out = func(*args, **kwargs)  # the mode is off inside __torch_dispatch__
        except Exception as e:
            self.record(func, "aten::_embedding_bag", key, args, kwargs, None, "%s: %s" % (type(e).__name__, e))
            return
        self.record(func, "aten::_embedding_bag", key, args, kwargs, out, None)

    def record(self, func, name, key, args, kwargs, out, error):
        try:
            self.writer.call(name, self.source, args, kwargs, out, error,
                             None if error is not None or name in RANDOM else float64_reference(func, name, args, kwargs, out))
        except Unsupported:
            return
        self.seen.add(key)
        self.count[name] = self.count.get(name, 0) + 1
        if error is None:
            self.derivatives.probe(func, name, args, kwargs)


def targeted_samples():
    """Calls of Core ATen overloads that no OpInfo sample reaches, made directly: (name, thunk)."""
    aten = torch.ops.aten
    g = torch.Generator().manual_seed(1)
    out = []

    def r(*shape, dtype=torch.float32):
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=g).to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=g).bool()
        return torch.randint(-9, 10, shape, generator=g).to(dtype)

    for dt in (torch.float32, torch.float64, torch.bfloat16):
        x = r(2, 3, 10, dtype=dt)
        x4 = r(2, 3, 6, 7, dtype=dt)
        x5 = r(1, 2, 4, 5, 6, dtype=dt)
        out += [
            ("avg_pool1d", lambda x=x: aten.avg_pool1d(x, [3], [2], [1], False, True)),
            ("avg_pool1d", lambda x=x: aten.avg_pool1d(x.transpose(1, 2).contiguous().transpose(1, 2), [4], [], [2], True, False)),
            ("adaptive_avg_pool1d", lambda x=x: aten.adaptive_avg_pool1d(x, [4])),
            ("adaptive_avg_pool1d", lambda x=x: aten.adaptive_avg_pool1d(x[0], [10])),
            ("reflection_pad2d", lambda x4=x4: aten.reflection_pad2d(x4, [2, 1, 3, -1])),
            ("reflection_pad3d", lambda x5=x5: aten.reflection_pad3d(x5, [1, 2, 0, 3, 2, 1])),
            ("replication_pad3d", lambda x5=x5: aten.replication_pad3d(x5, [3, 0, 1, 2, 4, 1])),
            ("var.dim", lambda x4=x4: aten.var.dim(x4, [1, 3], True, True)),
            ("var.dim", lambda x4=x4: aten.var.dim(x4.transpose(2, 3), None, False, False)),
            ("_native_batch_norm_legit_no_training",
             lambda x4=x4, dt=dt: aten._native_batch_norm_legit_no_training(
                 x4, r(3, dtype=dt), r(3, dtype=dt), r(3, dtype=dt), r(3, dtype=dt).abs() + 0.5, 0.1, 1e-5)),
            ("_native_batch_norm_legit.no_stats",
             lambda x4=x4, dt=dt: aten._native_batch_norm_legit.no_stats(x4, r(3, dtype=dt), None, True, 0.1, 1e-5)),
            ("copy", lambda x4=x4: aten.copy(x4, r(7, dtype=torch.float64))),
            ("copy", lambda x4=x4: aten.copy(x4.transpose(1, 3), r(7, 6, 1, 2, dtype=torch.int64))),
            ("native_dropout", lambda x4=x4: aten.native_dropout(x4, 0.3, True)),
            ("native_dropout", lambda x4=x4: aten.native_dropout(x4, 0.3, False)),
        ]
    for dt in (torch.float32, torch.int64, torch.int32, torch.bool, torch.uint8):
        x = r(4, 5, dtype=dt)
        if dt != torch.bool:
            out += [
                ("div.Scalar_mode", lambda x=x: aten.div.Scalar_mode(x, 3, rounding_mode="floor")),
                ("div.Scalar_mode", lambda x=x: aten.div.Scalar_mode(x.t(), -2.5, rounding_mode="trunc")),
                ("fmod.Scalar", lambda x=x: aten.fmod.Scalar(x, 3)),
                ("pow.Scalar", lambda x=x: aten.pow.Scalar(2, x.abs() if x.dtype != torch.uint8 else x)),
            ]
        if not dt.is_floating_point:
            out += [(op + ".Scalar", lambda x=x, op=op: getattr(aten, op).Scalar(x, 6))
                    for op in ("bitwise_and", "bitwise_or", "bitwise_xor")]
        out += [
            ("gt.Scalar", lambda x=x: aten.gt.Scalar(x, 0)),
            ("scatter.value", lambda x=x: aten.scatter.value(x, 1, torch.tensor([[0, 4], [2, 2]]), 7)),
        ]
    out += [("randperm", lambda n=n: aten.randperm(n)) for n in (0, 1, 7, 100)]
    return out


def kernel_samples():
    """Targeted calls of grid_sampler_2d, col2im and _embedding_bag: every mode combination, PyTorch's
    special paths and layouts, and the errors PyTorch raises (name, thunk)."""
    aten = torch.ops.aten
    g = torch.Generator().manual_seed(3)
    out = []

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    # grid_sampler_2d: all 3 x 3 modes, both align_corners, a grid reaching past [-1, 1].
    for dt in (torch.float32, torch.float64):
        x, grid = rn(2, 3, 5, 6, dtype=dt), (rn(2, 4, 7, 2) * 0.9).to(dt)
        for interp in range(3):
            for pad in range(3):
                for align in (False, True):
                    out.append(("grid_sampler_2d", lambda x=x, grid=grid, i=interp, p=pad, a=align:
                                aten.grid_sampler_2d(x, grid, i, p, a)))
    # Points on pixel centres and half-way between them (ties for nearest: to even), in and past range.
    ties = (torch.arange(-6, 7, dtype=torch.float32) * 0.25).repeat(13, 1)
    tie_grid = torch.stack([ties, ties.t()], dim=-1).unsqueeze(0)
    x4 = rn(1, 2, 4, 4)
    for interp in range(3):
        for pad in range(3):
            for align in (False, True):
                out.append(("grid_sampler_2d", lambda i=interp, p=pad, a=align:
                            aten.grid_sampler_2d(x4, tie_grid, i, p, a)))
    for dt in (torch.bfloat16, torch.float16):
        x, grid = rn(1, 2, 4, 5, dtype=dt), (rn(1, 3, 3, 2) * 0.8).to(dt)
        out += [("grid_sampler_2d", lambda x=x, grid=grid, i=i, p=p: aten.grid_sampler_2d(x, grid, i, p, p == 1))
                for i, p in ((0, 2), (1, 1), (2, 0), (2, 2))]
    x, grid = rn(2, 3, 5, 6), rn(2, 4, 7, 2)
    out += [
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x.to(memory_format=torch.channels_last), grid, 0, 1, False)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x.transpose(2, 3), grid.transpose(1, 2), 2, 2, True)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x[:, :0], grid, 0, 0, False)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x, grid[:, :0], 1, 0, False)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(rn(1, 1, 1, 1), grid[:1], 2, 2, True)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x[:1], grid, 0, 0, False)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x, grid[..., :1], 0, 0, False)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x[:, :, :0], grid, 0, 0, False)),
        ("grid_sampler_2d", lambda: aten.grid_sampler_2d(x, grid.double(), 0, 0, False)),
    ]
    # col2im: batched and not, padding, stride, dilation, a non-contiguous input, an empty batch.
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        out += [
            ("col2im", lambda dt=dt: aten.col2im(rn(2, 12, 6, dtype=dt), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1])),
            ("col2im", lambda dt=dt: aten.col2im(rn(18, 12, dtype=dt), [5, 6], [3, 2], [1, 2], [1, 0], [2, 1])),
        ]
    out += [
        ("col2im", lambda: aten.col2im(rn(2, 6, 20).transpose(1, 2).contiguous().transpose(1, 2),
                                       [4, 5], [1, 2], [1, 1], [0, 1], [1, 1])),
        ("col2im", lambda: aten.col2im(rn(1, 8, 4), [3, 3], [2, 2], [2, 2], [1, 1], [2, 2])),
        ("col2im", lambda: aten.col2im(rn(2, 4, 1), [1, 1], [2, 2], [1, 1], [1, 1], [3, 3])),
        ("col2im", lambda: aten.col2im(rn(0, 12, 6), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1])),
        ("col2im", lambda: aten.col2im(rn(2, 12, 7), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1])),
        ("col2im", lambda: aten.col2im(rn(2, 13, 6), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1])),
        ("col2im", lambda: aten.col2im(rn(2, 12, 6), [3, 4], [0, 2], [1, 1], [0, 0], [1, 1])),
        ("col2im", lambda: aten.col2im(rn(2, 12, 0), [3, 4], [2, 2], [1, 1], [0, 0], [1, 1])),
        ("col2im", lambda: aten.col2im(rn(2, 4, 1), [1, 1], [2, 2], [1, 1], [0, 0], [1, 1])),
    ]
    # _embedding_bag: 3 modes x include_last_offset x padding_idx, empty bags, trailing indices.
    idx, offs = torch.tensor([0, 2, 1, 5, 5, 3, 4]), torch.tensor([0, 2, 2, 5])
    for dt in (torch.float32, torch.float64, torch.bfloat16):
        w = rn(6, 3, dtype=dt)
        for mode in range(3):
            for last in (False, True):
                for pad in (-1, 5):
                    out.append(("_embedding_bag", lambda w=w, m=mode, l=last, p=pad:
                                aten._embedding_bag(w, idx, offs, False, m, False, None, l, p)))
    w = rn(6, 3)
    psw = rn(7)
    out += [
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, offs, False, 0, False, psw, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, offs, False, 0, False, rn(14)[::2], True, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, offs, False, 0, False, psw, False, 2)),
        ("_embedding_bag", lambda: aten._embedding_bag(w.t().contiguous().t(), idx, offs, False, 0, False, None,
                                                       False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx.int(), offs.int(), False, 2, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx.int(), offs, False, 1, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w.half(), idx, offs, False, 1, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, torch.tensor([1, 2, 0, 3]), torch.tensor([0, 1, 3]),
                                                       False, 1, False, None, True, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx[:0], torch.tensor([0, 0]), False, 2, False, None,
                                                       False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, torch.tensor([[0, 1], [2, 3]]), torch.tensor([0, 1]),
                                                       False, 0, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, torch.tensor([4, 6]), torch.tensor([0]), False, 0, False,
                                                       None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, torch.tensor([4, -1]), torch.tensor([0]), False, 2, False,
                                                       None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, torch.tensor([1, 3]), False, 0, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, torch.tensor([0, 9]), False, 2, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, torch.tensor([0, 4, 1]), False, 0, False, None, False,
                                                       -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, offs, False, 1, False, psw, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, offs, False, 0, False, psw[:3], False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx.float(), offs, False, 0, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w.long(), idx, offs, False, 0, False, None, False, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w, idx, offs[:0], False, 0, False, None, True, -1)),
        ("_embedding_bag", lambda: aten._embedding_bag(w[0], idx, offs, False, 0, False, None, False, -1)),
    ]
    return out


def backward_samples():
    """Calls of the backward ops no OpInfo sample reaches (they run only in a backward pass), with
    the saved statistics of a real forward: every output_mask, float32/float64/bfloat16,
    non-contiguous and channels-last inputs, and the errors PyTorch raises (name, thunk)."""
    aten = torch.ops.aten
    g = torch.Generator().manual_seed(4)
    out = []
    masks = [[a, b, c] for a in (False, True) for b in (False, True) for c in (False, True)]

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    for dt in (torch.float32, torch.float64, torch.bfloat16):
        # native_layer_norm_backward over the last two dims, then variants.
        x, w, b = rn(2, 3, 4, 5, dtype=dt), rn(4, 5, dtype=dt), rn(4, 5, dtype=dt)
        _, mean, rstd = aten.native_layer_norm(x, [4, 5], w, b, 1e-5)
        dy = rn(2, 3, 4, 5, dtype=dt)
        out += [("native_layer_norm_backward", lambda x=x, w=w, b=b, m=mean, r=rstd, dy=dy, mk=mk:
                 aten.native_layer_norm_backward(dy, x, [4, 5], m, r, w, b, mk)) for mk in masks]
        for xv, shape in ((x.transpose(0, 1), [5]), (x.to(memory_format=torch.channels_last), [3, 4, 5]),
                          (x[:, :, ::2], [5]), (x[:0], [4, 5])):
            wv, bv = rn(*shape, dtype=dt), rn(*shape, dtype=dt)
            _, m, r = aten.native_layer_norm(xv, shape, wv, bv, 1e-5)
            dyv = rn(*xv.shape, dtype=dt)
            out.append(("native_layer_norm_backward", lambda xv=xv, s=shape, wv=wv, bv=bv, m=m, r=r, dyv=dyv:
                        aten.native_layer_norm_backward(dyv, xv, s, m, r, wv, bv, [True, True, True])))
        _, m1, r1 = aten.native_layer_norm(x, [5], None, None, 1e-5)
        out += [
            ("native_layer_norm_backward", lambda x=x, m=m1, r=r1, dy=dy:
             aten.native_layer_norm_backward(dy.transpose(2, 3).contiguous().transpose(2, 3), x, [5], m, r, None,
                                             None, [True, False, False])),
            ("native_layer_norm_backward", lambda x=x, w=w, m=mean, r=rstd, dy=dy:
             aten.native_layer_norm_backward(dy, x, [4, 5], m, r, w, None, [True, True, False])),
        ]
        # native_group_norm_backward: 6 channels in 3 groups.
        x, w, b = rn(2, 6, 3, 4, dtype=dt), rn(6, dtype=dt), rn(6, dtype=dt)
        _, mean, rstd = aten.native_group_norm(x, w, b, 2, 6, 12, 3, 1e-5)
        dy = rn(2, 6, 3, 4, dtype=dt)
        out += [("native_group_norm_backward", lambda x=x, w=w, m=mean, r=rstd, dy=dy, mk=mk:
                 aten.native_group_norm_backward(dy, x, m, r, w, 2, 6, 12, 3, mk)) for mk in masks]
        # Channels-last input and gradient (PyTorch's CPU kernel reads both in the input's memory
        # format: it is right only where their layouts agree, as autograd's do).
        xc, dyc = x.to(memory_format=torch.channels_last), dy.to(memory_format=torch.channels_last)
        x5 = rn(2, 4, 2, 3, 2, dtype=dt).to(memory_format=torch.channels_last_3d)
        dy5 = rn(2, 4, 2, 3, 2, dtype=dt).to(memory_format=torch.channels_last_3d)
        _, m5, r5 = aten.native_group_norm(x5, None, None, 2, 4, 12, 2, 1e-5)
        x3, dy3 = rn(3, 4, 5, dtype=dt), rn(3, 4, 5, dtype=dt)
        _, m3, r3 = aten.native_group_norm(x3, None, None, 3, 4, 5, 2, 1e-5)
        out += [
            ("native_group_norm_backward", lambda xc=xc, w=w, m=mean, r=rstd, dyc=dyc:
             aten.native_group_norm_backward(dyc, xc, m, r, w, 2, 6, 12, 3, [True, True, True])),
            ("native_group_norm_backward", lambda x5=x5, m=m5, r=r5, dy5=dy5:
             aten.native_group_norm_backward(dy5, x5, m, r, None, 2, 4, 12, 2, [True, False, False])),
            ("native_group_norm_backward", lambda x3=x3, m=m3, r=r3, dy3=dy3:
             aten.native_group_norm_backward(dy3, x3, m, r, None, 3, 4, 5, 2,
                                             [True, False, False])),
            ("native_group_norm_backward", lambda x=x, w=w, m=mean, r=rstd, dy=dy:
             aten.native_group_norm_backward(dy, x[:0], m[:0], r[:0], w, 0, 6, 12, 3, [True, True, True])),
        ]
        # embedding_dense_backward: repeated indices, padding_idx, scale_grad_by_freq.
        idx = torch.tensor([[0, 2, 2], [5, 0, 2]])
        gy = rn(2, 3, 4, dtype=dt)
        out += [("embedding_dense_backward", lambda gy=gy, p=p, sc=sc: aten.embedding_dense_backward(gy, idx, 7, p, sc))
                for p in (-1, 2) for sc in (False, True)]
        out += [
            ("embedding_dense_backward", lambda gy=gy: aten.embedding_dense_backward(gy, idx.int(), 6, 0, True)),
            ("embedding_dense_backward", lambda gy=gy: aten.embedding_dense_backward(
                gy.transpose(0, 1).contiguous().transpose(0, 1), idx, 7, -1, False)),
        ]
        # avg_pool2d_backward: the forward's argument combinations, layouts, batched or not.
        x = rn(2, 3, 7, 8, dtype=dt)
        for xv, args in ((x, ([3, 3], [2, 2], [1, 1], False, True, None)),
                         (x, ([3, 2], [2, 3], [1, 1], True, False, None)),
                         (x, ([2, 3], [1, 2], [1, 1], True, True, 3)),
                         (x, ([2, 2], [], [0, 0], False, True, None)),
                         (x.to(memory_format=torch.channels_last), ([3, 3], [2, 2], [1, 0], True, False, None)),
                         (x.transpose(2, 3), ([3, 2], [2, 1], [1, 0], True, False, None)),
                         (x[0], ([2, 2], [3, 3], [1, 1], True, True, -2))):
            gy = rn(*aten.avg_pool2d(xv, *args).shape, dtype=dt)
            out.append(("avg_pool2d_backward", lambda xv=xv, a=args, gy=gy: aten.avg_pool2d_backward(gy, xv, *a)))
        # _adaptive_avg_pool2d_backward: shrinking, growing, overlapping windows, layouts.
        for xv, size in ((x, [3, 5]), (x, [10, 11]), (x, [7, 8]), (x.to(memory_format=torch.channels_last), [4, 3]),
                         (x.transpose(2, 3), [4, 4]), (x[1], [2, 3])):
            gy = rn(*aten._adaptive_avg_pool2d(xv, size).shape, dtype=dt)
            out.append(("_adaptive_avg_pool2d_backward", lambda xv=xv, gy=gy: aten._adaptive_avg_pool2d_backward(gy, xv)))

    # Mixed types: a bfloat16 input with float32 parameters (and statistics).
    x, w, b, dy = rn(2, 3, 5, dtype=torch.bfloat16), rn(5), rn(5), rn(2, 3, 5, dtype=torch.bfloat16)
    _, mean, rstd = aten.native_layer_norm(x, [5], w, b, 1e-5)
    out.append(("native_layer_norm_backward", lambda x=x, w=w, b=b, dy=dy, m=mean, r=rstd:
                aten.native_layer_norm_backward(dy, x, [5], m, r, w, b, [True, True, True])))
    xg, wg, dg = rn(2, 4, 3, dtype=torch.bfloat16), rn(4), rn(2, 4, 3, dtype=torch.bfloat16)
    _, gmean, grstd = aten.native_group_norm(xg, wg, None, 2, 4, 3, 2, 1e-5)
    out.append(("native_group_norm_backward", lambda xg=xg, wg=wg, dg=dg, m=gmean, r=grstd:
                aten.native_group_norm_backward(dg, xg, m, r, wg, 2, 4, 3, 2, [True, True, True])))
    # Integer gradients (PyTorch scales them by 1 / count in int64: rows seen more than once vanish)
    # and average pooling of int64 (integer division).
    gi = torch.randint(-20, 20, (2, 3, 4), generator=g)
    idx = torch.tensor([[0, 2, 2], [5, 0, 2]])
    g2, g1, g0, flat, one, none = rn(6, 4), rn(4), rn(0, 4), idx.flatten(), torch.tensor(3), idx[:0, 0].clone()
    out += [
        ("embedding_dense_backward", lambda: aten.embedding_dense_backward(gi, idx, 7, -1, False)),
        ("embedding_dense_backward", lambda: aten.embedding_dense_backward(gi, idx, 7, 5, True)),
        ("embedding_dense_backward", lambda: aten.embedding_dense_backward(g2, flat, 7, -1, False)),
        ("embedding_dense_backward", lambda: aten.embedding_dense_backward(g1, one, 7, -1, False)),
        ("embedding_dense_backward", lambda: aten.embedding_dense_backward(g0, none, 7, -1, True)),
    ]
    xl = torch.randint(-50, 50, (1, 2, 5, 6), generator=g)
    for a in (([2, 2], [2, 2], [1, 1], True, True, None), ([3, 2], [1, 2], [1, 0], False, False, -3)):
        gl = torch.randint(-50, 50, aten.avg_pool2d(xl, *a).shape, generator=g)
        out.append(("avg_pool2d_backward", lambda a=a, gl=gl: aten.avg_pool2d_backward(gl, xl, *a)))
    # Errors PyTorch raises.
    x, w, b = rn(2, 3, 4, 5), rn(4, 5), rn(4, 5)
    _, mean, rstd = aten.native_layer_norm(x, [4, 5], w, b, 1e-5)
    dy = rn(2, 3, 4, 5)
    xg, wg, dg = rn(2, 6, 3, 4), rn(6), rn(2, 6, 3, 4)
    _, gmean, grstd = aten.native_group_norm(xg, wg, None, 2, 6, 12, 3, 1e-5)
    xp, ge = rn(2, 3, 7, 8), rn(2, 3, 4)
    pool = ([3, 3], [2, 2], [1, 1], False, True, None)
    gp = aten.avg_pool2d(xp, *pool)
    ga = aten._adaptive_avg_pool2d(xp, [3, 5])
    out += [
        ("native_layer_norm_backward", lambda: aten.native_layer_norm_backward(
            dy.double(), x, [4, 5], mean, rstd, w, b, [True, True, True])),
        ("native_layer_norm_backward", lambda: aten.native_layer_norm_backward(
            dy, x, [3, 5], mean, rstd, w, b, [True, True, True])),
        ("native_layer_norm_backward", lambda: aten.native_layer_norm_backward(
            dy, x, [4, 5], mean, rstd, w[0], b, [True, True, True])),
        ("native_layer_norm_backward", lambda: aten.native_layer_norm_backward(
            dy, x, [4, 5], mean, rstd, None, b, [True, True, True])),
        ("native_layer_norm_backward", lambda: aten.native_layer_norm_backward(
            dy, x, [4, 5], mean, rstd, w.double(), None, [True, True, False])),
        ("native_layer_norm_backward", lambda: aten.native_layer_norm_backward(
            dy.long(), x.long(), [4, 5], mean, rstd, None, None, [True, False, False])),
        ("native_group_norm_backward", lambda: aten.native_group_norm_backward(
            dg, xg, gmean, grstd, wg, 2, 6, 12, 4, [True, True, True])),
        ("native_group_norm_backward", lambda: aten.native_group_norm_backward(
            dg, xg, gmean, grstd, wg, 2, 6, 11, 3, [True, True, True])),
        ("native_group_norm_backward", lambda: aten.native_group_norm_backward(
            dg.double(), xg, gmean, grstd, wg, 2, 6, 12, 3, [True, True, True])),
        ("native_group_norm_backward", lambda: aten.native_group_norm_backward(
            dg, xg, gmean, grstd, wg[:5], 2, 6, 12, 3, [True, True, True])),
        ("native_group_norm_backward", lambda: aten.native_group_norm_backward(
            dg, xg, gmean, grstd, None, 2, 6, 12, 3, [True, False, True])),
        ("embedding_dense_backward", lambda: aten.embedding_dense_backward(ge, idx.float(), 7, -1, False)),
        ("embedding_dense_backward", lambda: aten.embedding_dense_backward(ge[:, :2], idx, 7, -1, False)),
        ("avg_pool2d_backward", lambda: aten.avg_pool2d_backward(gp[:, :, :2], xp, *pool)),
        ("avg_pool2d_backward", lambda: aten.avg_pool2d_backward(gp[:, :2], xp, *pool)),
        ("avg_pool2d_backward", lambda: aten.avg_pool2d_backward(gp.double(), xp, *pool)),
        ("avg_pool2d_backward", lambda: aten.avg_pool2d_backward(gp, xp, [3, 3], [2, 2], [1, 1], False, True, 0)),
        ("avg_pool2d_backward", lambda: aten.avg_pool2d_backward(gp, xp, [3, 3], [2, 2], [2, 2], False, True, None)),
        ("avg_pool2d_backward", lambda: aten.avg_pool2d_backward(gp.int(), xp.int(), *pool)),
        ("avg_pool2d_backward", lambda: aten.avg_pool2d_backward(gp[0, 0], xp[0, 0], *pool)),
        ("_adaptive_avg_pool2d_backward", lambda: aten._adaptive_avg_pool2d_backward(ga.double(), xp)),
        ("_adaptive_avg_pool2d_backward", lambda: aten._adaptive_avg_pool2d_backward(ga.long(), xp.long())),
        ("_adaptive_avg_pool2d_backward", lambda: aten._adaptive_avg_pool2d_backward(ga[0], xp)),
        ("_adaptive_avg_pool2d_backward", lambda: aten._adaptive_avg_pool2d_backward(ga[0, 0], xp[0, 0])),
        ("_adaptive_avg_pool2d_backward", lambda: aten._adaptive_avg_pool2d_backward(ga[:, :, :0], xp)),
    ]
    return out


def direct_samples():
    """Core ATen overloads that PyTorch decomposes before any dispatch mode sees them (composite
    implicit ones): (overload name, args, function), recorded from a direct call."""
    aten = torch.ops.aten
    g = torch.Generator().manual_seed(2)
    out = []
    for dt in (torch.float32, torch.float64, torch.bfloat16):
        x = torch.randn(2, 3, 11, generator=g).to(dt)
        img = torch.randn(2, 3, 5, 7, generator=g).to(dt)
        out += [
            ("aten::avg_pool1d", (x, [3], [2], [1], False, True), aten.avg_pool1d),
            ("aten::avg_pool1d", (x[0], [4], [], [2], True, False), aten.avg_pool1d),
            ("aten::adaptive_avg_pool1d", (x, [4]), aten.adaptive_avg_pool1d),
            ("aten::adaptive_avg_pool1d", (x[1].t().contiguous().t(), [11]), aten.adaptive_avg_pool1d),
            ("aten::upsample_nearest2d.vec", (img, [9, 14], None), aten.upsample_nearest2d.vec),
            ("aten::upsample_nearest2d.vec", (img, [3, 7], None), aten.upsample_nearest2d.vec),
            ("aten::upsample_nearest2d.vec", (img, None, [2.0, 1.5]), aten.upsample_nearest2d.vec),
            ("aten::upsample_nearest2d.vec", (img.transpose(2, 3), None, [0.6, 3.0]), aten.upsample_nearest2d.vec),
            ("aten::upsample_bilinear2d.vec", (img, [9, 14], False, None), aten.upsample_bilinear2d.vec),
            ("aten::upsample_bilinear2d.vec", (img, [9, 14], True, None), aten.upsample_bilinear2d.vec),
            ("aten::upsample_bilinear2d.vec", (img, [3, 4], False, None), aten.upsample_bilinear2d.vec),
            ("aten::upsample_bilinear2d.vec", (img, None, False, [2.0, 1.5]), aten.upsample_bilinear2d.vec),
            ("aten::upsample_bilinear2d.vec", (img.transpose(2, 3), None, True, [0.6, 3.0]),
             aten.upsample_bilinear2d.vec),
        ]
    # var.dim reaches a dispatch mode as var.correction; atan2.out is an out= overload, given its out.
    x3 = torch.randn(3, 4, 5, generator=g)
    out += [
        ("aten::var.dim", (x3, [1], True, True), aten.var.dim),
        ("aten::var.dim", (x3.transpose(0, 2), [0, 2], False, False), aten.var.dim),
        ("aten::var.dim", (x3.to(torch.float64), None, True, False), aten.var.dim),
        ("aten::var.dim", (x3, [3], True, False), aten.var.dim),  # dim out of range
        ("aten::atan2.out", (x3, x3.flip(0)), aten.atan2.out, {"out": torch.empty(3, 4, 5)}),
        ("aten::atan2.out", (x3[0], x3[1].t().contiguous().t()), aten.atan2.out, {"out": torch.empty(4, 5)}),
        ("aten::atan2.out", (x3, x3), aten.atan2.out, {"out": torch.empty(3, 4, 5, dtype=torch.int64)}),
    ]
    # The sym_* ops read metadata in Python: no dispatch mode sees them.
    x = torch.randn(4, 5, generator=g)
    img = torch.randn(2, 3, 4, 5, generator=g)
    out += [
        ("aten::sym_size.int", (x, 1), aten.sym_size.int),
        ("aten::sym_size.int", (x.t(), -2), aten.sym_size.int),
        ("aten::sym_size.int", (x, 2), aten.sym_size.int),
        ("aten::sym_size.int", (torch.tensor(1.0), 0), aten.sym_size.int),
        ("aten::sym_stride.int", (x.t(), 0), aten.sym_stride.int),
        ("aten::sym_stride.int", (x[:, ::2], -1), aten.sym_stride.int),
        ("aten::sym_stride.int", (x, -3), aten.sym_stride.int),
        ("aten::sym_numel", (x,), aten.sym_numel),
        ("aten::sym_numel", (x[:, :0],), aten.sym_numel),
        ("aten::sym_storage_offset", (x[1:],), aten.sym_storage_offset),
        ("aten::sym_storage_offset", (x[2:, 3:].t(),), aten.sym_storage_offset),
        ("aten::sym_is_contiguous", (x,), aten.sym_is_contiguous),
        ("aten::sym_is_contiguous", (x.t(),), aten.sym_is_contiguous),
        ("aten::sym_is_contiguous", (img.to(memory_format=torch.channels_last), torch.channels_last),
         aten.sym_is_contiguous),
        ("aten::sym_is_contiguous", (img, torch.channels_last), aten.sym_is_contiguous),
    ]
    return out


def convolution_samples():
    """Targeted calls of convolution (1-3 spatial dims, groups, dilation, channels_last, integers,
    transposed with output_padding) and convolution_backward (both kinds, masks, errors)."""
    aten = torch.ops.aten
    g = torch.Generator().manual_seed(4)
    out = []

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    # (input, weight, stride, padding, dilation, transposed, output_padding, groups)
    shapes = [
        ((2, 4, 9), (6, 2, 3), [2], [1], [1], False, [0], 2),
        ((1, 3, 7, 8), (4, 3, 3, 2), [1, 2], [1, 0], [2, 1], False, [0, 0], 1),
        ((2, 2, 4, 5, 3), (3, 2, 2, 3, 1), [1, 1, 2], [0, 1, 0], [1, 1, 1], False, [0, 0, 0], 1),
        ((2, 4, 5), (4, 3, 3), [2], [1], [1], True, [1], 2),
        ((1, 3, 4, 5), (3, 2, 3, 3), [2, 3], [1, 0], [1, 2], True, [1, 2], 1),
        ((1, 2, 3, 2, 3), (2, 2, 2, 2, 2), [2, 1, 1], [0, 0, 1], [1, 1, 1], True, [1, 0, 0], 1),
    ]
    for dt in (torch.float32, torch.float64, torch.bfloat16):
        for xs, ws, st, pad, dil, tr, op, groups in shapes:
            x, w, b = rn(*xs, dtype=dt), rn(*ws, dtype=dt), rn(ws[1] * groups if tr else ws[0], dtype=dt)
            args = (st, pad, dil, tr, op, groups)
            out.append(("convolution", lambda x=x, w=w, b=b, a=args: aten.convolution(x, w, b, *a)))
            y = aten.convolution(x, w, None, *args)
            gy = rn(*y.shape, dtype=dt)
            masks = [[True, True, True]] + ([[True, False, False], [False, True, False], [False, False, True],
                                             [False, False, False]] if dt == torch.float64 else [])
            for m in masks:
                out.append(("convolution_backward", lambda gy=gy, x=x, w=w, a=args, m=m, b=b:
                            aten.convolution_backward(gy, x, w, [b.shape[0]], *a, m)))
        x4 = rn(2, 3, 6, 5, dtype=dt).to(memory_format=torch.channels_last)
        w4 = rn(4, 3, 3, 3, dtype=dt)
        out.append(("convolution", lambda x4=x4, w4=w4: aten.convolution(x4, w4, None, [1, 1], [1, 1], [1, 1], False,
                                                                           [0, 0], 1)))
        out.append(("convolution_backward", lambda x4=x4, w4=w4, dt=dt: aten.convolution_backward(
            rn(2, 4, 6, 5, dtype=dt), x4, w4, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])))
    for dt in (torch.int64, torch.int32, torch.uint8):
        x, w = torch.randint(0, 5, (2, 2, 6), dtype=dt), torch.randint(0, 5, (3, 2, 3), dtype=dt)
        out.append(("convolution", lambda x=x, w=w: aten.convolution(x, w, None, [1], [1], [1], False, [0], 1)))
        out.append(("convolution", lambda x=x, w=w: aten.convolution(x, w.transpose(0, 1).contiguous(), None, [2],
                                                                      [0], [1], True, [1], 1)))
    x, w = rn(1, 2, 5), rn(3, 2, 3)
    out += [
        ("convolution", lambda: aten.convolution(x, w, None, [2], [0], [1], True, [2], 1)),  # output_padding too big
        ("convolution", lambda: aten.convolution(x, rn(2, 3, 3), rn(4), [1], [0], [1], True, [0], 1)),  # bias size
        ("convolution", lambda: aten.convolution(x, rn(2, 3, 3), None, [1], [5], [1], True, [0], 1)),  # no output
        ("convolution_backward", lambda: aten.convolution_backward(rn(1, 3, 4), x, w, None, [1], [0], [1], False, [0],
                                                                   1, [True, True, True])),  # grad_output size
    ]
    return out


def fft_samples():
    """Targeted calls of _fft_r2c and _fft_c2r beyond the OpInfos' (whose lengths are mostly even
    and inputs contiguous): prime and composite lengths, non-contiguous inputs, dims in any order,
    every normalization, the two-sided r2c, and the errors PyTorch raises (name, thunk)."""
    aten = torch.ops.aten
    g = torch.Generator().manual_seed(5)
    out = []

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    for dt in (torch.float32, torch.float64):
        cdt = torch.complex64 if dt == torch.float32 else torch.complex128
        x = rn(3, 17, 6, dtype=dt)
        out += [
            ("_fft_r2c", lambda x=x: aten._fft_r2c(x, [1], 1, True)),
            ("_fft_r2c", lambda x=x: aten._fft_r2c(x.transpose(0, 2), [2, 0], 2, True)),
            ("_fft_r2c", lambda x=x: aten._fft_r2c(x[:, ::2], [0, 1, 2], 0, False)),
            ("_fft_r2c", lambda x=x: aten._fft_r2c(x.permute(1, 2, 0), [1], 0, False)),
            ("_fft_r2c", lambda dt=dt: aten._fft_r2c(rn(2, 100, dtype=dt), [1], 2, True)),
            ("_fft_r2c", lambda dt=dt: aten._fft_r2c(rn(4, 1, dtype=dt), [1, 0], 1, True)),
            ("_fft_r2c", lambda dt=dt: aten._fft_r2c(rn(127, dtype=dt), [0], 0, True)),
        ]
        h = aten._fft_r2c(rn(3, 7, 10, dtype=dt), [0, 2], 0, True)  # [3, 7, 6]
        out += [
            ("_fft_c2r", lambda h=h: aten._fft_c2r(h, [0, 2], 2, 10)),
            ("_fft_c2r", lambda h=h: aten._fft_c2r(h, [2], 1, 11)),
            ("_fft_c2r", lambda h=h: aten._fft_c2r(h.transpose(0, 1), [1, 0, 2], 0, 10)),
            ("_fft_c2r", lambda h=h: aten._fft_c2r(h[:, 1:6], [1], 2, 9)),
            ("_fft_c2r", lambda h=h: aten._fft_c2r(h.permute(2, 1, 0), [1, 2, 0], 1, 11)),
            ("_fft_c2r", lambda cdt=cdt: aten._fft_c2r(torch.randn(2, 51, dtype=cdt, generator=g), [1], 2, 100)),
            ("_fft_c2r", lambda cdt=cdt: aten._fft_c2r(torch.randn(5, 1, dtype=cdt, generator=g), [0, 1], 0, 1)),
            ("_fft_c2r", lambda x=x: aten._fft_c2r(x, [1], 0, 32)),  # a real input: PyTorch raises
        ]
        out += [("_fft_r2c", lambda x=x, d=d: aten._fft_r2c(x.to(d), [1], 0, True))
                for d in (torch.int64, torch.float16)]  # PyTorch raises
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--per-overload", type=int, default=40, help="recorded calls per Core ATen overload at most")
    p.add_argument("--samples", type=int, default=4, help="samples per OpInfo and dtype")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from torch._decomp import core_aten_decompositions
    from torch.testing._internal.common_methods_invocations import op_db

    start = time.time()
    torch.manual_seed(0)
    writer = Writer(a.out)
    recorder = Recorder(writer, core_overloads(), core_aten_decompositions(), a.per_overload)
    sample_errors = [0]
    for info, dtype, k, s in opinfo_samples(SAMPLE_DTYPES, a.samples, sample_errors):
        recorder.source = "%s/%s/%d" % (opinfo_name(info), DTYPES[dtype], k)
        try:
            with recorder:
                info.op(s.input, *s.args, **s.kwargs)
        except Exception:
            pass  # recorded where a Core ATen call raised; the rest is PyTorch's own checking
    for k, (name, thunk) in enumerate(targeted_samples() + kernel_samples() + convolution_samples()
                                      + backward_samples() + fft_samples()):
        recorder.source = "targeted.%s/%d" % (name, k)
        try:
            with recorder:
                thunk()
        except Exception:
            pass
    for k, (name, args, fn, *rest) in enumerate(direct_samples()):
        kwargs = rest[0] if rest else {}
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            writer.call(name, "direct/%d" % k, args, kwargs, None, "%s: %s" % (type(e).__name__, e))
            continue
        # An out= call's result is its out tensor: the float64 reference would need a float64 out.
        ref = None if "out" in kwargs else float64_reference(fn, name, args, kwargs, result)
        writer.call(name, "direct/%d" % k, args, kwargs, result, None, ref)
        recorder.count[name] = recorder.count.get(name, 0) + 1
        recorder.derivatives.probe(fn, name, args, kwargs)
    writer.index.close()
    writer.data.close()
    recorder.derivatives.run()
    recorder.derivatives.write(os.path.join(a.out, "derivatives.txt"))
    total = sum(recorder.count.values())
    print("record_opinfo: %d calls of %d Core ATen overloads from %d OpInfos in %.0f s (%d sample generators failed)"
          % (total, len(recorder.count), len(op_db), time.time() - start, sample_errors[0]))


if __name__ == "__main__":
    sys.exit(main())

"""A second generator: random PyTorch programs through torch.compile(backend="kiln")'s path.

The differential tier (tests/differential, C++) writes programs of kiln's API. This one writes what an
outside user writes: PyTorch code (torch.* calls, Tensor methods, Python scalars), traced to Core
ATen with PyTorch's own decompositions (make_fx with the table kiln's backend uses), imported into
kiln and run by its eager and inductor backends, against PyTorch eager on the same inputs. So it
reaches what the C++ tier cannot: PyTorch's decompositions (std as sqrt(var), xlogy's promotion), the
FX importer, DLPack and the backend's restriding of outputs. Inputs hold NaN, infinities, signed
zeros, subnormals and dtype limits, in transposed, expanded, strided, offset and overlapping layouts.

A difference is reported when kiln's value is outside PyTorch's tolerance (the output dtype's, as
torch.testing.assert_close) of PyTorch's and not as close to the program run in float64 as twice
PyTorch's distance to it; NaN and infinities must match. What it reports includes the accepted
differences of docs/conformance.md (PyTorch's vector loop against its scalar one, ill-conditioned
sums, compiled 16-bit chains kept in float32): it is a tool for finding classes, not a test. Each
report is the program as Python source with its inputs' dtypes, sizes, strides and layouts.

    .venv/bin/python tests/differential/backend_fuzz.py --build build --seed 0 --count 500
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import math
import random
import sys
import warnings

import torch
from torch.fx.experimental.proxy_tensor import make_fx

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
SHAPES = [(), (0,), (1,), (5,), (3, 4), (4, 4), (1, 5), (5, 1), (0, 3), (2, 3, 4), (6, 7), (2, 1, 3), (1, 1), (17, 9)]
DTYPE_MIXES = [[torch.float32], [torch.float64], [torch.bfloat16], [torch.float16], [torch.int64], [torch.int32],
               [torch.bool], [torch.float32, torch.int64], [torch.float32, torch.bool], [torch.float64, torch.int64],
               [torch.uint8], [torch.int8, torch.float32], [torch.float16, torch.bfloat16, torch.float32]]
UNARY = ["abs", "neg", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfinv", "ceil",
         "floor", "round", "trunc", "sign", "frac", "isnan", "isinf", "isfinite", "logical_not", "bitwise_not", "relu",
         "square", "nn.functional.silu", "nn.functional.gelu", "signbit", "exp2", "nan_to_num", "lgamma", "digamma"]
BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "fmod", "remainder", "atan2", "pow", "maximum",
          "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
          "bitwise_or", "bitwise_xor", "hypot", "copysign", "fmax", "fmin", "xlogy"]
REDUCTIONS = ["sum", "mean", "amax", "amin", "prod", "std", "var", "var_mean", "std_mean", "argmax", "argmin", "max",
              "min", "logsumexp", "any", "all", "cumsum", "nansum", "aminmax", "count_nonzero"]
SCALARS = ["0.5", "-0.0", "2", "-1", "-3", "float('nan')", "float('inf')", "-float('inf')", "1e-40", "3.0", "True", "0",
           "1e30", "-1.5", "-0.5"]
TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
              torch.float64: (1e-7, 1e-7)}


def special_float(dt, r):
    fi = torch.finfo(dt)
    return r.choice([0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.0, fi.tiny, -fi.tiny, fi.smallest_normal / 4,
                     fi.max, -fi.max, fi.eps, 0.5, -2.5, 2.5, 1e-300 if dt == torch.float64 else 1e-30])


def special_int(dt, r):
    ii = torch.iinfo(dt)
    return r.choice([0, 1, -1 if ii.min < 0 else 2, ii.min, ii.max, ii.min + 1, ii.max - 1, 2, 3])


def make_input(r, shape, dt):
    """An input of `shape` and `dt` in one of the layouts, and the layout's name."""
    fill = r.random()

    def value():
        if dt.is_floating_point:
            if fill < 0.4:
                return r.gauss(0, 2)
            if fill < 0.7:
                return special_float(dt, r) if r.random() < 0.6 else r.gauss(0, 2)
            return r.uniform(0.25, 4) if fill < 0.85 else float(r.randint(-3, 3))
        if dt == torch.bool:
            return r.random() < 0.5
        if fill < 0.3:
            return special_int(dt, r) if r.random() < 0.6 else r.randint(-5, 5)
        return r.randint(0 if dt == torch.uint8 else -9, 9)

    def storage(n):
        wide = torch.float64 if dt.is_floating_point else torch.int64
        return torch.tensor([value() for _ in range(n)], dtype=wide).to(dt)

    numel = math.prod(shape)
    layout = r.random()
    if layout < 0.15 and len(shape) >= 2:
        return storage(numel).reshape(tuple(reversed(shape))).permute(*reversed(range(len(shape)))), "transposed"
    if layout < 0.3 and len(shape) >= 1:
        d = r.randrange(len(shape))
        if shape[d] > 1:
            one = list(shape)
            one[d] = 1
            return storage(math.prod(one)).reshape(one).expand(shape), "expanded"
    if layout < 0.45 and len(shape) >= 1:
        big = list(shape)
        big[-1] = big[-1] * 2 + 1
        big[0] += 1
        base = storage(math.prod(big)).reshape(big)
        index = [slice(1, None)] + [slice(None)] * (len(shape) - 2) + [slice(None, None, 2)] if len(shape) > 1 else [
            slice(1, None, 2)]
        return base[tuple(index)][tuple(slice(0, s) for s in shape)], "strided"
    if layout < 0.55 and len(shape) == 2 and shape[0] > 0 and shape[1] > 0:
        return storage(shape[0] + shape[1] + 2).as_strided(shape, (1, 1), 1), "overlapping"
    return storage(numel + 3)[3:].reshape(shape), "offset"


class Generator:
    """One program: lines `vK = <torch expression>`, each checked by running it in PyTorch."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.lines: list[str] = []
        self.values: dict[str, torch.Tensor] = {}
        self.inputs: list[tuple[str, torch.Tensor, str]] = []
        self.n = 0

    def pick(self) -> str:
        names = list(self.values)
        return self.r.choice(names[-3:]) if self.r.random() < 0.6 else self.r.choice(names)

    def add(self, expr: str) -> str | None:
        env = dict(self.values, torch=torch)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = eval(expr, env)  # noqa: S307 - the generator's own expressions
        except Exception:
            return None
        if not isinstance(out, torch.Tensor) or out.numel() > 50000 or out.dim() > 5:
            return None
        name = f"v{self.n}"
        self.n += 1
        self.lines.append(f"{name} = {expr}")
        self.values[name] = out
        return name

    def new_input(self, shape, dt) -> str:
        name = f"a{len(self.inputs)}"
        t, layout = make_input(self.r, shape, dt)
        self.inputs.append((name, t, layout))
        self.values[name] = t
        return name

    def step(self):
        r, x = self.r, self.pick()
        t = self.values[x]
        nd = t.dim()
        dim = r.randrange(-nd, nd) if nd else 0
        keep = r.choice(["True", "False"])
        u = r.random()
        if u < 0.2:
            self.add(f"torch.{r.choice(UNARY)}({x})")
        elif u < 0.45:
            op = r.choice(BINARY)
            w = r.random()
            y = self.pick() if w < 0.5 else r.choice(SCALARS) if w < 0.85 else x
            if op == "div" and r.random() < 0.5:
                self.add(f"torch.div({x}, {y}, rounding_mode={r.choice(['trunc', 'floor'])!r})")
            elif r.random() < 0.1 and op in ("pow", "sub", "add", "mul", "remainder"):
                self.add(f"torch.{op}({r.choice(SCALARS)}, {x})")
            else:
                self.add(f"torch.{op}({x}, {y})")
        elif u < 0.55:
            op = r.choice(REDUCTIONS)
            if op in ("std", "var", "var_mean", "std_mean"):
                self.add(f"torch.{op}({x}, dim={r.choice(['None', str(dim)])}, correction={r.choice('0112')}, "
                         f"keepdim={keep})")
            elif op in ("argmax", "argmin", "max", "min"):
                self.add(f"torch.{op}({x}, dim={dim}, keepdim={keep})" if r.random() < 0.7 else f"torch.{op}({x})")
            elif op == "cumsum":
                self.add(f"torch.cumsum({x}, {dim})")
            elif op in ("aminmax", "count_nonzero"):
                self.add(f"torch.{op}({x}, dim={dim})")
            else:
                self.add(f"torch.{op}({x}, {dim}, keepdim={keep})" if r.random() < 0.8 else f"torch.{op}({x})")
        elif u < 0.65 and nd:
            v = r.random()
            if v < 0.2:
                self.add(f"{x}.transpose({dim}, {r.randrange(-nd, nd)})")
            elif v < 0.4 and t.shape[dim] > 0:
                self.add(f"{x}.select({dim}, {r.randrange(-t.shape[dim], t.shape[dim])})")
            elif v < 0.6:
                sizes = [r.randint(2, 4) if s == 1 and r.random() < 0.7 else -1 for s in t.shape]
                self.add(f"{x}.expand({sizes})")
            elif v < 0.8:
                self.add(f"{x}.flip({dim})")
            else:
                self.add(f"{x}.unsqueeze({r.randint(-nd - 1, nd)})")
        elif u < 0.72:
            v = r.random()
            if v < 0.3:
                self.add(f"torch.softmax({x}, {dim})")
            elif v < 0.5:
                self.add(f"torch.log_softmax({x}, {dim})")
            elif nd:
                shape = list(t.shape[nd - (2 if nd >= 2 and r.random() < 0.3 else 1):])
                self.add(f"torch.nn.functional.layer_norm({x}, {shape}, eps={r.choice(['1e-5', '0.0', '1e-3'])})")
        elif u < 0.8:
            if r.random() < 0.5:
                c = self.add(f"{x} > {r.choice(['0', '0.5', '-1'])}")
                if c:
                    self.add(f"torch.where({c}, {self.pick()}, {self.pick() if r.random() < 0.6 else r.choice(SCALARS)})")
            else:
                cmp = r.choice(["<", ">", "==", "!=", "<=", ">="])
                self.add(f"({x} {cmp} {self.pick()}) {r.choice(['*', '+', '-'])} {self.pick()}")
        elif u < 0.88:
            self.add(f"{x}.to({r.choice(FLOATS + INTS + [torch.bool])})")
        elif u < 0.93:
            parts = [x] + [x if r.random() < 0.4 else self.pick() for _ in range(r.randint(1, 3))]
            self.add(f"torch.cat([{', '.join(parts)}], {dim})")
        elif u < 0.97 and nd:
            n = t.shape[dim]
            start = r.randint(0, max(n, 0))
            end = r.randint(start, n + 1)
            step = r.randint(1, 3)
            src = list(t.shape)
            src[dim] = len(range(start, min(end, n), step))
            self.add(f"torch.slice_scatter({x}, torch.full({src}, {r.choice(SCALARS)}, dtype={x}.dtype), {dim}, "
                     f"{start}, {end}, {step})")
        elif nd:
            self.add(f"torch.matmul({x}, {self.new_input((t.shape[-1], r.choice([1, 3, 8])), t.dtype)})")

    def run(self, calls: int) -> list[str]:
        dtypes = self.r.choice(DTYPE_MIXES)
        base = self.r.choice(SHAPES)
        for i in range(self.r.randint(1, 3)):
            shape = base if i == 0 or self.r.random() < 0.6 else tuple(base[self.r.randrange(len(base) + 1):])
            self.new_input(shape, self.r.choice(dtypes))
        for _ in range(calls * 20):
            if self.n >= calls:
                break
            self.step()
        outs = [v for v in list(self.values)[-3:] if v.startswith("v")]
        return outs or [list(self.values)[-1]]

    def source(self, outs: list[str]) -> str:
        args = ", ".join(n for n, _, _ in self.inputs)
        body = "\n".join("    " + line for line in self.lines)
        return f"def f({args}):\n{body}\n    return ({', '.join(outs)},)\n"


def difference(kiln_out: torch.Tensor, torch_out: torch.Tensor, reference: torch.Tensor | None) -> str | None:
    """How kiln's output differs from PyTorch's past the rules in the module's documentation."""
    if kiln_out.dtype != torch_out.dtype or kiln_out.shape != torch_out.shape:
        return f"{kiln_out.dtype}{tuple(kiln_out.shape)} vs torch {torch_out.dtype}{tuple(torch_out.shape)}"
    if not kiln_out.dtype.is_floating_point:
        bad = kiln_out != torch_out
        return None if not bad.any() else f"values {kiln_out[bad][:4].tolist()} vs torch {torch_out[bad][:4].tolist()}"
    k, t = kiln_out.double(), torch_out.double()
    special = k.isnan() | t.isnan() | k.isinf() | t.isinf()
    if not torch.equal(k.isnan(), t.isnan()) or not torch.equal(k[special & ~k.isnan()], t[special & ~k.isnan()]):
        bad = special & ~((k == t) | (k.isnan() & t.isnan()))
        return f"NaN/inf {kiln_out[bad][:4].tolist()} vs torch {torch_out[bad][:4].tolist()}"
    rtol, atol = TOLERANCES[kiln_out.dtype]
    far = (k - t).abs() > atol + rtol * t.abs()
    if reference is not None and reference.shape == k.shape and reference.is_floating_point():
        w = reference.double()
        far &= ~((k - w).abs() <= 2 * (t - w).abs() + atol + rtol * w.abs())
    far &= ~special
    return None if not far.any() else f"values {k[far][:4].tolist()} vs torch {t[far][:4].tolist()}"


def check(seed: int, calls: int, compile_graph, Options, decompositions) -> str | None | bool:
    """The report of program `seed`, None when it agrees, False when it was not run (PyTorch refuses
    it, or it cannot be traced with static shapes: not kiln's)."""
    g = Generator(seed)
    outs = g.run(calls)
    src = g.source(outs)
    env = {"torch": torch}
    exec(src, env)  # noqa: S102 - the generator's own program
    f = env["f"]
    inputs = [t for _, t, _ in g.inputs]
    try:
        want = f(*inputs)
        gm = make_fx(f, decomposition_table=decompositions)(*inputs)
    except Exception:
        return False
    try:
        reference = f(*[t.double() if t.is_floating_point() else t for t in inputs])
    except Exception:
        reference = None
    problems = []
    for mode in ("eager", "inductor"):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                got = compile_graph(gm, list(inputs), Options(backend=mode))(list(inputs))
        except Exception as e:  # kiln raised where PyTorch did not
            problems.append(f"{mode} raised {e!r}"[:300])
            continue
        for i, (k, t) in enumerate(zip(got, want)):
            d = difference(k, t, reference[i] if reference is not None else None)
            if d:
                problems.append(f"{mode} output {i}: {d}")
    if not problems:
        return None
    layouts = ", ".join(f"{n}: {t.dtype} {tuple(t.shape)} strides {tuple(t.stride())} {layout}"
                        for n, t, layout in g.inputs)
    return f"{src}# inputs: {layouts}\n" + "\n".join(f"# {p}" for p in problems)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="kiln's build directory (its python/ holds the package)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--calls", type=int, default=6)
    args = parser.parse_args()
    sys.path.insert(0, f"{args.build}/python")
    from kiln.backend import Options, _decompositions, compile_graph

    warnings.filterwarnings("ignore")
    logging.getLogger("kiln").setLevel(logging.ERROR)
    decompositions = _decompositions()
    found = skipped = 0
    for seed in range(args.seed, args.seed + args.count):
        report = check(seed, args.calls, compile_graph, Options, decompositions)
        if report is False:
            skipped += 1
        elif report:
            found += 1
            print(f"# seed {seed}\n{report}\n", flush=True)
    print(f"{args.count} programs ({skipped} not run: refused or data-dependent), {found} with differences")


if __name__ == "__main__":
    main()

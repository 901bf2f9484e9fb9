"""PyTorch reference for kiln's differential tests (tests/differential).

Usage: torch_ref.py DIR...   Each DIR holds program.txt (the text form in program.h) and one
<input>.bin per input (the input's whole storage, raw bytes). For each DIR this writes
torch_native.txt (results with the program's dtypes) and torch_f64.txt (every floating dtype
widened to float64), one line per output "out K DTYPE [SIZES] [STRIDES]" with the contiguous bytes
in native_K.bin / f64_K.bin, or one line "error MESSAGE" when torch raised, or "crash SIGNAL" when
torch itself died (then there is no PyTorch reference for that program).
"""
import os
import sys

import torch

DTYPES = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}
NAMES = {v: k for k, v in DTYPES.items()}


def ints(tok):
    inner = tok[1:-1]
    return [int(x) for x in inner.split(",")] if inner else []


def scalar(tok):
    kind, body = tok[0], tok[2:]
    if kind == "i":
        return int(body)
    if kind == "b":
        return bool(int(body))
    return float(body)


def is_scalar(tok):
    return len(tok) > 2 and tok[1] == ":"


class Run:
    def __init__(self, wide):
        self.wide = wide
        self.env = {}

    def t(self, tok):
        return self.env[tok]

    def opt_t(self, tok):
        return None if tok == "none" else self.env[tok]

    def dtype(self, tok):
        d = DTYPES[tok]
        return torch.float64 if self.wide and d.is_floating_point else d

    def arg(self, tok):
        return scalar(tok) if is_scalar(tok) else self.t(tok)

    def call(self, op, a):
        t, opt_dims = self.t, (lambda tok: None if tok == "none" else ints(tok))
        unary = {"isnan", "isinf", "bitwise_not", "logical_not", "square", "clone", "abs", "neg", "exp", "expm1",
                 "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos",
                 "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "ceil", "floor",
                 "round", "trunc", "sign", "relu"}
        if op in unary:
            return [getattr(torch, op)(t(a[0]))]
        if op == "silu":
            return [torch.nn.functional.silu(t(a[0]))]
        if op == "contiguous":
            return [t(a[0]).contiguous()]
        if op == "gelu":
            return [torch.nn.functional.gelu(t(a[0]), approximate="tanh" if a[1] == "tanh" else "none")]
        binary = {"mul", "maximum", "minimum", "fmod", "remainder", "atan2", "pow", "bitwise_and", "bitwise_or",
                  "bitwise_xor", "logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge",
                  "add", "sub"}
        if op in binary:
            return [getattr(torch, op)(self.arg(a[0]), self.arg(a[1]))]
        if op == "div":
            return [torch.div(t(a[0]), self.arg(a[1]), rounding_mode=None if a[2] == "none" else a[2])]
        if op == "where":
            return [torch.where(t(a[0]), t(a[1]), t(a[2]))]
        if op == "clamp":
            lo, hi = (None if x == "none" else self.arg(x) for x in a[1:3])
            return [torch.clamp(t(a[0]), lo, hi)]
        if op in ("sum", "mean"):
            return [getattr(torch, op)(t(a[0]), dim=opt_dims(a[1]), keepdim=bool(int(a[2])))]
        if op in ("amax", "amin"):
            return [getattr(torch, op)(t(a[0]), dim=ints(a[1]), keepdim=bool(int(a[2])))]
        if op == "prod":
            if a[1] == "none":
                return [torch.prod(t(a[0]))]
            return [torch.prod(t(a[0]), int(a[1]), keepdim=bool(int(a[2])))]
        if op in ("var", "var_mean"):
            r = getattr(torch, op)(t(a[0]), dim=opt_dims(a[1]), correction=scalar(a[2]), keepdim=bool(int(a[3])))
            return list(r) if op == "var_mean" else [r]
        if op in ("softmax", "log_softmax"):
            return [getattr(torch, op)(t(a[0]), int(a[1]))]
        if op == "layer_norm":
            return [torch.nn.functional.layer_norm(t(a[0]), ints(a[1]), self.opt_t(a[2]), self.opt_t(a[3]),
                                                   scalar(a[4]))]
        if op == "matmul":
            return [torch.matmul(t(a[0]), t(a[1]))]
        if op == "linear":
            return [torch.nn.functional.linear(t(a[0]), t(a[1]), self.opt_t(a[2]))]
        if op == "sdpa":
            return [torch.nn.functional.scaled_dot_product_attention(
                t(a[0]), t(a[1]), t(a[2]), attn_mask=self.opt_t(a[3]), is_causal=bool(int(a[4])),
                scale=None if a[5] == "none" else scalar(a[5]))]
        if op == "transpose":
            return [torch.transpose(t(a[0]), int(a[1]), int(a[2]))]
        if op == "permute":
            return [t(a[0]).permute(ints(a[1]))]
        if op == "slice":
            x, dim = t(a[0]), int(a[1])
            start, end = (None if v == "none" else int(v) for v in a[2:4])
            index = [slice(None)] * x.dim()
            index[dim] = slice(start, end, int(a[4]))
            return [x[tuple(index)]]
        if op == "select":
            return [torch.select(t(a[0]), int(a[1]), int(a[2]))]
        if op == "expand":
            return [t(a[0]).expand(ints(a[1]))]
        if op == "unsqueeze":
            return [t(a[0]).unsqueeze(int(a[1]))]
        if op == "squeeze":
            return [t(a[0]).squeeze(int(a[1]))]
        if op == "view":
            return [t(a[0]).view(ints(a[1]))]
        if op == "reshape":
            return [t(a[0]).reshape(ints(a[1]))]
        if op == "diagonal":
            return [torch.diagonal(t(a[0]), int(a[1]), int(a[2]), int(a[3]))]
        if op == "cat":
            return [torch.cat([t(x) for x in a[0][1:-1].split(",")], int(a[1]))]
        if op == "full":
            return [torch.full(ints(a[0]), scalar(a[1]), dtype=self.dtype(a[2]))]
        if op == "scalar_tensor":
            return [torch.scalar_tensor(scalar(a[0]), dtype=self.dtype(a[1]))]
        if op == "to":
            return [t(a[0]).to(self.dtype(a[1]))]
        if op in ("argmax", "argmin"):
            return [getattr(torch, op)(t(a[0]), dim=None if a[1] == "none" else int(a[1]), keepdim=bool(int(a[2])))]
        if op in ("max_dim", "min_dim"):
            r = getattr(torch, op[:3])(t(a[0]), int(a[1]), keepdim=bool(int(a[2])))
            return [r.values, r.indices]
        if op == "cumsum":
            return [torch.cumsum(t(a[0]), int(a[1]))]
        if op == "any":
            dims = opt_dims(a[1])
            return [torch.any(t(a[0]), dim=None if dims is None else tuple(dims), keepdim=bool(int(a[2])))]
        if op == "std":
            return [torch.std(t(a[0]), dim=opt_dims(a[1]), correction=scalar(a[2]), keepdim=bool(int(a[3])))]
        if op == "flip":
            return [torch.flip(t(a[0]), ints(a[1]))]
        if op == "slice_scatter":
            start, end = (None if v == "none" else int(v) for v in a[3:5])
            return [torch.slice_scatter(t(a[0]), t(a[1]), int(a[2]), start, end, int(a[5]))]
        if op == "select_scatter":
            return [torch.select_scatter(t(a[0]), t(a[1]), int(a[2]), int(a[3]))]
        if op == "arange":
            return [torch.arange(scalar(a[0]), scalar(a[1]), scalar(a[2]), dtype=self.dtype(a[3]))]
        if op == "native_layer_norm":
            return list(torch.native_layer_norm(t(a[0]), ints(a[1]), self.opt_t(a[2]), self.opt_t(a[3]), scalar(a[4])))
        raise ValueError(f"unknown op {op}")


def load_input(directory, fields, wide):
    _, name, dtype, sizes, strides, offset = fields[:6]
    d = DTYPES[dtype]
    with open(os.path.join(directory, name + ".bin"), "rb") as f:
        data = bytearray(f.read())
    flat = torch.frombuffer(data, dtype=d) if data else torch.empty(0, dtype=d)
    x = flat.as_strided(ints(sizes), ints(strides), int(offset))
    return x.to(torch.float64) if wide and d.is_floating_point else x


def evaluate(directory, lines, wide, tag):
    run = Run(wide)
    outputs = []
    try:
        for line in lines:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "input":
                run.env[w[1]] = load_input(directory, w, wide)
            elif w[0] == "output":
                outputs = [run.env[n] for n in w[1:]]
            else:
                eq = w.index("=")
                results = run.call(w[eq + 1], w[eq + 2:])
                for name, value in zip(w[:eq], results):
                    run.env[name] = value
    except Exception as e:  # torch's errors: RuntimeError, ZeroDivisionError, IndexError, ...
        with open(os.path.join(directory, f"torch_{tag}.txt"), "w") as f:
            f.write("error " + (type(e).__name__ + ": " + str(e)).replace("\n", " ") + "\n")
        return
    with open(os.path.join(directory, f"torch_{tag}.txt"), "w") as f:
        for k, out in enumerate(outputs):
            sizes = ",".join(str(s) for s in out.shape)
            strides = ",".join(str(s) for s in out.stride())
            f.write(f"out {k} {NAMES[out.dtype]} [{sizes}] [{strides}]\n")
            flat = torch.empty(out.numel(), dtype=out.dtype)
            flat.copy_(out.detach().reshape(-1))
            raw = flat.view(torch.uint8)
            with open(os.path.join(directory, f"{tag}_{k}.bin"), "wb") as b:
                b.write(raw.numpy().tobytes())


def main():
    torch.set_num_threads(1)
    for directory in sys.argv[1:]:
        with open(os.path.join(directory, "program.txt")) as f:
            lines = f.read().splitlines()
        for wide, tag in ((False, "native"), (True, "f64")):
            # In a child process: PyTorch itself can die (SIGFPE for INT64_MIN // -1 with
            # rounding_mode="trunc"); that program then has no PyTorch result, the others do.
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    if wide:  # float64 throughout: floats made from integers and scalars too
                        torch.set_default_dtype(torch.float64)
                    evaluate(directory, lines, wide, tag)
                except BaseException:
                    code = 1
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            if os.WIFSIGNALED(status):
                with open(os.path.join(directory, f"torch_{tag}.txt"), "w") as f:
                    f.write(f"crash {os.WTERMSIG(status)}\n")


if __name__ == "__main__":
    main()

"""What PyTorch's derivative of a Core ATen call runs: the backward ops AOT autograd would hand a
backend, for `kiln ops --coverage`'s "differentiable" column (record_opinfo.py probes each overload
on its first recorded calls and writes DIR/derivatives.txt; docs/opinfo_replay.md is the format).

kiln has no autograd of its own: a model trains through `torch.compile(backend="kiln")`, where
PyTorch's AOT autograd derives the backward graph from PyTorch's derivative formulas and decomposes
it to Core ATen with core_aten_decompositions(), as done here. An overload is differentiable in kiln
when every op of its backward runs in kiln."""
import torch
from torch.utils._pytree import tree_flatten, tree_map


# PyTorch's words for a call it does not differentiate (an op without a derivative formula, out=
# variants, resizing): not a failure of the probe.
NOT_DIFFERENTIABLE = ("derivative for", "is not implemented", "don't support automatic differentiation",
                      "cannot resize variables that require grad", "is not differentiable")


class BackwardOps(torch.utils._python_dispatch.TorchDispatchMode):
    """Collects the ops a backward pass runs, after Core ATen decompositions: the Core ATen overloads
    reached, and any other op that has no decomposition (run as is)."""

    def __init__(self, core, decompositions):
        super().__init__()
        self.core, self.decompositions, self.ops = core, dict(decompositions), set()  # dict: see CoreAtenMode

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.name()
        if name not in self.core:
            decomposition = self.decompositions.get(func)
            if decomposition is not None:
                with self:
                    return decomposition(*args, **kwargs)
        if name not in ("aten::detach", "aten::alias"):  # autograd's own bookkeeping, no computation
            self.ops.add(name)
        return func(*args, **kwargs)


def backward_ops(func, args, kwargs, core, decompositions):
    """("grad", ops) with the backward ops of one call of `func`; ("none", ()) when PyTorch has nothing to
    differentiate (no floating-point input, or no output that requires grad); ("error", (message,))
    when the probe failed (a derivative PyTorch does not implement says so)."""
    leaves = []

    def leaf(v):
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            leaves.append(v.detach().clone().requires_grad_(True))
            return leaves[-1].clone()  # not the leaf itself: an in-place op may write its input
        return v

    # Arguments the op writes (running statistics, out=) are state, not inputs to differentiate.
    schema_args = func._schema.arguments if hasattr(func, "_schema") else []
    written = {a.name for a in schema_args if a.alias_info is not None and a.alias_info.is_write}
    positional = [a.name for a in schema_args if not a.kwarg_only]
    try:
        grad_args = [v if i < len(positional) and positional[i] in written else tree_map(leaf, v)
                     for i, v in enumerate(args)]
        grad_kwargs = {k: v if k in written else tree_map(leaf, v) for k, v in kwargs.items()}
        if not leaves:
            return "none", ()
        with torch.enable_grad():
            out = func(*grad_args, **grad_kwargs)
        outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor) and o.requires_grad]
        if not outs:
            return "none", ()
        seeds = [torch.ones_like(o) for o in outs]
        mode = BackwardOps(core, decompositions)
        with mode:
            torch.autograd.grad(outs, leaves, seeds, allow_unused=True)
        return "grad", tuple(sorted(mode.ops))
    except Exception as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        if any(reason in message for reason in NOT_DIFFERENTIABLE):
            return "none", ()
        return "error", ("%s: %s" % (type(e).__name__, message),)


def has_floating_tensor(args, kwargs):
    return any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in tree_flatten((args, kwargs))[0])


class DerivativeProbe:
    """Keeps each overload's first `per_overload` calls with a floating-point tensor argument (copies:
    a dispatch mode's __torch_dispatch__ runs below autograd, so the probes run afterwards, outside
    it), then probes them (run), keeping PyTorch's random state as it was. write() gives one line per
    overload: `<overload> grad <op>...` (the union of its probes' backward ops), `<overload> error
    <message>` when no probe succeeded and one failed, else `<overload> none`."""

    def __init__(self, core, decompositions, per_overload=4):
        self.core, self.decompositions, self.per_overload = core, dict(decompositions), per_overload
        self.calls = {}  # overload -> [(func, args, kwargs)]
        self.results = {}  # overload -> [(status, ops)]

    def probe(self, func, name, args, kwargs):
        kept = self.calls.setdefault(name, [])
        if len(kept) < self.per_overload and has_floating_tensor(args, kwargs):
            copy = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v  # noqa: E731
            kept.append((func, tree_map(copy, args), tree_map(copy, kwargs)))

    def run(self):
        state = torch.get_rng_state()
        for name, calls in self.calls.items():
            self.results[name] = [backward_ops(f, a, k, self.core, self.decompositions) for f, a, k in calls]
        torch.set_rng_state(state)

    def write(self, path):
        with open(path, "w") as f:
            for name in sorted(self.calls):
                found = self.results.get(name, [])
                grads = [ops for status, ops in found if status == "grad"]
                if grads:
                    f.write(" ".join([name, "grad"] + sorted(set().union(*grads))) + "\n")
                elif any(status == "error" for status, _ in found):
                    message = next(ops[0] for status, ops in found if status == "error")
                    f.write("%s error %s\n" % (name, message.replace("\n", " ")))
                else:
                    f.write("%s none\n" % name)

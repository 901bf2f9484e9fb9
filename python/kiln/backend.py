"""``torch.compile(model, backend="kiln")``.

TorchDynamo captures FX graphs from Python code; AOT autograd (PyTorch's) functionalizes them,
decomposes them with PyTorch's Core ATen decomposition table, and splits training graphs into forward
and backward graphs. Each graph then goes to :func:`compile_graph`, which imports it into kiln
(:mod:`kiln._fx`) and compiles it with ``kiln::compile``'s pipeline. A graph with nodes kiln cannot
take is partitioned: kiln compiles the regions it supports and PyTorch runs the rest; the log
(logger ``kiln``) names every op that fell back, and :data:`stats` counts them.

Options (``torch.compile(..., options={...})``):

``backend``
    kiln's backend for the graphs: ``"inductor"`` (default; fused, generated C++) or ``"eager"``
    (kiln's kernels op by op).
``log``
    ``True`` logs each graph kiln compiles (its op counts) at INFO level on logger ``kiln``.
``emulate_precision_casts``
    Round every 16-bit op as eager does (Inductor's option of the same name).
``check``
    ``True``: each graph's first call with an input signature also runs kiln eagerly and compares
    (KILN_CHECK=1 does the same); a mismatch raises ``kiln.Error`` with the graph reduced to the
    fewest calls that still differ, written to ``KILN_CHECK_DIR`` (default ``./kiln-check``) as IR
    text and ``.npy`` inputs for ``kiln check DIR``.

Shapes are static: a graph with symbolic sizes (Dynamo marks sizes dynamic after a recompile) runs in
PyTorch, and kiln specializes each concrete shape through its guards. Pass ``dynamic=False`` to
``torch.compile`` to have Dynamo recompile per shape instead.
"""

from __future__ import annotations

import collections
import copy
import logging
import operator
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx

from . import _kiln
from ._fx import FxImporter, ImportedGraph, Unsupported, target_name

log = logging.getLogger("kiln")

#: What the backend did in this process: graphs compiled whole, graphs partitioned, graphs left to
#: PyTorch, and each op that fell back (by name) with how many nodes. ``reset_stats()`` clears it.
stats: dict[str, Any] = {}


def reset_stats() -> None:
    stats.clear()
    stats.update(graphs=0, partitioned=0, fallback_graphs=0, kiln_regions=0, fallback_ops=collections.Counter())


reset_stats()

_OPTIONS = {"backend", "log", "emulate_precision_casts", "check"}


@dataclass(frozen=True)
class Options:
    backend: str = "inductor"
    log: bool = False
    emulate_precision_casts: bool = False
    check: bool = False

    @staticmethod
    def parse(options: dict[str, Any] | None) -> "Options":
        options = dict(options or {})
        unknown = set(options) - _OPTIONS
        if unknown:
            raise _kiln.Error(f"torch.compile(backend='kiln'): unknown option(s) {sorted(unknown)}; kiln takes {sorted(_OPTIONS)}")
        backend = options.get("backend", "inductor")
        if backend not in ("inductor", "eager"):
            raise _kiln.Error(f"torch.compile(backend='kiln'): option backend={backend!r}; expected 'inductor' or 'eager'")
        return Options(
            backend,
            bool(options.get("log", False)),
            bool(options.get("emulate_precision_casts", False)),
            bool(options.get("check", False)),
        )


class KilnGraph:
    """A graph imported into kiln and compiled, called with the FX graph's arguments (boxed)."""

    def __init__(self, imported: ImportedGraph, options: Options):
        # An instance attribute, not a class one: AOT autograd wraps backward graphs in
        # torch._dynamo.disable, whose functools.wraps copies the instance's __dict__ only; a
        # wrapper without the flag would be called unboxed (one argument per input).
        self._boxed_call = True
        self.imported = imported
        self.compiled = _kiln.CompiledGraph(
            imported.graph, options.backend, options.emulate_precision_casts, options.check
        )

        # Per call, the fast path: PyTorch's strides as tuples (compared first, as a whole), and
        # whether the results map one to one onto the FX outputs.
        self._strides = [tuple(s) if s else None for s in imported.output_strides]
        self._direct = all(o[0] == "value" and o[1] == i for i, o in enumerate(imported.outputs)) and len(
            imported.outputs
        ) == len(imported.output_strides)

    def __call__(self, args: list[Any]) -> Any:
        inputs = args + self.imported.constants if self.imported.constants else list(args)
        args.clear()  # the boxed convention: inputs may be freed as soon as they are used
        tensors = self.compiled.run_torch(inputs)
        for i, strides in enumerate(self._strides):
            t = tensors[i]
            if strides is not None and t.stride() != strides and not _same_strides(t, strides):
                # PyTorch code after the graph may rely on the layout PyTorch recorded (a .view()),
                # unless its elements overlap in memory (a slice_scatter of an overlapping input):
                # a copy into that would keep whichever element it wrote last.
                if _non_overlapping(t.shape, strides):
                    tensors[i] = torch.empty_strided(t.shape, strides, dtype=t.dtype, device=t.device).copy_(t)
        if self._direct:
            out = tensors
        else:
            out = []
            for o in self.imported.outputs:
                if o[0] == "value":
                    out.append(tensors[o[1]])
                elif o[0] == "none":
                    out.append(None)
                else:
                    out.append(o[1])
        return out if self.imported.output_is_tuple else out[0]


def _non_overlapping(shape: torch.Size, strides: tuple[int, ...]) -> bool:
    """Whether no two elements of a tensor of this shape and these strides share memory."""
    span = 0  # the reach of the dims already placed, innermost (smallest stride) first
    for size, stride in sorted(((n, s) for n, s in zip(shape, strides) if n > 1), key=lambda d: d[1]):
        if stride <= span:
            return False
        span += (size - 1) * stride
    return True


def _same_strides(t: torch.Tensor, strides: list[int]) -> bool:
    return all(size <= 1 or s == e for size, s, e in zip(t.shape, t.stride(), strides))


class _KilnModule(torch.nn.Module):
    """A region of a partitioned graph that kiln runs (called by its parent graph's call_module)."""

    def __init__(self, graph: KilnGraph):
        super().__init__()
        self.graph = graph

    def forward(self, *args):
        return self.graph(list(args))


def _counts(ops: collections.Counter) -> str:
    """"aten::add.Tensor x2, aten::mm x1": how the log names ops."""
    return ", ".join(f"{op} x{n}" for op, n in sorted(ops.items()))


def _import(gm: torch.fx.GraphModule, example_inputs: list[Any], source: str) -> ImportedGraph:
    return FxImporter(gm, example_inputs, source).run()


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], options: Options = Options()) -> Callable:
    """Compiles one functional Core ATen FX graph (AOT autograd's compiler interface): a boxed
    callable. Nodes kiln cannot take are left to PyTorch (see the module's documentation)."""
    # AOT autograd calls its compilers under its FakeTensorMode, which refuses the graph's real
    # constants (a torch.tensor(0.) lifted into the graph): detaching or copying one would raise.
    with torch._subclasses.fake_tensor.unset_fake_temporarily():
        return _compile_graph(gm, example_inputs, options)


def _compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], options: Options) -> Callable:
    stats["graphs"] += 1
    try:
        imported = _import(gm, example_inputs, "torch.compile graph")
    except Unsupported as first:
        return _partition(gm, example_inputs, options, first)
    if options.log:
        log.info("kiln compiles a graph of %d ops: %s", len(imported.ops), _counts(collections.Counter(imported.ops)))
    stats["kiln_regions"] += 1
    return KilnGraph(imported, options)


def _static_unsupported(gm: torch.fx.GraphModule) -> dict[str, str]:
    """Nodes kiln cannot take whatever their neighbours: Python operators, ops kiln lacks, and the
    getitems of their tuples."""
    bad: dict[str, str] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            source = node.args[0]
            if isinstance(source, torch.fx.Node) and source.name in bad:
                bad[node.name] = "getitem"
        elif not isinstance(node.target, torch._ops.OpOverload) or not _kiln.has_op(target_name(node)):
            bad[node.name] = target_name(node)
    return bad


def _partition(gm: torch.fx.GraphModule, example_inputs: list[Any], options: Options, first: Unsupported) -> Callable:
    """Kiln compiles the regions of `gm` it supports; PyTorch runs the rest."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    bad = _static_unsupported(gm)
    bad.setdefault(first.node, first.op)
    reasons = {first.node: first.reason}

    class Support(OperatorSupportBase):
        def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
            return node.op == "call_function" and node.name not in bad

    # Each round partitions a fresh copy; a region whose import fails names the node, which leaves
    # kiln for the next round. Every round removes a node, so this ends.
    while True:
        parent = copy.deepcopy(gm)
        partitioner = CapabilityBasedPartitioner(parent, Support(), allows_single_node_partition=True)
        partitions = partitioner.propose_partitions()
        if not partitions:
            fused = parent
            regions = []
            break
        fused = partitioner.fuse_partitions(partitions)
        try:
            regions = _compile_regions(fused, options)
            break
        except Unsupported as e:
            if e.node in bad or e.node == "graph":
                regions = None
                break
            bad[e.node] = e.op
            reasons[e.node] = e.reason
    ops = collections.Counter(bad.values())
    stats["fallback_ops"].update(ops)
    why = "".join(f"\n  {node}: {reason}" for node, reason in reasons.items())
    if regions is None or not regions:
        stats["fallback_graphs"] += 1
        log.warning("kiln: PyTorch runs this graph; kiln cannot take %s%s", _counts(ops), why)
        return _boxed(gm)
    stats["partitioned"] += 1
    stats["kiln_regions"] += len(regions)
    log.warning(
        "kiln: ops that fell back to PyTorch: %s (%d kiln regions)%s",
        _counts(ops),
        len(regions),
        why,
    )
    return _boxed(fused)


def _compile_regions(fused: torch.fx.GraphModule, options: Options) -> list[KilnGraph]:
    regions = []
    for node in fused.graph.nodes:
        if node.op != "call_module":
            continue
        sub = getattr(fused, node.target)
        examples = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in node.args]
        imported = _import(sub, examples, f"torch.compile graph, region {node.target}")
        graph = KilnGraph(imported, options)
        regions.append(graph)
        setattr(fused, node.target, _KilnModule(graph))
    fused.recompile()
    return regions


def _boxed(gm: torch.fx.GraphModule) -> Callable:
    def run(args: list[Any]) -> Any:
        inputs = list(args)
        args.clear()
        return gm(*inputs)

    run._boxed_call = True
    return run


def kiln_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict[str, Any] | None = None, **kwargs):
    """The TorchDynamo backend registered as ``"kiln"`` (entry point group ``torch_dynamo_backends``)."""
    if kwargs.get("mode") not in (None, "default"):
        raise _kiln.Error(f"torch.compile(backend='kiln'): mode={kwargs['mode']!r} is not supported; use options")
    opts = Options.parse(options)
    from torch._dynamo.backends.common import aot_autograd

    def compiler(graph: torch.fx.GraphModule, inputs: list[Any]) -> Callable:
        return compile_graph(graph, inputs, opts)

    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler, decompositions=_decompositions())(gm, example_inputs)


def _decompositions() -> dict[Any, Callable]:
    """PyTorch's Core ATen decompositions, less those a compiler must not take (as Inductor's table).

    ``_scaled_dot_product_flash_attention_for_cpu``'s decomposition (meant for export) returns the
    attention weights where the op returns its logsumexp. Under AOT autograd the forward is
    decomposed but its derivative still calls ``_scaled_dot_product_flash_attention_for_cpu_backward``
    with the saved "logsumexp": wrong gradients. kiln has the op itself (with a true logsumexp)."""
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    table.pop(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    return table

"""FX graphs of Core ATen calls into kiln graphs.

AOT autograd hands the backend functional FX graphs whose nodes call ATen overloads (Core ATen after
PyTorch's decomposition table) with metadata on every node (``node.meta["val"]``: a fake tensor).
This module turns one into calls of kiln's C++ ``GraphImporter`` — the importer the ``.pt2`` loader
feeds — and raises :class:`Unsupported`, naming the node, for anything kiln cannot take: an op kiln
lacks, symbolic sizes, a Python operator. The backend partitions around such nodes.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from . import _kiln


class Unsupported(Exception):
    """A node kiln cannot compile; ``node`` is its name, ``op`` what it calls."""

    def __init__(self, node: str, op: str, reason: str):
        super().__init__(f"node {node} ({op}): {reason}")
        self.node = node
        self.op = op
        self.reason = reason


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


#: Ops AOT autograd leaves in graphs that kiln runs as another op of the same schema and meaning:
#: lift_fresh_copy copies a tensor constant created in the traced code (``torch.tensor(0.)``).
_SAME_AS = {"aten::lift_fresh_copy": "aten::clone"}


def op_name(target: torch._ops.OpOverload) -> str:
    """``aten.add.Tensor`` -> ``aten::add.Tensor``; the default overload has no suffix."""
    name = target._schema.name
    overload = target._overloadname
    name = name if overload in ("default", "") else f"{name}.{overload}"
    return _SAME_AS.get(name, name)


def target_name(node: torch.fx.Node) -> str:
    if isinstance(node.target, torch._ops.OpOverload):
        return op_name(node.target)
    if node.op in ("placeholder", "get_attr", "output"):
        return node.op  # its target is a name, not an op: the log and stats must not count it as one
    return getattr(node.target, "__name__", str(node.target))


def _concrete_ints(values, node: torch.fx.Node, what: str) -> list[int]:
    out = []
    for v in values:
        if isinstance(v, torch.fx.Node) or isinstance(v, torch.SymInt):
            raise Unsupported(node.name, target_name(node), f"{what} is symbolic (kiln specializes static shapes)")
        out.append(int(v))
    return out


def tensor_meta(val: Any, node: torch.fx.Node) -> tuple[str, list[int], list[int], str]:
    """(dtype, sizes, strides, device) of a node's tensor value."""
    if not isinstance(val, torch.Tensor):
        raise Unsupported(node.name, target_name(node), f"its value is a {type(val).__name__}, not a tensor")
    if val.layout != torch.strided:
        raise Unsupported(node.name, target_name(node), f"layout {val.layout} is not strided")
    sizes = _concrete_ints(val.shape, node, "a size")
    strides = _concrete_ints(val.stride(), node, "a stride")
    device = val.device.type if val.device.index is None else f"{val.device.type}:{val.device.index}"
    return dtype_name(val.dtype), sizes, strides, device


def _is_tensor_type(t: Any) -> bool:
    return isinstance(t, torch.TensorType) or (
        isinstance(t, torch.OptionalType) and isinstance(t.getElementType(), torch.TensorType)
    )


def _list_element(t: Any) -> Any:
    if isinstance(t, torch.OptionalType):
        t = t.getElementType()
    return t.getElementType() if isinstance(t, torch.ListType) else None


@dataclass
class ImportedGraph:
    """A kiln graph made from an FX graph, and how to call it from the FX graph's calling convention."""

    graph: Any  # _kiln.Graph
    input_names: list[str]  # placeholders, then get_attr constants
    constants: list[torch.Tensor]  # values of the get_attr inputs, appended to each call's arguments
    outputs: list[Any]  # per FX output: ("value", index into the kiln graph's outputs), ("none",), ("const", v)
    output_strides: list[list[int]]  # PyTorch's strides for each kiln output
    output_is_tuple: bool  # whether the FX graph returns a tuple/list (else one value)
    ops: list[str] = field(default_factory=list)


class FxImporter:
    """Imports one FX graph module; ``example_inputs`` give each placeholder's metadata."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any], source: str):
        self.gm = gm
        self.example_inputs = example_inputs
        self.importer = _kiln.GraphImporter(source)
        self.names: dict[torch.fx.Node, str] = {}
        self.input_names: list[str] = []
        self.constants: list[torch.Tensor] = []
        self.ops: list[str] = []

    def run(self) -> ImportedGraph:
        nodes = list(self.gm.graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.example_inputs):
            raise Unsupported("graph", "placeholder", f"{len(placeholders)} placeholders, {len(self.example_inputs)} inputs")
        for node, example in zip(placeholders, self.example_inputs):
            self._input(node, example)
        for node in nodes:
            if node.op == "get_attr":
                value = getattr(self.gm, node.target)
                if not isinstance(value, torch.Tensor):
                    raise Unsupported(node.name, "get_attr", f"attribute {node.target} is not a tensor")
                self._input(node, value)
                self.constants.append(value.detach())
        output_node = None
        for node in nodes:
            if node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                output_node = node
            elif node.op not in ("placeholder", "get_attr"):
                raise Unsupported(node.name, node.op, f"{node.op} nodes are not supported")
        return self._output(output_node)

    def _input(self, node: torch.fx.Node, value: Any) -> None:
        dtype, sizes, strides, device = tensor_meta(value, node)
        self.importer.input(node.name, dtype, sizes, strides, device)
        self.names[node] = node.name
        self.input_names.append(node.name)

    def _arg(self, value: Any, arg_type: Any, node: torch.fx.Node, name: str) -> Any:
        if isinstance(value, torch.fx.Node):
            if value not in self.names:
                raise Unsupported(node.name, target_name(node), f"argument {name} ({value.name}) is not a tensor kiln has")
            return ("tensor", self.names[value])
        if isinstance(value, (list, tuple)):
            element = _list_element(arg_type)
            if any(isinstance(e, torch.fx.Node) for e in value) and not (element is not None and _is_tensor_type(element)):
                raise Unsupported(node.name, target_name(node), f"argument {name} holds symbolic values")
            if element is not None and _is_tensor_type(element):
                return ("tensors", [None if e is None else self._arg(e, element, node, name)[1] for e in value])
            if isinstance(element, torch.FloatType):
                return ("floats", [float(e) for e in value])
            if isinstance(element, torch.BoolType):
                return ("bools", [bool(e) for e in value])
            return ("ints", _concrete_ints(value, node, f"argument {name}"))
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise Unsupported(node.name, target_name(node), f"argument {name} is symbolic")
        if isinstance(value, torch.dtype):
            return ("dtype", dtype_name(value))
        if isinstance(value, torch.device):
            return ("device", str(value))
        if isinstance(value, torch.layout):
            return ("layout", "strided" if value == torch.strided else str(value))
        if isinstance(value, torch.memory_format):
            return ("memory_format", str(value).removeprefix("torch."))
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise Unsupported(node.name, target_name(node), f"argument {name} is a {type(value).__name__}")

    def _call(self, node: torch.fx.Node) -> None:
        if node.target is operator.getitem:
            if node.args[0] not in self.names and node not in self.names:
                raise Unsupported(node.name, "getitem", f"{node.args[0]} is not a tuple kiln produced")
            return  # named by the call that produced the tuple
        if not isinstance(node.target, torch._ops.OpOverload):
            raise Unsupported(node.name, target_name(node), "not an ATen operator")
        name = op_name(node.target)
        if not _kiln.has_op(name):
            raise Unsupported(node.name, name, "kiln has no kernel for this operator")
        schema = node.target._schema
        args = []
        for i, a in enumerate(schema.arguments):
            if not a.kwarg_only and i < len(node.args):
                value = node.args[i]
            elif a.name in node.kwargs:
                value = node.kwargs[a.name]
            else:
                continue  # the schema's default
            args.append((a.name, self._arg(value, a.type, node, a.name)))
        outputs, recorded = self._results(node, schema)
        try:
            self.importer.call(node.name, name, args, outputs, recorded)
        except _kiln.Error as e:
            raise Unsupported(node.name, name, str(e)) from e
        self.ops.append(name)

    def _results(self, node: torch.fx.Node, schema: Any) -> tuple[list[str], list[Any]]:
        val = node.meta.get("val")
        returns = schema.returns
        single = len(returns) == 1 and _is_tensor_type(returns[0].type)
        if single:
            self.names[node] = node.name
            return [node.name], [self._recorded(val, node)]
        if len(returns) == 1 and _list_element(returns[0].type) is not None:
            count = len(val) if isinstance(val, (list, tuple)) else None
        else:
            count = len(returns)
        if count is None:
            raise Unsupported(node.name, op_name(node.target), "the number of results is unknown")
        outputs = [""] * count
        for user in node.users:
            if user.op != "call_function" or user.target is not operator.getitem:
                raise Unsupported(node.name, op_name(node.target), f"its tuple is used by {user.name} whole")
            index = user.args[1]
            if outputs[index]:
                self.names[user] = outputs[index]  # a second getitem of the same result
            else:
                outputs[index] = user.name
                self.names[user] = user.name
        recorded = []
        for i in range(count):
            item = val[i] if isinstance(val, (list, tuple)) and i < len(val) else None
            recorded.append(self._recorded(item, node) if outputs[i] and item is not None else None)
        for i, r in enumerate(returns if not single and len(returns) == count else []):
            if outputs[i] and not _is_tensor_type(r.type):
                raise Unsupported(node.name, op_name(node.target), f"result {i} is a {r.type}, not a tensor")
        return outputs, recorded

    def _recorded(self, val: Any, node: torch.fx.Node):
        if not isinstance(val, torch.Tensor):
            return None
        dtype, sizes, _, _ = tensor_meta(val, node)
        return (dtype, sizes)

    def _output(self, node: torch.fx.Node) -> ImportedGraph:
        result = node.args[0]
        is_tuple = isinstance(result, (list, tuple))
        values = list(result) if is_tuple else [result]
        names: list[str] = []
        strides: list[list[int]] = []
        outputs: list[Any] = []
        for v in values:
            if v is None:
                outputs.append(("none",))
            elif isinstance(v, torch.fx.Node):
                if v not in self.names:
                    raise Unsupported(v.name, target_name(v), "a graph output kiln did not produce")
                name = self.names[v]
                if name not in names:
                    names.append(name)
                    val = v.meta.get("val")
                    if val is None and v.op == "placeholder":
                        val = self.example_inputs[self.input_names.index(name)]
                    strides.append(tensor_meta(val, v)[2] if isinstance(val, torch.Tensor) else [])
                outputs.append(("value", names.index(name)))
            elif isinstance(v, (bool, int, float)):
                outputs.append(("const", v))
            else:
                raise Unsupported("output", "output", f"a {type(v).__name__} output is not supported")
        graph = self.importer.output(names)
        return ImportedGraph(graph, self.input_names, self.constants, outputs, strides, is_tuple, self.ops)

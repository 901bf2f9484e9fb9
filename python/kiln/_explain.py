"""kiln.explain: what kiln makes of a Python function (``kiln explain`` for Python code)."""

from __future__ import annotations

from typing import Any, Callable

import torch

from . import _kiln
from ._fx import FxImporter, Unsupported


def explain_function(fn: Callable, example_inputs: tuple[Any, ...]) -> str:
    """Captures ``fn(*example_inputs)`` as torch.compile(backend="kiln") would (TorchDynamo, then AOT
    autograd's inference graph in Core ATen) and explains each graph."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    texts: list[str] = []

    def explain_graph(gm: torch.fx.GraphModule, inputs: list[Any]):
        index = len(texts) + 1
        try:
            imported = FxImporter(gm, inputs, f"kiln.explain graph {index}").run()
        except Unsupported as e:
            texts.append(f"#### graph {index}: PyTorch runs it (kiln cannot take {e})\n{gm.print_readable(False)}")
        else:
            text = _kiln.explain_graph(imported.graph, imported.input_names)
            texts.append(f"#### graph {index}: {len(imported.ops)} Core ATen ops from TorchDynamo\n{text}")

        def run(args):
            inputs = list(args)
            args.clear()
            return gm(*inputs)

        run._boxed_call = True
        return run

    backend = aot_autograd(fw_compiler=explain_graph, decompositions=core_aten_decompositions())
    with torch.no_grad():
        torch.compile(fn, backend=backend, dynamic=False)(*example_inputs)
    return "\n".join(texts)

"""kiln: PyTorch 2's compiler stack in C++, from Python.

``torch.compile(model, backend="kiln")`` compiles a model with kiln (the backend is registered on
install; no import needed). This package adds:

- :func:`compile` — the same, as a function: ``fast = kiln.compile(model)``;
- :func:`explain` — what kiln makes of a function: its IR levels, fusion plan and generated code;
- :func:`load` — a model exported by ``torch.export.save`` (``.pt2``), or a compiled ``.kiln``
  package, run by kiln with no PyTorch;
- :class:`Tensor` and :func:`from_dlpack` — kiln tensors, shared with PyTorch and NumPy through
  DLPack without copies (``torch.from_dlpack(kiln_tensor)``).

Errors from kiln's C++ core arrive as :class:`Error`, a ``RuntimeError`` with kiln's message.
"""

from __future__ import annotations

from typing import Any, Callable

from ._kiln import Error, Tensor, from_dlpack

__all__ = ["Error", "Tensor", "from_dlpack", "compile", "explain", "load"]
__version__ = "0.1.0"


def compile(fn: Callable | None = None, *, options: dict[str, Any] | None = None, **torch_compile_kwargs):
    """``torch.compile(fn, backend="kiln", options=options, ...)``; usable as a decorator."""
    import torch

    from .backend import kiln_backend

    if fn is None:
        return lambda f: compile(f, options=options, **torch_compile_kwargs)
    # Checked now, not at the first call, where TorchDynamo would wrap kiln.Error in its own error.
    from .backend import Options

    Options.parse(options)
    return torch.compile(fn, backend=kiln_backend, options=options, **torch_compile_kwargs)


def explain(fn: Callable, *example_inputs: Any) -> str:
    """What kiln makes of ``fn(*example_inputs)``, as ``kiln explain`` prints it: for each graph
    TorchDynamo captures, the ATen, Core ATen and prims graphs, the fused kernels with the memory plan,
    and the generated C++."""
    from ._explain import explain_function

    return explain_function(fn, example_inputs)


def load(path: str):
    """A model kiln runs with no PyTorch: ``model.pt2`` (``torch.export.save``) or ``model.kiln``
    (``kiln compile``). ``load(path)(*tensors)`` returns torch tensors."""
    from .model import LoadedModel

    return LoadedModel(path)

"""kiln.load: models exported by torch.export (``.pt2``) and compiled kiln packages (``.kiln``)."""

from __future__ import annotations

from typing import Any

from . import _kiln


def _to_torch(results: list[Any]):
    import torch

    return [torch.from_dlpack(t) for t in results]


class LoadedModel:
    """A ``.pt2`` or ``.kiln`` model. Calling it runs kiln (eager kernels for ``.pt2`` until
    :meth:`compile`; the package's compiled kernels for ``.kiln``) on tensors shared without copies,
    and returns torch tensors (the program's user outputs, in order)."""

    def __init__(self, path: str):
        self.path = path
        self._package = path.endswith(".kiln")
        self._model = _kiln.load_package(path) if self._package else _kiln.load_pt2(path)
        self._compiled = None

    @property
    def input_names(self) -> list[str]:
        return list(self._model.input_names)

    def compile(self, backend: str = "inductor") -> "LoadedModel":
        """Compiles a ``.pt2`` model with kiln (fused kernels, compiled on the first call); returns self."""
        if not self._package:
            self._compiled = self._model.compile(backend)
        return self

    def save_package(self, path: str) -> None:
        """Compiles a ``.pt2`` model ahead of time into a ``.kiln`` package (``kiln compile``):
        kernels and weights in one file that loads with no tracing and no C++ compiler."""
        if self._package:
            raise _kiln.Error(f"{self.path} is a package already")
        _kiln.compile_package(self._model, path)

    def __call__(self, *inputs: Any):
        runner = self._compiled or self._model
        return _to_torch(runner.run(list(inputs)))

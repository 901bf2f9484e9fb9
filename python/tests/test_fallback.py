"""The backend's fallback partitioning: graphs with nodes kiln cannot take still run, kiln compiling
the regions it supports and PyTorch running the rest, and saying so.

The unsupported op is a custom op registered here with torch.library (``kiln_test::mystery``: kiln
cannot know it, whatever kernels it gains), and for comparison a real ATen op kiln has no kernel for
(``aten::frexp.Tensor``, its mantissa; the first test checks that it is still missing, so the case
stays meaningful).
"""

from __future__ import annotations

import logging

import pytest
import torch

import kiln
import kiln.backend


@torch.library.custom_op("kiln_test::mystery", mutates_args=())
def mystery(x: torch.Tensor) -> torch.Tensor:
    return x.flip(-1) * 0.5


@mystery.register_fake
def _(x):
    return torch.empty_like(x)


def _frexp_mantissa(x):
    return torch.frexp(x).mantissa


UNSUPPORTED = {"kiln_test::mystery": mystery, "aten::frexp.Tensor": _frexp_mantissa}


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    kiln.backend.reset_stats()
    yield
    torch._dynamo.reset()


def _compile(fn, backend="eager", **kwargs):
    return torch.compile(fn, backend="kiln", options={"backend": backend}, **kwargs)


def test_the_unsupported_ops_are_unknown_to_kiln():
    assert not kiln._kiln.has_op("kiln_test::mystery")
    assert not kiln._kiln.has_op("aten::frexp.Tensor")
    assert kiln._kiln.has_op("aten::sin") and kiln._kiln.has_op("aten::mul.Tensor")


@pytest.mark.parametrize("backend", ["eager", "inductor"])
@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_unsupported_op_between_two_kiln_regions(name, backend, caplog):
    op = UNSUPPORTED[name]

    def f(x):
        y = (x * 2 + 1).sin()
        z = op(y)
        return (z.exp() - 3) * x

    x = torch.randn(4, 5)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        got = _compile(f, backend)(x)
    torch.testing.assert_close(got, f(x))
    stats = kiln.backend.stats
    assert stats["partitioned"] == 1 and stats["fallback_graphs"] == 0
    assert stats["kiln_regions"] >= 2
    # (frexp returns a tuple: the getitem reading its mantissa runs with it, in PyTorch.)
    assert {k: v for k, v in stats["fallback_ops"].items() if k != "getitem"} == {name: 1}
    messages = [r.getMessage() for r in caplog.records if r.name == "kiln"]
    assert any(name in m and "fell back" in m for m in messages), messages


def test_partitioned_graph_with_a_tensor_constant():
    """A tensor made in the traced code becomes a real constant of the graph AOT autograd hands the
    backend under its FakeTensorMode: partitioning copies the graph with it (this raised before the
    backend left fake mode while compiling) and kiln's region takes it as an input."""

    def f(x):
        return mystery(x * torch.tensor([1.0, -2.0, 3.0, 0.5, 2.0])) + torch.tensor(1.5)

    x = torch.randn(3, 5)
    torch.testing.assert_close(_compile(f)(x), f(x))
    assert kiln.backend.stats["partitioned"] == 1 and kiln.backend.stats["kiln_regions"] >= 1


def test_masked_std_tensor_constant_without_fallback():
    """The same constant (torch.tensor(0.) inside masked.std) in a graph kiln takes whole, with
    AOT autograd's lift_fresh_copy for it."""
    from torch.masked import std

    x = torch.randn(3, 4)
    mask = torch.rand(3, 4) > 0.3

    def f(x, mask):
        return std(x, 1, mask=mask)

    torch.testing.assert_close(_compile(f)(x, mask), f(x, mask), equal_nan=True)
    assert kiln.backend.stats["partitioned"] == 0 and kiln.backend.stats["kiln_regions"] == 1


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_every_node_falls_back(name, caplog):
    op = UNSUPPORTED[name]

    def f(x):
        return op(x)

    x = torch.randn(6, 2)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        got = _compile(f, "inductor")(x)
    torch.testing.assert_close(got, f(x))
    stats = kiln.backend.stats
    assert stats["fallback_graphs"] == 1 and stats["kiln_regions"] == 0 and stats["partitioned"] == 0
    assert any("PyTorch runs this graph" in r.getMessage() and name in r.getMessage() for r in caplog.records)


def test_symbolic_shapes_give_right_answers(caplog):
    """dynamic=True: Dynamo hands over graphs with symbolic sizes; kiln takes static shapes only, so
    the graph runs in PyTorch (or, should kiln specialize it, per shape); either way the answers are
    PyTorch's, and the log says why and names no placeholder as an op."""

    def f(x, y):
        return (x.sin() * y + 1).sum(0) / x.shape[0]

    fn = _compile(f, "eager", dynamic=True)
    with caplog.at_level(logging.WARNING, logger="kiln"):
        for n in (3, 5, 8, 13):
            x, y = torch.randn(n, 4), torch.randn(n, 4)
            torch.testing.assert_close(fn(x, y), f(x, y))
    stats = kiln.backend.stats
    assert stats["graphs"] >= 1
    assert stats["fallback_graphs"] + stats["kiln_regions"] >= 1
    if stats["fallback_graphs"]:
        text = "\n".join(r.getMessage() for r in caplog.records)
        assert "symbolic" in text, text
        assert not any(op.startswith("arg") for op in stats["fallback_ops"]), stats["fallback_ops"]


def test_static_shapes_recompile_per_shape():
    def f(x):
        return x.cos() + x

    fn = _compile(f, "eager", dynamic=False)
    for n in (2, 7):
        x = torch.randn(n, 3)
        torch.testing.assert_close(fn(x), f(x))
    assert kiln.backend.stats["kiln_regions"] == 2 and kiln.backend.stats["fallback_graphs"] == 0


def test_unknown_option_raises_kiln_error():
    with pytest.raises(kiln.Error, match="unknown option"):
        kiln.compile(lambda x: x + 1, options={"bogus": 1})
    with pytest.raises(kiln.Error, match="expected 'inductor' or 'eager'"):
        kiln.compile(lambda x: x + 1, options={"backend": "tvm"})
    # Through torch.compile kiln sees the options at the first call, and Dynamo wraps its error.
    with pytest.raises(RuntimeError) as info:
        torch.compile(lambda x: x + 1, backend="kiln", options={"bogus": 1})(torch.ones(2))
    inner = getattr(info.value, "inner_exception", info.value)
    assert isinstance(inner, kiln.Error) and "unknown option" in str(inner)


def test_kiln_error_from_cpp_is_a_runtime_error():
    assert issubclass(kiln.Error, RuntimeError)
    importer = kiln._kiln.GraphImporter("test")
    with pytest.raises(RuntimeError) as info:
        importer.call("n", "aten::no_such_op", [], ["n"], [None])
    assert type(info.value) is kiln.Error
    assert "aten::no_such_op" in str(info.value)
    with pytest.raises(kiln.Error):
        kiln.load("/nonexistent/model.pt2")

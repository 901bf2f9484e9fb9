"""kiln's Python API beside the backend: kiln.compile, kiln.explain, kiln.load, and errors."""

from pathlib import Path

import pytest
import torch

import kiln

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "models" / "fixtures"


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def test_compile_is_the_backend():
    torch._dynamo.reset()
    model = mlp()
    x = torch.randn(3, 16)
    fast = kiln.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))

    @kiln.compile(options={"backend": "eager"})
    def f(a, b):
        return torch.tanh(a) * b + 1

    a, b = torch.randn(5, 7), torch.randn(7)
    torch.testing.assert_close(f(a, b), torch.tanh(a) * b + 1)


def test_explain_shows_every_level():
    text = kiln.explain(lambda a, b: torch.softmax(a @ b, dim=-1), torch.randn(4, 8), torch.randn(8, 6))
    for section in ("== aten", "== core", "== prims", "== compiled", "== generated C++"):
        assert section in text, section
    assert "aten::mm" in text or "aten::matmul" in text
    assert 'extern "C"' in text


def test_load_pt2_runs_eager_and_compiled(tmp_path):
    path = FIXTURES / "mlp.pt2"
    if not path.exists():
        pytest.skip(f"{path} is missing (tests/models/export_models.py writes it)")
    import numpy as np

    model = kiln.load(str(path))
    assert model.input_names
    inputs = [torch.from_numpy(np.load(FIXTURES / "mlp" / f"input_{i}.npy")) for i in range(len(model.input_names))]
    want = [torch.from_numpy(np.load(FIXTURES / "mlp" / "output_0.npy"))]
    torch.testing.assert_close(model(*inputs)[0], want[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model.compile()(*inputs)[0], want[0], rtol=1e-4, atol=1e-5)
    package = tmp_path / "mlp.kiln"
    model.save_package(str(package))
    loaded = kiln.load(str(package))
    assert loaded.input_names == model.input_names
    torch.testing.assert_close(loaded(*inputs)[0], want[0], rtol=1e-4, atol=1e-5)


def test_errors_are_kiln_errors():
    with pytest.raises(kiln.Error, match="no such file|cannot open|mlp_missing"):
        kiln.load("/nonexistent/mlp_missing.pt2")
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(mlp(), backend="kiln", options={"no_such_option": 1})(torch.randn(2, 16))


def test_check_option_compares_with_eager(tmp_path, monkeypatch):
    # options={"check": True}: the first call of each graph also runs kiln eagerly and compares
    # (KILN_CHECK=1 does the same); right code passes, and nothing is written.
    monkeypatch.setenv("KILN_CHECK_DIR", str(tmp_path / "check"))
    torch._dynamo.reset()
    model = mlp()
    x = torch.randn(3, 16)
    fast = kiln.compile(model, options={"check": True})
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))
        torch.testing.assert_close(fast(x), model(x))
    assert not (tmp_path / "check").exists()

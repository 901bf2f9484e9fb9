"""The model zoo through ``torch.compile(backend="kiln")`` against eager PyTorch.

Inference: every model of tests/models (an MLP, a CNN with batch norm and pooling, a GPT block,
nn.TransformerEncoderLayer, the resnet18 and mobilenet_v3_small architectures, Hugging Face GPT-2,
BERT and ViT from small configs with random weights) in eval mode under no_grad, outputs compared
with eager's. Training: one step of the MLP, the CNN (batch norm in training mode) and GPT-2 with the
loss inside the compiled function; the loss, every parameter's gradient and batch norm's running
statistics compared with eager's, then the loss of a second step after an SGD step (the compiled
graphs read the updated parameters). Also: nn.TransformerEncoderLayer's fast path with norm_first
and GELU, and kiln.explain of the MLP.

The models, their inputs, batch norm calibration and the float32 tolerances come from
tests/models/export_models.py (the .pt2 fixtures' exporter), so these tests and the loader's test the
same models. Tolerances: a model whose float32 eager outputs differ from a float64 run by more than a
quarter of assert_close's float32 defaults gets a looser atol (a power of ten at least 4x that error),
since kiln is a second float32 implementation that may err as much in another direction. Gradients
get the same rule, per tensor.

Every compiling test also asserts that kiln compiled the graphs (``kiln.backend.stats``): at least one kiln
region and no op that fell back to PyTorch.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kiln
import kiln.backend

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "models"))
from architectures import hf_bert, hf_gpt2, hf_vit  # noqa: E402
from export_models import (  # noqa: E402
    build_cnn,
    build_encoder_layer,
    build_gpt_block,
    build_mlp,
    build_mobilenet,
    build_resnet18,
    calibrate_batch_norm,
    float64_error,
    flat_outputs,
    tolerance,
)

MODELS = {
    "mlp": build_mlp,
    "cnn": build_cnn,
    "gpt_block": build_gpt_block,
    "transformer_encoder_layer": build_encoder_layer,
    "resnet18": build_resnet18,
    "mobilenet_v3_small": build_mobilenet,
    "gpt2": hf_gpt2,
    "bert": hf_bert,
    "vit": hf_vit,
}
HF_MODELS = {"gpt2", "bert", "vit"}  # need Hugging Face transformers (no download: random weights)


def model_params(names):
    """pytest parameters for `names`, the Hugging Face models skipped where transformers is missing."""
    missing = importlib.util.find_spec("transformers") is None
    return [
        pytest.param(n, marks=pytest.mark.skipif(missing and n in HF_MODELS, reason="transformers is not installed"))
        for n in names
    ]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test compiles its own graphs and counts them from zero."""
    torch._dynamo.reset()
    kiln.backend.reset_stats()
    yield
    torch._dynamo.reset()


def assert_kiln_compiled_everything(min_regions: int = 1) -> None:
    stats = kiln.backend.stats
    assert stats["kiln_regions"] >= min_regions, stats
    assert not stats["fallback_ops"], f"ops fell back to PyTorch: {dict(stats['fallback_ops'])}"
    assert stats["fallback_graphs"] == 0, stats


def build(name: str):
    """The model and its inputs as the exporter builds them (same seed)."""
    torch.manual_seed(list(MODELS).index(name) + 1)
    model, inputs = MODELS[name]()
    model.eval()
    calibrate_batch_norm(model, inputs)
    return model, tuple(inputs)


# --------------------------------------------------------------------------------------------------
# Inference.


@pytest.mark.parametrize("name", model_params(MODELS))
def test_inference_matches_eager(name):
    model, inputs = build(name)
    with torch.no_grad():
        want = flat_outputs(model(*inputs))
        got = flat_outputs(torch.compile(model, backend="kiln")(*inputs))
    abs_err, _ = float64_error(model, inputs, want)
    rtol, atol, why = tolerance(abs_err)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, msg=lambda m: f"{name} output {i} ({why}): {m}")
    assert_kiln_compiled_everything()


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_fast_path_variants(norm_first):
    """nn.TransformerEncoderLayer in eval mode under no_grad calls one fused op,
    _transformer_encoder_layer_fwd, which kiln composes of the slow path's ops: both norm placements,
    with the exact GELU (the zoo's layer has ReLU and norm after)."""
    torch.manual_seed(7)
    layer = nn.TransformerEncoderLayer(32, 4, 64, activation="gelu", batch_first=True, norm_first=norm_first).eval()
    x = torch.randn(2, 8, 32)
    with torch.no_grad():
        want = layer(x)
        got = torch.compile(layer, backend="kiln")(x)
    torch.testing.assert_close(got, want, rtol=1.3e-6, atol=1e-5)
    assert_kiln_compiled_everything()


def test_explain_a_zoo_model():
    """kiln.explain captures the model as the backend does (AOT autograd hands it fake tensors) and
    prints every level for it."""
    model, inputs = build("mlp")
    text = kiln.explain(model, *inputs)
    for part in ("#### graph 1:", "== core:", "== prims:", "== compiled:"):
        assert part in text, text
    assert "aten::addmm" in text or "aten::mm" in text, text


# --------------------------------------------------------------------------------------------------
# Training: one step, gradients against eager's.


def without_dropout(model: nn.Module) -> nn.Module:
    """Training mode with every dropout probability 0, so that eager and kiln compute the same thing."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            # calibrate_batch_norm leaves a cumulative average (momentum None), which reads
            # num_batches_tracked as a Python float: a graph break. Training uses the default.
            m.momentum = 0.1
    model.train()
    return model


def classification_loss(model, x, target):
    return F.cross_entropy(model(x), target)


def lm_loss(model, input_ids):
    """GPT-2's language-model loss: each position predicts the next token."""
    (logits,) = model(input_ids)
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), input_ids[:, 1:].reshape(-1))


def training_case(name: str):
    torch.manual_seed(100 + list(MODELS).index(name))
    model, inputs = build(name)
    without_dropout(model)
    if name == "gpt2":
        return model, lm_loss, inputs
    (x,) = inputs
    classes = [m for m in model.modules() if isinstance(m, nn.Linear)][-1].out_features
    return model, classification_loss, (x, torch.randint(0, classes, (x.shape[0],)))


def reference_tolerance(t32: torch.Tensor, t64: torch.Tensor) -> tuple[float, float]:
    """rtol and atol for comparing kiln's float32 `t32` with eager's, from eager's error against the
    float64 run `t64` (export_models.tolerance's rule)."""
    rtol, atol, _ = tolerance(float((t32.detach().double() - t64.detach()).abs().max()))
    return rtol, atol


@pytest.mark.parametrize("name", model_params(["mlp", "cnn", "gpt2"]))
def test_training_step_matches_eager(name):
    model, loss_fn, inputs = training_case(name)
    eager = model
    ours = copy.deepcopy(model)
    ref64 = copy.deepcopy(model).double()
    inputs64 = tuple(x.double() if x.is_floating_point() else x for x in inputs)

    want = loss_fn(eager, *inputs)
    want.backward()
    loss64 = loss_fn(ref64, *inputs64)
    loss64.backward()
    compiled = torch.compile(lambda *a: loss_fn(ours, *a), backend="kiln")
    got = compiled(*inputs)
    got.backward()

    rtol_loss, atol_loss = reference_tolerance(want, loss64)
    torch.testing.assert_close(got, want, rtol=rtol_loss, atol=atol_loss)
    params64 = dict(ref64.named_parameters())
    for (pname, p), q in zip(eager.named_parameters(), ours.parameters()):
        assert q.grad is not None, f"{pname} has no gradient"
        rtol, atol = reference_tolerance(p.grad, params64[pname].grad)
        torch.testing.assert_close(q.grad, p.grad, rtol=rtol, atol=atol, msg=lambda m: f"{name} {pname}.grad: {m}")
    # Batch norm in training mode updates its running statistics as eager does.
    buffers64 = dict(ref64.named_buffers())
    for (bname, b), c in zip(eager.named_buffers(), ours.buffers()):
        if b.is_floating_point():
            rtol, atol = reference_tolerance(b, buffers64[bname])
            torch.testing.assert_close(c, b, rtol=rtol, atol=atol, msg=lambda m: f"{name} buffer {bname}: {m}")
        else:
            assert torch.equal(c, b), f"{name} buffer {bname}"
    assert_kiln_compiled_everything(min_regions=2)  # the forward and the backward graph

    # One SGD step on both, then another training step: the compiled graphs (no recompile: same
    # shapes, same grad mode) must read the updated parameters.
    for m in (eager, ours):
        torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9).step()
        m.zero_grad()
    regions = kiln.backend.stats["kiln_regions"]
    want = loss_fn(eager, *inputs)
    got = compiled(*inputs)
    torch.testing.assert_close(got, want, rtol=rtol_loss, atol=atol_loss)
    assert kiln.backend.stats["kiln_regions"] == regions, "the second step recompiled"

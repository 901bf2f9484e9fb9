#!/usr/bin/env python3
"""Exports models with PyTorch's torch.export into `.pt2` archives: the fixtures of kiln's loader.

For each model NAME this writes into the output folder (`--out`, default tests/models/fixtures):

  NAME.pt2            torch.export.save of the exported program after ep.run_decompositions()
                      (the Core ATen opset).
  NAME_aten.pt2       the same export WITHOUT run_decompositions: torch.export's default IR, an
                      ATen-level graph (composite ops kept) that the loader must decompose with
                      kiln's own tables, as a user's `torch.export.save(torch.export.export(...))`.
  NAME_legacy.pt2     (mlp only) the PyTorch 2.6/2.7 layout of torch.export.save: a plain zip of
                      `serialized_exported_program.json`, `serialized_state_dict.pt`,
                      `serialized_constants.pt`, `serialized_example_inputs.pt` and `version`,
                      built from torch._export.serde.serialize.serialize(ep)'s SerializedArtifact.
  NAME/input_<i>.npy  the user inputs, in the exported program's order.
  NAME/output_<i>.npy PyTorch's outputs of the eager run of the exported program (ep.module()).
  NAME/manifest.json  input names, dtypes and shapes; output count, dtypes and shapes; the
                      float32 tolerances (rtol/atol) a loader test should use, and why.

Every model (architectures.py) is built on the CPU in eval mode with seeded random weights and
inputs (nothing is downloaded: the Hugging Face models are built from small configs). resnet18 and
mobilenet_v3_small follow torchvision's architectures, defined there because torchvision is not
installed beside the pinned torch. Batch norm running statistics are calibrated on random batches
so that eval-mode batch norm is not the identity and activations stay well scaled.

The tolerances: float32 outputs are compared with a float64 run of the same model and weights; a
model keeps torch.testing.assert_close's float32 defaults (rtol 1.3e-6, atol 1e-5) when its float32
error against float64 is at most a quarter of what those defaults allow, and otherwise gets a
looser atol (a power of ten at least four times its measured error), since a second float32
implementation (kiln's) may err as much in another direction.

Usage: export_models.py [--out DIR] [--only NAME ...] [--list]
Prints, per model, the op overloads of each exported graph (sorted, with counts) and file sizes.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import logging
import math
import os
import re
import sys
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

# PyTorch 2.13's pickling of pytree specs (torch.export.save of the example inputs) warns about its
# own deprecated LeafSpec check: noise, not ours.
warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from architectures import (  # noqa: E402
    Cnn,
    GptBlock,
    MobileNetV3Small,
    Mlp,
    ResNet18,
    hf_bert,
    hf_gpt2,
    hf_vit,
)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "tests" / "models" / "fixtures"

# torch.testing.assert_close's float32 defaults.
DEFAULT_RTOL = 1.3e-6
DEFAULT_ATOL = 1e-5


# --------------------------------------------------------------------------------------------------
# The model list.


@dataclass
class Spec:
    name: str
    build: Callable[[], tuple[nn.Module, tuple]]
    committed: bool  # small enough for tests/models/fixtures
    aten: bool = True  # also write NAME_aten.pt2 (no run_decompositions: the default IR)
    legacy: bool = False  # also write NAME_legacy.pt2 (2.6/2.7 layout)


def build_mlp():
    return Mlp(), (torch.randn(4, 16),)


def build_cnn():
    return Cnn(), (torch.randn(2, 3, 16, 16),)


def build_encoder_layer():
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    return layer, (torch.randn(2, 8, 32),)


def build_gpt_block():
    return GptBlock(), (torch.randn(2, 8, 32),)


def build_resnet18():
    return ResNet18(), (torch.randn(1, 3, 64, 64),)


def build_mobilenet():
    return MobileNetV3Small(), (torch.randn(1, 3, 64, 64),)


SPECS = [
    Spec("mlp", build_mlp, committed=True, legacy=True),
    Spec("cnn", build_cnn, committed=True),
    Spec("transformer_encoder_layer", build_encoder_layer, committed=True),
    Spec("gpt_block", build_gpt_block, committed=True),
    Spec("resnet18", build_resnet18, committed=False),
    Spec("mobilenet_v3_small", build_mobilenet, committed=False),
    Spec("gpt2", hf_gpt2, committed=False),
    Spec("bert", hf_bert, committed=False),
    Spec("vit", hf_vit, committed=False),
]


# --------------------------------------------------------------------------------------------------
# Export and writing.


def calibrate_batch_norm(model: nn.Module, inputs: tuple, batches: int = 4) -> None:
    """Gives every BatchNorm random affine parameters and running statistics measured on random
    batches shaped like `inputs` (cumulative averages), then leaves the model in eval mode."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    with torch.no_grad():
        for bn in bns:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.1)
            bn.reset_running_stats()
            bn.momentum = None  # cumulative moving average
        model.train()
        for _ in range(batches):
            model(*(torch.randn(4, *x.shape[1:]) for x in inputs))
    model.eval()


def model_ops(archive: Path) -> collections.Counter:
    """Counts the node targets of every graph (subgraphs of higher-order ops too) in a .pt2 archive,
    new layout or 2.6/2.7 layout."""
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        json_name = next(
            (n for n in names if n.endswith("/models/model.json") or n == "serialized_exported_program.json"), None
        )
        program = json.loads(z.read(json_name))
    counts: collections.Counter = collections.Counter()

    def visit(graph):
        for node in graph["nodes"]:
            counts[node["target"]] += 1
            for arg in node["inputs"]:
                sub = arg["arg"].get("as_graph")
                if sub:
                    visit(sub["graph"])

    visit(program["graph_module"]["graph"])
    return counts


def write_legacy(ep, path: Path) -> None:
    """Writes `ep` as torch.export.save did in PyTorch 2.6 and 2.7: a plain zip (stored, not
    compressed) of the SerializedArtifact's four members and the schema version "<major>.<minor>".
    The entries' timestamps are fixed (1980-01-01) so that the file is reproducible."""
    from torch._export.serde.schema import SCHEMA_VERSION
    from torch._export.serde.serialize import serialize

    artifact = serialize(ep)
    members = [
        ("serialized_exported_program.json", artifact.exported_program),
        ("serialized_state_dict.pt", artifact.state_dict),
        ("serialized_constants.pt", artifact.constants),
        ("serialized_example_inputs.pt", artifact.example_inputs),
        ("version", ".".join(map(str, SCHEMA_VERSION)).encode()),
    ]
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def make_reproducible(ep) -> None:
    """Makes the serialized program depend only on the model: replaces the checkout's and the
    environment's absolute paths in the nodes' stack traces with `<repo>/` and `<site-packages>/`,
    and drops the `from_node` provenance (it records graph ids, which are Python object addresses)."""
    site = str(Path(torch.__file__).resolve().parents[1]) + os.sep
    repo = str(REPO) + os.sep
    for module in ep.graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            node.meta.pop("from_node", None)
            trace = node.meta.get("stack_trace")
            if trace:
                node.meta["stack_trace"] = trace.replace(site, "<site-packages>/").replace(repo, "<repo>/")


def flat_outputs(out) -> list[torch.Tensor]:
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [t.detach() for t in out]


def float64_error(model: nn.Module, inputs: tuple, outputs: list[torch.Tensor]) -> tuple[float, float]:
    """The float32 outputs' error against a float64 run of the same model: the largest absolute
    error, and the largest absolute error relative to the output's largest magnitude."""
    model64 = copy.deepcopy(model).double()
    with torch.no_grad():
        want = flat_outputs(model64(*(x.double() if x.is_floating_point() else x for x in inputs)))
    abs_err = max(float((o.double() - w).abs().max()) for o, w in zip(outputs, want))
    scale = max(float(w.abs().max()) for w in want)
    return abs_err, abs_err / scale


def tolerance(abs_err: float) -> tuple[float, float, str]:
    """rtol, atol and the reason (see the module docstring)."""
    if 4 * abs_err <= DEFAULT_ATOL:
        return DEFAULT_RTOL, DEFAULT_ATOL, "assert_close float32 defaults"
    atol = 10.0 ** math.ceil(math.log10(4 * abs_err))
    return (
        DEFAULT_RTOL,
        atol,
        f"float32 error against float64 is {abs_err:.2g}, over a quarter of the default atol; "
        f"atol is the power of ten at least 4x that",
    )


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def export_one(spec: Spec, out_dir: Path, seed: int) -> dict:
    torch.manual_seed(seed)
    model, inputs = spec.build()
    model.eval()
    calibrate_batch_norm(model, inputs)
    inputs = tuple(inputs)

    with torch.no_grad():
        eager = flat_outputs(model(*inputs))
    ep = torch.export.export(model, inputs)
    core = ep.run_decompositions()
    with torch.no_grad():
        outputs = flat_outputs(core.module()(*inputs))
    make_reproducible(core)
    # The decomposed program must agree with the model it came from.
    for o, e in zip(outputs, eager):
        torch.testing.assert_close(o, e)

    files = [out_dir / f"{spec.name}.pt2"]
    torch.export.save(core, files[0])
    if spec.aten:
        make_reproducible(ep)
        files.append(out_dir / f"{spec.name}_aten.pt2")
        torch.export.save(ep, files[-1])
    if spec.legacy:
        files.append(out_dir / f"{spec.name}_legacy.pt2")
        write_legacy(core, files[-1])
        # torch.export.load still reads the 2.7 layout: check ours round-trips. (It first tries the
        # new layout and logs that attempt's failure as a warning: quieted here.)
        export_log = logging.getLogger("torch.export")
        level = export_log.level
        export_log.setLevel(logging.ERROR)
        try:
            loaded = torch.export.load(files[-1])
        finally:
            export_log.setLevel(level)
        with torch.no_grad():
            for o, l in zip(outputs, flat_outputs(loaded.module()(*inputs))):
                torch.testing.assert_close(o, l, rtol=0, atol=0)

    data_dir = out_dir / spec.name
    data_dir.mkdir(parents=True, exist_ok=True)
    for old in data_dir.glob("*.npy"):
        old.unlink()
    for i, x in enumerate(inputs):
        np.save(data_dir / f"input_{i}.npy", x.numpy())
        files.append(data_dir / f"input_{i}.npy")
    for i, y in enumerate(outputs):
        np.save(data_dir / f"output_{i}.npy", y.numpy())
        files.append(data_dir / f"output_{i}.npy")

    abs_err, rel_err = float64_error(model, inputs, outputs)
    rtol, atol, why = tolerance(abs_err)
    sig = core.graph_signature
    manifest = {
        "model": spec.name,
        "torch_version": torch.__version__,
        "seed": seed,
        "archives": {
            "core_aten": f"{spec.name}.pt2",
            **({"aten": f"{spec.name}_aten.pt2"} if spec.aten else {}),
            **({"legacy_2_7": f"{spec.name}_legacy.pt2"} if spec.legacy else {}),
        },
        "inputs": [
            {"name": name, "file": f"input_{i}.npy", "dtype": dtype_name(x), "shape": list(x.shape)}
            for i, (name, x) in enumerate(zip(sig.user_inputs, inputs))
        ],
        "output_count": len(outputs),
        "outputs": [
            {"name": name, "file": f"output_{i}.npy", "dtype": dtype_name(y), "shape": list(y.shape)}
            for i, (name, y) in enumerate(zip(sig.user_outputs, outputs))
        ],
        "float32_tolerance": {"rtol": rtol, "atol": atol, "why": why},
        "float64_reference_error": {"max_abs": abs_err, "max_abs_over_max_magnitude": rel_err},
    }
    (data_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    files.append(data_dir / "manifest.json")
    return {"files": files, "manifest": manifest}


def op_name(target: str) -> str:
    """`torch.ops.aten.add.Tensor` -> `aten::add.Tensor`; other targets unchanged."""
    m = re.fullmatch(r"torch\.ops\.(\w+)\.(\w+)\.(\w+)", target)
    return f"{m[1]}::{m[2]}.{m[3]}" if m else target


def main(argv=None) -> int:
    names = [s.name for s in SPECS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    parser.add_argument("--only", action="append", choices=names, metavar="NAME",
                        help=f"export only this model (repeatable): {', '.join(names)}")
    parser.add_argument("--committed", action="store_true", help="export only the models committed to the repo")
    parser.add_argument("--large", action="store_true", help="export only the models not committed (the build tree's)")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args(argv)

    specs = SPECS
    if args.only:
        specs = [s for s in SPECS if s.name in args.only]
    if args.committed:
        specs = [s for s in specs if s.committed]
    if args.large:
        specs = [s for s in specs if not s.committed]
    if args.list:
        for s in specs:
            print(s.name, "committed" if s.committed else "build tree")
        return 0

    torch.set_num_threads(1)  # the same summation order every run
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        seed = SPECS.index(spec) + 1
        result = export_one(spec, args.out, seed)
        print(f"== {spec.name}")
        for f in result["files"]:
            if f.suffix == ".pt2":
                ops = model_ops(f)
                print(f"  {f.name}: {f.stat().st_size} bytes, {sum(ops.values())} nodes")
                for target, count in sorted(ops.items()):
                    print(f"    {count:4d}  {op_name(target)}")
        data = [f for f in result["files"] if f.suffix != ".pt2"]
        print(f"  {spec.name}/: {len(data)} files, {sum(f.stat().st_size for f in data)} bytes")
        tol = result["manifest"]["float32_tolerance"]
        print(f"  float32 tolerance: rtol {tol['rtol']:g} atol {tol['atol']:g} ({tol['why']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

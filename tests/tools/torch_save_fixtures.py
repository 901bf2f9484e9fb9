"""Writes torch.save archives, unpacked, for kiln's torch.save reader tests (src/kiln/import/torch_save_test.cpp).

Usage: python tests/tools/torch_save_fixtures.py OUT
For each case, OUT/<case>/ holds the archive's records as files (data.pkl, byteorder, data/<key>) and
expected.txt, one line per leaf of the saved value, tab-separated:
    <path>  tensor  <dtype>  <sizes>  <strides>  <offset>  <storage group>  <file of contiguous bytes>
    <path>  value   <repr>
A path is the keys and indices from the top, joined by "/"; sizes and strides are comma-separated; tensors
of one storage group share one storage. OUT/<case>/error.txt, where present, holds what kiln must refuse.
Cases: every kiln dtype as parameters of a state dict; views sharing a storage; 0-d, empty and expanded
tensors; nested containers (example inputs); one bare tensor (a use_pickle payload); and the state dict,
constants and example inputs of an exported program as torch._export.serde.serialize.serialize writes
them (the .pt2 layout of PyTorch 2.6/2.7).
"""
import collections
import io
import os
import sys
import zipfile

import torch

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def sample(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point and not dtype.is_complex:
        info = torch.iinfo(dtype)
        t = torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)
        flat = t.view(-1)
        if flat.numel() >= 2:
            flat[0], flat[1] = info.min, info.max
        return t
    t = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    flat = t.view(-1)
    specials = [float("nan"), float("inf"), float("-inf"), -0.0]
    for i, v in enumerate(specials[: flat.numel()]):
        flat[i] = v
    return t


def unpack(data, out):
    """Writes the records of a torch.save zip under out/, without the archive's root folder."""
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name in z.namelist():
            rel = name.split("/", 1)[1]
            if rel == "data.pkl" or rel == "byteorder" or rel.startswith("data/"):
                with open(os.path.join(out, rel), "wb") as f:
                    f.write(z.read(name))


class Expected:
    def __init__(self, out):
        self.out = out
        self.lines = []
        self.groups = {}

    def walk(self, path, v):
        if isinstance(v, torch.Tensor):
            i = len(self.lines)
            ptr = v.untyped_storage().data_ptr()
            key = ptr if ptr else ("empty", i)  # storages without memory are each their own
            group = self.groups.setdefault(key, len(self.groups))
            raw = v.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
            with open(os.path.join(self.out, f"expected_{i}.bin"), "wb") as f:
                f.write(raw)
            sizes = ",".join(str(s) for s in v.shape)
            strides = ",".join(str(s) for s in v.stride())
            dtype = str(v.dtype).replace("torch.", "")
            self.lines.append(f"{path}\ttensor\t{dtype}\t{sizes}\t{strides}\t{v.storage_offset()}\t{group}\texpected_{i}.bin")
        elif isinstance(v, (tuple, list, dict)) and len(v) == 0:
            self.lines.append(f"{path}\tvalue\t{v!r}")
        elif isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                self.walk(f"{path}/{i}", x)
        elif isinstance(v, dict):
            for k, x in v.items():
                self.walk(f"{path}/{k}", x)
        else:
            self.lines.append(f"{path}\tvalue\t{v!r}")

    def write(self):
        with open(os.path.join(self.out, "expected.txt"), "w") as f:
            f.write("\n".join(self.lines) + "\n")


def save_case(root, case, obj, saved=None):
    out = os.path.join(root, case)
    os.makedirs(out, exist_ok=True)
    if saved is None:
        buf = io.BytesIO()
        torch.save(obj, buf)
        saved = buf.getvalue()
    unpack(saved, out)
    e = Expected(out)
    if isinstance(obj, dict):
        for k, v in obj.items():
            e.walk(str(k), v)
    else:
        e.walk("", obj)
    e.write()


def error_case(root, case, obj, message):
    out = os.path.join(root, case)
    os.makedirs(out, exist_ok=True)
    buf = io.BytesIO()
    torch.save(obj, buf)
    unpack(buf.getvalue(), out)
    with open(os.path.join(out, "error.txt"), "w") as f:
        f.write(message)


class Exported(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.tensor([1.5, 2.0, 0.5]))
        self.register_buffer("table", torch.arange(6, dtype=torch.int64).reshape(2, 3), persistent=False)
        self.const = torch.tensor([[0.25, -1.0, 3.0]], dtype=torch.float64)

    def forward(self, x):
        return self.lin(x) * self.scale + self.const.float() + self.table[0]


def main(root):
    torch.manual_seed(0)
    sd = collections.OrderedDict()
    for i, dtype in enumerate(DTYPES):
        name = str(dtype).replace("torch.", "")
        grad = dtype.is_floating_point or dtype.is_complex
        sd[f"param_{name}"] = torch.nn.Parameter(sample(dtype, (3, 5), i), requires_grad=grad)
        sd[f"buffer_{name}"] = sample(dtype, (7,), 100 + i)
    save_case(root, "dtypes", sd)

    base = sample(torch.float32, (4, 6), 7)
    views = collections.OrderedDict()
    views["base"] = base
    views["row"] = base[2]                       # a view: offset 12
    views["slice"] = base[1:3, 1:5:2]            # non-contiguous, offset 7
    views["transposed"] = base.t()
    views["expanded"] = base[0, :1].expand(3, 5)  # stride 0
    views["scalar"] = torch.tensor(2.5, dtype=torch.float64)
    views["scalar_view"] = base[3, 4]            # 0-d view, offset 22
    views["empty"] = torch.empty(0, 3, dtype=torch.int32)
    views["empty_view"] = base[:, 2:2]
    views["other"] = torch.arange(5, dtype=torch.int16)[1:]
    save_case(root, "views", views)

    x = sample(torch.float32, (2, 3), 20)
    inputs = (
        (x, [x[1], {"mask": sample(torch.bool, (3,), 21), "n": 3}], (), None),
        {"scale": 0.5, "name": "gelu", "flag": True, "size": torch.Size([2, 3]), "device": torch.device("cpu"),
         "dtype": torch.bfloat16, "big": -(2 ** 40), "ids": sample(torch.int64, (4,), 22)},
    )
    save_case(root, "nested", inputs)

    m = Exported().eval()
    ep = torch.export.export(m, (torch.randn(2, 4),))
    from torch._export.serde.serialize import serialize
    artifact = serialize(ep)
    save_case(root, "ep_state_dict", dict(ep.state_dict), artifact.state_dict)
    save_case(root, "ep_constants", dict(ep.constants), artifact.constants)
    save_case(root, "ep_example_inputs", ep.example_inputs, artifact.example_inputs)
    # A use_pickle payload of a newer .pt2: torch.save of one tensor.
    save_case(root, "bare_tensor", sample(torch.bfloat16, (2, 3), 30).t())

    error_case(root, "uint16", {"u": torch.zeros(3, dtype=torch.uint16)}, "dtype torch.uint16 is not supported by kiln")
    error_case(root, "conj", {"c": torch.ones(2, dtype=torch.complex64).conj()}, "{'conj': True}")
    error_case(root, "module", {"m": torch.nn.ReLU()}, "global 'torch.nn.modules.activation.ReLU' is not allowed")


if __name__ == "__main__":
    main(sys.argv[1])

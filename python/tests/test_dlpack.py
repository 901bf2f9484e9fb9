"""kiln tensors and PyTorch/NumPy arrays share memory through DLPack, both ways, all shared dtypes."""

import numpy as np
import pytest
import torch

import kiln

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]


def sample(dtype, shape=(4, 6)):
    g = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randint(0, 100, shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_shares_memory(dtype):
    x = sample(dtype)
    k = kiln.from_dlpack(x)
    assert k.dtype == str(dtype).removeprefix("torch.")
    assert k.shape == [4, 6] and k.strides == [6, 1]
    assert k.data_ptr() == x.data_ptr()
    y = torch.from_dlpack(k)
    assert y.dtype == dtype and y.data_ptr() == x.data_ptr()
    assert torch.equal(y, x)


@pytest.mark.parametrize("view", ["transpose", "slice_step", "offset", "expand", "scalar", "empty"])
def test_non_contiguous_views_keep_strides(view):
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    x = {
        "transpose": base.t(),
        "slice_step": base[:, ::3],
        "offset": base[2:, 3:],
        "expand": torch.arange(4.0).reshape(4, 1).expand(4, 5),
        "scalar": torch.tensor(3.5),
        "empty": base[:0],
    }[view]
    k = kiln.from_dlpack(x)
    assert k.shape == list(x.shape) and k.strides == list(x.stride())
    y = torch.from_dlpack(k)
    assert y.stride() == x.stride() and torch.equal(y, x)
    if x.numel():
        assert y.data_ptr() == x.data_ptr()


def test_writes_are_shared():
    x = torch.zeros(3)
    y = torch.from_dlpack(kiln.from_dlpack(x))
    y[1] = 7
    assert x[1].item() == 7


def test_memory_outlives_the_producer():
    k = kiln.from_dlpack(torch.arange(5.0) * 2)  # the torch tensor is gone after this line
    y = torch.from_dlpack(k)
    del k
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_numpy_both_ways():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)[:, 1:]
    k = kiln.from_dlpack(a)
    assert k.shape == [3, 3] and k.strides == [4, 1] and k.dtype == "int32"
    b = np.from_dlpack(k)
    assert np.array_equal(a, b)


def test_requires_grad_tensor_is_read_detached():
    w = torch.randn(3, requires_grad=True)
    k = kiln.from_dlpack(w)
    assert k.data_ptr() == w.data_ptr()


def test_a_capsule_is_consumed_once():
    capsule = torch.arange(3.0).__dlpack__()
    kiln.from_dlpack(capsule)
    with pytest.raises(kiln.Error, match="unused DLPack capsule"):
        kiln.from_dlpack(capsule)


def test_bad_input_is_a_kiln_error():
    with pytest.raises(kiln.Error, match="from_dlpack"):
        kiln.from_dlpack([1, 2, 3])
    assert issubclass(kiln.Error, RuntimeError)

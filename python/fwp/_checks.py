"""Argument checks shared by the package's functions: each failure is an
exception naming the function, the argument, its shape and what was
expected."""

import torch


def fail(function, message, error=ValueError):
    raise error(f"fwp.{function}: {message}")


def check_tensor(function, name, t, shape, dtype, like, contiguous=True):
    """`t` is a CPU tensor of `shape` and `dtype` (that of the argument
    `like`), contiguous unless told otherwise."""
    if not isinstance(t, torch.Tensor):
        fail(function, f"{name} is a {type(t).__name__}, expected a "
             "torch.Tensor", TypeError)
    if t.device.type != "cpu":
        fail(function, f"{name} is on {t.device}; this version runs on CPU "
             "tensors only (CUDA tensors are not supported yet)")
    if tuple(t.shape) != tuple(shape):
        fail(function, f"{name} has shape {list(t.shape)}, expected "
             f"{list(shape)}")
    if t.dtype != dtype:
        fail(function, f"{name} is {t.dtype}, expected {dtype} like {like}",
             TypeError)
    if contiguous and not t.is_contiguous():
        fail(function, f"{name} (shape {list(t.shape)}) is not contiguous; "
             "fwp reads tensors in place, call .contiguous() first")

"""Argument checks shared by the package's functions: each failure is an
exception naming the function, the argument, its shape and what was
expected."""

import torch


def fail(function, message, error=ValueError):
    raise error(f"fwp.{function}: {message}")


def check_device(function, name, t):
    """`t` is on a device fwp runs on: the CPU or a CUDA device."""
    if t.device.type not in ("cpu", "cuda"):
        fail(function, f"{name} is on {t.device}; fwp runs on the CPU and on "
             "CUDA devices")


def check_tensor(function, name, t, shape, dtype, like, device=None):
    """`t` is a tensor of `shape` and `dtype` (that of the argument `like`)
    on `device` (that of `like`; None: any device fwp runs on)."""
    if not isinstance(t, torch.Tensor):
        fail(function, f"{name} is a {type(t).__name__}, expected a "
             "torch.Tensor", TypeError)
    if device is None:
        check_device(function, name, t)
    elif t.device != device:
        fail(function, f"{name} is on {t.device}, expected {device} like "
             f"{like}")
    if tuple(t.shape) != tuple(shape):
        fail(function, f"{name} has shape {list(t.shape)}, expected "
             f"{list(shape)}")
    if t.dtype != dtype:
        fail(function, f"{name} is {t.dtype}, expected {dtype} like {like}",
             TypeError)

"""The whole FastWeightsAttention module as one differentiable function.

`attention(x, w_q, w_k, w_v, w_beta, w_o, b_o, heads=...)` runs fwp's
compiled forward, and its backward under autograd: the layouts are the
seeds' (x [seq_len, batch, d_model]; nn.Linear weights [out, in]), so the
tensors go to the kernels by pointer, without copies.
"""

import math
import torch

from . import _capi
from ._checks import check_tensor, fail

_DTYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
}
RULES = ("delta", "sum")



class _Kernel(_capi.Handle):
    """One compiled description (fwp_attention); kept for the process."""

    def __init__(self, backend, dtype, rule, heads, d_head, nu, eps, chunk):
        super().__init__("fwp_attention_create", "fwp_attention_destroy",
                         backend.encode(), dtype.encode(), rule.encode(),
                         heads, d_head, nu, eps, chunk)
        self.cuda = backend == "cuda"

    def _call(self, name, device, *args):
        if self.cuda:
            function = getattr(self.lib, name + "_cuda")
            _capi.check(function(self.handle, _capi.cuda_call(device), *args))
        else:
            _capi.check(getattr(self.lib, name)(self.handle, *args))

    def forward(self, steps, batch, inputs, y):
        self._call("fwp_attention_forward", y.device, steps, batch,
                   *[t.data_ptr() for t in inputs], y.data_ptr())

    def backward(self, steps, batch, inputs, dy, grads):
        self._call("fwp_attention_backward", dy.device, steps, batch,
                   *[t.data_ptr() for t in inputs], dy.data_ptr(),
                   *[g.data_ptr() for g in grads])

    def prepare(self):
        """Compiles the forward and the backward now (or loads them from
        the disk cache); needs no GPU."""
        _capi.check(self.lib.fwp_attention_prepare(self.handle))


def _kernel(device, dtype, rule, heads, d_head, nu, eps, chunk):
    backend = "cuda" if device.type == "cuda" else "cpu"
    return _capi.cached(_Kernel, backend, _DTYPES[dtype], rule, heads, d_head,
                        nu, eps, chunk)


def _fail(message):
    fail("attention", message)


def _check_tensor(name, t, shape, dtype, device=None):
    check_tensor("attention", name, t, shape, dtype, like="x", device=device)


def _check_arguments(x, weights, heads, nu, eps, rule):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"fwp.attention: x is a {type(x).__name__}, expected "
                        "a torch.Tensor")
    if x.dtype not in _DTYPES:
        raise TypeError(f"fwp.attention: x is {x.dtype}; fwp runs float32, "
                        "float64, bfloat16 or float16")
    if x.dim() != 3:
        _fail(f"x has shape {list(x.shape)}, expected [seq_len, batch, "
              "d_model]")
    if rule not in RULES:
        _fail(f"rule is {rule!r}, expected 'delta' or 'sum'")
    d_model = x.shape[2]
    if not isinstance(heads, int) or heads < 1 or d_model % heads:
        _fail(f"heads = {heads!r} does not divide d_model = {d_model}")
    d_head = d_model // heads
    if not isinstance(nu, int) or not 1 <= nu <= 2 * d_head - 1:
        _fail(f"nu = {nu!r}, expected 1 <= nu <= 2 d_head - 1 = "
              f"{2 * d_head - 1}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        _fail(f"eps = {eps!r}, expected a finite number > 0")
    square = (d_model, d_model)
    shapes = [square, square, square, (heads, d_model), square, (d_model,)]
    _check_tensor("x", x, tuple(x.shape), x.dtype)
    for name, t, shape in zip(("w_q", "w_k", "w_v", "w_beta", "w_o", "b_o"),
                              weights, shapes):
        _check_tensor(name, t, shape, x.dtype, x.device)
    return d_head


class _AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, kernel, x, *weights):
        steps, batch, _ = x.shape
        y = torch.empty_like(x)
        kernel.forward(steps, batch, (x,) + weights, y)
        ctx.kernel = kernel
        ctx.save_for_backward(x, *weights)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, *weights = ctx.saved_tensors
        steps, batch, _ = x.shape
        dy = dy.contiguous()
        grads = [torch.empty_like(t) for t in [x] + weights]
        ctx.kernel.backward(steps, batch, [x] + weights, dy, grads)
        return (None,) + tuple(grads)


def attention(x, w_q, w_k, w_v, w_beta, w_o, b_o, *, heads, nu=1, eps=1e-6,
              rule="delta", chunk_size=None):
    """y = FastWeightsAttention(x) with DPFP(nu, eps) and the given rule.

    x, y: [seq_len, batch, d_model]; w_q, w_k, w_v, w_o: [d_model, d_model]
    and w_beta: [heads, d_model] (nn.Linear weights, no bias); b_o:
    [d_model]. All on one device (the CPU, or cuda:0: then in PyTorch's
    current stream), contiguous, of one dtype (float32, float64,
    bfloat16 or float16; 16-bit is storage only, the arithmetic is float32).
    Differentiable in x and every weight. w_beta is read by the delta rule
    only; under the sum rule its gradient is zero.
    """
    weights = (w_q, w_k, w_v, w_beta, w_o, b_o)
    d_head = _check_arguments(x, weights, heads, nu, eps, rule)
    if chunk_size is not None and (not isinstance(chunk_size, int) or
                                   chunk_size < 1):
        _fail(f"chunk_size = {chunk_size!r}, expected a positive int")
    kernel = _kernel(x.device, x.dtype, rule, heads, d_head, nu, float(eps),
                     chunk_size or 0)
    return _AttentionFunction.apply(kernel, x, *weights)

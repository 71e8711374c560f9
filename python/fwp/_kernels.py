"""The compiled modules the package calls: one handle of the C ABI per
kernel description (fwp_attention for the module, fwp_scan for the bare
scan), made on first use and kept for the process."""

import torch

from . import _capi

DTYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
}
RULES = ("delta", "sum")


def _ptr(t):
    return None if t is None else t.data_ptr()


class _Compiled(_capi.Handle):
    """A handle whose calls go to the C function `name`, or on a "cuda"
    module to `name`_cuda with the fwp_cuda_call of `device`."""

    def __init__(self, create, destroy, backend, *args):
        super().__init__(create, destroy, backend.encode(), *args)
        self.cuda = backend == "cuda"

    def _call(self, name, device, *args):
        if self.cuda:
            function = getattr(self.lib, name + "_cuda")
            _capi.check(function(self.handle, _capi.cuda_call(device), *args))
        else:
            _capi.check(getattr(self.lib, name)(self.handle, *args))


class Attention(_Compiled):
    """One compiled FastWeightsAttention description (fwp_attention)."""

    def __init__(self, backend, dtype, rule, heads, d_head, nu, eps, chunk):
        super().__init__("fwp_attention_create", "fwp_attention_destroy",
                         backend, dtype.encode(), rule.encode(), heads,
                         d_head, nu, eps, chunk)

    def forward(self, steps, batch, inputs, y):
        self._call("fwp_attention_forward", y.device, steps, batch,
                   *[_ptr(t) for t in inputs], _ptr(y))

    def backward(self, steps, batch, inputs, dy, grads):
        self._call("fwp_attention_backward", dy.device, steps, batch,
                   *[_ptr(t) for t in inputs], _ptr(dy),
                   *[_ptr(g) for g in grads])

    def prepare(self):
        """Compiles the forward and the backward now (or loads them from
        the disk cache); needs no GPU."""
        _capi.check(self.lib.fwp_attention_prepare(self.handle))


class Scan(_Compiled):
    """One compiled scan description (fwp_scan), on fla's batch-first
    layout."""

    def __init__(self, backend, dtype, rule, d_input, d_value, nu, eps,
                 chunk):
        super().__init__("fwp_scan_create", "fwp_scan_destroy", backend,
                         dtype.encode(), rule.encode(), b"batch_first",
                         d_input, d_value, nu, eps, chunk)

    def forward(self, steps, batch, heads, q, k, v, beta, initial, y, final):
        self._call("fwp_scan_forward", final.device, steps, batch, heads,
                   _ptr(q), _ptr(k), _ptr(v), _ptr(beta), _ptr(initial),
                   _ptr(y), _ptr(final))

    def backward(self, steps, batch, heads, inputs, dy, d_final, grads):
        self._call("fwp_scan_backward", grads[4].device, steps, batch, heads,
                   *[_ptr(t) for t in inputs], _ptr(dy), _ptr(d_final),
                   *[_ptr(g) for g in grads])

    def prepare(self):
        """Compiles both directions now (or loads them from the disk
        cache); needs no GPU."""
        _capi.check(self.lib.fwp_scan_prepare(self.handle))


def _backend(device):
    return "cuda" if device.type == "cuda" else "cpu"


def attention(device, dtype, rule, heads, d_head, nu, eps, chunk):
    return _capi.cached(Attention, _backend(device), DTYPES[dtype], rule,
                        heads, d_head, nu, eps, chunk)


def scan(device, dtype, rule, d_input, d_value, nu, eps, chunk):
    return _capi.cached(Scan, _backend(device), DTYPES[dtype], rule, d_input,
                        d_value, nu, eps, chunk)

"""After `pip install .` (test/python/pip-install.sh): the package and its
library come from the environment given as argv[1], not from the checkout;
the module runs forward and backward on the CPU; torch.compile with
fullgraph=True gives eager mode's outputs and gradients to 1e-6."""

import os
import sys

import torch

import fwp
from fwp import _capi

environment = os.path.realpath(sys.argv[1])
for what, path in (("package", fwp.__file__),
                   ("library", _capi.library_path())):
    path = os.path.realpath(path)
    assert path.startswith(environment + os.sep), f"{what} from {path}"
    print(f"{what}: {path}")

torch.manual_seed(0)
layer = fwp.nn.FastWeightsAttention(heads=2, d_model=16, dropout_prob=0.0,
                                    phi=fwp.nn.DPFP(1))
x, dy = torch.randn(24, 3, 16), torch.randn(24, 3, 16)


def run(module):
    leaf = x.clone().requires_grad_()
    layer.zero_grad()
    y = module(leaf)
    y.backward(dy)
    return [y.detach(), leaf.grad] + [p.grad.clone()
                                      for p in layer.parameters()]


eager = run(layer)
compiled = run(torch.compile(layer, fullgraph=True))
worst = max(float((a - b).abs().max() / b.abs().max())
            for a, b in zip(compiled, eager))
assert all(torch.isfinite(t).all() for t in eager)
assert worst < 1e-6, f"compiled against eager: {worst:.2e}"
print(f"forward and backward; torch.compile(fullgraph=True) against eager: "
      f"{worst:.1e}")

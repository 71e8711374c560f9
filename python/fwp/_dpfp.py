"""DPFP, the deterministic parameter-free projection (docs/delta-rule-math.md)."""

import torch
from torch import nn


class DPFP(nn.Module):
    """DPFP's normalised feature map phi'(k) (docs/delta-rule-math.md).

    Called on a tensor it computes the features in PyTorch (the last
    dimension, d -> 2 d nu); given to FastWeightsAttention as `phi`, its nu
    and eps are compiled into the kernels instead.
    """

    def __init__(self, nu: int = 1, eps: float = 1e-6):
        super().__init__()
        if not isinstance(nu, int) or nu < 1:
            raise ValueError(f"fwp.nn.DPFP: nu = {nu!r}, expected an int >= 1")
        if not eps > 0:
            raise ValueError(f"fwp.nn.DPFP: eps = {eps!r}, expected > 0")
        self.nu = nu
        self.eps = eps

    def forward(self, k: torch.Tensor) -> torch.Tensor:
        x = torch.relu(torch.cat([k, -k], dim=-1))
        rolled = torch.cat([x.roll(shifts=i, dims=-1)
                            for i in range(1, self.nu + 1)], dim=-1)
        phi = torch.cat([x] * self.nu, dim=-1) * rolled
        return phi / (phi.sum(dim=-1, keepdim=True) + self.eps)

    def extra_repr(self):
        return f"nu={self.nu}, eps={self.eps}"

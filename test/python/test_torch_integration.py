"""fwp inside PyTorch 2.x: the custom operators (PyTorch's own opcheck),
torch.compile with fullgraph=True against eager mode, torch.export, and
inputs of any strides, on the CPU."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_delta_rule import inputs, recurrence  # noqa: E402
from test_package import library, relative_error, weights_for  # noqa: E402,F401,E501

fwp = pytest.importorskip("fwp")


def scan_arguments(rule, initial, dtype=torch.float32, offsets=()):
    q, k, v, beta, state = [None if t is None else t.to(dtype) for t in
                            inputs(1 if offsets else 2, 12, 2, 4, 4, rule,
                                   1, initial)]
    if state is not None:
        sequences = len(offsets) - 1 if offsets else 2
        state = state[:1].expand(sequences, -1, -1, -1)
        state = state.transpose(-1, -2).contiguous()  # the kernels' order
    return (q, k, v, beta, state, rule, 1, 1e-6, 0, list(offsets))


@pytest.mark.parametrize("rule,initial,offsets", [
    ("delta", True, ()), ("sum", False, ()), ("delta", False, (0, 5, 12))])
def test_scan_operator_passes_opcheck(rule, initial, offsets):
    """PyTorch's checks of a custom op: schema, fake kernel against the
    real one, autograd registration, and the same under torch.compile."""
    args = scan_arguments(rule, initial, torch.float64, offsets)
    for t in args[:5]:
        if t is not None:
            t.requires_grad_()
    torch.library.opcheck(torch.ops.fwp.scan.default, args)


def test_attention_operator_passes_opcheck():
    x = torch.randn(6, 2, 16, dtype=torch.float64, requires_grad=True)
    w = [t.requires_grad_() for t in weights_for(16, 2, torch.float64)]
    torch.library.opcheck(torch.ops.fwp.attention.default,
                          (x, *w, 2, 1, 1e-6, "delta", 0))


def forward_and_grads(model, x, dy):
    x = x.detach().requires_grad_()
    y = model(x)
    y.backward(dy)
    return [y, x.grad] + [p.grad for p in model.parameters()]


class TwoLayers(torch.nn.Module):
    """fwp.nn layers between ordinary ones, as a model would use them."""

    def __init__(self, d_model=16, heads=2):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d_model)
        self.first = fwp.nn.FastWeightsAttention(heads, d_model, 0.0,
                                                 fwp.nn.DPFP(1))
        self.second = fwp.nn.FastWeightsAttention(heads, d_model, 0.0,
                                                  fwp.nn.DPFP(2), rule="sum")

    def forward(self, x):
        x = x + self.first(self.norm(x))
        return x + self.second(torch.tanh(x))


def test_compiled_model_equals_eager_with_no_graph_break():
    torch.manual_seed(0)
    eager = TwoLayers()
    compiled_model = TwoLayers()
    compiled_model.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_model, fullgraph=True, backend="eager")
    x, dy = torch.randn(20, 3, 16), torch.randn(20, 3, 16)
    want = forward_and_grads(eager, x, dy)
    got = forward_and_grads(compiled, x, dy)
    for a, b in zip(got, want):
        assert relative_error(a, b) < 1e-6


def test_inductor_compiles_the_scan_in_a_graph():
    """fullgraph: the scan is one node of the graph, with the projections
    around it compiled by inductor."""
    q, k, v, beta, _ = [t.float() for t in inputs(2, 10, 2, 4, 4, "delta", 0,
                                                   False)[:4]] + [None]
    w = torch.randn(4, 4)

    def step(q, k, v, beta):
        o, state = fwp.delta_rule(q @ w, k, v, torch.sigmoid(beta),
                                  output_final_state=True)
        return o.square().sum() + state.sum()

    leaves = [t.detach().requires_grad_() for t in (q, k, v, beta)]
    twins = [t.detach().requires_grad_() for t in (q, k, v, beta)]
    want = step(*leaves)
    want.backward()
    got = torch.compile(step, fullgraph=True)(*twins)
    got.backward()
    assert relative_error(got, want) < 1e-6
    for a, b in zip(twins, leaves):
        assert relative_error(a.grad, b.grad) < 1e-6


def test_export_of_a_model_runs_like_the_model():
    torch.manual_seed(1)
    model = TwoLayers().eval()
    x = torch.randn(9, 2, 16)
    exported = torch.export.export(model, (x,))
    targets = {str(n.target) for n in exported.graph.nodes}
    assert "fwp.attention.default" in targets
    other = torch.randn(9, 2, 16)
    assert relative_error(exported.module()(other), model(other)) < 1e-7


def test_any_strides_give_the_contiguous_result():
    q, k, v, beta, state = [t.float() if t is not None else None
                            for t in inputs(2, 7, 3, 4, 5, "delta", 1, True)]

    def strided(t):  # the same values, laid out time-major
        return t.transpose(0, 1).contiguous().transpose(0, 1)

    want = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1),
                          initial_state=state, output_final_state=True)
    got = fwp.delta_rule(strided(q), k[..., :], strided(v), strided(beta),
                         dpfp=fwp.DPFP(1), initial_state=strided(state),
                         output_final_state=True)
    for a, b in zip(got, want):
        assert torch.equal(a, b)
    layer = fwp.nn.FastWeightsAttention(3, 12, 0.0, fwp.nn.DPFP(1))
    x = torch.randn(2, 6, 12)  # batch-first, as a DDP slice may be
    assert torch.equal(layer(x.transpose(0, 1)),
                       layer(x.transpose(0, 1).contiguous()))


def test_scan_under_compile_matches_the_float64_recurrence():
    q, k, v, beta, state = inputs(1, 16, 2, 4, 4, "delta", 1, True)
    want, want_final = recurrence(q, k, v, beta, "delta", 1, state)
    run = torch.compile(fwp.delta_rule, fullgraph=True, backend="eager")
    got, final = run(q, k, v, beta, dpfp=fwp.DPFP(1), initial_state=state,
                     output_final_state=True)
    assert relative_error(got, want) < 1e-12
    assert relative_error(final, want_final) < 1e-12

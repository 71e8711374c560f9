"""fwp.fla, the drop-in for fla's delta rule, against fla's own naive
recurrence (test/python/fla_reference.py) and against the float64
recurrence of test_delta_rule.py: fla's defaults (scale K^-0.5), its
positional order, float32 states with 16-bit inputs, beta=None, headwise
beta, the L2 norm, packed sequences, strides, and decoding as fla does it.
fla's own test file runs against fwp.fla in `make fla-tests`."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_delta_rule import recurrence  # noqa: E402
from test_package import library, relative_error  # noqa: E402,F401

fwp = pytest.importorskip("fwp")
fla_reference = pytest.importorskip(
    "fla_reference", reason="fla-core (fla's naive recurrence) is missing: "
    "make python-env")
from fwp.fla import chunk_delta_rule, fused_recurrent_delta_rule  # noqa: E402,E501


def make(batch, steps, heads, d_key, d_value, dtype, seed=0, state=True,
         headwise=False):
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g)

    q = randn(batch, steps, heads, d_key)
    k = torch.nn.functional.normalize(randn(batch, steps, heads, d_key), dim=-1)
    v = randn(batch, steps, heads, d_value)
    gate_shape = (batch, steps, heads) + ((d_value,) if headwise else ())
    beta = torch.rand(*gate_shape, generator=g)
    h0 = randn(batch, heads, d_key, d_value) if state else None
    inputs = [t.to(dtype) for t in (q, k, v, beta)]
    return [t.requires_grad_() for t in inputs] + \
        [None if h0 is None else h0.requires_grad_()]


def outputs_and_grads(function, tensors, seed=1, **options):
    tensors = [None if t is None else t.detach().clone().requires_grad_()
               for t in tensors]
    q, k, v, beta, h0 = tensors
    o, ht = function(q, k, v, beta, initial_state=h0,
                     output_final_state=True, **options)
    g = torch.Generator().manual_seed(seed)
    do = torch.randn(o.shape, generator=g).to(o.dtype)
    dht = torch.randn(ht.shape, generator=g).to(ht.dtype)
    ((o * do).sum() + (ht * dht).sum()).backward()
    return [o, ht] + [t.grad for t in tensors if t is not None]


def err_ratio(ref, got):  # fla's measure (fla.utils.testing.get_err_ratio)
    ref, got = ref.detach().double(), got.detach().double()
    return float((ref - got).square().mean().sqrt() /
                 ref.square().mean().sqrt())


# With a state in or out, 16-bit inputs scan in float32 on both sides:
# the differences are the outputs' and gradients' last roundings.
@pytest.mark.parametrize("dtype,bound", [(torch.float32, 2e-6),
                                         (torch.bfloat16, 1e-4),
                                         (torch.float16, 1e-4)])
@pytest.mark.parametrize("options", [{}, {"scale": 0.3},
                                     {"use_qk_l2norm_in_kernel": True}])
def test_chunk_matches_fla_naive_recurrence(dtype, bound, options):
    tensors = make(2, 70, 2, 16, 12, dtype)
    want = outputs_and_grads(fla_reference.fused_recurrent_delta_rule,
                             tensors, **options)
    got = outputs_and_grads(chunk_delta_rule, tensors, **options)
    assert got[0].dtype == dtype and got[1].dtype == torch.float32
    assert got[1].is_contiguous()
    for a, b in zip(got, want):
        assert err_ratio(b, a) < bound


@pytest.mark.parametrize("dtype,bound", [(torch.bfloat16, 6e-3),
                                         (torch.float16, 1e-3)])
def test_16_bit_scan_without_states_within_fla_s_tolerance(dtype, bound):
    """No state in or out: the scan runs on the 16-bit inputs (rounded
    once after the scale); fla's tests allow 0.006 for o."""
    q, k, v, beta, _ = make(2, 70, 2, 16, 12, dtype, state=False)
    want, _ = fla_reference.fused_recurrent_delta_rule(q, k, v, beta, 0.3)
    got, none = chunk_delta_rule(q, k, v, beta, 0.3)
    assert none is None and got.dtype == dtype
    assert err_ratio(want, got) < bound


def test_default_scale_in_float64_matches_the_float64_recurrence():
    q, k, v, beta, h0 = [t.detach() for t in make(1, 30, 2, 8, 8,
                                                   torch.float64)]
    h0 = h0.double()
    want, want_final = recurrence(q * 8 ** -0.5, k, v, beta, "delta", 0, h0)
    got, final = chunk_delta_rule(q, k, v, beta, None, h0, True)  # fla's order
    assert relative_error(got, want) < 1e-12
    assert relative_error(final, want_final) < 1e-12
    assert final.dtype == torch.float64


def test_without_beta_the_gate_is_one():
    q, k, v, _, h0 = make(1, 20, 2, 8, 8, torch.float32)
    ones = torch.ones(v.shape[:3])
    got = fused_recurrent_delta_rule(q, k, v, None, 0.5, h0, True)
    want = fused_recurrent_delta_rule(q, k, v, ones, 0.5, h0, True)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype,bound", [(torch.float32, 2e-6),
                                         (torch.bfloat16, 1e-4)])
def test_headwise_beta_matches_fla_naive_recurrence(dtype, bound):
    tensors = make(2, 25, 2, 8, 6, dtype, headwise=True)
    want = outputs_and_grads(fla_reference.fused_recurrent_delta_rule,
                             tensors)
    got = outputs_and_grads(fused_recurrent_delta_rule, tensors)
    for a, b in zip(got, want):
        assert err_ratio(b, a) < bound


def test_packed_sequences_match_fla_naive_recurrence():
    tensors = make(1, 90, 2, 8, 8, torch.bfloat16)
    offsets = torch.tensor([0, 7, 64, 90], dtype=torch.int32)
    tensors[4] = torch.randn(3, 2, 8, 8).requires_grad_()
    want = outputs_and_grads(fla_reference.fused_recurrent_delta_rule,
                             tensors, cu_seqlens=offsets)
    got = outputs_and_grads(chunk_delta_rule, tensors, cu_seqlens=offsets)
    for a, b in zip(got, want):
        assert err_ratio(b, a) < 1e-4


def test_decoding_step_by_step_equals_the_sequence():
    q, k, v, beta, h0 = [t.detach() for t in make(2, 9, 2, 8, 8,
                                                   torch.bfloat16)]
    want, want_state = chunk_delta_rule(q, k, v, beta, initial_state=h0,
                                        output_final_state=True)
    state, outputs = h0, []
    for t in range(9):
        o, state = fused_recurrent_delta_rule(
            q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], beta[:, t:t + 1],
            initial_state=state, output_final_state=True)
        outputs.append(o)
    assert state.dtype == torch.float32
    assert relative_error(state, want_state) < 1e-6
    assert relative_error(torch.cat(outputs, 1), want) < 2.0 ** -8


def test_strided_inputs_give_the_contiguous_result():
    q, k, v, beta, h0 = [t.detach() for t in make(2, 12, 3, 8, 8,
                                                   torch.float32)]

    def strided(t):
        return t.transpose(0, 1).contiguous().transpose(0, 1)

    want = chunk_delta_rule(q, k, v, beta, initial_state=h0,
                            output_final_state=True)
    got = chunk_delta_rule(strided(q), strided(k), v, strided(beta),
                           initial_state=h0.transpose(-1, -2).contiguous()
                           .transpose(-1, -2), output_final_state=True)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


def test_bad_arguments_name_the_argument():
    q, k, v, beta, h0 = [t.detach() for t in make(1, 4, 2, 8, 8,
                                                   torch.float32)]
    with pytest.raises(ValueError, match=r"beta has shape \[1, 4\]"):
        chunk_delta_rule(q, k, v, beta[..., 0])
    with pytest.raises(ValueError, match="scale = -1"):
        chunk_delta_rule(q, k, v, beta, -1.0)
    with pytest.raises(TypeError, match="k is torch.float64"):
        chunk_delta_rule(q, k.double(), v, beta)
    with pytest.raises(TypeError, match=r"unexpected arguments \['gate'\]"):
        chunk_delta_rule(q, k, v, beta, gate=None)
    with pytest.raises(ValueError, match="initial_state has shape"):
        chunk_delta_rule(q, k, v, beta, initial_state=h0[:, :1])

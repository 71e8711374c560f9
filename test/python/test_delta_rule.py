"""fwp.delta_rule and fwp.delta_rule_step (fla's interface) against a
float64 step-by-step recurrence written here, autograd through it, and
finite differences (gradcheck), through fwp's compiled CPU scan."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "examples"))
import seeds_pytorch as seeds_reference  # noqa: E402
from test_package import library, relative_error  # noqa: E402,F401

fwp = pytest.importorskip("fwp")


def recurrence(q, k, v, beta, rule, nu, initial):
    """The scan step by step in fla's layouts: q, k [B, T, H, K], v
    [B, T, H, V], beta [B, T, H], state S [B, H, D, V] with o_t = q_t S_t
    after the step's write (docs/delta-rule-math.md, section 3)."""
    if nu:
        phi = seeds_reference.DPFP(nu)
        q, k = phi(q), phi(k)
    batch, steps, heads, d = k.shape
    state = initial if initial is not None else \
        k.new_zeros(batch, heads, d, v.shape[-1])
    outputs = []
    for t in range(steps):
        write = v[:, t]
        if rule == "delta":
            retrieved = torch.einsum("bhd,bhdv->bhv", k[:, t], state)
            write = beta[:, t, :, None] * (v[:, t] - retrieved)
        state = state + torch.einsum("bhd,bhv->bhdv", k[:, t], write)
        outputs.append(torch.einsum("bhd,bhdv->bhv", q[:, t], state))
    return torch.stack(outputs, dim=1), state


def inputs(batch, steps, heads, d_key, d_value, rule, nu, initial, seed=0):
    """float64 leaves: q, k, v, beta (None for the sum rule), initial."""
    g = torch.Generator().manual_seed(seed)
    d = 2 * d_key * nu if nu else d_key
    q = torch.randn(batch, steps, heads, d_key, generator=g,
                    dtype=torch.float64)
    k = torch.randn(batch, steps, heads, d_key, generator=g,
                    dtype=torch.float64)
    if not nu:  # features: keep the delta rule's writes contractive
        q, k = q.abs() / d_key, k.abs() / d_key
    v = torch.randn(batch, steps, heads, d_value, generator=g,
                    dtype=torch.float64)
    beta = torch.rand(batch, steps, heads, generator=g, dtype=torch.float64) \
        if rule == "delta" else None
    state = torch.randn(batch, heads, d, d_value, generator=g,
                        dtype=torch.float64) if initial else None
    return [q, k, v, beta, state]


def run_with_grads(function, tensors, seed=1):
    """o, the final state and the gradients of <o, do> + <final, dfinal>
    with respect to every tensor given."""
    leaves = [None if t is None else t.detach().clone().requires_grad_(True)
              for t in tensors]
    o, final = function(*leaves)
    g = torch.Generator().manual_seed(seed)
    do = torch.randn(o.shape, generator=g, dtype=torch.float64)
    dfinal = torch.randn(final.shape, generator=g, dtype=torch.float64)
    ((o.double() * do).sum() + (final.double() * dfinal).sum()).backward()
    return o.detach(), final.detach(), [None if t is None else t.grad
                                        for t in leaves]


CASES = [
    # batch, steps, heads, d_key, d_value, rule, nu, initial state
    (2, 80, 2, 8, 8, "delta", 1, True),     # a whole chunk and a part
    (1, 1, 3, 4, 4, "delta", 0, False),     # one step, features given
    (3, 70, 1, 16, 8, "delta", 0, True),    # K != V
    (2, 33, 2, 4, 8, "sum", 2, True),
    (1, 64, 2, 4, 4, "delta", 3, False),    # exactly one chunk, nu = 3
]


@pytest.mark.parametrize("batch,steps,heads,d_key,d_value,rule,nu,initial",
                         CASES)
def test_matches_the_recurrence_in_float32(batch, steps, heads, d_key,
                                           d_value, rule, nu, initial):
    tensors = inputs(batch, steps, heads, d_key, d_value, rule, nu, initial)
    expected = run_with_grads(
        lambda q, k, v, b, s: recurrence(q, k, v, b, rule, nu, s), tensors)

    def compiled(q, k, v, b, s):
        as32 = [None if t is None else t.float() for t in (q, k, v, b, s)]
        return fwp.delta_rule(*as32[:4], rule=rule,
                              dpfp=fwp.DPFP(nu) if nu else None,
                              initial_state=as32[4], output_final_state=True)

    o, final, grads = run_with_grads(compiled, tensors)
    assert o.dtype == torch.float32 and o.shape == expected[0].shape
    assert relative_error(o, expected[0]) < 1e-5
    assert relative_error(final, expected[1]) < 1e-5
    for name, grad, want in zip(("dq", "dk", "dv", "dbeta", "dinitial"),
                                grads, expected[2]):
        assert (grad is None) == (want is None), name
        if want is not None:
            assert relative_error(grad, want) < 1e-4, name


def test_float64_matches_to_round_off():
    tensors = inputs(2, 70, 2, 4, 4, "delta", 2, True)
    expected = run_with_grads(
        lambda q, k, v, b, s: recurrence(q, k, v, b, "delta", 2, s), tensors)
    got = run_with_grads(
        lambda q, k, v, b, s: fwp.delta_rule(
            q, k, v, b, dpfp=fwp.DPFP(2), initial_state=s,
            output_final_state=True), tensors)
    for a, b in zip(got[:2] + tuple(got[2]), expected[:2] + tuple(expected[2])):
        assert relative_error(a, b) < 1e-12


def test_gradients_match_finite_differences():
    q, k, v, beta, state = inputs(1, 9, 2, 3, 2, "delta", 1, True, seed=5)
    leaves = [t.requires_grad_(True) for t in (q, k, v, beta, state)]

    def run(q, k, v, beta, state):
        return fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1),
                              initial_state=state, output_final_state=True)

    assert torch.autograd.gradcheck(run, leaves, eps=1e-6, atol=1e-7,
                                    rtol=1e-5)


@pytest.mark.parametrize("rule", ["delta", "sum"])
def test_split_with_the_state_carried_equals_the_whole(rule):
    q, k, v, beta, state = inputs(2, 90, 2, 4, 4, rule, 1, True, seed=2)
    dpfp = fwp.DPFP(1)

    def part(a, b, initial):
        return fwp.delta_rule(q[:, a:b].contiguous(), k[:, a:b].contiguous(),
                              v[:, a:b].contiguous(),
                              None if beta is None else
                              beta[:, a:b].contiguous(), rule=rule, dpfp=dpfp,
                              initial_state=initial, output_final_state=True)

    whole, whole_final = part(0, 90, state)
    first, middle = part(0, 37, state)
    second, final = part(37, 90, middle)
    assert relative_error(torch.cat([first, second], dim=1), whole) < 1e-12
    assert relative_error(final, whole_final) < 1e-12


def test_packed_sequences_equal_each_alone():
    """Outputs, final states and every gradient of a packed batch against
    the recurrence run on each sequence alone from its own state."""
    lengths = [5, 70, 1, 33]
    offsets = torch.tensor([0] + lengths).cumsum(0)
    q, k, v, beta, _ = inputs(1, sum(lengths), 2, 4, 8, "delta", 1, False,
                              seed=3)
    state = torch.randn(len(lengths), 2, 8, 8, dtype=torch.float64)
    do = torch.randn(1, sum(lengths), 2, 8, dtype=torch.float64)
    dfinal = torch.randn(state.shape, dtype=torch.float64)

    def loss_and_grads(function, tensors):
        leaves = [t.detach().clone().requires_grad_(True) for t in tensors]
        o, final = function(*leaves)
        ((o * do).sum() + (final * dfinal).sum()).backward()
        return o.detach(), final.detach(), [t.grad for t in leaves]

    o, final, grads = loss_and_grads(
        lambda q, k, v, b, s: fwp.delta_rule(
            q, k, v, b, dpfp=fwp.DPFP(1), initial_state=s,
            output_final_state=True, cu_seqlens=offsets),
        [q, k, v, beta, state])
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        leaves = [t[:, a:b].detach().clone().requires_grad_(True)
                  for t in (q, k, v, beta)]
        leaves.append(state[i:i + 1].clone().requires_grad_(True))
        want_o, want_final = recurrence(*leaves[:4], "delta", 1, leaves[4])
        ((want_o * do[:, a:b]).sum() +
         (want_final * dfinal[i:i + 1]).sum()).backward()
        assert relative_error(o[:, a:b], want_o.detach()) < 1e-12
        assert relative_error(final[i:i + 1], want_final.detach()) < 1e-12
        for got, leaf in zip(grads[:4], leaves[:4]):
            assert relative_error(got[:, a:b], leaf.grad) < 1e-12
        assert relative_error(grads[4][i:i + 1], leaves[4].grad) < 1e-12


def check_steps_equal_the_scan(tensors, rule, bound):
    """delta_rule_step over each step of q, k, v, beta from `state` gives
    delta_rule's outputs and final state, within `bound`."""
    q, k, v, beta, state = tensors
    o, final = fwp.delta_rule(q, k, v, beta, rule=rule, dpfp=fwp.DPFP(1),
                              initial_state=state, output_final_state=True)
    for t in range(q.shape[1]):
        step, state = fwp.delta_rule_step(
            q[:, t].contiguous(), k[:, t].contiguous(), v[:, t].contiguous(),
            None if beta is None else beta[:, t].contiguous(), state,
            rule=rule, dpfp=fwp.DPFP(1))
        assert relative_error(step, o[:, t]) < bound
    assert relative_error(state, final) < bound


@pytest.mark.parametrize("rule", ["delta", "sum"])
def test_steps_of_delta_rule_step_equal_the_scan(rule):
    check_steps_equal_the_scan(inputs(2, 20, 3, 4, 4, rule, 1, True, seed=4),
                               rule, 1e-12)


def test_no_steps_pass_the_state_through():
    q, k, v, beta, state = inputs(2, 0, 2, 4, 4, "delta", 1, True)
    state.requires_grad_(True)
    o, final = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1),
                              initial_state=state, output_final_state=True)
    assert o.shape == (2, 0, 2, 4)
    assert torch.equal(final, state)
    dfinal = torch.randn_like(final)
    final.backward(dfinal)
    assert torch.equal(state.grad, dfinal)


def test_16_bit_storage():
    """bf16 inputs, float32 arithmetic: the output's own rounding (2^-8 of
    the largest output) plus the float32 bound, against the float64
    recurrence on the same rounded inputs."""
    tensors = inputs(2, 70, 2, 8, 8, "delta", 1, True)
    rounded = [t.to(torch.bfloat16) for t in tensors]
    with torch.no_grad():
        want_o, want_final = recurrence(*[t.double() for t in rounded[:4]],
                                        "delta", 1, rounded[4].double())
        o, final = fwp.delta_rule(*rounded[:4], dpfp=fwp.DPFP(1),
                                  initial_state=rounded[4],
                                  output_final_state=True)
    assert o.dtype == torch.bfloat16
    assert relative_error(o, want_o) < 2.0 ** -8 + 1.01e-5
    assert relative_error(final, want_final) < 2.0 ** -8 + 1.01e-5


def test_bad_arguments_raise_clear_errors():
    q, k, v, beta, _ = [t.float() if t is not None else None
                        for t in inputs(2, 6, 2, 4, 4, "delta", 0, False)]

    def call(q=q, k=k, v=v, beta=beta, **options):
        return fwp.delta_rule(q, k, v, beta, **options)

    with pytest.raises(ValueError, match=r"k has shape \[2, 6, 2, 3\]"):
        call(k=k[..., :3].contiguous())
    with pytest.raises(ValueError, match=r"beta has shape \[2, 6\]"):
        call(beta=beta[..., 0].contiguous())
    with pytest.raises(TypeError, match="q is torch.float64"):
        call(q=q.double())
    with pytest.raises(ValueError, match="on meta"):
        call(k=torch.empty(k.shape, device="meta"))
    with pytest.raises(ValueError, match="needs beta"):
        call(beta=None)
    with pytest.raises(ValueError, match="sum rule takes no beta"):
        call(rule="sum")
    with pytest.raises(TypeError, match="dpfp is a ReLU"):
        call(dpfp=torch.nn.ReLU())
    with pytest.raises(ValueError, match=r"initial_state has shape"):
        call(initial_state=torch.zeros(2, 2, 4, 5))
    with pytest.raises(ValueError, match="B = 2"):
        call(cu_seqlens=torch.tensor([0, 6]))
    one = [t[:1].contiguous() for t in (q, k, v, beta)]
    with pytest.raises(ValueError, match="not increasing"):
        fwp.delta_rule(*one, cu_seqlens=torch.tensor([0, 4, 4, 6]))
    with pytest.raises(ValueError, match="runs from 0 to 5"):
        fwp.delta_rule(*one, cu_seqlens=torch.tensor([0, 5]))
    with pytest.raises(ValueError, match="integer tensor"):
        fwp.delta_rule(*one, cu_seqlens=torch.tensor([0.0, 6.0]))
    with pytest.raises(TypeError, match="state must be a tensor"):
        fwp.delta_rule_step(q[:, 0], k[:, 0], v[:, 0], beta[:, 0], None)

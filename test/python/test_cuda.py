"""fwp's package on CUDA tensors: the scan and the whole module against the
same float64 references as on the CPU (test_delta_rule.py,
test_package.py), in PyTorch's current stream, with fwp's scratch from
PyTorch's caching allocator. Skipped, saying so, without a usable GPU; the
one-command GPU check (test/gpu-bundle/run.sh) runs them on one."""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_delta_rule import (check_steps_equal_the_scan, inputs,  # noqa: E402
                             recurrence, run_with_grads)
from test_package import (library, outputs_and_grads,  # noqa: E402,F401
                          relative_error, seeds_pair)

fwp = pytest.importorskip("fwp")

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="no usable CUDA GPU "
                               "(torch.cuda.is_available() is False)")
CUDA = torch.device("cuda", 0)


def on_gpu(tensors, dtype=torch.float32):
    return [None if t is None else t.to(CUDA, dtype) for t in tensors]


def test_mixed_devices_are_refused():
    """Every tensor must be where v is; needs no GPU (meta stands in)."""
    q, k, v, beta, _ = [None if t is None else t.float()
                        for t in inputs(1, 4, 2, 4, 4, "delta", 1, False)]
    with pytest.raises(ValueError, match="q is on meta, expected cpu like v"):
        fwp.delta_rule(q.to("meta"), k, v, beta)
    with pytest.raises(ValueError, match="v is on meta"):
        fwp.delta_rule(q, k, v.to("meta"), beta)
    x = torch.zeros(3, 1, 8)
    weights = [torch.zeros(8, 8)] * 3 + [torch.zeros(2, 8), torch.zeros(8, 8),
                                         torch.zeros(8)]
    weights[4] = weights[4].to("meta")
    with pytest.raises(ValueError, match="w_o is on meta, expected cpu"):
        fwp.attention(x, *weights, heads=2)


@needs_gpu
@pytest.mark.parametrize("batch,steps,heads,d_key,d_value,rule,nu,initial", [
    (2, 80, 2, 8, 8, "delta", 1, True),
    (1, 1, 3, 4, 4, "delta", 0, False),
    (3, 70, 1, 16, 8, "delta", 0, True),
    (2, 33, 2, 4, 8, "sum", 2, True),
    (4, 130, 4, 64, 64, "delta", 1, False),  # the benchmark's K, V
])
def test_scan_matches_the_recurrence_in_float32(batch, steps, heads, d_key,
                                                d_value, rule, nu, initial):
    tensors = inputs(batch, steps, heads, d_key, d_value, rule, nu, initial)
    expected = run_with_grads(
        lambda q, k, v, b, s: recurrence(q, k, v, b, rule, nu, s), tensors)

    def compiled(q, k, v, b, s):
        o, final = fwp.delta_rule(*on_gpu((q, k, v, b)), rule=rule,
                                  dpfp=fwp.DPFP(nu) if nu else None,
                                  initial_state=None if s is None else
                                  s.to(CUDA, torch.float32),
                                  output_final_state=True)
        assert o.device == CUDA and final.device == CUDA
        return o.cpu().double(), final.cpu().double()

    o, final, grads = run_with_grads(compiled, tensors)
    assert relative_error(o, expected[0]) < 1e-5
    assert relative_error(final, expected[1]) < 1e-5
    for name, grad, want in zip(("dq", "dk", "dv", "dbeta", "dinitial"),
                                grads, expected[2]):
        if want is not None:
            assert relative_error(grad, want) < 1e-4, name


@needs_gpu
def test_packed_sequences_and_split_states_on_the_gpu():
    """cu_seqlens packing == each sequence alone, and a sequence split in
    two with the state carried == the whole, on CUDA tensors."""
    lengths = [5, 70, 1, 33]
    offsets = torch.tensor([0] + lengths).cumsum(0).to(CUDA)
    q, k, v, beta, _ = on_gpu(inputs(1, sum(lengths), 2, 4, 8, "delta", 1,
                                     False, seed=3))
    state = torch.randn(len(lengths), 2, 8, 8, device=CUDA)
    o, final = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1),
                              initial_state=state, output_final_state=True,
                              cu_seqlens=offsets)
    for i, (a, b) in enumerate(zip(offsets[:-1].tolist(),
                                   offsets[1:].tolist())):
        alone, alone_final = fwp.delta_rule(
            *[t[:, a:b].contiguous() for t in (q, k, v, beta)],
            dpfp=fwp.DPFP(1), initial_state=state[i:i + 1],
            output_final_state=True)
        assert relative_error(o[:, a:b], alone) < 1e-6
        assert relative_error(final[i:i + 1], alone_final) < 1e-6
    first, middle = fwp.delta_rule(*[t[:, :40].contiguous()
                                     for t in (q, k, v, beta)],
                                   dpfp=fwp.DPFP(1), output_final_state=True)
    second, end = fwp.delta_rule(*[t[:, 40:].contiguous()
                                   for t in (q, k, v, beta)],
                                 dpfp=fwp.DPFP(1), initial_state=middle,
                                 output_final_state=True)
    whole, whole_end = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1),
                                      output_final_state=True)
    assert relative_error(torch.cat([first, second], 1), whole) < 1e-5
    assert relative_error(end, whole_end) < 1e-5


@needs_gpu
@pytest.mark.parametrize("rule", ["delta", "sum"])
def test_steps_of_delta_rule_step_equal_the_scan_on_the_gpu(rule):
    check_steps_equal_the_scan(
        on_gpu(inputs(2, 20, 3, 4, 4, rule, 1, True, seed=4)), rule, 1e-5)


@needs_gpu
def test_bf16_scan_on_the_gpu():
    """bf16 storage: the output's own rounding plus the float32 bound."""
    tensors = inputs(2, 70, 2, 8, 8, "delta", 1, True)
    rounded = [t.to(torch.bfloat16) for t in tensors]
    with torch.no_grad():
        want_o, want_final = recurrence(*[t.double() for t in rounded[:4]],
                                        "delta", 1, rounded[4].double())
        o, final = fwp.delta_rule(*[t.to(CUDA) for t in rounded[:4]],
                                  dpfp=fwp.DPFP(1),
                                  initial_state=rounded[4].to(CUDA),
                                  output_final_state=True)
    assert o.dtype == torch.bfloat16
    assert relative_error(o.cpu(), want_o) < 2.0 ** -8 + 1.01e-5
    assert relative_error(final.cpu(), want_final) < 2.0 ** -8 + 1.01e-5


@needs_gpu
def test_runs_in_the_current_stream_with_torch_memory():
    """On a side stream the result is the same as on the default one, and
    fwp's scratch shows in PyTorch's peak memory (its caching allocator)."""
    q, k, v, beta, _ = on_gpu(inputs(2, 256, 4, 16, 16, "delta", 1, False))
    expected, _ = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    with torch.cuda.stream(side):
        o, _ = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1))
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    assert torch.equal(o, expected)
    # More than y and the final state: the scan's workspace came from torch.
    assert peak > 2 * o.numel() * o.element_size()


@needs_gpu
@pytest.mark.parametrize("steps,batch,heads,d_model,nu,rule", [
    (80, 2, 2, 16, 1, "delta"),
    (1, 3, 2, 16, 1, "delta"),
    (80, 2, 2, 16, 2, "sum"),
])
def test_module_matches_the_seeds_module_on_the_gpu(steps, batch, heads,
                                                    d_model, nu, rule):
    reference, module = seeds_pair(heads, d_model, nu, rule, torch.float32)
    module = module.to(CUDA)
    x = torch.randn(steps, batch, d_model, dtype=torch.float64)
    dy = torch.randn(steps, batch, d_model, dtype=torch.float64)
    expected_y, expected = outputs_and_grads(reference, x, dy)
    y, grads = outputs_and_grads(module, x.float().to(CUDA),
                                 dy.float().to(CUDA))
    assert y.device == CUDA
    assert relative_error(y.cpu(), expected_y) < 1e-5
    for name, grad in grads.items():
        if rule == "sum" and name.startswith("interpolation_weight"):
            continue
        assert relative_error(grad.cpu(), expected[name]) < 1e-4, name


@pytest.mark.skipif(torch.cuda.device_count() < 2,
                    reason="fewer than two CUDA GPUs")
def test_second_gpu_matches_the_recurrence_and_the_first():
    """Tensors on cuda:1: the runtime loads the modules there (and on
    cuda:0 for the second call); both match the float64 recurrence."""
    tensors = inputs(2, 40, 2, 4, 4, "delta", 1, True)
    want, want_final = recurrence(*tensors[:4], "delta", 1, tensors[4])
    for device in (torch.device("cuda", 1), CUDA):
        q, k, v, beta, h0 = [t.to(device, torch.float32) for t in tensors]
        o, final = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1),
                                  initial_state=h0, output_final_state=True)
        assert o.device == device and final.device == device
        assert relative_error(o.cpu(), want) < 1e-5
        assert relative_error(final.cpu(), want_final) < 1e-5

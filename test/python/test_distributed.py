"""More than one process, on the CPU with gloo: DDP with two ranks (a
batch slice that is a view per rank), and context parallelism with 2 and 4
ranks (fwp.distributed: the sequence split across ranks) for the scan and
for the module; outputs and every gradient against one process's unsplit
run, in float64. Each world is one torch.multiprocessing.spawn whose ranks
run every case and save what they computed."""

import os
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(__file__))
from test_delta_rule import inputs  # noqa: E402
from test_package import library, relative_error  # noqa: E402,F401

fwp = pytest.importorskip("fwp")
import fwp.distributed  # noqa: E402

STEPS, BATCH, D_MODEL, HEADS = 37, 4, 8, 2


def segments(ranks, steps=STEPS):
    """Uneven split points: rank r holds [bounds[r], bounds[r + 1])."""
    cuts = [0] + [steps * r // ranks + (r % 2) * 3 for r in
                  range(1, ranks)] + [steps]
    return list(zip(cuts, cuts[1:]))


def scan_case():
    q, k, v, beta, h0 = inputs(2, STEPS, 2, 4, 3, "delta", 1, True, seed=5)
    g = torch.Generator().manual_seed(6)
    do = torch.randn(v.shape, generator=g, dtype=torch.float64)
    dht = torch.randn(h0.shape, generator=g, dtype=torch.float64)
    return [q, k, v, beta, h0], do, dht


def module_case():
    torch.manual_seed(7)
    layer = fwp.nn.FastWeightsAttention(HEADS, D_MODEL, 0.0, fwp.nn.DPFP(1))
    layer = layer.double()
    x = torch.randn(STEPS, BATCH, D_MODEL, dtype=torch.float64)
    dy = torch.randn(STEPS, BATCH, D_MODEL, dtype=torch.float64)
    return layer, x, dy


def seeds_transformer():
    torch.manual_seed(8)
    attn = fwp.nn.FastWeightsAttention(HEADS, D_MODEL, 0.0, fwp.nn.DPFP(1))
    layer = fwp.nn.FastWeightsAttentionTransformerLayer(
        d_model=D_MODEL, attn=attn,
        feed_forward=fwp.nn.FeedForward(D_MODEL, 16, 0.0), dropout_prob=0.0)
    return fwp.nn.FastWeightsAttentionTransformer(layer, 2).double()


def leaves(tensors, a=None, b=None):
    out = []
    for t in tensors:
        if t is not None and a is not None and t.dim() >= 3 and \
                t.shape[1] == STEPS:
            t = t[:, a:b]
        out.append(None if t is None else t.detach().clone()
                   .requires_grad_())
    return out


def run_scan_context_parallel(rank, ranks):
    tensors, do, dht = scan_case()
    a, b = segments(ranks)[rank]
    q, k, v, beta, h0 = leaves(tensors, a, b)
    o, final = fwp.distributed.delta_rule(
        q, k, v, beta, dpfp=fwp.DPFP(1), initial_state=h0,
        output_final_state=True)
    loss = (o * do[:, a:b]).sum()
    if final is not None:
        loss = loss + (final * dht).sum()
    loss.backward()
    return {"o": o, "final": final, "grads": [q.grad, k.grad, v.grad,
                                              beta.grad, h0.grad]}


def run_module_context_parallel(rank, ranks):
    layer, x, dy = module_case()
    layer.context_parallel_group = dist.group.WORLD
    a, b = segments(ranks)[rank]
    segment = x[a:b].clone().requires_grad_()
    y = layer(segment)
    (y * dy[a:b]).sum().backward()
    return {"y": y, "x": segment.grad,
            "params": [p.grad for p in layer.parameters()]}


def run_ddp(rank, ranks):
    model = seeds_transformer()
    # The seeds' layers make norm_self_attn and do not use it.
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, find_unused_parameters=True)
    _, x, dy = module_case()
    share = BATCH // ranks
    part = slice(rank * share, (rank + 1) * share)
    # DDP averages the ranks' gradients: scaled by the ranks, they add up.
    (ddp(x[:, part]) * dy[:, part]).sum().mul(ranks).backward()
    return {"params": [p.grad for p in model.parameters()]}


def worker(rank, ranks, directory, cases):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{directory}/store",
                            rank=rank, world_size=ranks)
    try:
        results = {name: globals()[name](rank, ranks) for name in cases}
        torch.save(results, os.path.join(directory, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def spawn(tmp_path, ranks, cases):
    mp.spawn(worker, args=(ranks, str(tmp_path), cases), nprocs=ranks)
    return [torch.load(tmp_path / f"rank{r}.pt") for r in range(ranks)]


def unsplit_scan():
    tensors, do, dht = scan_case()
    q, k, v, beta, h0 = leaves(tensors)
    o, final = fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1),
                              initial_state=h0, output_final_state=True)
    ((o * do).sum() + (final * dht).sum()).backward()
    return o, final, [q.grad, k.grad, v.grad, beta.grad, h0.grad]


def check_scan(results, ranks):
    o, final, grads = unsplit_scan()
    runs = [r["run_scan_context_parallel"] for r in results]
    assert relative_error(torch.cat([r["o"] for r in runs], 1), o) < 1e-12
    assert all(r["final"] is None for r in runs[:-1])
    assert relative_error(runs[-1]["final"], final) < 1e-12
    for i, want in enumerate(grads[:4]):
        got = torch.cat([r["grads"][i] for r in runs], 1)
        assert relative_error(got, want) < 1e-11, f"gradient {i}"
    assert relative_error(runs[0]["grads"][4], grads[4]) < 1e-11
    assert all(r["grads"][4] is None for r in runs[1:])


def check_module(results):
    layer, x, dy = module_case()
    x = x.clone().requires_grad_()
    y = layer(x)  # the fused kernels, one process
    (y * dy).sum().backward()
    runs = [r["run_module_context_parallel"] for r in results]
    assert relative_error(torch.cat([r["y"] for r in runs]), y) < 1e-12
    assert relative_error(torch.cat([r["x"] for r in runs]), x.grad) < 1e-11
    for i, p in enumerate(layer.parameters()):
        got = sum(r["params"][i] for r in runs)  # each rank's share
        assert relative_error(got, p.grad) < 1e-11


def test_two_ranks_ddp_and_context_parallel(tmp_path):
    results = spawn(tmp_path, 2, ["run_ddp", "run_scan_context_parallel",
                                  "run_module_context_parallel"])
    model = seeds_transformer()
    _, x, dy = module_case()
    (model(x) * dy).sum().backward()
    for i, p in enumerate(model.parameters()):
        for r in results:
            got = r["run_ddp"]["params"][i]
            if p.grad is None:  # norm_self_attn
                assert got is None
            else:
                assert relative_error(got, p.grad) < 1e-12
    check_scan(results, 2)
    check_module(results)


def test_four_ranks_context_parallel(tmp_path):
    results = spawn(tmp_path, 4, ["run_scan_context_parallel",
                                  "run_module_context_parallel"])
    check_scan(results, 4)
    check_module(results)

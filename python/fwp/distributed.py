"""Context parallelism: one sequence split across the ranks of a
torch.distributed group, the ranks working at the same time.

    import fwp.distributed
    o, final = fwp.distributed.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1))
    layer = fwp.nn.FastWeightsAttention(..., context_parallel_group=group)

Rank r of the group holds steps [T_0 + ... + T_(r-1), ...) of the sequence
(q, k [B, T_r, H, K], v [B, T_r, H, V], beta [B, T_r, H]); the ranks'
segments, in rank order, are the sequence. Outputs and gradients are those
of the unsplit scan.

Why it parallelises: across a segment the delta rule's state moves by an
affine map, S_end = A S_start + B, with A = prod_t (I - beta_t k_t k_t^T)
(D x D) and B the segment's final state from zero. One scan gives both: v
widened by D zero columns, from the state [0 | I]; its final state is
[B | A] (the state's columns evolve independently). So:

1. every rank but the first computes its map [B | A] (rank 0 its final
   state S_1 instead); all at once;
2. one all_gather of those maps, [N, H, D, V + D] per rank; every rank then
   combines S_(r+1) = A_r S_r + B_r up to its own start (D x D x V products,
   r of them);
3. every rank but the first scans its segment from S_r, for o and its final
   state.

The backward is autograd through the same steps in reverse: the scans'
backwards (fwp's kernels) and the combination's, and the all_gather's, an
all_reduce of the maps' gradients (gloo has no reduce_scatter). What
crosses, per rank and direction: forward, its map out and R - 1 maps in
(B H D (V + D) elements each); backward, an all_reduce of R maps. Each rank
waits once per direction, at that collective, for the slowest map pass. A
rank past the first does about twice a plain scan's work (the map pass is a
scan V + D wide); rank 0 does one. The final state is the last rank's;
other ranks return None for it. cu_seqlens is not supported here. Every
rank must backpropagate through its o (as under DDP, the ranks' backwards
meet at the collective).
"""

import torch
import torch.distributed as dist

from ._checks import fail
from ._scan import delta_rule as _delta_rule


class _AllGather(torch.autograd.Function):
    """all_gather whose backward sums every rank's gradient of every piece
    and keeps this rank's (an all_reduce: gloo has no reduce_scatter)."""

    @staticmethod
    def forward(ctx, tensor, group):
        ctx.group = group
        pieces = [torch.empty_like(tensor)
                  for _ in range(dist.get_world_size(group))]
        dist.all_gather(pieces, tensor.contiguous(), group=group)
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        stacked = torch.stack([torch.zeros_like(g) if g is None else g
                               for g in grads])
        dist.all_reduce(stacked, group=ctx.group)
        return stacked[dist.get_rank(ctx.group)], None


class _Through(torch.autograd.Function):
    """o, unchanged, made to depend on the gathered maps: every rank's
    backward then reaches the all_gather's backward (an all_reduce that
    every rank must join), rank 0's too, whose o needs no map."""

    @staticmethod
    def forward(ctx, o, *maps):
        ctx.shapes = [(m.shape, m.dtype, m.device) for m in maps]
        return o.view_as(o)

    @staticmethod
    def backward(ctx, grad):
        return (grad,) + tuple(torch.zeros(shape, dtype=dtype, device=device)
                               for shape, dtype, device in ctx.shapes)


def _features(q, dpfp):
    return 2 * q.shape[-1] * dpfp.nu if dpfp is not None else q.shape[-1]


def delta_rule(q, k, v, beta=None, *, group=None, rule="delta", dpfp=None,
               initial_state=None, output_final_state=False,
               chunk_size=None):
    """fwp.delta_rule over a sequence split across the ranks of `group`
    (default: the whole world): this rank's segment of q, k, v, beta in,
    its segment of o out. initial_state [B, H, D, V] is the sequence's,
    read on rank 0; the final state comes back on the last rank (None on
    the others, and without output_final_state)."""
    if not dist.is_available() or not dist.is_initialized():
        fail("distributed.delta_rule", "torch.distributed is not "
             "initialised (call torch.distributed.init_process_group)",
             RuntimeError)
    rank, ranks = dist.get_rank(group), dist.get_world_size(group)
    options = dict(rule=rule, dpfp=dpfp, chunk_size=chunk_size)
    if not isinstance(v, torch.Tensor) or v.dim() != 4:
        fail("distributed.delta_rule", "v must be a 4-D tensor [B, T, H, V]")
    batch, _, heads, d_value = v.shape
    d_feature = _features(q, dpfp)

    if rank == 0:
        o, start_of_next = _delta_rule(q, k, v, beta,
                                       initial_state=initial_state,
                                       output_final_state=True, **options)
        mine = torch.cat([start_of_next, start_of_next.new_zeros(
            batch, heads, d_feature, d_feature)], dim=-1)
    else:
        widened = torch.cat([v, v.new_zeros(v.shape[:3] + (d_feature,))], -1)
        identity = torch.eye(d_feature, dtype=v.dtype, device=v.device)
        start = torch.cat([v.new_zeros(d_feature, d_value), identity], -1)
        _, mine = _delta_rule(q, k, widened, beta,
                              initial_state=start.expand(batch, heads, -1,
                                                         -1),
                              output_final_state=True, **options)
    maps = _AllGather.apply(mine, group)
    if rank == 0:
        final = start_of_next
    else:
        state = maps[0][..., :d_value]
        for m in maps[1:rank]:
            state = m[..., d_value:] @ state + m[..., :d_value]
        o, final = _delta_rule(q, k, v, beta, initial_state=state,
                               output_final_state=True, **options)
    last = rank == ranks - 1
    return (_Through.apply(o, *maps),
            final if output_final_state and last else None)

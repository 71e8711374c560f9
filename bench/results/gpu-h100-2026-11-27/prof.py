"""Per-kernel GPU time of fwp and fla on bench/gpu_vs_fla.py's scan shape
(B=4 T=4096 H=16 d_k=64 d_v=64 bf16), from torch.profiler (CUPTI)."""
import os, sys, torch
B = os.environ.get("BUNDLE", "build/gpu-bundle") + "/py"
sys.path.insert(0, os.path.join(B, "bench"))
import gpu_vs_fla as g
import fwp
from torch.profiler import profile, ProfilerActivity
mode = sys.argv[1] if len(sys.argv) > 1 else "prof"
dev = torch.device("cuda")
chunk = g.load_fla(os.path.abspath(".fla"))
dpfp = g.seeds.DPFP(1)
shape = [int(x) for x in os.environ.get("SHAPE", "4,4096,16,64,64").split(",")]
q, k, v, beta = g.scan_inputs(*shape, torch.bfloat16, dev)
leaves = [t.clone().requires_grad_(True) for t in (q, k, v, beta)]
fl = [t.clone().requires_grad_(True) for t in (q, k, v, beta)]
cases = {
  "fwp forward": lambda: fwp.delta_rule(q, k, v, beta, dpfp=fwp.DPFP(1)),
  "fwp training": lambda: fwp.delta_rule(*leaves, dpfp=fwp.DPFP(1))[0].sum().backward(),
  "fla forward": lambda: chunk(dpfp(q), dpfp(k), v, beta, scale=1.0),
  "fla training": lambda: chunk(dpfp(fl[0]), dpfp(fl[1]), fl[2], fl[3], scale=1.0)[0].sum().backward(),
}
if mode == "ncu":
    for f in cases.values():
        f(); f()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for f in cases.values():
        f()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    sys.exit()
for name, f in cases.items():
    for _ in range(3): f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5): f()
        torch.cuda.synchronize()
    print(f"==== {name} (5 calls; per-call = total/5)")
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=70))

#!/usr/bin/env python3
"""Turn `module { gpu.module @x [targets] { <llvm dialect> } }` (after convert-gpu-to-nvvm) into a plain
builtin module holding the llvm.func/llvm.mlir.global ops, so `mlir-translate --mlir-to-llvmir` + `llc`
can be used instead of gpu-module-to-binary. Usage: unwrap_gpu_module.py in.mlir > out.mlir"""
import sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.lstrip().startswith("gpu.module"))
indent = len(lines[start]) - len(lines[start].lstrip())
end = next(i for i in range(start + 1, len(lines)) if lines[i] == " " * indent + "}")
body = [l[indent + 2:] if l.startswith(" " * (indent + 2)) else l for l in lines[start + 1:end]]
print("module {")
print("\n".join("  " + l for l in body))
print("}")

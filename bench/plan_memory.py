#!/usr/bin/env python3
"""Device memory a compiled GPU module allocates, read from its launch plan.

A plan (docs/launch-plan.md) computes its buffers' sizes from the shapes of
its arguments and allocates each buffer once, for the whole call; this
script evaluates its `value` and `alloc` lines for the shapes given and
prints the bytes of every buffer and their total. No GPU is needed: it is
the workspace a call takes on top of its inputs and outputs, which is what
`fwp.prepare_cuda_scan` compiles into the disk cache.

    python3 bench/plan_memory.py PLAN --shape arg2=4x4096x16x64

Each --shape gives the full shape of one argument with dynamic sizes (the
plan's `arg` lines show which, as `?`).
"""

import argparse
import re
import sys

DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i32": 4, "i64": 8}

OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "divs": lambda a, b: int(a / b),
    "divu": lambda a, b: a // b,
    "rems": lambda a, b: a - int(a / b) * b,
    "remu": lambda a, b: a % b,
    "ceildiv": lambda a, b: -(-a // b),
    "ceildivu": lambda a, b: -(-a // b),
    "floordiv": lambda a, b: a // b,
    "mins": min,
    "maxs": max,
    "minu": min,
    "maxu": max,
}


def evaluate(plan_text, shapes):
    """(name, dtype, sizes, bytes) of every alloc of the plan."""
    env = {}
    buffers = []

    def operand(token):
        return env[token] if token in env else int(token)

    for number, line in enumerate(plan_text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if words[0] == "value":
            expr = " ".join(words[2:])
            dim = re.fullmatch(r"dim\((\w+), (\d+)\)", expr)
            op = re.fullmatch(r"\((\w+) (\w+) (\w+)\)", expr)
            if dim:
                arg, index = dim.group(1), int(dim.group(2))
                if arg not in shapes:
                    sys.exit(f"line {number}: needs the shape of {arg} "
                             f"(--shape {arg}=...)")
                env[words[1]] = shapes[arg][index]
            elif op and op.group(1) in OPS:
                env[words[1]] = OPS[op.group(1)](operand(op.group(2)),
                                                 operand(op.group(3)))
            else:
                sys.exit(f"line {number}: cannot evaluate '{expr}'")
        elif words[0] == "alloc":
            sizes = [operand(token) for token in words[3:]]
            count = 1
            for size in sizes:
                count *= size
            buffers.append((words[1], words[2], sizes,
                            count * DTYPE_BYTES[words[2]]))
    return buffers


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan")
    parser.add_argument("--shape", action="append", default=[],
                        help="argN=AxBxC: an argument's full shape")
    parser.add_argument("--quiet", action="store_true",
                        help="print the total only")
    args = parser.parse_args()
    shapes = {}
    for item in args.shape:
        name, _, dims = item.partition("=")
        shapes[name] = [int(d) for d in dims.split("x")]
    with open(args.plan) as f:
        buffers = evaluate(f.read(), shapes)
    total = sum(b[3] for b in buffers)
    if not args.quiet:
        for name, dtype, sizes, size in buffers:
            print(f"{name:>6} {dtype:>4} {'x'.join(map(str, sizes)):>22} "
                  f"{size / 2**20:10.1f} MiB")
    print(f"{len(buffers)} buffers, {total / 2**20:.0f} MiB "
          f"({total / 2**30:.2f} GiB)")


if __name__ == "__main__":
    main()

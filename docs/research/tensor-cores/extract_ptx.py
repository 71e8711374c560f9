#!/usr/bin/env python3
"""Extract the PTX text from `gpu.binary ... assembly = "..."` (output of gpu-module-to-binary{format=isa})
and write it to stdout. Usage: extract_ptx.py in.mlir > out.ptx"""
import re, sys
txt = open(sys.argv[1]).read()
m = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', txt)
if not m:
    sys.exit("no assembly= string found (was format=isa used?)")
s, out, i = m.group(1), bytearray(), 0
while i < len(s):
    ch = s[i]
    if ch == '\\':
        nxt = s[i + 1]
        if nxt in '\\"':
            out += nxt.encode(); i += 2
        elif nxt == 'n':
            out += b'\n'; i += 2
        elif nxt == 't':
            out += b'\t'; i += 2
        else:  # \XX hex escape as printed by MLIR
            out.append(int(s[i + 1:i + 3], 16)); i += 3
    else:
        out += ch.encode(); i += 1
sys.stdout.write(out.decode())

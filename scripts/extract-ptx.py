#!/usr/bin/env python3
"""Writes the PTX of every gpu.binary in an MLIR file (the output of
`fwp-opt -fwp-to-ptx`, whose objects hold PTX text) to OUTDIR/<name>.ptx.
With --ptxas, also assembles each file (`ptxas -v`) and prints what ptxas
says; a file that does not assemble makes the script fail.

usage: extract-ptx.py INPUT.mlir OUTDIR [--ptxas PTXAS [--arch sm_90]]
"""
import argparse
import os
import re
import subprocess
import sys

BINARY = re.compile(
    r'gpu\.binary @([\w$.]+)\s*\[#gpu\.object<.*?assembly = "((?:[^"\\]|\\.)*)"',
    re.S)


def unescape(text):
    """Undoes MLIR's string escapes: \\\\, \\" and \\XX (two hex digits)."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] != "\\":
            out += text[i].encode()
            i += 1
        elif text[i + 1] in '\\"':
            out += text[i + 1].encode()
            i += 2
        else:
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
    return out.decode()


SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def assemble(ptxas, arch, path, quiet):
    """Runs ptxas -v on one PTX file; returns (exit status, spill bytes)."""
    result = subprocess.run([ptxas, f"-arch={arch}", "-v", path, "-o",
                             os.devnull], capture_output=True, text=True)
    output = result.stdout + result.stderr
    if not quiet or result.returncode != 0:
        print(output, end="")
    spills = sum(int(a) + int(b) for a, b in SPILLS.findall(output))
    return result.returncode, spills


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("outdir")
    parser.add_argument("--ptxas")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--summary", action="store_true",
                        help="one line instead of every file and ptxas report")
    args = parser.parse_args()
    source, outdir = args.source, args.outdir
    with open(source) as f:
        binaries = BINARY.findall(f.read())
    if not binaries:
        sys.exit(f"extract-ptx.py: {source}: no gpu.binary with PTX text")
    os.makedirs(outdir, exist_ok=True)
    total_spills = 0
    for name, assembly in binaries:
        path = os.path.join(outdir, name + ".ptx")
        with open(path, "w") as f:
            f.write(unescape(assembly))
        if not args.summary:
            print(path)
        if args.ptxas:
            status, spills = assemble(args.ptxas, args.arch, path, args.summary)
            if status != 0:
                sys.exit(f"extract-ptx.py: {path} does not assemble")
            total_spills += spills
    if args.summary:
        checked = (f"all assemble with ptxas -arch={args.arch}, "
                   f"{total_spills} spill bytes" if args.ptxas
                   else "not checked (no ptxas)")
        print(f"{len(binaries)} PTX kernels in {outdir}: {checked}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The PTX census of compiled modules: per kernel, what ptxas allocates
(registers, spills, shared memory) and what the PTX issues (tensor-core
MMAs by type, cp.async by size, shared-memory loads and stores, ldmatrix).

  python3 bench/ptx_census.py KERNEL_CACHE [--match TEXT] [--arch sm_90]

KERNEL_CACHE is a disk cache of compiled modules ($FWP_CACHE_DIR, or a GPU
bundle's py/kernel-cache): every module whose key (module.txt) contains each
--match text is counted, one table per module. Static counts: instructions
as written in the PTX, not as executed (the emulator's counters are that).
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

PTXAS_LINE = re.compile(
    r"Used (\d+) registers.*?(?:(\d+) bytes smem)?$", re.MULTILINE)
SPILL = re.compile(r"(\d+) bytes spill stores")
FUNCTION = re.compile(r"Compiling entry function '([^']+)'")


def ptxas_info(ptxas, arch, ptx):
    """{kernel: (registers, spill bytes, shared bytes)} from ptxas -v."""
    out = subprocess.run([ptxas, "-arch", arch, "-v", str(ptx), "-o",
                          "/dev/null"], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"ptxas failed on {ptx}:\n{out.stderr}")
    info, kernel, spill = {}, None, 0
    for line in out.stderr.splitlines():
        if m := FUNCTION.search(line):
            kernel, spill = m.group(1), 0
        elif m := SPILL.search(line):
            spill = int(m.group(1))
        elif kernel and (m := PTXAS_LINE.search(line)):
            info[kernel] = (int(m.group(1)), spill, int(m.group(2) or 0))
    return info


def entry_texts(text):
    """{kernel: its PTX}: the text from each .entry to the next."""
    starts = [(m.start(), m.group(1)) for m in
              re.finditer(r"\.entry\s+(\w+)", text)]
    return {name: text[start:(starts[i + 1][0] if i + 1 < len(starts)
                              else len(text))]
            for i, (start, name) in enumerate(starts)}


def instruction_counts(text):
    """Static counts of the instructions the census reports."""
    def count(pattern):
        return len(re.findall(pattern, text, re.MULTILINE))
    return {
        "mma tf32": count(r"^\s*mma\.sync\S*\.tf32"),
        "mma bf16": count(r"^\s*mma\.sync\S*\.bf16"),
        "mma f16": count(r"^\s*mma\.sync\S*\.f16\.f16"),
        "cp.async 16B": count(r"^\s*cp\.async\.\w+\.shared\.global.*, 16;"),
        "cp.async 4B": count(r"^\s*cp\.async\.\w+\.shared\.global.*, 4;"),
        "ldmatrix": count(r"^\s*ldmatrix"),
        "ld/st.shared": count(r"^\s*(?:ld|st)\.shared"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=pathlib.Path)
    parser.add_argument("--match", action="append", default=[])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--ptxas", default=shutil.which("ptxas")
                        or "/usr/local/cuda/bin/ptxas")
    args = parser.parse_args()
    modules = sorted(args.cache.rglob("module.txt"))
    if not modules:
        sys.exit(f"no compiled modules (module.txt) under {args.cache}")
    for module in modules:
        key = next((line[4:] for line in module.read_text().splitlines()
                    if line.startswith("key ")), "")
        if not all(text in key for text in args.match):
            continue
        ptx_files = sorted(module.parent.glob("*.ptx"))
        if not ptx_files:
            continue
        print(f"\n{key}\n")
        columns = list(instruction_counts("").keys())
        print("| kernel | registers | spill B | shared B | "
              + " | ".join(columns) + " |")
        print("| --- " * (4 + len(columns)) + "|")
        for ptx in ptx_files:
            entries = entry_texts(ptx.read_text())
            for kernel, (regs, spill, shared) in ptxas_info(
                    args.ptxas, args.arch, ptx).items():
                counts = instruction_counts(entries.get(kernel, ""))
                print(f"| `{kernel}` | {regs} | {spill} | {shared} | "
                      + " | ".join(str(counts[c]) for c in columns) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Load each PTX file through the project's emulated CUDA driver with ctypes
and record what cuModuleLoadDataEx says.

The emulator refuses a module at the FIRST problem it finds (a parse error,
or the first instruction without semantics), and says which in the JIT error
log (CU_JIT_ERROR_LOG_BUFFER).  To list every missing instruction form, this
script then repeats the load on a scratch copy of the text with every line of
the refused form deleted, until the module loads or the error is not an
instruction refusal.  (The deleted copy is only for the census: it is not a
runnable kernel.)

Usage: emulator_load.py [--lib PATH] [--sm 80] DIR_OR_PTX...
"""
import argparse
import ctypes
import glob
import os
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument('--lib', default='/work/main/build/lib/emulated-cuda/libcuda.so.1')
ap.add_argument('--sm', default='80', help='FWP_EMU_SM for the emulated chip (80 or 90)')
ap.add_argument('paths', nargs='*', default=['ptx'])
args = ap.parse_args()
os.environ['FWP_EMU_SM'] = args.sm          # read once, at the library's first use

cu = ctypes.CDLL(args.lib)
CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 3, 4
CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6


def name(rc):
    s = ctypes.c_char_p()
    cu.cuGetErrorName(rc, ctypes.byref(s))
    t = ctypes.c_char_p()
    cu.cuGetErrorString(rc, ctypes.byref(t))
    return f'{rc} {s.value.decode() if s.value else "?"} ({t.value.decode() if t.value else "?"})'


def check(rc, what):
    if rc != 0:
        raise SystemExit(f'{what} failed: {name(rc)}')


check(cu.cuInit(0), 'cuInit')
dev = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(dev), 0), 'cuDeviceGet')
buf = ctypes.create_string_buffer(256)
cu.cuDeviceGetName(buf, 256, dev)
major, minor = ctypes.c_int(), ctypes.c_int()
cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)   # COMPUTE_CAPABILITY_MAJOR
cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
ctx = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), 'cuDevicePrimaryCtxRetain')
check(cu.cuCtxSetCurrent(ctx), 'cuCtxSetCurrent')
print(f'# driver {args.lib}; FWP_EMU_SM={args.sm}; device "{buf.value.decode()}" '
      f'cc {major.value}.{minor.value}')


def load(text):
    err = ctypes.create_string_buffer(8192)
    info = ctypes.create_string_buffer(8192)
    opts = (ctypes.c_int * 4)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
    vals = (ctypes.c_void_p * 4)(ctypes.cast(err, ctypes.c_void_p).value, 8192,
                                 ctypes.cast(info, ctypes.c_void_p).value, 8192)
    mod = ctypes.c_void_p()
    data = text.encode() + b'\0'
    rc = cu.cuModuleLoadDataEx(ctypes.byref(mod), data, 4, opts, vals)
    return rc, mod, err.value.decode(errors='replace'), info.value.decode(errors='replace')


def opcode_of(instr):
    s = instr.strip()
    if s.startswith('@'):
        s = s.split(None, 1)[1]
    return s.split()[0].rstrip(';')


files = []
for p in args.paths:
    files += sorted(glob.glob(os.path.join(p, '*.ptx'))) if os.path.isdir(p) else [p]

union_missing = {}
for f in files:
    text = open(f).read()
    rc, mod, err, info = load(text)
    print(f'\n## {f}')
    print(f'  cuModuleLoadDataEx -> {name(rc)}')
    if err:
        print(f'  error log: {err}')
    if info:
        print(f'  info log : {info}')
    if rc == 0:
        entry = re.search(r'\.entry\s+(\w+)', text).group(1)
        fn = ctypes.c_void_p()
        r2 = cu.cuModuleGetFunction(ctypes.byref(fn), mod, entry.encode())
        print(f'  cuModuleGetFunction({entry}) -> {name(r2)}')
        cu.cuModuleUnload(mod)
        continue
    # census of every refused instruction form
    missing = []
    lines = text.split('\n')
    for _ in range(200):
        m = re.search(r'line (\d+): (.*)', err, re.S)
        if not m:
            break
        ln = int(m.group(1))
        src = lines[ln - 1].strip() if 0 < ln <= len(lines) else ''
        if not src or src.startswith('.') or src.startswith('}') or src.startswith('{'):
            break                     # a directive or structural problem: stop here
        op = opcode_of(src)
        missing.append((op, ln, src, m.group(2).strip()))
        pat = re.compile(r'^\s*(@!?%\w+\s+)?' + re.escape(op) + r'(\s|;)')
        lines = ['' if pat.match(l) else l for l in lines]
        rc, mod, err, info = load('\n'.join(lines))
        if rc == 0:
            cu.cuModuleUnload(mod)
    if missing:
        print(f'  instruction forms without semantics ({len(missing)}):')
        for op, line, txt, why in missing:
            print(f'    {op:30s} first at line {line}: `{txt}`\n      emulator: {why}')
            union_missing.setdefault(op, []).append(os.path.basename(f))
    print(f'  with those forms deleted: {name(rc)}' + (f'; error log: {err}' if err else ''))
    if rc != 0:
        union_missing.setdefault('UNRESOLVED: ' + err, []).append(os.path.basename(f))

print('\n## UNION of refusals')
for op, fs in sorted(union_missing.items()):
    print(f'  {op:55s} in {len(fs)} file(s): {", ".join(fs)}')

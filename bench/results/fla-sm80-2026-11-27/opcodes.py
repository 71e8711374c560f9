#!/usr/bin/env python
"""List the distinct PTX instruction opcodes (with all modifiers) of each .ptx
file, the union, and the directives used.  Usage: opcodes.py DIR... > opcodes.txt"""
import glob
import os
import re
import sys
from collections import Counter, defaultdict


def opcodes(text):
    ops = Counter()
    dirs = Counter()
    depth = 0
    in_debug = False
    for raw in text.splitlines():
        line = raw.split('//', 1)[0].strip()
        if not line:
            continue
        if line.startswith('.section'):
            dirs['.section ' + line.split()[1]] += 1
            in_debug = not ('{' in line and '}' in line)  # brace may be on the next line
            continue
        if in_debug:
            if line.startswith('}'):
                in_debug = False
            continue
        for stmt in line.split(';'):
            s = stmt.strip()
            if not s:
                continue
            while s.startswith('{') or s.startswith('}'):
                s = s[1:].strip()
            if not s:
                continue
            if re.match(r'^[$\w.]+:', s):          # label
                s = re.sub(r'^[$\w.]+:\s*', '', s)
                if not s:
                    continue
            if s.startswith('.'):
                dirs[s.split()[0]] += 1
                continue
            if s.startswith('@'):
                s = s.split(None, 1)[1] if ' ' in s else ''
            if not s:
                continue
            op = s.split()[0].rstrip(',')
            if re.match(r'^[a-z][\w.:]*$', op):
                ops[op] += 1
    return ops, dirs


def main(dirs_):
    files = sorted(f for d in dirs_ for f in glob.glob(os.path.join(d, '*.ptx')))
    union = Counter()
    where = defaultdict(set)
    alld = Counter()
    for f in files:
        ops, dirs = opcodes(open(f).read())
        union.update(ops)
        alld.update(dirs)
        for o in ops:
            where[o].add(os.path.basename(f))
        print(f'## {f}  ({sum(ops.values())} instructions, {len(ops)} distinct opcodes)')
        for o in sorted(ops):
            print(f'  {o:60s} {ops[o]}')
        print('  directives: ' + ', '.join(f'{d}({n})' for d, n in sorted(dirs.items())))
        print()
    print(f'## UNION over {len(files)} files: {len(union)} distinct opcodes '
          f'({len({o.split(".")[0] for o in union})} base opcodes)')
    for o in sorted(union):
        print(f'  {o:60s} {union[o]:7d}  in {len(where[o])} file(s)')
    print('  directives: ' + ', '.join(f'{d}({n})' for d, n in sorted(alld.items())))


if __name__ == '__main__':
    main(sys.argv[1:] or ['ptx'])

#!/usr/bin/env python3
"""file_deps.py OBJECT... [--into FILE] - which source files of a library need
which: an edge A -> B when A's object references a symbol that B's object defines
(nm), i.e. the include graph with every declaration attributed to the file that
implements it. Prints the circles (strongly connected components of two or more
files), each with the edges inside it, and with --into FILE the files that need
FILE. For the recorder:

    tests/tools/file_deps.py build/recorder/libstallscope.so.*.p/*.o --into session.c
"""
import collections
import os
import subprocess
import sys


def name(obj):
    base = os.path.basename(obj)
    return base[4:-2] if base.startswith('src_') else base[:-2]


def graph(objs):
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in 'TDBRVWC':
                defs[p[2]] = name(o)
            elif len(p) == 2 and p[0] == 'U':
                uses[name(o)].add(p[1])
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for a, syms in uses.items():
        for s in syms:
            b = defs.get(s)
            if b and b != a:
                edges[a][b].add(s)
    return sorted(name(o) for o in objs), edges


def circles(nodes, edges):
    index, low, stack, on, found, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(found, key=len, reverse=True)


def main(argv):
    into = None
    if '--into' in argv:
        i = argv.index('--into')
        into = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    nodes, edges = graph(argv)
    comps = circles(nodes, edges)
    print(f'{len(nodes)} files, {len(comps)} circle(s)')
    for comp in comps:
        print(f'circle of {len(comp)}: {" ".join(comp)}')
        for a in comp:
            for b in sorted(edges[a]):
                if b in comp:
                    print(f'  {a} -> {b}: {" ".join(sorted(edges[a][b]))}')
    if into:
        need = sorted(a for a in nodes if into in edges[a])
        print(f'{len(need)} file(s) need {into}: {" ".join(need)}')


if __name__ == '__main__':
    main(sys.argv[1:])

#!/usr/bin/env python3
"""test_layering.py SOURCE_ROOT - the direction of dependencies between the
folders, read from their #include lines, and the one place of SQL.

Data flows one way (README, Layout): sources (viewer/reader) -> model
(viewer/model) -> store (viewer/store) -> analysis (viewer/analysis) -> views
(viewer/timeline, viewer/app, viewer/cli). A folder may include headers of the
folders before it, never of those after it, and only the views may include GLib
or GTK. The recorder depends on libc, zstd and libdw, nothing of the viewer's (its
record command, recorder/cli, is part of the CLI).

Every statement that reads or writes a stored trace is in viewer/store: no
sqlite3_prepare outside it, and sqlite3_exec only for a PRAGMA.

A failure names the file, the line and the rule it breaks.
"""
import os
import re
import sys

root = sys.argv[1]

# The folder that owns each project header, by file name.
owners = {}
for top in ('viewer', 'recorder', 'schema'):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith('.h'):
                owners.setdefault(f, os.path.relpath(d, root))


def layer(folder):
    parts = folder.split(os.sep)
    # `stallscope record` is a command of the CLI that lives beside the
    # recorder; it reads segments back for its summary.
    if parts[:2] == ['recorder', 'cli']:
        return 'cli'
    if parts[0] == 'viewer' and len(parts) > 1:
        return parts[1]
    return parts[0]


ORDER = ['reader', 'symbolize', 'model', 'store', 'analysis', 'importer', 'timeline', 'app', 'cli']
# What each viewer folder may include besides its own and schema/'s headers.
ALLOWED = {
    'reader': set(),
    'symbolize': {'reader'},
    'model': {'reader', 'symbolize'},
    'store': {'model'},
    'analysis': {'model', 'store'},
    'importer': {'reader', 'symbolize', 'model', 'store'},
    'timeline': {'store', 'analysis', 'model'},
    'app': {'importer', 'store', 'analysis', 'timeline', 'model'},
    'cli': set(ORDER) - {'cli', 'app'} | {'recorder'},
}
# Containers every layer may use (viewer/model/hmap.h: an open-addressing map).
SHARED = {'hmap.h'}
GUI = re.compile(r'#include\s*<(gtk|gdk|glib|gio|pango|cairo|gsk)[/.\-]')
SQLITE = re.compile(r'#include\s*<sqlite3\.h>')
INCLUDE = re.compile(r'#include\s*"([^"]+)"')

errors = []


def check_file(path):
    rel = os.path.relpath(path, root)
    folder = os.path.dirname(rel)
    me = layer(folder)
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = f.read().split('\n')
    for n, line in enumerate(lines, 1):
        where = f'{rel}:{n}'
        if GUI.search(line) and me not in ('timeline', 'app'):
            errors.append(f'{where}: GLib/GTK belong to the views (viewer/timeline, viewer/app): {line.strip()}')
        if SQLITE.search(line) and me in ('reader', 'symbolize', 'model', 'recorder'):
            errors.append(f'{where}: {me} must not know the store (sqlite3.h): {line.strip()}')
        m = INCLUDE.search(line)
        if m:
            owner = owners.get(os.path.basename(m.group(1)))
            if owner is None or owner == folder or owner.startswith('schema') or m.group(1) in SHARED:
                continue
            other = layer(owner)
            if me == 'recorder' and other != 'recorder':
                errors.append(f'{where}: the recorder includes {owner}/{m.group(1)}')
            elif me in ALLOWED and other != me and other not in ALLOWED[me]:
                errors.append(f'{where}: {me} may not include {other} ({owner}/{m.group(1)}): '
                              f'data flows {" -> ".join(ORDER)}')
        if me != 'store' and top_of(rel) == 'viewer':
            if 'sqlite3_prepare' in line:
                errors.append(f'{where}: a statement prepared outside viewer/store '
                              f'(name it in read_queries.c or view_queries.c)')
            if 'sqlite3_exec' in line and 'PRAGMA' not in line:
                errors.append(f'{where}: sqlite3_exec outside viewer/store runs only PRAGMAs')


def top_of(rel):
    return rel.split(os.sep)[0]


count = 0
for top in ('viewer', 'recorder'):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith(('.c', '.h')):
                check_file(os.path.join(d, f))
                count += 1

if count < 50:
    print(f'FAIL: only {count} source files under {root}: wrong source root?')
    sys.exit(1)
for e in errors:
    print('FAIL:', e)
if errors:
    sys.exit(1)
print(f'layering: ok ({count} files)')

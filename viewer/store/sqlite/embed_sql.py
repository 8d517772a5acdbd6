#!/usr/bin/env python3
"""embed_sql.py IN.sql OUT.c - turns schema/stallscope.sql into a C string so the
importer binary carries the exact schema it was built with (no path to find at
run time)."""
import sys

src, out = sys.argv[1], sys.argv[2]
text = open(src, encoding="utf-8").read()
with open(out, "w", encoding="utf-8") as f:
    f.write("/* Generated from schema/stallscope.sql by embed_sql.py; do not edit. */\n")
    f.write('#include "schema_sql.h"\n\nconst char ss_schema_sql[] =\n')
    for line in text.splitlines(True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        f.write('\t"%s"\n' % esc)
    f.write(";\n")

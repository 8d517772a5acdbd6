/*
 * pprof_none.c - the pprof writer of a build without protobuf-c or zlib
 * (meson said so when it was configured): the format is left out, and
 * asking for it says how to get it.
 */
#include "export.h"

bool ss_export_have_pprof(void)
{
	return false;
}

int ss_export_pprof(sqlite3 *db, const struct ss_export_opts *o, FILE *out, struct ss_export_stats *st,
		    char *err, size_t errlen)
{
	(void)db;
	(void)o;
	(void)out;
	(void)st;
	snprintf(err, errlen, "this build has no pprof format: it was configured without protobuf-c or zlib "
		 "(install protobuf-c-compiler, libprotobuf-c-dev and zlib1g-dev, then run meson setup again)");
	return -1;
}

/*
 * demangle.c - see demangle.h. cplus_demangle with DMGL_AUTO tries the Rust
 * demangler first (which takes legacy Rust symbols, valid Itanium names that end
 * in a hash, and v0) and the GNU v3 one next; DMGL_PARAMS keeps C++ parameter
 * lists, so overloads stay apart.
 */
#include "demangle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STALLSCOPE_HAVE_LIBIBERTY
#include <libiberty/demangle.h>
#endif

bool ss_demangle_available(void)
{
#ifdef STALLSCOPE_HAVE_LIBIBERTY
	return true;
#else
	return false;
#endif
}

bool ss_demangle(const char *name, char *out, size_t len)
{
	/* Every scheme starts "_Z" or "_R" (also with a leading '.' or '_' on some
	 * targets); anything else is not worth a call. */
	if (!name || !len || !(name[0] == '_' && (name[1] == 'Z' || name[1] == 'R' || name[1] == '_')))
		return false;
#ifdef STALLSCOPE_HAVE_LIBIBERTY
	char *d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!d)
		return false;
	snprintf(out, len, "%s", d);
	free(d);
	return true;
#else
	(void)out;
	return false;
#endif
}

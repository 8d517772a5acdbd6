/*
 * demangle.h - symbol names as people read them: C++ (Itanium ABI) and Rust, both
 * the legacy scheme (_ZN...17h<hash>E) and v0 (_R...), through libiberty's
 * demangler (Debian's libiberty-dev, linked statically). Without it (a build
 * without libiberty) names stay as the binary spells them. Thread-safe: the
 * demangler keeps no state between calls.
 */
#ifndef STALLSCOPE_DEMANGLE_H
#define STALLSCOPE_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* When name is a mangled C++ or Rust symbol: its readable form into out (cut to
 * len - 1 bytes) and true. Otherwise false and out untouched. */
bool ss_demangle(const char *name, char *out, size_t len);

/* Whether this build can demangle (libiberty was found). */
bool ss_demangle_available(void);

#endif /* STALLSCOPE_DEMANGLE_H */

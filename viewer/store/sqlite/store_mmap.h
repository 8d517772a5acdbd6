/*
 * store_mmap.h - memory-mapped reads for the read-only connections of
 * store_open.h: SQLite reads B-tree pages straight from a shared mapping of the
 * whole file instead of copying each one out of the kernel with pread.
 *
 * Why a VFS of our own and not just PRAGMA mmap_size: SQLite maps at most its
 * compile-time SQLITE_MAX_MMAP_SIZE (2 GiB in Debian's build), and a large
 * trace keeps its indexes and summaries, the pages every frame reads, at the
 * end of the file, past 2 GiB. The "stallscope-ro" VFS wraps the default one,
 * maps each main database file once per process (all connections to it share
 * the mapping) and answers SQLite's page fetches from it; PRAGMA mmap_size
 * only switches SQLite's fetching on. Everything else (locks, reads of pages
 * past the mapping, journals, WAL) goes to the default VFS unchanged.
 *
 * A mapped file can be cut short under the reader (someone copies a new trace
 * over it, rsync rewrites it in place, a quota truncates it): a read of a page
 * past the new end raises SIGBUS, which by default kills the viewer. The
 * SIGBUS handler installed here maps a page of zeros in place of the missing
 * one when the fault is inside one of these mappings, and lets the read go
 * on: SQLite then finds a page that is no B-tree page and fails the statement
 * with SQLITE_CORRUPT, which the callers already turn into a message and a
 * partial picture. Faults anywhere else go to the handler that was there
 * before, or to the default action. A file truncated before it is opened is
 * mapped at its size, and reads past that fail as short reads, as before.
 *
 * Limits: the mapping is made at open, of the file's size then: pages a writer
 * appends later are read with pread. Where the address space is limited
 * (RLIMIT_AS, 32-bit) a file is mapped only when it fits in an eighth of what
 * is left free, else it is read with pread. Each mapped file keeps one
 * descriptor open for the rest of the process (closing a descriptor would drop
 * the POSIX locks other connections of the process hold on the file); at most
 * 64 files are mapped, later ones are read with pread.
 * STALLSCOPE_MMAP=off turns mapping off, for comparisons.
 */
#ifndef STALLSCOPE_STORE_MMAP_H
#define STALLSCOPE_STORE_MMAP_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* The VFS name to open a read-only connection with, so that its main file is
 * mapped; NULL (the default VFS) when mapping is off or cannot be set up.
 * Registers the VFS and installs the SIGBUS handler on the first call.
 * Thread-safe. */
const char *ss_store_mmap_vfs(void);

/* Switches SQLite's page fetching on for a connection opened with that VFS
 * (PRAGMA mmap_size). Returns whether its main file is mapped. */
bool ss_store_mmap_enable(sqlite3 *db);

/* Pages replaced with zeros since the process started (faults on truncated
 * mapped files). Thread-safe. */
uint64_t ss_store_mmap_faults(void);

#endif /* STALLSCOPE_STORE_MMAP_H */

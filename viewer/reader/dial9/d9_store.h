/*
 * d9_store.h - the bytes of one dial9 trace file, raw or gzip-compressed
 * (detected by the 1f 8b magic, never by the name), read at any offset of the
 * decompressed stream.
 *
 * A gzip file (one member or several concatenated) is inflated as far as it is
 * read: into memory up to D9_INFLATE_IN_MEMORY, past that into an unlinked
 * temporary file in $TMPDIR (or /tmp), so memory stays bounded whatever the
 * file's size. Damage in the compressed data ends the stream where it is, with
 * a note naming the compressed offset; what was inflated before stays readable.
 * Inflation stops at D9_MAX_INFLATE bytes, or at D9_MAX_RATIO times the
 * compressed size (a decompression bomb), also with a note.
 *
 * Not thread-safe; one store per open file.
 */
#ifndef STALLSCOPE_D9_STORE_H
#define STALLSCOPE_D9_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct d9_store;

/* A caller's read window (for stores that are not in memory). Zero it before
 * the first use; d9_window_free releases it. */
struct d9_window {
	uint8_t *buf;
	size_t cap, len;
	uint64_t off;
};

enum d9_detect {
	D9_DETECT_NO = 0,    /* neither a dial9 trace nor gzip */
	D9_DETECT_RAW,       /* starts with the TRC\0 magic (of any version) */
	D9_DETECT_GZIP,      /* gzip whose content starts with it */
	D9_DETECT_OTHER_GZIP /* gzip, but not of a dial9 trace */
};

/* What the first bytes of a file say (p: up to 64 KiB of its start). */
enum d9_detect d9_detect(const uint8_t *p, size_t n);
/* The same for a file; D9_DETECT_NO when it cannot be read. */
enum d9_detect d9_detect_file(const char *path);

/* Opens a file or a caller's buffer (which must outlive the store). Returns
 * NULL with a message in err when it cannot be opened or read at all. */
struct d9_store *d9_store_open_file(const char *path, char *err, size_t errlen);
struct d9_store *d9_store_open_buffer(const void *buf, size_t len, char *err, size_t errlen);
void d9_store_close(struct d9_store *s);

/* Points at [off, off + want) of the decompressed stream, or at what there is
 * when it ends sooner (*avail < want); NULL with *avail = 0 at its end. The
 * pointer is valid until the next call (with any window). want is at most
 * D9_MAX_FRAME. */
const uint8_t *d9_store_get(struct d9_store *s, struct d9_window *w, uint64_t off, size_t want, size_t *avail);
void d9_window_free(struct d9_window *w);

/* Inflates everything (a no-op for raw files): afterwards the size is final. */
void d9_store_finish(struct d9_store *s);
/* Decompressed bytes known so far (final after d9_store_finish). */
uint64_t d9_store_size(const struct d9_store *s);
/* The file's own size, and how much of it has been consumed (progress). */
uint64_t d9_store_input_size(const struct d9_store *s);
uint64_t d9_store_input_done(const struct d9_store *s);
bool d9_store_gzip(const struct d9_store *s);
/* Why the decompressed stream ended early (damaged gzip, I/O error, bomb
 * limit), or NULL. */
const char *d9_store_note(const struct d9_store *s);

#endif /* STALLSCOPE_D9_STORE_H */

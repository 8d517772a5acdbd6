/*
 * d9_format.h - the constants of dial9-trace-format version 1 (the Tokio
 * profiler dial9's trace files; its SPEC.md is the reference), as this reader
 * needs them: the header, the frame tags, the field types, and the bounds this
 * reader puts on hostile input. Little-endian helpers for the decoder.
 */
#ifndef STALLSCOPE_D9_FORMAT_H
#define STALLSCOPE_D9_FORMAT_H

#include <stdint.h>
#include <string.h>

/* Header: the magic "TRC\0" then a version byte. */
#define D9_MAGIC "TRC\0"
#define D9_MAGIC_LEN 4
#define D9_VERSION 1
#define D9_HEADER_LEN 5

/* Frame tags. */
enum {
	D9_TAG_SCHEMA = 1,
	D9_TAG_EVENT = 2,
	D9_TAG_STRING_POOL = 3,
	D9_TAG_STACK_POOL = 4,
	D9_TAG_TS_RESET = 5,
	D9_TAG_ANNOTATIONS = 6,
};

/* Field types; D9_OPTIONAL on a type in a schema marks an optional field (a
 * presence byte precedes its value). */
enum d9_type {
	D9_I64 = 1,
	D9_F64 = 2,
	D9_BOOL = 3,
	D9_STRING = 4,
	D9_BYTES = 5,
	D9_POOLED_STACK = 6,
	D9_POOLED_STRING = 7,
	D9_STACK = 8,
	D9_VARINT = 9,
	D9_STRING_MAP = 10,
	D9_U8 = 11,
	D9_U16 = 12,
	D9_U32 = 13,
	D9_LIST = 14,
	D9_MAP = 15,
};
#define D9_OPTIONAL 0x80
#define D9_TYPE_MAX D9_MAP

/* The largest timestamp delta of an event header (24 bits). */
#define D9_MAX_DELTA 0xffffffu

/* Bounds against hostile input. A frame has no length prefix: one larger than
 * D9_MAX_FRAME is treated as damage (dial9 writes batches of about 1 MiB). */
#define D9_MAX_FRAME (64u << 20)
/* Nesting of dynamic lists and maps. */
#define D9_MAX_NEST 16
/* Distinct schemas of one file, and the bytes the file's strings and stacks
 * may hold (past them a string or stack is unresolved, with a warning). */
#define D9_MAX_SCHEMAS 65536u
#define D9_MAX_STRING_BYTES (256u << 20)
#define D9_MAX_STACK_BYTES (256u << 20)
/* Streams (header-delimited batches) indexed for the time-order merge; a file
 * with more has its rest read as one stream, in file order. */
#define D9_MAX_BATCHES (4u << 20)
/* Batches decoded at once by the merge. */
#define D9_MAX_OPEN 512u
/* A gzip file decompresses into memory up to this size, else into a temporary
 * file; decompression stops at D9_MAX_INFLATE bytes, or at 1000 times the
 * compressed size (a decompression bomb). */
#define D9_INFLATE_IN_MEMORY (64u << 20)
#define D9_MAX_INFLATE (16ull << 30)
#define D9_MAX_RATIO 1000u

static inline uint16_t d9_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t d9_le24(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}

static inline uint32_t d9_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t d9_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* Whether p (at least D9_HEADER_LEN bytes) is a version 1 header. */
static inline int d9_is_header(const uint8_t *p)
{
	return memcmp(p, D9_MAGIC, D9_MAGIC_LEN) == 0 && p[4] == D9_VERSION;
}

#endif /* STALLSCOPE_D9_FORMAT_H */

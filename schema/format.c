/*
 * format.c - CRC32C and header validation shared by the segment writer and every
 * reader. Kept free of any dependency but libc so the recorder can link it.
 */
#include "segment_format.h"

#include <string.h>

/* Slice-by-8 CRC32C (Castagnoli, reflected 0x82F63B78): about 1 GB/s in portable C,
 * far above what the writer produces, and identical on every host. */
static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t ss_crc32c(uint32_t crc, const void *data, size_t len)
{
	/* Building the table twice from two threads writes identical values: harmless. */
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	const uint8_t *p = data;
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= crc;
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

uint32_t ss_file_header_crc(const struct ss_file_header *h, const char *exe)
{
	struct ss_file_header tmp = *h;
	tmp.header_crc = 0;
	uint32_t crc = ss_crc32c(0, &tmp, sizeof tmp);
	if (exe && h->exe_len)
		crc = ss_crc32c(crc, exe, h->exe_len);
	return crc;
}

uint32_t ss_block_header_crc(const struct ss_block_header *b)
{
	struct ss_block_header tmp = *b;
	tmp.header_crc = 0;
	return ss_crc32c(0, &tmp, sizeof tmp);
}

const char *ss_file_header_check(const struct ss_file_header *h, const char *exe)
{
	if (memcmp(h->magic, SS_FILE_MAGIC, 8) != 0)
		return "not a stallscope segment (bad magic)";
	if (h->endian != SS_ENDIAN_MARK)
		return "segment written on a host of the other endianness";
	if (h->version != SS_FORMAT_VERSION)
		return "unsupported segment format version";
	if (h->exe_len > SS_MAX_EXE_LEN ||
	    h->header_size != sizeof(struct ss_file_header) + h->exe_len)
		return "corrupt file header (bad sizes)";
	if (exe && ss_file_header_crc(h, exe) != h->header_crc)
		return "corrupt file header (CRC mismatch)";
	return NULL;
}

const char *ss_block_header_check(const struct ss_block_header *b)
{
	if (b->magic != SS_BLOCK_MAGIC)
		return "bad block magic";
	if (ss_block_header_crc(b) != b->header_crc)
		return "block header CRC mismatch";
	if (b->kind != SS_BLOCK_EVENTS && b->kind != SS_BLOCK_FOOTER)
		return "unknown block kind";
	if (b->payload_len > SS_MAX_BLOCK_PAYLOAD || b->raw_len > SS_MAX_BLOCK_RAW)
		return "block larger than the format allows";
	if (!(b->flags & SS_BLOCK_F_ZSTD) && b->raw_len != b->payload_len)
		return "uncompressed block with mismatched lengths";
	if (b->flags & ~SS_BLOCK_F_ZSTD)
		return "unknown block flags";
	if (b->kind == SS_BLOCK_FOOTER && b->raw_len != sizeof(struct ss_footer))
		return "footer block of the wrong size";
	return NULL;
}

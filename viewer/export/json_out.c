/*
 * json_out.c - see json_out.h.
 */
#include "json_out.h"

#include <inttypes.h>
#include <math.h>

void ss_json_escape(FILE *o, const char *s)
{
	fputc('"', o);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(o, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", o);
		else if (*p == '\t')
			fputs("\\t", o);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(o, "\\u%04x", *p);
		else
			fputc(*p, o);
	}
	fputc('"', o);
}

void ss_json_begin(struct ss_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->first[0] = true;
}

static void sep(struct ss_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	if (j->pretty && j->depth > 0 && j->depth <= 2)
		fprintf(j->out, "\n%*s", 2 * j->depth, "");
	if (key) {
		ss_json_escape(j->out, key);
		fputc(':', j->out);
	}
}

void ss_json_open(struct ss_json *j, const char *key, char brace)
{
	sep(j, key);
	fputc(brace, j->out);
	if (j->depth + 1 < SS_JSON_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

void ss_json_close(struct ss_json *j, char brace)
{
	if (j->pretty && j->depth > 0 && j->depth <= 2 && !j->first[j->depth])
		fprintf(j->out, "\n%*s", 2 * (j->depth - 1), "");
	fputc(brace == '{' ? '}' : ']', j->out);
	if (j->depth > 0)
		j->depth--;
	if (j->depth == 0)
		fputc('\n', j->out);
}

void ss_json_int(struct ss_json *j, const char *key, int64_t v)
{
	sep(j, key);
	fprintf(j->out, "%" PRId64, v);
}

void ss_json_num(struct ss_json *j, const char *key, double v)
{
	sep(j, key);
	if (!isfinite(v))
		fputs("null", j->out);
	else if (v == (double)(int64_t)v && fabs(v) < 9e15)
		fprintf(j->out, "%" PRId64, (int64_t)v);
	else
		fprintf(j->out, "%.6g", v);
}

void ss_json_str(struct ss_json *j, const char *key, const char *v)
{
	sep(j, key);
	if (v)
		ss_json_escape(j->out, v);
	else
		fputs("null", j->out);
}

void ss_json_bool(struct ss_json *j, const char *key, bool v)
{
	sep(j, key);
	fputs(v ? "true" : "false", j->out);
}

void ss_json_null(struct ss_json *j, const char *key)
{
	sep(j, key);
	fputs("null", j->out);
}

/*
 * json_out.h - writing JSON to a stream: the CLI's --json outputs (report,
 * compare) and the Chrome trace of `stallscope export`. Members and elements
 * are separated as they come, strings escaped, numbers written as JSON can
 * hold them (a non-finite double is written as null). It lives with the
 * export formats (viewer/export/) because JSON is one of them; it depends on
 * libc only.
 */
#ifndef STALLSCOPE_JSON_OUT_H
#define STALLSCOPE_JSON_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SS_JSON_DEPTH 32

struct ss_json {
	FILE *out;
	int depth;
	bool first[SS_JSON_DEPTH];
	bool pretty;   /* a newline before each member of the top two levels */
};

void ss_json_begin(struct ss_json *j, FILE *out);
/* key is NULL inside an array. brace is '{' or '['. */
void ss_json_open(struct ss_json *j, const char *key, char brace);
void ss_json_close(struct ss_json *j, char brace);
void ss_json_int(struct ss_json *j, const char *key, int64_t v);
void ss_json_num(struct ss_json *j, const char *key, double v);
/* NULL writes null */
void ss_json_str(struct ss_json *j, const char *key, const char *v);
void ss_json_bool(struct ss_json *j, const char *key, bool v);
void ss_json_null(struct ss_json *j, const char *key);
/* A string's JSON form, to out. */
void ss_json_escape(FILE *out, const char *s);

#endif /* STALLSCOPE_JSON_OUT_H */

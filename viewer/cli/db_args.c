/*
 * db_args.c - see db_args.h.
 */
#include "db_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ss_cli_parse_age(const char *s, int64_t *ns)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v < 0)
		return -1;
	double unit;
	if (strcmp(end, "w") == 0)
		unit = 7 * 86400.0;
	else if (strcmp(end, "d") == 0)
		unit = 86400.0;
	else if (strcmp(end, "h") == 0)
		unit = 3600.0;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		unit = 60.0;
	else if (strcmp(end, "s") == 0)
		unit = 1.0;
	else
		return -1;
	double x = v * unit * 1e9;
	if (x > 9e18)
		return -1;
	*ns = (int64_t)x;
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int ss_cli_parse_wall(const char *s, int64_t *ns)
{
	if (strcmp(s, "now") == 0) {
		*ns = now_ns();
		return 0;
	}
	if (s[0] == '-') {
		int64_t age;
		if (ss_cli_parse_age(s + 1, &age) != 0)
			return -1;
		*ns = now_ns() - age;
		return 0;
	}
	struct tm tm = { 0 };
	int y, mo, d, h = 0, mi = 0, n = 0;
	double sec = 0;
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3)
		return -1;
	const char *r = s + n;
	if (*r == 'T' || *r == ' ') {
		int k = 0;
		if (sscanf(r + 1, "%2d:%2d%n", &h, &mi, &k) != 2)
			return -1;
		r += 1 + k;
		if (*r == ':') {
			char *e;
			sec = strtod(r + 1, &e);
			if (e == r + 1)
				return -1;
			r = e;
		}
	}
	if (*r == 'Z')
		r++;
	if (*r || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	time_t t = timegm(&tm);
	*ns = (int64_t)t * 1000000000 + (int64_t)(sec * 1e9);
	return 0;
}

const char *ss_cli_opt(int argc, char **argv, int *i, const char *name, bool *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n])
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

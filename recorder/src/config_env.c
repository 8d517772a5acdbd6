/*
 * config_env.c - STALLSCOPE_* environment variables into a stallscope_config.
 *
 * Every value is checked; the first bad one is reported by name with the reason
 * and the accepted form, and the caller keeps recording off. Unknown STALLSCOPE_*
 * names are reported as a warning (a typo would otherwise silently do nothing).
 */
#include "recorder-private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

static const char *const known[] = {
	"STALLSCOPE_ENABLED", "STALLSCOPE_OUTPUT_DIR", "STALLSCOPE_FILE_PREFIX",
	"STALLSCOPE_MAX_FILE_SIZE", "STALLSCOPE_ROTATION_COUNT", "STALLSCOPE_ROTATION_PERIOD_S",
	"STALLSCOPE_CPU_SAMPLING", "STALLSCOPE_SAMPLE_HZ", "STALLSCOPE_STALL_THRESHOLD_MS",
	"STALLSCOPE_TASK_DUMP_ENABLED", "STALLSCOPE_TASK_DUMP_IDLE_THRESHOLD_MS",
	"STALLSCOPE_METRICS_FILE", "STALLSCOPE_FLUSH_INTERVAL_MS", "STALLSCOPE_BUFFER_EVENTS",
	"STALLSCOPE_MAX_THREADS", "STALLSCOPE_COMPRESS", "STALLSCOPE_SAMPLER",
	"STALLSCOPE_OFFCPU_STACKS", "STALLSCOPE_SWITCH_SOURCE", "STALLSCOPE_SAMPLE_ALL_THREADS",
	"STALLSCOPE_UNWIND",
	"STALLSCOPE_STACK_COPY", "STALLSCOPE_CLOCK", "STALLSCOPE_ARCHIVE_COMMAND", "STALLSCOPE_ARCHIVE_TIMEOUT_S",
	/* set by `stallscope record` for the preload shim (recorder/src/shim-abi.h) */
	"STALLSCOPE_PRELOAD_ROOT_PID", "STALLSCOPE_FOLLOW_CHILDREN", NULL,
};

/* Returns 1/0, or -1 when v is not a boolean word. */
static int parse_bool(const char *v)
{
	static const char *const yes[] = {"1", "true", "yes", "on", NULL};
	static const char *const no[] = {"0", "false", "no", "off", "", NULL};
	for (int i = 0; yes[i]; i++)
		if (!strcasecmp(v, yes[i]))
			return 1;
	for (int i = 0; no[i]; i++)
		if (!strcasecmp(v, no[i]))
			return 0;
	return -1;
}

/* Unsigned decimal with an optional K/M/G (binary) suffix when allow_suffix. */
static int parse_u64(const char *v, int allow_suffix, uint64_t *out)
{
	if (!*v || *v == '-' || *v == '+')
		return -1;
	errno = 0;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v)
		return -1;
	uint64_t mul = 1;
	if (allow_suffix && *end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		case 'g': case 'G': mul = 1ull << 30; break;
		default: return -1;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
	}
	if (*end)
		return -1;
	if (n > UINT64_MAX / mul)
		return -1;
	*out = n * mul;
	return 0;
}

struct num_var {
	const char *name;
	uint64_t min, max;
	int suffix;
	const char *form;
};

static int get_num(const struct num_var *nv, uint64_t *out, char *err, size_t errlen)
{
	const char *v = getenv(nv->name);
	if (!v)
		return 0;
	uint64_t n;
	if (parse_u64(v, nv->suffix, &n) != 0) {
		snprintf(err, errlen, "%s=\"%s\" is not %s", nv->name, v, nv->form);
		return -1;
	}
	if (n < nv->min || n > nv->max) {
		snprintf(err, errlen, "%s=%s is out of range (%llu to %llu)", nv->name, v,
			 (unsigned long long)nv->min, (unsigned long long)nv->max);
		return -1;
	}
	*out = n;
	return 1;
}

static int get_bool(const char *name, int32_t *out, char *err, size_t errlen)
{
	const char *v = getenv(name);
	if (!v)
		return 0;
	int b = parse_bool(v);
	if (b < 0) {
		snprintf(err, errlen, "%s=\"%s\" is not a boolean (use 1/0, true/false, yes/no, on/off)",
			 name, v);
		return -1;
	}
	*out = b;
	return 1;
}

/* One of a fixed list of words (case-insensitive); *out = its index. */
static int get_word(const char *name, const char *const *words, int32_t *out, char *err,
		    size_t errlen)
{
	const char *v = getenv(name);
	if (!v)
		return 0;
	for (int i = 0; words[i]; i++) {
		if (!strcasecmp(v, words[i])) {
			*out = i;
			return 1;
		}
	}
	char list[128] = "";
	for (int i = 0; words[i]; i++) {
		strncat(list, i ? "|" : "", sizeof list - strlen(list) - 1);
		strncat(list, words[i], sizeof list - strlen(list) - 1);
	}
	snprintf(err, errlen, "%s=\"%s\" is not one of %s", name, v, list);
	return -1;
}

static void warn_unknown(void)
{
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "STALLSCOPE_", 11) != 0)
			continue;
		size_t len = strcspn(*e, "=");
		int ok = 0;
		for (int i = 0; known[i] && !ok; i++)
			ok = strlen(known[i]) == len && !strncmp(*e, known[i], len);
		if (!ok)
			ss_log("warning: unknown variable %.*s ignored", (int)len, *e);
	}
}

SS_INTERNAL int ss_config_from_env(struct stallscope_config *cfg, char *err, size_t errlen)
{
	stallscope_config_init(cfg);
	int32_t enabled = 0;
	if (get_bool("STALLSCOPE_ENABLED", &enabled, err, errlen) < 0)
		return -1;
	if (!enabled)
		return 0;
	warn_unknown();

	const char *dir = getenv("STALLSCOPE_OUTPUT_DIR");
	if (dir) {
		if (!*dir) {
			snprintf(err, errlen, "STALLSCOPE_OUTPUT_DIR is empty (give a directory)");
			return -1;
		}
		cfg->output_dir = dir;
	}
	const char *prefix = getenv("STALLSCOPE_FILE_PREFIX");
	if (prefix) {
		if (!*prefix || strchr(prefix, '/') || !strcmp(prefix, ".") || !strcmp(prefix, "..")) {
			snprintf(err, errlen,
				 "STALLSCOPE_FILE_PREFIX=\"%s\" must be a non-empty file name without '/'",
				 prefix);
			return -1;
		}
		cfg->file_prefix = prefix;
	}
	const char *metrics = getenv("STALLSCOPE_METRICS_FILE");
	if (metrics && *metrics)
		cfg->metrics_file = metrics;
	const char *archive = getenv("STALLSCOPE_ARCHIVE_COMMAND");
	if (archive) {
		if (!*archive) {
			snprintf(err, errlen, "STALLSCOPE_ARCHIVE_COMMAND is empty (give a shell command, e.g."
				 " 'rsync %%p backup:/traces/%%h/%%f', or unset it)");
			return -1;
		}
		cfg->archive_command = archive;
	}

	static const struct num_var vars[] = {
		{"STALLSCOPE_MAX_FILE_SIZE", 65536, 1ull << 40, 1, "a size in bytes (suffix K, M or G allowed)"},
		{"STALLSCOPE_ROTATION_COUNT", 1, 1000000, 0, "a count of segments"},
		{"STALLSCOPE_ROTATION_PERIOD_S", 0, 86400 * 365, 0, "a number of seconds (0 = no time rotation)"},
		{"STALLSCOPE_SAMPLE_HZ", 1, 100000, 0, "a frequency in Hz"},
		{"STALLSCOPE_STALL_THRESHOLD_MS", 0, 3600000, 0, "milliseconds (0 disables)"},
		{"STALLSCOPE_TASK_DUMP_IDLE_THRESHOLD_MS", 1, 3600000, 0, "milliseconds"},
		{"STALLSCOPE_FLUSH_INTERVAL_MS", 1, 60000, 0, "milliseconds"},
		{"STALLSCOPE_BUFFER_EVENTS", 64, 1u << 26, 1, "an event count"},
		{"STALLSCOPE_MAX_THREADS", 1, 65536, 0, "a thread count"},
		{"STALLSCOPE_STACK_COPY", 1024, 65528, 1, "a size in bytes (suffix K allowed)"},
		{"STALLSCOPE_ARCHIVE_TIMEOUT_S", 1, 86400, 0, "a number of seconds"},
	};
	uint64_t n;
	int r;
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		if ((r = get_num(&vars[i], &n, err, errlen)) < 0)
			return -1;
		if (!r)
			continue;
		switch (i) {
		case 0: cfg->max_file_size = n; break;
		case 1: cfg->rotation_count = (uint32_t)n; break;
		case 2: cfg->rotation_period_s = (uint32_t)n; break;
		case 3: cfg->sample_hz = (uint32_t)n; break;
		case 4: cfg->stall_threshold_ms = (uint32_t)n; break;
		case 5: cfg->task_dump_idle_threshold_ms = (uint32_t)n; break;
		case 6: cfg->flush_interval_ms = (uint32_t)n; break;
		case 7: cfg->buffer_events = (uint32_t)n; break;
		case 8: cfg->max_threads = (uint32_t)n; break;
		case 9: cfg->stack_copy_bytes = (uint32_t)n; break;
		case 10: cfg->archive_timeout_s = (uint32_t)n; break;
		}
	}
	/* 0 must mean "no time rotation" here, but 0 in the struct means "default". */
	const char *period = getenv("STALLSCOPE_ROTATION_PERIOD_S");
	if (period && cfg->rotation_period_s == 0)
		cfg->rotation_period_s = UINT32_MAX;

	static const char *const sampler_words[] = {"auto", "perf", "timer", "off", "cpu", NULL};
	/* In the order of STALLSCOPE_OFFCPU_AUTO, _ON, _OFF, _ALL. */
	static const char *const offcpu_words[] = {"auto", "on", "off", "all", NULL};
	/* In the order of STALLSCOPE_UNWIND_AUTO, _FP, _DWARF. */
	static const char *const unwind_words[] = {"auto", "fp", "dwarf", NULL};
	/* In the order of STALLSCOPE_CLOCK_AUTO, _TSC, _VDSO. */
	static const char *const clock_words[] = {"auto", "tsc", "vdso", NULL};
	if (get_word("STALLSCOPE_SAMPLER", sampler_words, &cfg->sampler, err, errlen) < 0 ||
	    get_word("STALLSCOPE_OFFCPU_STACKS", offcpu_words, &cfg->offcpu_stacks, err, errlen) < 0 ||
	    get_word("STALLSCOPE_UNWIND", unwind_words, &cfg->unwind, err, errlen) < 0 ||
	    get_word("STALLSCOPE_CLOCK", clock_words, &cfg->hook_clock, err, errlen) < 0 ||
	    get_bool("STALLSCOPE_SAMPLE_ALL_THREADS", &cfg->sample_all_threads, err, errlen) < 0)
		return -1;
	if (get_bool("STALLSCOPE_CPU_SAMPLING", &cfg->cpu_sampling, err, errlen) < 0 ||
	    get_bool("STALLSCOPE_TASK_DUMP_ENABLED", &cfg->task_dump_enabled, err, errlen) < 0 ||
	    get_bool("STALLSCOPE_COMPRESS", &cfg->compress, err, errlen) < 0)
		return -1;
	return 1;
}

/*
 * tl_ticks.c - 1-2-5 tick ladder and time formatting for the ruler, tooltips and
 * panels. Pure functions, unit-tested in tests/viewer/test_ticks.c.
 */
#include "tl_ticks.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

int64_t tl_tick_step(double min_step_ns)
{
	if (!(min_step_ns > 1))
		return 1;
	/* Walk the decades rather than using log10, so the answer is exact for
	 * every integer input (1000 must give 1000, not 999.99 -> 2000). */
	int64_t decade = 1;
	while ((double)decade * 10 <= min_step_ns && decade <= INT64_MAX / 100)
		decade *= 10;
	static const int mult[] = { 1, 2, 5, 10 };
	for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++)
		if ((double)(decade * mult[i]) >= min_step_ns)
			return decade * mult[i];
	return decade * 10;
}

/* Decimals needed so that values that differ by step print differently in
 * the unit `unit` (e.g. step 200 us in ms -> 1 decimal). */
static int decimals_for(int64_t step, int64_t unit)
{
	if (step <= 0)
		return -1;
	int d = 0;
	int64_t u = unit;
	while (step < u && d < 6) {
		u /= 10;
		d++;
	}
	return d;
}

void tl_format_duration(char *buf, size_t len, int64_t d, int64_t step)
{
	const char *sign = d < 0 ? "-" : "";
	uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
	if (a >= 60ull * 1000000000ull && (step <= 0 || step >= 1000000000)) {
		uint64_t s = a / 1000000000ull;
		if (s >= 3600)
			snprintf(buf, len, "%s%" PRIu64 " h %02" PRIu64 " min %02" PRIu64 " s", sign,
				 s / 3600, s / 60 % 60, s % 60);
		else
			snprintf(buf, len, "%s%" PRIu64 " min %02" PRIu64 " s", sign, s / 60, s % 60);
		return;
	}
	static const struct { int64_t unit; const char *name; } units[] = {
		{ 1000000000, "s" }, { 1000000, "ms" }, { 1000, "us" }, { 1, "ns" },
	};
	size_t i = 0;
	/* The unit is chosen from the magnitude of the value, or of the step for
	 * 0 so that "0 ms" sits among "1 ms, 2 ms". */
	uint64_t mag = a ? a : (uint64_t)(step > 0 ? step : 1);
	while (i + 1 < sizeof units / sizeof units[0] && mag < (uint64_t)units[i].unit)
		i++;
	double v = (double)a / (double)units[i].unit;
	int dec = decimals_for(step, units[i].unit);
	if (dec < 0)
		dec = v >= 100 ? 0 : v >= 10 ? 1 : 2;
	if (units[i].unit == 1)
		dec = 0;
	snprintf(buf, len, "%s%.*f %s", sign, dec, v, units[i].name);
}

void tl_format_wall(char *buf, size_t len, int64_t real_ns, int64_t step)
{
	time_t secs = (time_t)(real_ns / 1000000000);
	int64_t frac = real_ns % 1000000000;
	if (frac < 0) {
		frac += 1000000000;
		secs--;
	}
	struct tm tm;
	if (!localtime_r(&secs, &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	int dec = step >= 1000000000 ? 0 : step >= 1000000 ? 3 : step >= 1000 ? 6 : 9;
	int64_t div = 1;
	for (int i = dec; i < 9; i++)
		div *= 10;
	if (dec == 0)
		snprintf(buf, len, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
	else
		snprintf(buf, len, "%02d:%02d:%02d.%0*" PRId64, tm.tm_hour, tm.tm_min, tm.tm_sec,
			 dec, frac / div);
}

/*
 * tl_ticks.h - the time ruler's arithmetic: tick spacing on a 1-2-5 ladder for
 * any zoom level (1 ns to hours, computed, never a hand-written table with gaps)
 * and the formatting of relative times, durations and wall-clock times.
 */
#ifndef STALLSCOPE_TL_TICKS_H
#define STALLSCOPE_TL_TICKS_H

#include <stddef.h>
#include <stdint.h>

/* The smallest step of the 1-2-5 ladder (1, 2, 5, 10, 20, 50 ... ns) that is at
 * least min_step_ns. Always >= 1. */
int64_t tl_tick_step(double min_step_ns);

/* The duration d (ns) as "1.5 ms", "250 us", "2 s", "3 min 10 s", with as many
 * decimals as the step (ns) needs to tell neighbouring ticks apart. step <= 0:
 * three significant digits. */
void tl_format_duration(char *buf, size_t len, int64_t d, int64_t step);

/* Wall-clock time of a CLOCK_REALTIME ns value: "HH:MM:SS.mmm" in local time
 * (with more decimals when step is below a millisecond). */
void tl_format_wall(char *buf, size_t len, int64_t real_ns, int64_t step);

#endif /* STALLSCOPE_TL_TICKS_H */

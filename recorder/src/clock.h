/*
 * clock.h - what the hooks stamp ring entries with, and how stamps become
 * CLOCK_MONOTONIC nanoseconds (clock.c).
 *
 * A stamp is ss_stamp() (recorder-private.h): the raw TSC where it is usable,
 * else clock_gettime(CLOCK_MONOTONIC) in ns. Every time a ring entry or a slot
 * carries (entry ts, LOSS ranges, retired_ts, task-dump pending times, the
 * watchdog's poll and capture times) is a stamp; everything the writer puts into
 * a segment is nanoseconds, converted here. Nothing outside the recorder ever
 * sees a stamp.
 *
 * Threads: ss_clock_start/stop are control calls (writer start/stop, before any
 * hook of the session runs / after the last); ss_clock_point, ss_clock_ns and
 * the CLOCK record belong to the writer thread; the duration conversions may be
 * used from any thread (the watchdog's thresholds and waits).
 */
#ifndef STALLSCOPE_CLOCK_H
#define STALLSCOPE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "recorder-private.h"

/* Chooses the hooks' clock for a session: want is STALLSCOPE_CLOCK_AUTO (the TSC
 * where usable), _TSC (the TSC even where the kernel times with another
 * clocksource; the other checks still apply) or _VDSO. Takes the first
 * calibration point. status receives one line for the log and META "hook_clock":
 * which clock, and for vdso why the TSC was not used. */
SS_INTERNAL void ss_clock_start(int32_t want, char *status, size_t len);
/* The part of ss_clock_start's check that visits every CPU, taken ahead on a
 * thread of the recorder's own (its affinity changes for the tour and is put
 * back): the writer thread does it first thing, so that start creates no thread
 * for it. The next ss_clock_start with the same want uses its result (and
 * otherwise tours on a thread of its own). Not concurrently with
 * ss_clock_start: the writer's start waits for it. */
SS_INTERNAL void ss_clock_tour(int32_t want);
SS_INTERNAL void ss_clock_stop(void);
/* CPU ns the last ss_clock_start's CPU tour took (on its helper thread, or on
 * the thread that ran ss_clock_tour). */
SS_INTERNAL uint64_t ss_clock_start_cpu_ns(void);
/* 1 when the hooks read the TSC. */
SS_INTERNAL int ss_clock_is_tsc(void);

/* Writer: takes a calibration point now and returns the stamp limit: stamps up
 * to it convert to the same nanoseconds whenever they are converted (later
 * stamps wait for the next point). *now_ns receives the point's CLOCK_MONOTONIC
 * time. */
SS_INTERNAL uint64_t ss_clock_point(uint64_t *now_ns);
/* Writer: a stamp as CLOCK_MONOTONIC ns (interpolated between the calibration
 * points around it; extrapolated past the last one, which only the final drain
 * at stop needs). */
SS_INTERNAL uint64_t ss_clock_ns(uint64_t stamp);

/* Any thread: a duration in stamps as ns and back (the rate measured so far). */
SS_INTERNAL uint64_t ss_clock_delta_ns(uint64_t stamps);
SS_INTERNAL uint64_t ss_clock_delta_stamps(uint64_t ns);

/* Writer: a new segment starts (its CLOCK records report their own drift). */
SS_INTERNAL void ss_clock_segment_begin(void);
/* Writer: the body of a CLOCK record now (FORMAT.md); returns its length, at most
 * SS_CLOCK_BODY_MAX. */
#define SS_CLOCK_BODY_MAX 64
SS_INTERNAL size_t ss_clock_record(uint8_t *body);

#endif /* STALLSCOPE_CLOCK_H */

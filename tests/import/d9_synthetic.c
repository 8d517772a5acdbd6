/*
 * d9_synthetic.c - see d9_synthetic.h. The streams, in file order:
 *   W0  the writer: clock sync, segment metadata
 *   A1  worker 0: spawn 10, poll 10 (spawns 11, wakes 11), a custom event, park
 *   B1  worker 1: park, unpark, poll 11 with two nested tracing spans, park
 *   F1  the flush thread: queue samples, CPU samples (tids, not worker ids)
 *   C1  a thread outside the runtime, drained late (after F1 reached 15.5 s):
 *       wakes 10 at 4 s, during its first poll; spawns 12
 *   A2  worker 0: unpark, poll 10 (its task dump), poll 12 twice, the last open
 *   B2  worker 1: unpark (the latest event); then the symbol table, in the
 *       same stream
 */
#include "d9_synthetic.h"

static const uint64_t S1[2] = { 0x401100, 0x401000 };
static const uint64_t S2[1] = { 0x999999 };

void d9_synthetic(struct d9b *b, int batches)
{
	struct d9t t;
	int n = 0;
#define AT D9S_AT
	if (n++ < batches) {
		d9t_begin(&t, b, 1);
		d9t_clock_sync(&t, AT(0), D9S_REALTIME);
		static const char *keys[] = { "service", "host", "runtime.main" };
		static const char *vals[] = { "synthetic", "testhost", "0,1" };
		d9t_metadata(&t, AT(0), 3, keys, vals);
		d9t_end(&t);
	}
	if (n++ < batches) {
		d9t_begin(&t, b, 100);
		d9t_spawn(&t, AT(1000), 10, "src/main.rs:10:5", true);
		d9t_poll_start(&t, AT(2000), 0, 1, 10, "src/main.rs:10:5");
		d9t_spawn(&t, AT(2500), 11, "src/lib.rs:20:1", true);
		d9t_wake(&t, AT(3000), 10, 11, 0);
		d9t_poll_end(&t, AT(5000), 0);
		/* an event type the importer does not know */
		static const struct d9b_field f[] = { { "count", 9 }, { "label", 4 }, { "flags", 11 | 0x80 } };
		uint16_t id = d9t_type(&t, "MyCustomEvent", true, f, 3);
		d9t_event(&t, id, AT(5500));
		d9b_varint(b, 42);
		d9b_v_string(b, "x\"y");
		d9b_u8(b, 0);
		d9t_park(&t, AT(6000), 0, 0, 50000, 101);
		d9t_end(&t);
	}
	if (n++ < batches) {
		d9t_begin(&t, b, 200);
		static const char *fields[] = { "user", "request" };
		static const char *alice[] = { "alice", NULL };
		d9t_park(&t, AT(1500), 1, 0, 7000, 102);
		d9t_unpark(&t, AT(7000), 1, 2, 7100, 300, 102);
		d9t_poll_start(&t, AT(8000), 1, 1, 11, "src/lib.rs:20:1");
		d9t_span_enter(&t, AT(8100), "app::handler:src/lib.rs:30", 1, 7, 0, "handler", 2, fields, alice);
		d9t_span_enter(&t, AT(8200), "app::db:src/db.rs:5", 1, 8, 7, "db", 0, NULL, NULL);
		d9t_span_exit(&t, AT(8700), "app::db:src/db.rs:5", 1, 8, "db", 0, NULL, NULL);
		d9t_span_close(&t, AT(8701), 8);
		d9t_span_exit(&t, AT(9000), "app::handler:src/lib.rs:30", 1, 7, "handler", 2, fields, alice);
		d9t_poll_end(&t, AT(9500), 1);
		d9t_terminate(&t, AT(9600), 11);
		d9t_span_close(&t, AT(9650), 7);
		d9t_park(&t, AT(9700), 1, 0, 9000, 102);
		d9t_end(&t);
	}
	if (n++ < batches) {
		d9t_begin(&t, b, 300);
		d9t_queue(&t, AT(5500), 3);
		for (int i = 0; i < 5; i++)
			d9t_cpu_sample(&t, AT(2100 + 500 * i), 255, 101, 0, "tokio-rt-worker", S1, 2, 1);
		d9t_cpu_sample(&t, AT(4000), 255, 201, 1, "io-thread", S2, 1, -1);
		d9t_cpu_sample(&t, AT(12000), 0, 101, 0, "tokio-rt-worker", S1, 2, 0);
		d9t_queue(&t, AT(15500), 0);
		d9t_end(&t);
	}
	if (n++ < batches) {
		d9t_begin(&t, b, 600);
		d9t_wake(&t, AT(4000), 0, 10, 255);
		d9t_spawn(&t, AT(12000), 12, "src/main.rs:50:9", false);
		d9t_end(&t);
	}
	if (n++ < batches) {
		d9t_begin(&t, b, 400);
		d9t_unpark(&t, AT(11000), 0, 1, 50500, 1200, 101);
		d9t_poll_start(&t, AT(11500), 0, 1, 10, "src/main.rs:10:5");
		/* written during this poll, timed where the task went idle */
		d9t_task_dump(&t, AT(5000), 10, S1, 2);
		d9t_poll_end(&t, AT(14000), 0);
		d9t_poll_start(&t, AT(14500), 0, 0, 12, "src/main.rs:50:9");
		d9t_poll_end(&t, AT(16000), 0);
		d9t_terminate(&t, AT(17000), 10);
		d9t_poll_start(&t, AT(18000), 0, 0, 12, "src/main.rs:50:9");
		d9t_end(&t);
	}
	if (n++ < batches) {
		d9t_begin(&t, b, 500);
		d9t_unpark(&t, AT(19000), 1, 0, 9500, 0, 102);
		/* dial9's symbolizer appends to the last stream, timestamps 0 */
		d9t_continue(&t);
		d9t_symbol(&t, 0, 0x401000, 64, "main_loop", 0, "src/main.rs", 10);
		d9t_symbol(&t, 0, 0x401100, 32, "handler", 0, "src/lib.rs", 30);
		d9t_symbol(&t, 0, 0x401100, 32, "inlined_fn", 1, "src/lib.rs", 33);
		d9t_end(&t);
	}
#undef AT
}

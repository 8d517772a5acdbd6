/*
 * fuzz_btf.c - libFuzzer target for the recorder's BTF scan (recorder/src/
 * sampler_btf.c, ss_btf_scan): the kernel's BTF is outside data (a file a
 * mount can replace). Any input is scanned as a whole BTF image, for
 * task_struct and for sched_switch's arguments (ss_btf_tp_args): it never
 * reads outside the input, and an answer holds up: offsets of pid and tgid
 * (and the state, or -1) found (0) are byte offsets a 32-bit bit offset allows, a refusal (negative)
 * comes with a reason, never an empty or unterminated one; the arguments are
 * -1 (unknown) or fewer than a FUNC_PROTO's 0xffff parameters.
 *
 * Seeds (corpus/btf/, written by make_btf_seeds) are small images with a
 * struct task_struct among types of every kind the scan skips, and
 * btf_trace_sched_switch typedefs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "sampler-private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ss_btf_task o = { -2, -2, -2 };
	char why[160];
	memset(why, 0x55, sizeof why);
	int r = ss_btf_scan(data, size, &o, why, sizeof why);
	const long most = (long)(UINT32_MAX / 8);
	if (r == 0) {
		if (o.pid < 0 || o.tgid < 0 || o.state < -1 || o.pid > most || o.tgid > most ||
		    o.state > most) {
			fprintf(stderr, "fuzz_btf: found pid at %ld, tgid at %ld, state at %ld\n", o.pid,
				o.tgid, o.state);
			abort();
		}
	} else if (r > 0 || !memchr(why, 0, sizeof why) || !why[0]) {
		fprintf(stderr, "fuzz_btf: refusal %d without a reason\n", r);
		abort();
	}
	/* at most 0xffff parameters, the context one of them */
	int args = ss_btf_tp_args(data, size, "sched_switch");
	if (args < -1 || args > 0xfffe) {
		fprintf(stderr, "fuzz_btf: sched_switch with %d arguments\n", args);
		abort();
	}
	return 0;
}

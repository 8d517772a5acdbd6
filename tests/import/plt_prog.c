/*
 * plt_prog.c - a program whose calls go through the PLT, for test_names plt:
 * built several ways (lazy and immediate binding, with and without IBT's
 * .plt.sec, PIE and not) so the symbolizer's PLT names are checked on each
 * layout the linker makes. It calls libstallscope (stallscope_poll_begin@plt)
 * and libc (clock_gettime@plt); it is read, never run by the test.
 */
#include <stdio.h>
#include <time.h>

#include <stallscope/stallscope.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	(void)argv;
	stallscope_poll_begin((uint64_t)argc, 1);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	stallscope_poll_end();
	printf("%lld\n", (long long)ts.tv_sec);
	return 0;
}

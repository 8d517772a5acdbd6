/*
 * plt_prog.c - a program whose calls go through the PLT, for test_names plt:
 * built several ways (lazy and immediate binding, with and without IBT's
 * .plt.sec, PIE and not) so the symbolizer's PLT names are checked on each
 * layout the linker makes. It calls libstallscope (stallscope_poll_begin@plt),
 * libc (clock_gettime@plt) and an IFUNC of its own, through a stub whose
 * IRELATIVE relocation has no symbol (plt_ifunc@plt, by its resolver); it is
 * read, never run by the test.
 */
#include <stdio.h>
#include <time.h>

#include <stallscope/stallscope.h>

static int add_one(int a)
{
	return a + 1;
}

static int (*resolve_plt_ifunc(void))(int)
{
	return add_one;
}

int plt_ifunc(int a) __attribute__((ifunc("resolve_plt_ifunc")));

int main(int argc, char **argv)
{
	struct timespec ts;
	(void)argv;
	stallscope_poll_begin((uint64_t)argc, 1);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	stallscope_poll_end();
	printf("%lld %d\n", (long long)ts.tv_sec, plt_ifunc(argc));
	return 0;
}

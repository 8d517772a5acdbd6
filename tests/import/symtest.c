/*
 * symtest.c - a program with known code addresses for the symbolization tests.
 * It prints, one per line: the path of its executable mapping with start, end
 * and file offset (from /proc/self/maps), then a stack of three addresses, leaf
 * first, as a sampler would record it:
 *   capture_pc's entry (the leaf's instruction pointer),
 *   the return address of the call to capture_pc inside inner_inlined(), which
 *   is inlined into outer(),
 *   the return address of the call to outer() in main(),
 * and the source line of each call, so the test can check file:line exactly.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uintptr_t ret_in_inner, ret_in_main;

__attribute__((noinline)) uintptr_t capture_pc(void);
__attribute__((noinline)) uintptr_t capture_pc(void)
{
	uintptr_t r = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
	return r;
}

enum { INNER_CALL_LINE = __LINE__ + 3 };
static inline __attribute__((always_inline)) void inner_inlined(void)
{
	ret_in_inner = capture_pc();
}

enum { OUTER_INLINE_LINE = __LINE__ + 4 };
__attribute__((noinline)) void outer(void);
__attribute__((noinline)) void outer(void)
{
	inner_inlined();
	ret_in_main = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	outer();
	int main_call_line = __LINE__ - 1;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	uintptr_t pc = (uintptr_t)&capture_pc;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[3000] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %2999s", &lo, &hi, perms, &off, path) >= 4 &&
		    pc >= lo && pc < hi) {
			printf("%s %llx %llx %llx\n", path, lo, hi, off);
			break;
		}
	}
	if (f)
		fclose(f);
	printf("%lx %lx %lx\n", (unsigned long)pc, (unsigned long)ret_in_inner, (unsigned long)ret_in_main);
	printf("%d %d %d\n", INNER_CALL_LINE, OUTER_INLINE_LINE, main_call_line);
	return 0;
}

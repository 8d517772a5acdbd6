// names_cxx.cpp - C++ built with debug info: the importer names its frames
// from DWARF, where a function's qualified name is its linkage (mangled) name
// demangled. Prints, like names_c.c, its executable mapping and a stack of three
// addresses: a pc inside Box<int>::twice, the return address into compute, the
// return address into main.
#include <cstdint>
#include <cstdio>

static std::uintptr_t stack_pc[3];

namespace stallscope_demo {
template <typename T> struct Box {
	__attribute__((noinline)) T twice(T v)
	{
		std::uintptr_t here;
		__asm__ volatile("lea (%%rip), %0" : "=r"(here));
		stack_pc[0] = here;
		stack_pc[1] = (std::uintptr_t)__builtin_return_address(0);
		return v * 2;
	}
};

__attribute__((noinline)) int compute(int x)
{
	Box<int> b;
	int r = b.twice(x) + 1;
	stack_pc[2] = (std::uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
	return r;
}
} // namespace stallscope_demo

int main()
{
	int r = stallscope_demo::compute(20);
	std::FILE *f = std::fopen("/proc/self/maps", "r");
	char line[4096];
	while (f && std::fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[3000] = "";
		if (std::sscanf(line, "%llx-%llx %7s %llx %*s %*s %2999s", &lo, &hi, perms, &off, path) < 4)
			continue;
		if (perms[2] == 'x' && stack_pc[0] >= lo && stack_pc[0] < hi) {
			std::printf("%s %llx %llx %llx %llx %llx %llx\n", path, lo, hi, off,
				    (unsigned long long)stack_pc[0], (unsigned long long)stack_pc[1],
				    (unsigned long long)stack_pc[2]);
			break;
		}
	}
	if (f)
		std::fclose(f);
	return r == 41 ? 0 : 1;
}

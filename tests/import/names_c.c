/*
 * names_c.c - functions whose symbols are mangled names, as a C++ compiler and
 * both Rust schemes write them (asm labels), built without debug info so the
 * importer names them from the symbol table alone. Prints the path, start, end
 * and file offset of its executable mapping, then three addresses as a sampler
 * would record a stack (the leaf's pc, then two "return addresses" one past
 * the other two functions' entries).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int cxx_method(int) __asm__("_ZN12stallscope_c4Demo6methodEi");
int rust_legacy(int) __asm__("_ZN10rust_crate6module15legacy_function17h0123456789abcdefE");
int rust_v0(int) __asm__("_RNvNtCs1234_10rust_crate6module11v0_function");

__attribute__((noinline, used)) int cxx_method(int x) { return x * 3 + 1; }
__attribute__((noinline, used)) int rust_legacy(int x) { return x * 5 + 2; }
__attribute__((noinline, used)) int rust_v0(int x) { return x * 7 + 3; }

int main(void)
{
	uintptr_t pc = (uintptr_t)&rust_v0;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[3000] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %2999s", &lo, &hi, perms, &off, path) < 4)
			continue;
		if (perms[2] == 'x' && pc >= lo && pc < hi) {
			printf("%s %llx %llx %llx %llx %llx %llx\n", path, lo, hi, off,
			       (unsigned long long)(uintptr_t)&rust_v0,
			       (unsigned long long)(uintptr_t)&rust_legacy + 1,
			       (unsigned long long)(uintptr_t)&cxx_method + 1);
			break;
		}
	}
	if (f)
		fclose(f);
	return cxx_method(1) + rust_legacy(2) + rust_v0(3) > 0 ? 0 : 1;
}

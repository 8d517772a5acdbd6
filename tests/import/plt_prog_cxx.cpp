/*
 * plt_prog_cxx.cpp - plt_prog.c's calls, and C++ ones whose PLT stubs have
 * mangled names (operator new and delete, a libstdc++ function), for
 * test_names plt: their names must come out demangled, the mangled one kept.
 * It is read, never run by the test.
 */
#include <ctime>
#include <cstdio>
#include <string>

#include <stallscope/stallscope.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	stallscope_poll_begin(static_cast<uint64_t>(argc), 1);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	stallscope_poll_end();
	int *p = new int(argc);
	std::string s(argv[0]);
	s += std::to_string(*p + ts.tv_sec);
	std::puts(s.c_str());
	delete p;
	return 0;
}

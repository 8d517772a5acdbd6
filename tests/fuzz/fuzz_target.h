/*
 * fuzz_target.h - the libFuzzer entry point, declared so the standalone driver
 * (and -Werror=missing-prototypes) see one signature.
 */
#ifndef STALLSCOPE_FUZZ_TARGET_H
#define STALLSCOPE_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* STALLSCOPE_FUZZ_TARGET_H */

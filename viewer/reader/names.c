/*
 * names.c - printable names for record types, loss reasons and damage kinds, shared
 * by every consumer of the reader so the CLI, importer and viewer agree.
 */
#include "segment_reader.h"

const char *ss_record_type_name(uint8_t type)
{
	switch (type) {
	case SS_REC_STRING: return "STRING";
	case SS_REC_LOCATION: return "LOCATION";
	case SS_REC_THREAD_DEF: return "THREAD_DEF";
	case SS_REC_THREAD: return "THREAD";
	case SS_REC_POLL_BEGIN: return "POLL_BEGIN";
	case SS_REC_POLL_END: return "POLL_END";
	case SS_REC_PARK: return "PARK";
	case SS_REC_UNPARK: return "UNPARK";
	case SS_REC_SPAWN: return "SPAWN";
	case SS_REC_TERMINATE: return "TERMINATE";
	case SS_REC_WAKE: return "WAKE";
	case SS_REC_QUEUE: return "QUEUE";
	case SS_REC_MARK: return "MARK";
	case SS_REC_SPAN_BEGIN: return "SPAN_BEGIN";
	case SS_REC_SPAN_END: return "SPAN_END";
	case SS_REC_WORKER_BEGIN: return "WORKER_BEGIN";
	case SS_REC_WORKER_END: return "WORKER_END";
	case SS_REC_THREAD_EXIT: return "THREAD_EXIT";
	case SS_REC_LOSS: return "LOSS";
	case SS_REC_META: return "META";
	case SS_REC_SAMPLE: return "SAMPLE";
	case SS_REC_SWITCH: return "SWITCH";
	case SS_REC_COMM: return "COMM";
	case SS_REC_SAMPLER_LOSS: return "SAMPLER_LOSS";
	case SS_REC_STACK: return "STACK";
	case SS_REC_MAPPING: return "MAPPING";
	case SS_REC_STALL: return "STALL";
	case SS_REC_STALL_END: return "STALL_END";
	case SS_REC_TASK_DUMP: return "TASK_DUMP";
	case SS_REC_CLOCK: return "CLOCK";
	default: return NULL;
	}
}

const char *ss_loss_reason_name(uint64_t reason)
{
	switch (reason) {
	case SS_LOSS_BUFFER_FULL: return "buffer full";
	case SS_LOSS_NO_BUFFER: return "no thread buffer";
	case SS_LOSS_WRITE_FAILED: return "write failed";
	case SS_LOSS_SAMPLER: return "sampler loss";
	default: return "unknown reason";
	}
}

const char *ss_sampler_loss_reason_name(uint64_t reason)
{
	switch (reason) {
	case SS_SAMPLER_LOSS_KERNEL: return "kernel ring full";
	case SS_SAMPLER_LOSS_THROTTLE: return "throttled by the kernel";
	case SS_SAMPLER_LOSS_FALLBACK: return "timer fallback ring full";
	case SS_SAMPLER_LOSS_WRITER: return "no segment to write to";
	default: return "unknown reason";
	}
}

const char *ss_stall_kind_name(uint64_t kind)
{
	switch (kind) {
	case SS_STALL_RUNNING: return "running";
	case SS_STALL_BLOCKED: return "blocked";
	case SS_STALL_RUNNABLE: return "runnable";
	case SS_STALL_UNKNOWN: return "unknown";
	default: return "kind?";
	}
}

const char *ss_damage_kind_name(enum ss_damage_kind kind)
{
	switch (kind) {
	case SS_DAMAGE_NONE: return "none";
	case SS_DAMAGE_TRUNCATED: return "truncated";
	case SS_DAMAGE_CORRUPT: return "corrupt";
	case SS_DAMAGE_IO: return "I/O error";
	}
	return "unknown";
}

/*
 * log.h - logging and control-call errors (log.c). A leaf: includes nothing of
 * the recorder, so any recorder file may use it.
 */
#ifndef STALLSCOPE_LOG_H
#define STALLSCOPE_LOG_H

#define SS_INTERNAL __attribute__((visibility("hidden")))

/* Records a control-call error for stallscope_last_error() and logs it to stderr. */
SS_INTERNAL void ss_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Logs a recorder condition to stderr with the "stallscope:" prefix. */
SS_INTERNAL void ss_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* STALLSCOPE_LOG_H */

/*
 * Logging and error reporting inside libhotcold.
 *
 * Library code never prints on its own and never aborts: it reports through
 * the log callback the application installs with hc_log_set_callback(), and
 * a failing function records a one-line message retrievable with
 * hc_last_error() (thread-local, like dlerror()).
 */
#ifndef HC_CORE_LOG_H
#define HC_CORE_LOG_H

#include "hotcold/plugin.h" /* hc_log_level */

#if defined(__GNUC__)
#define HC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HC_PRINTF(a, b)
#endif

void hc_log(int level, const char *fmt, ...) HC_PRINTF(2, 3);
/* Record the thread's last error (also logged at DEBUG level). */
void hc_set_error(const char *fmt, ...) HC_PRINTF(1, 2);
/* The plugin-side log callback: routes plugin messages into hc_log. */
void hc_log_from_plugin(void *user, int level, const char *msg);

#define HC_DEBUG(...) hc_log(HC_LOG_DEBUG, __VA_ARGS__)
#define HC_INFO(...) hc_log(HC_LOG_INFO, __VA_ARGS__)
#define HC_WARN(...) hc_log(HC_LOG_WARN, __VA_ARGS__)
#define HC_ERROR(...) hc_log(HC_LOG_ERROR, __VA_ARGS__)

#endif /* HC_CORE_LOG_H */

#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hotcold/hotcold.h"

static hc_log_callback g_log_cb;
static void *g_log_user;
static int g_log_min_level = HC_LOG_WARN;
static _Thread_local char g_last_error[1024];

void hc_log_set_callback(hc_log_callback cb, void *user)
{
    g_log_cb = cb;
    g_log_user = user;
}

void hc_log_set_level(int min_level)
{
    g_log_min_level = min_level;
}

static void emit(int level, const char *msg)
{
    if (g_log_cb) {
        g_log_cb(g_log_user, level, msg);
        return;
    }
    /* No callback: the default sink is stderr, filtered by level.  This is
     * the application's choice of sink made once here, not a library print. */
    if (level >= g_log_min_level)
        fprintf(stderr, "hotcold: %s\n", msg);
}

void hc_log(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    emit(level, buf);
}

void hc_set_error(const char *fmt, ...)
{
    /* Formatted aside first: a caller may prefix the previous error
     * (hc_set_error("ctx: %s", hc_last_error())), which vsnprintf into the
     * same buffer would overlap. */
    char buf[sizeof g_last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(g_last_error, buf, sizeof buf);
    emit(HC_LOG_DEBUG, g_last_error);
}

const char *hc_last_error(void)
{
    return g_last_error;
}

void hc_log_from_plugin(void *user, int level, const char *msg)
{
    const char *who = user ? (const char *)user : "plugin";
    hc_log(level, "[%s] %s", who, msg);
}

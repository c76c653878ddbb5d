/*
 * Events (ABI 1.4).  The streams are synchronous (stream.c): when
 * event_record is called every earlier op has finished, so an event is the
 * host's monotonic clock read at its record, event_sync has nothing to wait
 * for, and event_elapsed is the difference of two such readings.
 */
#include <stdlib.h>
#include <time.h>

#include "cpu_plugin.h"

struct hc_event {
    uint32_t magic;
    hc_device *dev;
    int recorded;
    double t_ms; /* CLOCK_MONOTONIC at the last record */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int is_event(const hc_event *ev)
{
    return ev && ev->magic == HC_CPU_MAGIC_EVENT;
}

hc_status hc_cpu_event_create(hc_device *dev, hc_event **out)
{
    hc_plugin_ctx *ctx;
    hc_status st = hc_cpu_device_ctx(dev, "event_create", &ctx);
    if (st != HC_OK)
        return st;
    if (!out)
        return hc_cpu_fail(ctx, HC_E_INVALID, "event_create: out is NULL");
    hc_event *ev = calloc(1, sizeof *ev);
    *out = ev;
    if (!ev)
        return hc_cpu_fail(ctx, HC_E_NOMEM, "event_create: out of memory");
    *ev = (hc_event){HC_CPU_MAGIC_EVENT, dev, 0, 0.0};
    return HC_OK;
}

void hc_cpu_event_destroy(hc_event *ev)
{
    if (!is_event(ev))
        return;
    ev->magic = 0;
    free(ev);
}

hc_status hc_cpu_event_record(hc_stream *s, hc_event *ev)
{
    hc_plugin_ctx *ctx;
    hc_status st = hc_cpu_stream_ctx(s, "event_record", &ctx);
    if (st != HC_OK)
        return st;
    if (!is_event(ev))
        return hc_cpu_fail(ctx, HC_E_INVALID, "event_record: not an event of this plugin");
    if (ev->dev != s->dev)
        return hc_cpu_fail(ctx, HC_E_INVALID,
                           "event_record: the event belongs to another device than the stream");
    ev->t_ms = now_ms();
    ev->recorded = 1;
    return HC_OK;
}

hc_status hc_cpu_event_sync(hc_event *ev)
{
    if (!is_event(ev))
        return HC_E_INVALID;
    if (!ev->recorded)
        return hc_cpu_fail(ev->dev->ctx, HC_E_INVALID, "event_sync: the event was never recorded");
    return HC_OK;
}

hc_status hc_cpu_event_elapsed(const hc_event *a, const hc_event *b, double *ms)
{
    if (!is_event(a) || !is_event(b))
        return HC_E_INVALID;
    hc_plugin_ctx *ctx = a->dev->ctx;
    if (!ms)
        return hc_cpu_fail(ctx, HC_E_INVALID, "event_elapsed: ms is NULL");
    if (a->dev != b->dev)
        return hc_cpu_fail(ctx, HC_E_INVALID, "event_elapsed: the events are of two devices");
    if (!a->recorded || !b->recorded)
        return hc_cpu_fail(ctx, HC_E_INVALID, "event_elapsed: an event was never recorded");
    if (b->t_ms < a->t_ms)
        return hc_cpu_fail(ctx, HC_E_INVALID, "event_elapsed: b was recorded before a");
    *ms = b->t_ms - a->t_ms;
    return HC_OK;
}

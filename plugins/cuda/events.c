/*
 * Events (ABI 1.4) as CUDA events with timing: event_record is
 * cudaEventRecord on the stream, event_sync cudaEventSynchronize (the host
 * waits for that point only: work queued after it goes on), event_elapsed
 * cudaEventElapsedTime (the device's clock, about half a microsecond
 * resolution).  Downloads land in host memory when their copy completes,
 * so a synced event covers them as stream_sync does.
 *
 * While its stream captures, event_record refuses (HC_E_UNSUPPORTED): a
 * record would become a node of the graph, and the core needs no event
 * inside a captured pass.
 */
#include <stdlib.h>

#include "cuda_plugin.h"

struct hc_event {
    uint32_t magic;
    hc_device *dev;
    cudaEvent_t e;
    hc_stream *s;   /* where it was last recorded, or NULL: never */
};

static int is_event(const hc_event *ev)
{
    return ev && ev->magic == HC_CU_MAGIC_EVENT;
}

hc_status hc_cu_event_create(hc_device *dev, hc_event **out)
{
    hc_status st;
    cudaError_t e;

    if (!dev || dev->magic != HC_CU_MAGIC_DEVICE)
        return HC_E_INVALID;
    if (!out)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "event_create: out is NULL");
    *out = NULL;
    if ((st = hc_cu_set_device(dev->ctx, dev->index)) != HC_OK)
        return st;
    hc_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return hc_cu_fail(dev->ctx, HC_E_NOMEM, "event_create: out of host memory");
    if ((e = cudaEventCreate(&ev->e)) != cudaSuccess) {
        free(ev);
        return hc_cu_fail_cuda(dev->ctx, e, "event_create: cudaEventCreate");
    }
    ev->magic = HC_CU_MAGIC_EVENT;
    ev->dev = dev;
    *out = ev;
    return HC_OK;
}

void hc_cu_event_destroy(hc_event *ev)
{
    if (!is_event(ev))
        return;
    if (hc_cu_set_device(ev->dev->ctx, ev->dev->index) == HC_OK)
        (void)cudaEventDestroy(ev->e);
    ev->magic = 0;
    free(ev);
}

hc_status hc_cu_event_record(hc_stream *s, hc_event *ev)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, "event_record", &dev);
    if (st != HC_OK)
        return st;
    if (!is_event(ev))
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "event_record: not an event of this plugin");
    if (ev->dev != dev)
        return hc_cu_fail(dev->ctx, HC_E_INVALID,
                          "event_record: the event belongs to another device than the stream");
    if (s->capturing)
        return hc_cu_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "event_record: the stream is capturing (events are not captured)");
    st = hc_cu_check_queued(s, cudaEventRecord(ev->e, s->s), "event_record: cudaEventRecord");
    if (st != HC_OK)
        return st;
    ev->s = s;
    return HC_OK;
}

hc_status hc_cu_event_sync(hc_event *ev)
{
    hc_device *dev;
    hc_status st;

    if (!is_event(ev))
        return HC_E_INVALID;
    if (!ev->s)
        return hc_cu_fail(ev->dev->ctx, HC_E_INVALID, "event_sync: the event was never recorded");
    if ((st = hc_cu_stream_dev(ev->s, "event_sync", &dev)) != HC_OK)
        return st;
    /* Like stream_sync, it reports what the work before it hit. */
    return hc_cu_check_queued(ev->s, cudaEventSynchronize(ev->e),
                              "event_sync: cudaEventSynchronize");
}

hc_status hc_cu_event_elapsed(const hc_event *a, const hc_event *b, double *ms)
{
    hc_status st;
    float t = 0.0f;
    cudaError_t e;

    if (!is_event(a) || !is_event(b))
        return HC_E_INVALID;
    hc_device *dev = a->dev;
    if (!ms)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "event_elapsed: ms is NULL");
    if (b->dev != dev)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "event_elapsed: the events are of two devices");
    if (!a->s || a->s != b->s)
        return hc_cu_fail(dev->ctx, HC_E_INVALID,
                          "event_elapsed: a and b must be recorded on one stream");
    if ((st = hc_cu_set_device(dev->ctx, dev->index)) != HC_OK)
        return st;
    /* b reached (a sync of it, a later event or the stream returned). */
    if ((e = cudaEventQuery(b->e)) != cudaSuccess)
        return e == cudaErrorNotReady
                   ? hc_cu_fail(dev->ctx, HC_E_INVALID, "event_elapsed: b is not reached yet")
                   : hc_cu_fail_cuda(dev->ctx, e, "event_elapsed: cudaEventQuery");
    if ((e = cudaEventElapsedTime(&t, a->e, b->e)) != cudaSuccess)
        return hc_cu_fail_cuda(dev->ctx, e, "event_elapsed: cudaEventElapsedTime");
    /* b after a on one in-order stream: never negative but for rounding. */
    *ms = t > 0.0f ? (double)t : 0.0;
    return HC_OK;
}

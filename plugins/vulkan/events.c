/*
 * Events (ABI 1.4).
 *
 * A stream batches its ops into frames (stream.c), numbered as they are
 * submitted.  An event recorded on a stream is a command of the frame being
 * recorded, so it is reached when that frame's fence signals: event_sync
 * submits that frame if it is still recording and waits for it and the
 * frames before it, not for a frame recorded after it.  That is also when
 * the frame's downloads are copied out of staging, as the ABI asks.
 *
 * Where the queue writes timestamps (timestampValidBits > 0), the event's
 * command also writes one into a query of its own after every earlier
 * command has finished (bottom of pipe), and event_elapsed is the
 * difference times timestampPeriod.  Elsewhere elapsed is refused.
 *
 * While its stream captures (capture.c), event_record refuses: a recorded
 * call would only be issued by a launch, and the core needs no event
 * inside a captured pass.
 */
#include <stdlib.h>

#include "vk_plugin.h"

struct hc_event {
    uint32_t magic;
    hc_device *dev;
    VkQueryPool pool;   /* one timestamp query, or VK_NULL_HANDLE: untimed */
    hc_stream *s;       /* where it was last recorded, or NULL: never */
    uint64_t seq;       /* the number of that frame */
};

static int is_event(const hc_event *ev)
{
    return ev && ev->magic == HC_VK_MAGIC_EVENT;
}

hc_status hc_vk_event_create(hc_device *dev, hc_event **out)
{
    if (!dev || dev->magic != HC_VK_MAGIC_DEVICE)
        return HC_E_INVALID;
    if (!out)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "event_create: out is NULL");
    hc_event *ev = calloc(1, sizeof *ev);
    *out = NULL;
    if (!ev)
        return hc_vk_fail(dev->ctx, HC_E_NOMEM, "event_create: out of host memory");
    ev->dev = dev;
    if (dev->pd->timestamp_bits > 0) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                    .queryCount = 1};
        VkResult r = dev->f.vkCreateQueryPool(dev->dev, &qi, NULL, &ev->pool);
        if (r != VK_SUCCESS) {
            free(ev);
            return hc_vk_fail_vk(dev->ctx, r, "event_create: vkCreateQueryPool");
        }
    }
    ev->magic = HC_VK_MAGIC_EVENT;
    *out = ev;
    return HC_OK;
}

void hc_vk_event_destroy(hc_event *ev)
{
    if (!is_event(ev))
        return;
    if (ev->pool)
        ev->dev->f.vkDestroyQueryPool(ev->dev->dev, ev->pool, NULL);
    ev->magic = 0;
    free(ev);
}

hc_status hc_vk_event_record(hc_stream *s, hc_event *ev)
{
    hc_device *dev;
    hc_vk_frame *f;
    hc_status st = hc_vk_stream_dev(s, &dev);
    if (st != HC_OK)
        return st;
    if (!is_event(ev))
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "event_record: not an event of this plugin");
    if (ev->dev != dev)
        return hc_vk_fail(dev->ctx, HC_E_INVALID,
                          "event_record: the event belongs to another device than the stream");
    if (s->capture)
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "event_record: the stream is capturing (events are not captured)");
    if ((st = hc_vk_stream_cmd(s, "event_record", &f)) != HC_OK)
        return st;
    if (ev->pool) {
        dev->f.vkCmdResetQueryPool(f->cmd, ev->pool, 0, 1);
        dev->f.vkCmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ev->pool, 0);
    }
    /* This frame is submitted as number next_seq (stream.c). */
    ev->s = s;
    ev->seq = s->next_seq;
    return hc_vk_stream_cmd_done(s, "event_record");
}

hc_status hc_vk_event_sync(hc_event *ev)
{
    if (!is_event(ev))
        return HC_E_INVALID;
    if (!ev->s)
        return hc_vk_fail(ev->dev->ctx, HC_E_INVALID, "event_sync: the event was never recorded");
    if (ev->s->capture)
        return hc_vk_fail(ev->dev->ctx, HC_E_INVALID,
                          "event_sync: its stream is capturing (nothing has run)");
    return hc_vk_stream_sync_to(ev->s, ev->seq);
}

hc_status hc_vk_event_elapsed(const hc_event *a, const hc_event *b, double *ms)
{
    if (!is_event(a) || !is_event(b))
        return HC_E_INVALID;
    hc_device *dev = a->dev;
    if (!ms)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "event_elapsed: ms is NULL");
    if (b->dev != dev)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "event_elapsed: the events are of two devices");
    if (!a->s || !b->s || a->s != b->s || a->seq > b->seq || !hc_vk_stream_reached(b->s, b->seq))
        return hc_vk_fail(dev->ctx, HC_E_INVALID,
                          "event_elapsed: a and b must be recorded on one stream, a first, and b "
                          "reached (synced)");
    if (!a->pool)
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "event_elapsed: this queue writes no timestamps");
    uint64_t t[2];
    const hc_event *ev[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        /* b's frame has completed, and a's is no later: both are written. */
        const VkQueryResultFlags flags = VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT;
        VkResult r = dev->f.vkGetQueryPoolResults(dev->dev, ev[i]->pool, 0, 1, sizeof t[i], &t[i],
                                                  sizeof t[i], flags);
        if (r != VK_SUCCESS)
            return hc_vk_fail_vk(dev->ctx, r, "event_elapsed: vkGetQueryPoolResults");
    }
    const uint32_t bits = dev->pd->timestamp_bits;
    const uint64_t mask = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    /* Modulo the valid bits: a counter that wrapped once still subtracts. */
    const uint64_t ticks = (t[1] - t[0]) & mask;
    *ms = (double)ticks * (double)dev->pd->props.limits.timestampPeriod / 1e6;
    return HC_OK;
}

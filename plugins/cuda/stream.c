/*
 * Streams: one cudaStream_t each (non-blocking with respect to the legacy
 * default stream).  Work is queued as it is issued and starts at once, so
 * stream_flush has nothing to start; stream_sync waits for it and reports
 * any error the work hit (a launch failure, a sticky context error).
 */
#include <stdlib.h>

#include "cuda_plugin.h"

hc_status hc_cu_stream_create(hc_device *dev, hc_stream **out)
{
    hc_stream *s;
    hc_status st;
    cudaError_t e;

    if (!dev || dev->magic != HC_CU_MAGIC_DEVICE || !out)
        return dev && dev->magic == HC_CU_MAGIC_DEVICE
                   ? hc_cu_fail(dev->ctx, HC_E_INVALID, "stream_create: out is NULL")
                   : HC_E_INVALID;
    *out = NULL;
    if ((st = hc_cu_set_device(dev->ctx, dev->index)) != HC_OK)
        return st;
    s = calloc(1, sizeof *s);
    if (!s)
        return hc_cu_fail(dev->ctx, HC_E_NOMEM, "stream_create: out of host memory");
    if ((e = cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking)) != cudaSuccess) {
        free(s);
        return hc_cu_fail_cuda(dev->ctx, e, "stream_create: cudaStreamCreateWithFlags");
    }
    s->magic = HC_CU_MAGIC_STREAM;
    s->dev = dev;
    *out = s;
    return HC_OK;
}

void hc_cu_stream_destroy(hc_stream *s)
{
    if (!s || s->magic != HC_CU_MAGIC_STREAM)
        return;
    if (hc_cu_set_device(s->dev->ctx, s->dev->index) == HC_OK) {
        /* Queued work finishes first: buffers it uses outlive the stream. */
        (void)cudaStreamSynchronize(s->s);
        (void)cudaStreamDestroy(s->s);
    }
    hc_cu_buffer_free(s->scratch);
    for (int i = 0; i < s->n_retired; i++)
        hc_cu_buffer_free(s->retired[i]);
    s->magic = 0;
    free(s);
}

hc_status hc_cu_stream_sync(hc_stream *s)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, "stream_sync", &dev);
    if (st != HC_OK)
        return st;
    if (s->capturing)
        return hc_cu_fail(dev->ctx, HC_E_INVALID,
                          "stream_sync: the stream is capturing (nothing has run)");
    return hc_cu_check_queued(s, cudaStreamSynchronize(s->s), "stream_sync");
}

hc_status hc_cu_stream_flush(hc_stream *s)
{
    hc_device *dev;
    /* Nothing to start (see above): only the stream's state to report. */
    return hc_cu_stream_dev(s, "stream_flush", &dev);
}

hc_status hc_cu_stream_scratch(hc_stream *s, uint64_t bytes, void **out)
{
    hc_status st;

    *out = NULL;
    if (s->scratch && s->scratch->size >= bytes) {
        s->scratch_captured |= s->capturing;
        *out = s->scratch->ptr;
        return HC_OK;
    }
    /* A buffer a capture was given stays while the stream lives: the graph
     * made from it (while capturing nothing runs, and a wait would end the
     * capture; after it, the graph may be launched again).  Otherwise
     * queued kernels may still use the old buffer: wait, then free it. */
    if (s->scratch && (s->capturing || s->scratch_captured)) {
        if (s->n_retired == HC_CU_RETIRED_MAX)
            return hc_cu_fail(s->dev->ctx, HC_E_UNSUPPORTED,
                              "scratch: grown %d times past what a graph uses", HC_CU_RETIRED_MAX);
        s->retired[s->n_retired++] = s->scratch;
        s->scratch = NULL;
    } else if (s->scratch) {
        if ((st = hc_cu_stream_sync(s)) != HC_OK)
            return st;
        hc_cu_buffer_free(s->scratch);
        s->scratch = NULL;
    }
    /* At least a page: small calls of different sizes share one buffer. */
    if ((st = hc_cu_buffer_alloc(s->dev, bytes < 4096 ? 4096 : bytes, &s->scratch)) != HC_OK) {
        s->scratch = NULL; /* the allocation recorded why */
        return st;
    }
    s->scratch_captured = s->capturing;
    *out = s->scratch->ptr;
    return HC_OK;
}

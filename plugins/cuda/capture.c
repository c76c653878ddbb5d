/*
 * Capture (ABI 1.3) as CUDA graphs, and the page-locked host memory the
 * captured copies need.
 *
 * capture_begin starts stream capture in relaxed mode (the partials'
 * scratch may be allocated while capturing: stream.c keeps a buffer a
 * capture has seen until the stream goes); capture_end instantiates the
 * graph; graph_launch runs it on the stream.  HOTCOLD_CUDA_GRAPHS=0
 * refuses capture_begin (HC_E_UNSUPPORTED): the core then issues every
 * pass, for comparison.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_plugin.h"

#define HC_CU_MAGIC_GRAPH 0x47554348u /* "HCUG" */

struct hc_graph {
    uint32_t magic;
    hc_device *dev;
    cudaGraphExec_t exec;
};

static int graphs_off(void)
{
    const char *e = getenv("HOTCOLD_" HC_GPU_ENV "_GRAPHS");
    return e && strcmp(e, "0") == 0;
}

hc_status hc_cu_capture_begin(hc_stream *s)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, "capture_begin", &dev);
    if (st != HC_OK)
        return st;
    if (graphs_off())
        return hc_cu_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "capture_begin: HOTCOLD_" HC_GPU_ENV "_GRAPHS=0 turns graphs off");
    if (s->capturing)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "capture_begin: the stream captures already");
    cudaError_t e = cudaStreamBeginCapture(s->s, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess)
        return hc_cu_fail_cuda(dev->ctx, e, "capture_begin: cudaStreamBeginCapture");
    s->capturing = 1;
    return HC_OK;
}

hc_status hc_cu_capture_end(hc_stream *s, hc_graph **out)
{
    hc_device *dev;
    cudaGraph_t graph = NULL;
    hc_graph *g = NULL;
    hc_status st;

    if (!s || s->magic != HC_CU_MAGIC_STREAM || !out)
        return HC_E_INVALID;
    *out = NULL;
    if (!s->capturing)
        return hc_cu_fail(s->dev->ctx, HC_E_INVALID, "capture_end: the stream does not capture");
    s->capturing = 0;
    /* Ends the capture whatever happened during it (a failed op marks the
     * stream failed, but the capture must still be closed). */
    if ((st = hc_cu_set_device(s->dev->ctx, s->dev->index)) != HC_OK)
        return st;
    dev = s->dev;
    cudaError_t e = cudaStreamEndCapture(s->s, &graph);
    if (e != cudaSuccess) {
        st = hc_cu_fail_cuda(dev->ctx, e, "capture_end: cudaStreamEndCapture");
        goto out;
    }
    if (s->failed) {
        /* The capture is lost, not the stream: an op the capture could not
         * take (a sticky device error shows again at the next call). */
        s->failed = 0;
        st = hc_cu_fail(dev->ctx, HC_E_DEVICE, "capture_end: an op failed while capturing");
        goto out;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        st = hc_cu_fail(dev->ctx, HC_E_NOMEM, "capture_end: out of host memory");
        goto out;
    }
    e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (e != cudaSuccess) {
        st = hc_cu_fail_cuda(dev->ctx, e, "capture_end: cudaGraphInstantiate");
        free(g);
        g = NULL;
        goto out;
    }
    g->magic = HC_CU_MAGIC_GRAPH;
    g->dev = dev;
    *out = g;
    st = HC_OK;
out:
    if (graph)
        (void)cudaGraphDestroy(graph);
    return st;
}

hc_status hc_cu_graph_launch(hc_stream *s, hc_graph *g)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, "graph_launch", &dev);
    if (st != HC_OK)
        return st;
    if (!g || g->magic != HC_CU_MAGIC_GRAPH || g->dev != dev)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "graph_launch: not a graph of this device");
    return hc_cu_check_queued(s, cudaGraphLaunch(g->exec, s->s), "graph_launch: cudaGraphLaunch");
}

void hc_cu_graph_free(hc_graph *g)
{
    if (!g || g->magic != HC_CU_MAGIC_GRAPH)
        return;
    if (hc_cu_set_device(g->dev->ctx, g->dev->index) == HC_OK)
        (void)cudaGraphExecDestroy(g->exec);
    g->magic = 0;
    free(g);
}

hc_status hc_cu_host_alloc(hc_device *dev, uint64_t size, void **out)
{
    hc_status st;
    if (!dev || dev->magic != HC_CU_MAGIC_DEVICE || !out)
        return HC_E_INVALID;
    *out = NULL;
    if ((st = hc_cu_set_device(dev->ctx, dev->index)) != HC_OK)
        return st;
    cudaError_t e = cudaHostAlloc(out, (size_t)(size ? size : 1), cudaHostAllocPortable);
    if (e != cudaSuccess) {
        *out = NULL;
        return hc_cu_fail_cuda(dev->ctx, e, "host_alloc: cudaHostAlloc");
    }
    return HC_OK;
}

void hc_cu_host_free(hc_device *dev, void *ptr)
{
    if (!dev || dev->magic != HC_CU_MAGIC_DEVICE || !ptr)
        return;
    (void)cudaFreeHost(ptr);
}

/*
 * Where a context's data lives, and moving it (internal to exec/): a device
 * slot's stream and activations, a weight's copy on a device, host
 * addresses of CPU places, and the copies between the two devices.
 */
#ifndef HC_CORE_MOVES_H
#define HC_CORE_MOVES_H

#include "exec/context.h"

#define HC_F32 sizeof(float)

static inline hc_dev *hc_ctx_dev(hc_context *c, int on)
{
    return on == HC_ON_GPU ? &c->gpu : &c->cpu;
}

/* Where device `on` reads weight w. */
static inline hc_ref hc_weight_at(const hc_weight *w, int on)
{
    return on == HC_ON_GPU ? w->gref : w->ref;
}

/* Host address of a CPU-device place: CPU buffers are host memory. */
static inline void *hc_cpu_ptr(hc_context *c, hc_ref r)
{
    return (uint8_t *)c->cpu.ops->buffer_host_ptr(r.buf) + r.off;
}

/* Copy `bytes` from device `from`'s place src to the other device's dst:
 * one download or upload, waited for so that neither side's later ops can
 * race it.  Counted in run.bytes_moved.  0 or -1. */
int hc_cross(hc_context *c, int from, hc_ref src, hc_ref dst, uint64_t bytes);

/* Bring the residual stream (n tokens) to device `on`. */
int hc_move_x(hc_context *c, int on, int n);

#endif /* HC_CORE_MOVES_H */

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
 * one download or upload on the GPU's stream, which orders it with the
 * GPU's own ops.  Counted in run.bytes_moved.  0 or -1.
 *
 * Who waits for what (ABI 1.4 events; without them the same points by
 * stream_sync):
 *  - The CPU device's ops on the place are done first: its calls return
 *    when their work is done (a CPU plugin without HC_CAP_ASYNC), else the
 *    host syncs it.
 *  - GPU -> CPU: the host waits for an event recorded after the download
 *    (the GPU's work up to it, none issued later), then reads.
 *  - CPU -> GPU: nobody waits now.  The GPU records an event after the
 *    upload (hc_dev_note_host_reads), and the CPU device waits for it
 *    before its next op or wait, so before the CPU or the host writes its
 *    memory again (device.c op_enter; the host writes CPU memory only after
 *    a wait for the CPU device).  Exception: inside a hybrid FFN whose
 *    residual is on the CPU (sparse_ffn.c), which writes nothing an upload
 *    in flight reads (the one such upload is of xn, which the FFN only
 *    reads).  A wait for everything on the GPU (a download's, the pass's
 *    end) covers the upload too. */
int hc_cross(hc_context *c, int from, hc_ref src, hc_ref dst, uint64_t bytes);

/* Bring the residual stream (n tokens) to device `on`. */
int hc_move_x(hc_context *c, int on, int n);

#endif /* HC_CORE_MOVES_H */

/* Copies between a context's two devices (see moves.h). */
#include "exec/moves.h"

int hc_cross(hc_context *c, int from, hc_ref src, hc_ref dst, uint64_t bytes)
{
    hc_dev *g = &c->gpu;
    c->run.bytes_moved += bytes;
    if ((c->cpu.info.caps & HC_CAP_ASYNC) && hc_dev_sync(&c->cpu))
        return -1;
    if (from == HC_ON_GPU)
        return hc_dev_download(g, hc_cpu_ptr(c, dst), src, bytes) || hc_dev_wait_here(g) ? -1 : 0;
    return hc_dev_upload(g, dst, hc_cpu_ptr(c, src), bytes) || hc_dev_note_host_reads(g) ? -1 : 0;
}

int hc_move_x(hc_context *c, int on, int n)
{
    if (c->x_on == on)
        return 0;
    if (hc_cross(c, c->x_on, c->a[c->x_on].x, c->a[on].x,
                 (uint64_t)n * c->m->hp.n_embd * HC_F32))
        return -1;
    c->x_on = on;
    return 0;
}

/* The activation slots and the KV-cache size (see acts.h). */
#include "exec/acts.h"

#include <stdlib.h>

#include "util/log.h"

#define F32 sizeof(float)

_Static_assert(sizeof(((hc_acts *)0)->at) == HC_ACT_COUNT * sizeof(hc_ref),
               "hc_acts: one named slot per hc_act");

uint64_t hc_acts_layout(const hc_hparams *hp, int n_batch, int logit_rows, hc_acts *A)
{
    hc_acts scratch;
    if (!A)
        A = &scratch;
    const uint64_t B = (uint64_t)n_batch;
    const uint64_t e = B * hp->n_embd * F32, ff = B * hp->n_ff * F32;
    const uint64_t list = (uint64_t)hp->n_ff * sizeof(int32_t);
    const uint64_t kv = B * (uint64_t)hp->n_head_kv * hp->head_dim * F32;
    const uint64_t ph = B * (uint64_t)(hp->max_pred_rank > 0 ? hp->max_pred_rank : 1) * F32;
    const uint64_t sizes[HC_ACT_COUNT] = {
        [HC_ACT_X] = e,       [HC_ACT_XN] = e,   [HC_ACT_Q] = e,
        [HC_ACT_ATT] = e,     [HC_ACT_O] = e,    [HC_ACT_PART] = e,
        [HC_ACT_GATE] = ff,   [HC_ACT_UP] = ff,  [HC_ACT_LOGITS] = (uint64_t)logit_rows * hp->n_vocab * F32,
        [HC_ACT_POS] = B * 4, [HC_ACT_PH] = ph,  [HC_ACT_PLOG] = ff,
        [HC_ACT_IDX] = list,  [HC_ACT_ALL] = list, [HC_ACT_COUNTS] = (uint64_t)hp->n_layer * 4,
        [HC_ACT_KNEW] = kv,   [HC_ACT_VNEW] = kv};
    /* 256-byte alignment keeps every slot friendly to GPU offset rules. */
    uint64_t off = 0;
    for (int i = 0; i < HC_ACT_COUNT; i++) {
        A->at[i].off = off;
        off += (sizes[i] + 255) & ~(uint64_t)255;
    }
    return off;
}

uint64_t hc_kv_layer_bytes(const hc_hparams *hp, int n_ctx)
{
    return (uint64_t)n_ctx * hp->n_head_kv * hp->head_dim * F32;
}

int hc_acts_alloc(hc_dev *d, const hc_hparams *hp, int n_batch, int logit_rows, hc_acts *A)
{
    const uint64_t bytes = hc_acts_layout(hp, n_batch, logit_rows, A);
    if (hc_dev_alloc(d, bytes, &A->buf))
        return -1;
    for (int i = 0; i < HC_ACT_COUNT; i++)
        A->at[i].buf = A->buf;
    /* Start from zeros: the sparse FFN relies on never-computed activation
     * rows being finite (see exec/sparse_ffn.c), and fresh memory may hold
     * NaNs.  Dense passes over a transposed down projection are axpy_rows
     * over every row: that list goes up with them, once. */
    uint8_t *init = calloc(1, (size_t)bytes);
    if (!init) {
        hc_set_error("out of memory");
        return -1;
    }
    int32_t *all = (int32_t *)(init + A->all.off);
    for (int r = 0; r < hp->n_ff; r++)
        all[r] = r;
    int rc = hc_dev_upload(d, (hc_ref){A->buf, 0}, init, bytes) || hc_dev_sync(d);
    free(init);
    return rc ? -1 : 0;
}

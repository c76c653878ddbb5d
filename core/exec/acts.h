/*
 * The activation and KV-cache layout of a context (internal): one buffer
 * per device, cut into named slots for up to n_batch tokens; one K and one V
 * buffer per layer.  Model placement (runtime/model_place.c) reserves room
 * with the same sizes before any context exists.
 */
#ifndef HC_CORE_ACTS_H
#define HC_CORE_ACTS_H

#include "arch/arch.h"
#include "exec/device.h"

/* The slots, in buffer order. */
typedef enum hc_act {
    HC_ACT_X,      /* residual stream   [n_batch][n_embd] */
    HC_ACT_XN,     /* normed input      [n_batch][n_embd] */
    HC_ACT_Q,      /* queries           [n_batch][n_embd] */
    HC_ACT_ATT,    /* attention output  [n_batch][n_embd] */
    HC_ACT_O,      /* projection output / vectors arriving from the other device */
    HC_ACT_PART,   /* this device's FFN partial when the residual is elsewhere */
    HC_ACT_GATE,   /* FFN gate / h      [n_batch][n_ff]   */
    HC_ACT_UP,     /* FFN up            [n_batch][n_ff]   */
    HC_ACT_LOGITS, /* last token        [n_vocab]         */
    HC_ACT_POS,    /* positions         int32[n_batch]    */
    HC_ACT_PH,     /* predictor hidden  [n_batch][max H]  */
    HC_ACT_PLOG,   /* predictor logits  [n_batch][n_ff]   */
    HC_ACT_IDX,    /* active rows       int32[n_ff]       */
    HC_ACT_ALL,    /* 0..n_ff-1: every row, for dense passes */
    HC_ACT_COUNTS, /* int32[n_layer]: each layer's active rows, counted on the device */
    HC_ACT_KNEW,   /* the pass's new K rows [n_batch][n_head_kv * head_dim], before   */
    HC_ACT_VNEW,   /* ... they and the V rows are scattered to their cache positions */
    HC_ACT_COUNT
} hc_act;

/* One device's activations: the slots by name or by hc_act. */
typedef struct hc_acts {
    hc_buffer *buf;
    union {
        struct {
            hc_ref x, xn, q, att, o, part, gate, up, logits, pos, ph, plog, idx, all, counts,
                knew, vnew;
        };
        hc_ref at[HC_ACT_COUNT];
    };
} hc_acts;

/* The bytes of one device's activation buffer for n_batch tokens and
 * logit_rows rows of logits (1, or n_batch for hc_context_eval_all) (and,
 * if A is not NULL, its slots' offsets); of one layer's K (or V) cache. */
uint64_t hc_acts_layout(const hc_hparams *hp, int n_batch, int logit_rows, hc_acts *A);
uint64_t hc_kv_layer_bytes(const hc_hparams *hp, int n_ctx);

/* Allocate A's buffer on d, zeroed, with the every-row list in place.
 * 0 or -1. */
int hc_acts_alloc(hc_dev *d, const hc_hparams *hp, int n_batch, int logit_rows, hc_acts *A);

#endif /* HC_CORE_ACTS_H */

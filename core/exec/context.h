/*
 * A context (internal): the KV cache and activation buffers of one sequence,
 * all on the model's device.
 */
#ifndef HC_CORE_CONTEXT_H
#define HC_CORE_CONTEXT_H

#include "runtime/model.h"

/* One device's activations for up to n_batch tokens (one buffer, slices). */
typedef struct hc_acts {
    hc_buffer *buf;
    hc_ref x;      /* residual stream   [n_batch][n_embd] */
    hc_ref xn;     /* normed input      [n_batch][n_embd] */
    hc_ref q;      /* queries           [n_batch][n_embd] */
    hc_ref att;    /* attention output  [n_batch][n_embd] */
    hc_ref o;      /* projection output / vectors arriving from the other device */
    hc_ref part;   /* this device's FFN partial when the residual is elsewhere */
    hc_ref gate;   /* FFN gate / h      [n_batch][n_ff]   */
    hc_ref up;     /* FFN up            [n_batch][n_ff]   */
    hc_ref logits; /* last token        [n_vocab]         */
    hc_ref pos;    /* positions         int32[n_batch]    */
    hc_ref ph;     /* predictor hidden  [n_batch][max H]  */
    hc_ref plog;   /* predictor logits  [n_batch][n_ff]   */
    hc_ref idx;    /* active rows       int32[n_ff]       */
    hc_ref all;    /* 0..n_ff-1: every row, for dense passes */
} hc_acts;

/* Device slots: the CPU always, the GPU when the model has one. */
enum { HC_ON_CPU = 0, HC_ON_GPU = 1 };

struct hc_context {
    hc_model *m;
    int n_ctx;
    int n_batch;
    int n_past;

    hc_acts a[2];
    int x_on;      /* the device holding the residual stream now */

    /* KV cache: per layer, [n_ctx][n_head_kv * head_dim] F32, on the
     * device of that layer's attention. */
    hc_buffer **k_cache;
    hc_buffer **v_cache;

    /* Host staging for the embedding rows and positions; zeros for
     * clearing a partial on the GPU. */
    float *host_x;
    int32_t *host_pos;
    float *host_zero;     /* [n_batch][n_embd] */
    float *host_gate;     /* [n_batch][n_ff] the GPU's compact gate (oracle) */
    int32_t *host_gidx;   /* [n_ff] the GPU's active compact rows */

    /* Sparse FFN: the row list is built on the host from downloaded logits. */
    int sparse_check;
    float *host_plog;     /* [n_batch][n_ff] */
    float *host_true;     /* [n_batch][n_ff] dense h, for recall checks */
    int32_t *host_idx;    /* [n_ff] */
    uint8_t *host_mark;   /* [n_ff] */
    struct hc_sparse_layer_acc {
        int64_t forwards;
        double computed;  /* sum of |rows| / n_ff */
        int64_t checked_tokens;
        int64_t n_true, n_pred_true, n_pred; /* counts for recall and precision */
    } *acc;

    /* Where the work went (hc_context_run_stats). */
    hc_context_run_stats run;

    /* FFN observer (profiling, predictor training). */
    hc_ffn_observer observer;
    void *observer_user;
    float *host_p;        /* [n_batch][n_embd] */
    float *host_h;        /* [n_batch][n_ff]   */
};

/* The bytes of one device's activation buffer for n_batch tokens (and,
 * if A is not NULL, its slices' offsets); of one layer's K (or V) cache. */
uint64_t hc_acts_layout(const hc_hparams *hp, int n_batch, hc_acts *A);
uint64_t hc_kv_layer_bytes(const hc_hparams *hp, int n_ctx);

/* Run tokens [0, n) (n <= n_batch) at positions n_past.. and, if logits is
 * not NULL, download the last token's logits.  Does not advance n_past. */
int hc_forward(hc_context *c, const int32_t *tokens, int n, float *logits);

#endif /* HC_CORE_CONTEXT_H */

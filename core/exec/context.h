/*
 * A context (internal): one sequence's execution state over a shared model.
 * Its own streams on the model's devices (weights stay the model's), its
 * activation buffers and KV cache there (exec/acts.h), host staging for the
 * sparse FFN, the FFN observer and sparse-check diagnostics, and what the
 * work cost.  Nothing here is shared with another context, so two contexts
 * of one model may evaluate from two threads at once.
 */
#ifndef HC_CORE_CONTEXT_H
#define HC_CORE_CONTEXT_H

#include "exec/acts.h"
#include "runtime/model.h"

/* Device slots: the CPU always, the GPU when the model has one. */
enum { HC_ON_CPU = 0, HC_ON_GPU = 1 };

struct hc_context {
    const hc_model *m;
    int n_ctx;
    int n_batch;
    int n_past;
    int n_tok;     /* tokens of the forward pass under way */

    /* The model's devices, each with this context's own stream (and
     * fallback scratch); gpu only when m->has_gpu. */
    hc_dev cpu, gpu;

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

    /* Layers whose rows the GPU chose (exec/sparse_ffn.c): their counts
     * come down with the pass and are added up once it has ended. */
    int32_t *host_count;  /* [n_layer] */
    uint8_t *counted;     /* [n_layer] 1: host_count[il] belongs to this pass */

    /* Decode passes captured once and replayed (exec/graph.c). */
    int no_graphs;        /* hc_context_params.no_graphs, or capture failed once */
    hc_graph *graph;      /* the captured one-token pass, or NULL */
    const hc_weight *graph_emb;  /* what it embeds with */
    int graph_x_on;       /* where it leaves x */
    uint8_t *graph_counted;      /* [n_layer] its layers' device counts */
    /* What its issue added to the statistics on the host (rows of layers
     * that chose them there, bytes moved), added again per replay. */
    hc_context_run_stats graph_run;
    struct hc_sparse_layer_acc *graph_acc; /* [n_layer] */
    float *host_logits;   /* [logit_cap][n_vocab] the pass's logits come down here */
    int logit_cap;        /* rows of logits room was made for: 1, or n_batch (logits_all) */
    int logit_rows;       /* rows this pass makes: its last tokens' (1, or n_tok) */

    /* Where the work went (hc_context_run_stats). */
    hc_context_run_stats run;

    /* FFN observer (profiling, predictor training). */
    hc_ffn_observer observer;
    void *observer_user;
    float *host_p;        /* [n_batch][n_embd] */
    float *host_h;        /* [n_batch][n_ff]   */
};

/* Run tokens [0, n) (n <= n_batch) at positions n_past.. through the
 * model's recipe and, if logits is not NULL, download the last token's
 * logits (exec/forward.c).  Does not advance n_past. */
int hc_forward(hc_context *c, const int32_t *tokens, int n, float *logits);

/* The host half of hc_exec_embed: tokens[0..n)'s rows into host_x and
 * their positions into host_pos (ids checked). */
int hc_embed_host(hc_context *c, const hc_weight *emb, const int32_t *tokens, int n);

/* After a pass has ended: the rows the GPU chose for itself
 * (exec/sparse_ffn.c), into the run's and the layers' statistics. */
void hc_sparse_settle(hc_context *c);

/* The pass as a replay of a captured graph (exec/graph.c): 0 done, -1
 * error, 1 not this pass (issue it as usual). */
int hc_graph_forward(hc_context *c, const int32_t *tokens, int n, float *logits);

#endif /* HC_CORE_CONTEXT_H */

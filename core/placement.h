/*
 * Placement: which parts of a model sit on the GPU under a byte budget.
 *
 * PowerInfer's order (POWERINFER-FORMAT.md): the GPU is filled with, in
 * turn, attention (attn_norm, wq, wk, wv, wo) of layer 0, 1, ... , then the
 * predictors (fc1, fc2) layer by layer, then ffn_norm of every layer, then
 * the output head (output_norm + output), then the KV cache layer by layer;
 * each item goes on the GPU only if it still fits (an item that does not
 * fit is skipped and the fill goes on with the next one: a smaller item
 * further down the list may still fit).  What is left of the budget goes
 * to hot FFN neurons: a global greedy over groups of `group` neurons, the
 * groups of each layer formed from its neurons sorted by activation
 * frequency (descending, ties by neuron id), ranked across all layers by
 * activation mass per byte.  A group is placed whole or not at all; the
 * last group of a layer may be smaller than `group`.  A neuron on the GPU
 * costs the bytes of its gate row, its up row and its down_t row, in their
 * types (hc_type_row_size): real bytes, no fudge factor.
 *
 * The solver is pure: it sees sizes and frequencies, never a device or a
 * file, so it is unit-tested on made-up shapes.
 */
#ifndef HC_CORE_PLACEMENT_H
#define HC_CORE_PLACEMENT_H

#include <stdint.h>

/* ---- what the solver is told ------------------------------------------- */
typedef struct hc_place_layer_in {
    uint64_t attn_bytes;      /* attn_norm + wq + wk + wv + wo */
    uint64_t pred_bytes;      /* fc1 + fc2; 0 = the layer has no predictor */
    uint64_t ffn_norm_bytes;
    uint64_t kv_bytes;        /* K and V cache of this layer for the context */
    uint64_t neuron_bytes;    /* one neuron: its gate + up + down_t rows */
    /* Activation frequency of each neuron ([n_ff] counts or fractions; only
     * the order and the ratios matter).  NULL: unknown, every neuron equal
     * (then the lowest ids go first). */
    const float *freq;
} hc_place_layer_in;

typedef struct hc_place_in {
    int n_layer;
    int64_t n_ff;
    /* Neurons per group: 0 = the default, 256 but never more than n_ff / 8
     * (rounded down to a multiple of 32, at least 32), so tiny models still
     * split into several groups per layer. */
    int group;
    uint64_t output_bytes;    /* output_norm + output */
    uint64_t budget;          /* bytes the GPU may hold */
    const hc_place_layer_in *layers; /* [n_layer] */
} hc_place_in;

/* ---- what it decides ----------------------------------------------------- */
typedef struct hc_place_layer {
    int attn, pred, ffn_norm, kv; /* 1 = on the GPU */
    int64_t n_hot;                /* neurons on the GPU */
    int32_t *hot;                 /* [n_hot] their ids, ascending (gpu_bucket) */
    uint8_t *on_gpu;              /* [n_ff] 1 = on the GPU (gpu_idx) */
    double served;                /* share of the layer's activation mass the GPU neurons carry */
    uint64_t gpu_bytes, cpu_bytes;/* this layer's bytes on each side (KV included) */
} hc_place_layer;

typedef struct hc_plan {
    int n_layer;
    int64_t n_ff;
    int group;                    /* the group size used */
    uint64_t budget;              /* the budget solved for (split.vram_capacity) */
    int output;                   /* output head on the GPU */
    hc_place_layer *layers;       /* [n_layer] */
    uint64_t gpu_bytes, cpu_bytes;/* totals, output included */
    double served;                /* share of all layers' activation mass on the GPU (mean over layers) */
    int from_file;                /* neuron split taken from a saved gpuidx */
} hc_plan;

/* Solve.  Returns 0, or -1 with hc_last_error() set (bad input, no memory). */
int hc_plan_solve(const hc_place_in *in, hc_plan **out);
void hc_plan_free(hc_plan *p);

/* Everything on the GPU / nothing on it, whatever the budget (for
 * `--device` runs and for tests): the same struct, so one code path. */
int hc_plan_all(const hc_place_in *in, int on_gpu, hc_plan **out);

/* Save the neuron split as PowerInfer's `<model>.generated.gpuidx` (PWRI
 * GGUF v3; see POWERINFER-FORMAT.md).  0 or -1. */
int hc_plan_save_gpuidx(const hc_plan *p, const char *path);

/* Load a saved split.  If the file's split.vram_capacity is greater than
 * in->budget the file is ignored and the plan re-solved (*reused = 0);
 * otherwise the non-neuron items are filled as hc_plan_solve does and the
 * neuron split is the file's (*reused = 1), with bytes and `served`
 * recomputed.  A file whose layer count or n_ff differ from `in`, or whose
 * contents are inconsistent (gpu_idx and gpu_bucket disagree, ids out of
 * range, not ascending), is an error naming the file and the field.  A
 * split that no longer fits after the items before it (a larger budget can
 * let an attention block in that did not fit before) is re-solved too. */
int hc_plan_load_gpuidx(const char *path, const hc_place_in *in, hc_plan **out, int *reused);

#endif /* HC_CORE_PLACEMENT_H */

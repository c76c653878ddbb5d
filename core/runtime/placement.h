/*
 * Placement: which parts of a model sit on the GPU under a byte budget.
 *
 * PowerInfer's order (the VRAM fill order of its llama.cpp fork): the GPU
 * is filled with, in turn, attention (attn_norm, wq, wk, wv, wo) of layer
 * 0, 1, ... , then the predictors (fc1, fc2) layer by layer, then ffn_norm
 * of every layer, then the output head (output_norm + output), then the KV
 * cache layer by layer;
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
    uint64_t budget;              /* the budget solved for */
    /* What the budget left for hot neurons once the other items were
     * placed: split.vram_capacity in the gpuidx file (PowerInfer's meaning:
     * it passes its solver the VRAM left after the non-FFN tensors). */
    uint64_t capacity;
    int output;                   /* output head on the GPU */
    hc_place_layer *layers;       /* [n_layer] */
    uint64_t gpu_bytes, cpu_bytes;/* totals, output included */
    double served;                /* share of all layers' activation mass on the GPU (mean over layers) */
    int from_file;                /* neuron split taken from a saved gpuidx */
    int whole_layers;             /* made by hc_plan_layers (--split layers) */
} hc_plan;

/* Solve.  Returns 0, or -1 with hc_last_error() set (bad input, no memory). */
int hc_plan_solve(const hc_place_in *in, hc_plan **out);
void hc_plan_free(hc_plan *p);

/* --split layers, llama.cpp's -ngl under a byte budget: layer 0, 1, ...
 * goes whole to the GPU (attention, predictor, ffn_norm, KV and all n_ff
 * neurons) while what is left of the budget holds it; from the first layer
 * that does not fit, it and every later one stay whole on the CPU, so the
 * GPU layers are a prefix and n_hot is 0 or n_ff.  The output head is the
 * item after the last layer (as -ngl offloads it only past n_layer): on the
 * GPU when every layer is and it fits what is left.  capacity is 0 (there
 * is no room set aside for neurons) and whole_layers 1. */
int hc_plan_layers(const hc_place_in *in, hc_plan **out);

/* Everything on the GPU / nothing on it, whatever the budget (for
 * `--device` runs and for tests): the same struct, so one code path. */
int hc_plan_all(const hc_place_in *in, int on_gpu, hc_plan **out);

/* Save the neuron split as PowerInfer's `<model>.generated.gpuidx` (PWRI
 * GGUF v3; placement_gpuidx.c has the layout), split.vram_capacity =
 * p->capacity.  0 or -1. */
int hc_plan_save_gpuidx(const hc_plan *p, const char *path);

/* What hc_plan_load_gpuidx did with a readable file. */
typedef enum hc_gpuidx_outcome {
    HC_GPUIDX_NONE = 0,          /* nothing loaded (an error) */
    HC_GPUIDX_REUSED = 1,        /* the file's neuron split */
    HC_GPUIDX_OTHER_CAPACITY = 2,/* solved for another capacity: solved afresh */
    HC_GPUIDX_NO_FIT = 3,        /* its neurons need more than the capacity: solved afresh */
    HC_GPUIDX_SAME_SPLIT = 4     /* solved for another capacity, but this one gives the same
                                    split: reused (and not rewritten) */
} hc_gpuidx_outcome;

typedef struct hc_gpuidx_load {
    int outcome;             /* hc_gpuidx_outcome */
    uint64_t saved_capacity; /* the file's split.vram_capacity */
    uint64_t capacity;       /* what in->budget leaves for hot neurons */
    uint64_t need;           /* bytes the file's GPU neurons take */
} hc_gpuidx_load;

/* Load a saved split.  The non-neuron items are filled as hc_plan_solve
 * does; the file's split is reused only when its split.vram_capacity equals
 * the capacity that leaves (the budget it was solved for gave the same room
 * for neurons) and its neurons fit in it: then bytes and `served` are
 * recomputed from it and the plan has from_file = 1.  Otherwise the plan is
 * solved afresh and how->outcome says why.  PowerInfer reuses a file
 * whenever the budget is at least its capacity, keeping a small split under
 * a budget many times larger; an equal capacity is the rule under which a
 * reused split is the split a fresh solve would give (for hotcold's files).
 * Another capacity whose fresh solve gives exactly the file's split (a
 * default budget that moved with the GPU's free memory by less than a
 * group) reuses it too, as HC_GPUIDX_SAME_SPLIT.
 * A file that cannot be used at all is -1 with hc_last_error() naming it and
 * the field: unreadable or not a gpuidx, a layer count or n_ff other than
 * `in`'s, inconsistent contents (gpu_idx and gpu_bucket disagree, ids out of
 * range or not ascending).  I32 may be PowerInfer's id 18 (gguf.h). */
int hc_plan_load_gpuidx(const char *path, const hc_place_in *in, hc_plan **out,
                        hc_gpuidx_load *how);

#endif /* HC_CORE_PLACEMENT_H */

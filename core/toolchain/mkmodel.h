/*
 * Synthetic PowerInfer (PWRI) benchmark models, written straight to disk.
 *
 * hc_mkmodel_write() produces a llama-architecture ReGLU model of any shape,
 * with `ffn_down_t`, per-layer predictors (fc1/fc2), powerinfer.sparse_threshold,
 * a synthetic SentencePiece vocabulary and the activation statistics the
 * file was designed with (hotcold.activation.n_tokens and the per-layer
 * counts arrays of act_counts.h).
 * Its real FFN activations follow a chosen power-law profile and its
 * predictor matches them; core/toolchain/mkmodel.c explains how.
 *
 * The model is never in memory: tensors are generated, quantized and
 * written row block by row block through the streaming GGUF writer (a few
 * MiB of buffers whatever the shape).  The same parameters give a
 * byte-identical file whatever the thread count.  The writer's tmp+rename
 * means a failure or cancellation leaves no partial file.
 */
#ifndef HC_CORE_MKMODEL_H
#define HC_CORE_MKMODEL_H

#include <stdint.h>

#include "hotcold/plugin.h" /* hc_type */

typedef struct hc_mkmodel_params {
    int n_embd, n_ff, n_layer, n_head, n_head_kv, n_vocab, n_ctx;
    hc_type type;       /* 2-D weights: F32, F16, Q8_0 or Q4_0 (rows whose length is not
                           a multiple of 32 fall back to F16 for the Q types) */
    float sparsity;     /* per layer, the mean fraction of FFN neurons that do NOT fire */
    float alpha;        /* firing frequency of the k-th most active neuron ~ k^-alpha */
    int predictor_rank; /* H = rows of fc1 (even); 0 = hc_mkmodel_default_rank() */
    uint64_t seed;
    float threshold;    /* written as powerinfer.sparse_threshold */
    int n_threads;      /* 0 = all cores; never changes the output */
    int force;          /* replace an existing output file */
    const char *name;   /* general.name; NULL = derived from the shape */
} hc_mkmodel_params;

/* The TinyLlama shape, q4_0, sparsity 0.9, alpha 1.2, seed 1, threshold 0. */
hc_mkmodel_params hc_mkmodel_default_params(void);

/* Set the shape fields (n_embd ... n_ctx) of a named preset: tinyllama, 7b,
 * 13b, 40b, 70b.  0, or -1 with hc_set_error() for an unknown name. */
int hc_mkmodel_preset(const char *name, hc_mkmodel_params *p);
/* "tinyllama, 7b, 13b, 40b, 70b" (for help texts). */
const char *hc_mkmodel_preset_names(void);

/* The predictor rank used when params.predictor_rank is 0. */
int hc_mkmodel_default_rank(int n_embd);

/* 0 if the parameters describe a model this can write, else -1 with a
 * one-line message naming the offending parameter. */
int hc_mkmodel_check(const hc_mkmodel_params *p);

/* Size of the file the parameters give, in bytes (exact for the data
 * section, metadata estimated from above).  0 if the parameters are bad. */
uint64_t hc_mkmodel_file_size(const hc_mkmodel_params *p);

/* Called after each block of rows: `done` of `total` tensor data bytes are
 * written, the last block belonged to `tensor`.  Return nonzero to cancel
 * (hc_mkmodel_write then fails with "cancelled" and removes its output). */
typedef int (*hc_mkmodel_progress_fn)(void *user, uint64_t done, uint64_t total,
                                      const char *tensor);

/* What the generator measured on its calibration sequence (see mkmodel.c). */
typedef struct hc_mkmodel_report {
    uint64_t file_bytes;
    int pred_rank;             /* H actually used */
    double design_active;      /* 1 - sparsity */
    double calib_active_min;   /* per-layer fraction of neurons firing on the */
    double calib_active_max;   /* calibration tokens: lowest, highest, mean    */
    double calib_active_mean;
    double residual_rms_last;  /* rms of the last layer's output (stays O(1)) */
} hc_mkmodel_report;

/* Write the model to `path`.  Refuses an existing path unless p->force, and
 * checks the free space of the target file system first.  `report` may be
 * NULL.  Returns 0, or -1 with a one-line message in hc_last_error(). */
int hc_mkmodel_write(const char *path, const hc_mkmodel_params *p,
                     hc_mkmodel_progress_fn progress, void *user, hc_mkmodel_report *report);

#endif /* HC_CORE_MKMODEL_H */

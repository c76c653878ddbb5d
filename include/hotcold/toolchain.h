/*
 * hotcold's model toolchain: what the `profile`, `train-predictor`, `pack`,
 * `mkmodel` and `quantize` commands are made of, for programs of their own.
 * It is built on the runtime's public API (hotcold.h) and writes files under
 * one set of rules (hc_output_check).  Each part's file format and rules are
 * in its section.  Every function returns 0 (or a count) on success and -1
 * with a one-line message in hc_last_error() on failure; none prints.
 */
#ifndef HOTCOLD_TOOLCHAIN_H
#define HOTCOLD_TOOLCHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "hotcold/hotcold.h"
#include "hotcold/plugin.h" /* hc_type */

#ifdef __cplusplus
extern "C" {
#endif

/* May `path` be written?  A link is written through, a device or FIFO in
 * place, a directory refused, an existing file only when `replace` (the
 * tools' --force).  0, or -1 with the reason in hc_last_error().  For a
 * caller to check before long work; every writer applies the same rules. */
HC_API int hc_output_check(const char *path, int replace);

/* ==== Activation profiling ================================================== */
/*
 * Activation profiling: how often each FFN neuron fires over a corpus.
 *
 * The corpus is cut into windows of at most n_ctx tokens, each evaluated
 * from an empty context.  Windows are whole runs of blank-line-separated
 * paragraphs (a paragraph never straddles two windows unless it alone is
 * longer than n_ctx), so the model sees text the way it was trained: a
 * story from its start.  Every token of every window is profiled: for each
 * layer i and neuron r, counts[i][r] += (h[r] != 0), h being the FFN
 * activation act(gate)*up the FFN observer reports (the FFN runs dense).
 *
 * The result is written as the profile side file (GGUF):
 *   general.architecture            = "hotcold.activation"
 *   hotcold.activation.block_count  u32
 *   hotcold.activation.model        str  (the model's path or name)
 *   hotcold.activation.n_tokens     u64  (tokens profiled)
 *   blk.{i}.ffn_act_count           I32 [n_ff]  (tokens on which neuron r fired)
 * Packed PWRI models carry the same counts as metadata arrays instead
 * (core/format/act_counts.h).
 */

/* Progress of a long job: `done` of `total` units (tokens), called from
 * the thread that runs the job. */
typedef void (*hc_progress_fn)(void *user, int64_t done, int64_t total);

/* ---- corpus windows ---------------------------------------------------- */
typedef struct hc_token_windows {
    int32_t *ids;   /* every window's ids, back to back */
    int64_t *start; /* window w is ids[start[w] .. start[w + 1]); n + 1 entries */
    int n;          /* windows */
    int64_t n_tokens;
} hc_token_windows;

/* Tokenize `text` into windows of at most n_ctx tokens (n_ctx >= 2).  The
 * first window of a paragraph run starts with BOS; a paragraph longer than
 * a window continues, without BOS, in the next ones.  Stops once
 * max_tokens tokens are taken (<= 0: no limit).  Returns 0, or -1 with
 * hc_last_error() set. */
HC_API int hc_token_windows_from_text(const hc_model *m, const char *text, size_t len, int n_ctx,
                               int64_t max_tokens, hc_token_windows *out);
HC_API void hc_token_windows_free(hc_token_windows *w);

/* A context that runs any window of `w` in one go (n_ctx = the longest
 * window, prompt batches of up to 256 tokens), with `fn` observing every
 * FFN.  NULL, with hc_last_error() set, on failure. */
HC_API hc_context *hc_token_windows_context(hc_model *m, const hc_token_windows *w, hc_ffn_observer fn,
                                     void *user);

/* Where to cut `text` so that about `frac` (0..1) of its bytes lie after
 * the cut: the start of a paragraph near len * (1 - frac) (len when there
 * is none).  Lets a tool hold out the tail of a corpus. */
HC_API size_t hc_text_split_point(const char *text, size_t len, double frac);

/* ---- activation counts ------------------------------------------------- */
typedef struct hc_activation_profile {
    int n_layer;
    int n_ff;
    uint64_t n_tokens;
    int64_t *counts; /* [n_layer][n_ff] */
    char model[512];
} hc_activation_profile;

/* Zeroed counts for a shape.  0 or -1. */
HC_API int hc_profile_init(hc_activation_profile *p, int n_layer, int n_ff, const char *model);
HC_API void hc_profile_free(hc_activation_profile *p);

/* Evaluate every window on a fresh context of m (n_ctx = the longest
 * window) and count firing neurons.  `progress` may be NULL.  Counts are
 * added to `p`, which must have m's shape. */
HC_API int hc_profile_model(hc_model *m, const hc_token_windows *w, hc_progress_fn progress,
                     void *user, hc_activation_profile *p);

/* Side file I/O (format above).  Counts must fit in I32. */
HC_API int hc_profile_write(const hc_activation_profile *p, const char *path);
HC_API int hc_profile_read(const char *path, hc_activation_profile *out);

/* PowerInfer's activation folder: DIR/activation_<i>.pt for i = 0..n-1
 * (matched by layer number, never sorted as text), each a torch-saved 1-D
 * tensor of n_ff values.  n_layer / n_ff > 0 make a different shape an
 * error (pass the model's); <= 0 take them from the files.  The files do not
 * record how many tokens were profiled:
 *   whole-number counts: n_tokens = `n_tokens` if non-zero, else the
 *     largest count (a lower bound; *n_tokens_guessed = 1);
 *   fractions in [0, 1] (frequencies): counts = round(f * N) with
 *     N = `n_tokens`, else 1000000 (*n_tokens_guessed = 1).
 * A count above n_tokens is an error. */
HC_API int hc_profile_from_pt_dir(const char *dir, int n_layer, int n_ff, uint64_t n_tokens,
                           hc_activation_profile *out, int *n_tokens_guessed);

/* The power law of one layer. */
typedef struct hc_profile_summary {
    double mean_active; /* mean fraction of neurons firing per token */
    double top10_share; /* share of all firings made by the 10% most active neurons */
    double top20_share; /* ... by the top 20% */
    double dead_frac;   /* neurons that never fired */
} hc_profile_summary;
HC_API int hc_profile_summarize(const hc_activation_profile *p, int layer, hc_profile_summary *out);

/* ==== Predictor training ==================================================== */
/*
 * Training PowerInfer's activation predictors.
 *
 * Per layer, a two-layer MLP without biases guesses which FFN neurons fire:
 *   logits = fc2 . relu(fc1 . p),  neuron r predicted active iff logits[r] >= threshold,
 * p being the residual stream right before ffn_norm.  Training data are (p, fires)
 * pairs collected through the FFN observer (fires[r] = h[r] != 0).
 *
 * Training (hc_predictor_train): binary cross-entropy on the logits with the positive
 * class weighted (most neurons are off, and a missed neuron costs accuracy while an
 * extra one only costs time), Adam, mini-batches, a linearly decaying learning rate.
 * Inputs are scaled by one number per layer (1 / RMS of p) during training and the
 * scale is folded into fc1 at the end, so the stored predictor takes the raw p.
 *
 * Determinism: each layer is trained start to finish by one thread, with a
 * random generator seeded from (seed, layer, rank) and a fixed summation order,
 * so the result is bit-identical for any thread count.
 *
 * Rank: a fixed H, or "auto": the ladder 16, 32, 64, ... up to n_embd, taking the
 * smallest H whose recall on a selection slice (the tail of the training samples,
 * not used for fitting) reaches the target at the threshold.  Held-out figures are
 * measured separately on samples from text never used for training or selection.
 *
 * The predictor side file (GGUF):
 *   general.architecture          = "hotcold.predictor"
 *   hotcold.predictor.block_count  u32
 *   powerinfer.sparse_threshold    f32
 *   hotcold.predictor.recall       F32[n_layer]  (held-out, at the threshold)
 *   hotcold.predictor.precision    F32[n_layer]
 *   hotcold.predictor.active_fraction F32[n_layer] (held-out: neurons predicted active)
 *   hotcold.predictor.model        str
 *   blk.{i}.fc1.weight             F32, ne = [n_embd, H_i]
 *   blk.{i}.fc2.weight             F32, ne = [H_i, n_ff]
 */

/* ---- samples ------------------------------------------------------------ */
/* (p, fires) pairs, the same tokens for every layer, at most `cap` of them. */
typedef struct hc_ffn_samples {
    int n_layer, n_embd, n_ff;
    int words;        /* 64-bit words per label row: ceil(n_ff / 64) */
    int64_t cap;      /* samples per layer */
    int64_t n;        /* collected */
    float *p;         /* [n_layer][cap][n_embd] */
    uint64_t *fires;  /* [n_layer][cap][words]: bit r = neuron r fired */
} hc_ffn_samples;

/* Bytes the samples of `cap` tokens take for a model shape. */
HC_API uint64_t hc_ffn_samples_bytes(int n_layer, int n_embd, int n_ff, int64_t cap);
HC_API int hc_ffn_samples_init(hc_ffn_samples *s, int n_layer, int n_embd, int n_ff, int64_t cap);
HC_API void hc_ffn_samples_free(hc_ffn_samples *s);
/* Run the windows through m (FFN dense, each window from an empty context)
 * until every window is done or the samples are full.  0 or -1. */
HC_API int hc_ffn_samples_collect(hc_model *m, const hc_token_windows *w, hc_progress_fn progress,
                           void *user, hc_ffn_samples *s);

static inline const float *hc_ffn_sample_p(const hc_ffn_samples *s, int layer, int64_t i)
{
    return s->p + ((size_t)layer * (size_t)s->cap + (size_t)i) * (size_t)s->n_embd;
}
static inline const uint64_t *hc_ffn_sample_fires(const hc_ffn_samples *s, int layer,
                                                  int64_t i)
{
    return s->fires + ((size_t)layer * (size_t)s->cap + (size_t)i) * (size_t)s->words;
}

/* ---- predictors --------------------------------------------------------- */
typedef struct hc_predictor_layer {
    int rank;         /* H */
    float *fc1;       /* [H][n_embd]: row h (ggml ne = [n_embd, H]) */
    float *fc2;       /* [n_ff][H]:   row r (ggml ne = [H, n_ff])   */
    /* Measured at the threshold on held-out samples (hc_predictor_evaluate). */
    int evaluated;
    double recall, precision;
    double pred_frac; /* neurons predicted active, per token */
    double true_frac; /* neurons truly active, per token */
    /* From training. */
    double select_recall; /* on the selection slice, for the chosen rank */
    int reached_target;   /* auto rank: the chosen H reached the target recall */
    double seconds;
} hc_predictor_layer;

typedef struct hc_predictor {
    int n_layer, n_embd, n_ff;
    float threshold;
    char model[512];
    hc_predictor_layer *layers;
} hc_predictor;

typedef struct hc_train_params {
    size_t size;
    int rank;            /* H for every layer; 0 = auto (the ladder) */
    int min_rank;        /* first rung of the ladder (16) */
    int max_rank;        /* last rung; 0 = n_embd */
    int epochs;          /* passes over the fitting samples (4) */
    int batch;           /* samples per step (64) */
    float lr;            /* Adam learning rate at the start (1e-2) */
    float pos_weight;    /* weight of "fires" in the loss; 0 = auto: 3 sqrt(off/on) of the layer */
    float threshold;     /* decision cut on the logits (0) */
    float target_recall; /* auto rank goal on the selection slice (0.95) */
    double select_frac;  /* tail of the training samples held back to choose H (0.1) */
    int n_threads;       /* layers trained at once (1) */
    uint64_t seed;
} hc_train_params;

HC_API hc_train_params hc_train_default_params(void);

/* One finished attempt: layer `layer` trained at rank H (called from worker
 * threads, one call at a time). */
typedef struct hc_train_event {
    int layer;
    int rank;
    double select_recall, select_precision, select_pred_frac;
    double seconds;
    int last;            /* the layer is done */
    int chosen_rank;     /* the best rank so far (the layer's rank once last) */
} hc_train_event;
typedef void (*hc_train_event_fn)(void *user, const hc_train_event *ev);

/* Train every layer's predictor on `train` (the last select_frac of its
 * samples only choose the rank).  0, or -1 with hc_last_error() set. */
HC_API int hc_predictor_train(const hc_ffn_samples *train, const hc_train_params *params,
                       hc_train_event_fn on_event, void *user, hc_predictor *out);
/* Recall, precision and active fractions at pr->threshold on `held_out`. */
HC_API int hc_predictor_evaluate(hc_predictor *pr, const hc_ffn_samples *held_out);
/* Counts for one layer on samples [begin, end): true positives, predicted,
 * truly active (exposed for tests and the selection step). */
HC_API void hc_predictor_layer_counts(const hc_predictor_layer *l, int n_embd, int n_ff,
                               float threshold, const hc_ffn_samples *s, int layer,
                               int64_t begin, int64_t end, uint64_t *tp, uint64_t *pred,
                               uint64_t *truth);

HC_API int hc_predictor_init(hc_predictor *pr, int n_layer, int n_embd, int n_ff);
HC_API void hc_predictor_free(hc_predictor *pr);
HC_API int hc_predictor_write(const hc_predictor *pr, const char *path);
HC_API int hc_predictor_read(const char *path, hc_predictor *out);

/* ==== Packing a PowerInfer model ============================================ */
/*
 * Packing a PowerInfer (PWRI) model from a GGUF model, a predictor side file
 * and, optionally, an activation profile (their formats in the sections
 * above), in the layout of PowerInfer's *.powerinfer.gguf files.
 *
 * The output:
 *   - magic "PWRI", GGUF version 3, the input's alignment;
 *   - every key of the input, plus powerinfer.sparse_threshold (f32), the
 *     predictor's held-out recall/precision arrays, and, with a profile,
 *     hotcold.activation.n_tokens; <arch>.ffn_act is kept as the input has
 *     it (a PWRI llama without it means ReGLU; a plain llama without it is
 *     SwiGLU, which has no exact zeros to exploit: that is an error); the
 *     profile's (or else the input's own) activation counts as the metadata
 *     arrays of core/format/act_counts.h, not as tensors, so PowerInfer loads the file;
 *   - every tensor of the input in its order, except that
 *     blk.{i}.ffn_down.weight ([n_ff, n_embd]) becomes
 *     blk.{i}.ffn_down_t.weight ([n_embd, n_ff]: row r = what neuron r adds),
 *     followed by blk.{i}.fc1.weight, blk.{i}.fc2.weight (F32, from the
 *     predictor); counts tensors (blk.{i}.ffn_act_count) are left out.
 *     An input that is already PWRI keeps its ffn_down_t; its old predictors
 *     (and, given a new profile, its old counts) are replaced.
 * The transpose: F32 and F16 exactly (bit for bit); Q8_0 / Q4_0 are
 * dequantized, transposed and quantized again to the same type when n_embd is
 * a multiple of 32 (else F16) — lossy: each row gets new block scales.
 * The transpose streams in strips of columns, so memory stays bounded
 * (about 64 MiB) whatever the model's size; everything else is copied
 * straight from the memory-mapped inputs.
 */

typedef struct hc_pack_params {
    size_t size;
    const char *model;     /* input GGUF (or PWRI) model */
    const char *predictor; /* predictor side file (hotcold train-predictor) */
    const char *profile;   /* activation profile (hotcold profile), or NULL */
    const char *out;       /* written by core/format/output_file.h's rules: complete or not at all */
    float threshold;       /* NAN: the predictor file's powerinfer.sparse_threshold */
    /* Called after each output tensor (done = 1..total); may be NULL. */
    void (*progress)(void *user, int done, int total, const char *tensor);
    void *user;
} hc_pack_params;

typedef struct hc_pack_report {
    int n_layer, n_embd, n_ff;
    uint32_t down_in_type, down_out_type; /* ggml type ids */
    int down_lossy;                       /* quantized down was requantized */
    int down_was_transposed;              /* 0: the input already held ffn_down_t */
    float threshold;
    int has_profile;
    int n_tensors;
} hc_pack_report;

HC_API hc_pack_params hc_pack_default_params(void);
/* 0, or -1 with hc_last_error() set (no output file is left behind).
 * `report` may be NULL. */
HC_API int hc_pack_file(const hc_pack_params *params, hc_pack_report *report);

/* ==== Synthetic models ====================================================== */
/*
 * Synthetic PowerInfer (PWRI) benchmark models, written straight to disk.
 *
 * hc_mkmodel_write() produces a llama-architecture ReGLU model of any shape,
 * with `ffn_down_t`, per-layer predictors (fc1/fc2), powerinfer.sparse_threshold,
 * a synthetic SentencePiece vocabulary and the activation statistics the
 * file was designed with (hotcold.activation.n_tokens and the per-layer
 * counts arrays of core/format/act_counts.h).
 * Its real FFN activations follow a chosen power-law profile and its
 * predictor matches them; core/toolchain/mkmodel.c explains how.
 *
 * The model is never in memory: tensors are generated, quantized and
 * written row block by row block through the streaming GGUF writer (a few
 * MiB of buffers whatever the shape).  The same parameters give a
 * byte-identical file whatever the thread count.  The writer's tmp+rename
 * means a failure or cancellation leaves no partial file.
 */

typedef struct hc_mkmodel_params {
    int n_embd, n_ff, n_layer, n_head, n_head_kv, n_vocab, n_ctx;
    hc_type type;       /* 2-D weights: F32, F16, Q8_0 or Q4_0 (rows whose length is not
                           a multiple of 32 fall back to F16 for the Q types) */
    float sparsity;     /* per layer, the mean fraction of FFN neurons that do NOT fire */
    float alpha;        /* firing frequency of the k-th most active neuron ~ k^-alpha */
    int predictor_rank; /* H = rows of fc1 (even); 0 = hc_mkmodel_default_rank() */
    uint64_t seed;
    float threshold;    /* written as powerinfer.sparse_threshold */
    int n_threads;      /* 0 = all cores; the calling thread is one of them (it also
                           writes the file, in order); never changes the output */
    int force;          /* replace an existing output file */
    const char *name;   /* general.name; NULL = derived from the shape */
} hc_mkmodel_params;

/* The TinyLlama shape, q4_0, sparsity 0.9, alpha 1.2, seed 1, threshold 0. */
HC_API hc_mkmodel_params hc_mkmodel_default_params(void);

/* Set the shape fields (n_embd ... n_ctx) of a named preset: tinyllama, 7b,
 * 13b, 40b, 70b.  0, or -1 with hc_set_error() for an unknown name. */
HC_API int hc_mkmodel_preset(const char *name, hc_mkmodel_params *p);
/* "tinyllama, 7b, 13b, 40b, 70b" (for help texts). */
HC_API const char *hc_mkmodel_preset_names(void);

/* The predictor rank used when params.predictor_rank is 0. */
HC_API int hc_mkmodel_default_rank(int n_embd);

/* 0 if the parameters describe a model this can write, else -1 with a
 * one-line message naming the offending parameter. */
HC_API int hc_mkmodel_check(const hc_mkmodel_params *p);

/* Size of the file the parameters give, in bytes (exact for the data
 * section, metadata estimated from above).  0 if the parameters are bad. */
HC_API uint64_t hc_mkmodel_file_size(const hc_mkmodel_params *p);

/* Called after each block of rows, on the thread that called
 * hc_mkmodel_write: `done` of `total` tensor data bytes are written, the
 * last block belonged to `tensor`.  Return nonzero to cancel
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
HC_API int hc_mkmodel_write(const char *path, const hc_mkmodel_params *p,
                     hc_mkmodel_progress_fn progress, void *user, hc_mkmodel_report *report);

/* ==== Model conversion ====================================================== */
/*
 * Model conversion: rewrite a GGUF file's weights in another type.
 *
 * Rules: the output keeps the input's magic (GGUF or PWRI), version,
 * alignment and every key, with general.file_type set to llama.cpp's value
 * for the target (0 ALL_F32, 1 MOSTLY_F16, 2 MOSTLY_Q4_0, 7 MOSTLY_Q8_0,
 * 18 MOSTLY_Q6_K).
 * Tensors named "*.weight":
 *   1-D          -> F32;
 *   2-D and more -> the target type (output.weight: the output type, which
 *                   hc_quantize_file_mixed may set apart); for Q6_K only
 *                   when ne0 is a multiple of 256, otherwise Q8_0 (as
 *                   PowerInfer's quantize does), and never for a PWRI
 *                   *.ffn_down_t.weight (Q8_0: the engine sums its rows
 *                   with axpy_rows, which has no Q6_K kernel); for
 *                   Q8_0/Q4_0 only when ne0 is a multiple of 32, otherwise
 *                   F16.  Each fallback is logged as a warning.
 * Other tensors are copied unchanged, except that a PWRI input's activation
 * counts tensors become metadata arrays (core/format/act_counts.h).  A tensor that must
 * be converted has to be F32, F16, Q8_0, Q4_0 or Q6_K; anything else is an
 * error.  Tensors already in their output type are copied bit for bit.
 * PowerInfer's `quantize ... Q4_0` is hc_quantize_file_mixed(.., Q4_0, Q6_K,
 * ..): every 2-D weight Q4_0 but output.weight Q6_K.
 * The conversion streams tensor by tensor (the input is memory-mapped, the
 * output written through hc_gguf_writer, core/format/output_file.h's rules), so a
 * failure leaves no output file.
 */

/* llama.cpp's general.file_type for an all-`type` model; -1 if none. */
HC_API int hc_quantize_file_type(hc_type type);

/* Convert `in` to `out` (type: F32, F16, Q8_0, Q4_0 or Q6_K).  `progress`,
 * if not NULL, is called after each tensor with done = 1..total.  Returns
 * 0, or -1 with a one-line message in hc_last_error(). */
HC_API int hc_quantize_file(const char *in, const char *out, hc_type type,
                     void (*progress)(void *user, int done, int total, const char *tensor),
                     void *user);

/* The same with output.weight (the output head) in `output_type` instead
 * of `type`; general.file_type follows `type`.  A file without
 * output.weight (tied head) gets a warning that output_type applied to
 * nothing. */
HC_API int hc_quantize_file_mixed(const char *in, const char *out, hc_type type, hc_type output_type,
                           void (*progress)(void *user, int done, int total, const char *tensor),
                           void *user);

#ifdef __cplusplus
}
#endif

#endif /* HOTCOLD_TOOLCHAIN_H */

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
#ifndef HC_CORE_TRAIN_PREDICTOR_H
#define HC_CORE_TRAIN_PREDICTOR_H

#include <stddef.h>
#include <stdint.h>

#include "hotcold/hotcold.h"
#include "toolchain/profile.h" /* hc_token_windows, hc_progress_fn */

#define HC_PREDICTOR_ARCH "hotcold.predictor"
#define HC_PRED_KEY_BLOCKS "hotcold.predictor.block_count"
#define HC_PRED_KEY_RECALL "hotcold.predictor.recall"
#define HC_PRED_KEY_PRECISION "hotcold.predictor.precision"
#define HC_PRED_KEY_ACTIVE "hotcold.predictor.active_fraction"
#define HC_PRED_KEY_MODEL "hotcold.predictor.model"
#define HC_KEY_SPARSE_THRESHOLD "powerinfer.sparse_threshold"

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
uint64_t hc_ffn_samples_bytes(int n_layer, int n_embd, int n_ff, int64_t cap);
int hc_ffn_samples_init(hc_ffn_samples *s, int n_layer, int n_embd, int n_ff, int64_t cap);
void hc_ffn_samples_free(hc_ffn_samples *s);
/* Run the windows through m (FFN dense, each window from an empty context)
 * until every window is done or the samples are full.  0 or -1. */
int hc_ffn_samples_collect(hc_model *m, const hc_token_windows *w, hc_progress_fn progress,
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

hc_train_params hc_train_default_params(void);

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
int hc_predictor_train(const hc_ffn_samples *train, const hc_train_params *params,
                       hc_train_event_fn on_event, void *user, hc_predictor *out);
/* Recall, precision and active fractions at pr->threshold on `held_out`. */
int hc_predictor_evaluate(hc_predictor *pr, const hc_ffn_samples *held_out);
/* Counts for one layer on samples [begin, end): true positives, predicted,
 * truly active (exposed for tests and the selection step). */
void hc_predictor_layer_counts(const hc_predictor_layer *l, int n_embd, int n_ff,
                               float threshold, const hc_ffn_samples *s, int layer,
                               int64_t begin, int64_t end, uint64_t *tp, uint64_t *pred,
                               uint64_t *truth);

int hc_predictor_init(hc_predictor *pr, int n_layer, int n_embd, int n_ff);
void hc_predictor_free(hc_predictor *pr);
int hc_predictor_write(const hc_predictor *pr, const char *path);
int hc_predictor_read(const char *path, hc_predictor *out);

#endif /* HC_CORE_TRAIN_PREDICTOR_H */

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
 * (act_counts.h).
 */
#ifndef HC_CORE_PROFILE_H
#define HC_CORE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "format/act_counts.h" /* the side file's keys and tensor names */
#include "hotcold/hotcold.h"

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
int hc_token_windows_from_text(const hc_model *m, const char *text, size_t len, int n_ctx,
                               int64_t max_tokens, hc_token_windows *out);
void hc_token_windows_free(hc_token_windows *w);

/* A context that runs any window of `w` in one go (n_ctx = the longest
 * window, prompt batches of up to 256 tokens), with `fn` observing every
 * FFN.  NULL, with hc_last_error() set, on failure. */
hc_context *hc_token_windows_context(hc_model *m, const hc_token_windows *w, hc_ffn_observer fn,
                                     void *user);

/* Where to cut `text` so that about `frac` (0..1) of its bytes lie after
 * the cut: the start of a paragraph near len * (1 - frac) (len when there
 * is none).  Lets a tool hold out the tail of a corpus. */
size_t hc_text_split_point(const char *text, size_t len, double frac);

/* ---- activation counts ------------------------------------------------- */
typedef struct hc_activation_profile {
    int n_layer;
    int n_ff;
    uint64_t n_tokens;
    int64_t *counts; /* [n_layer][n_ff] */
    char model[512];
} hc_activation_profile;

/* Zeroed counts for a shape.  0 or -1. */
int hc_profile_init(hc_activation_profile *p, int n_layer, int n_ff, const char *model);
void hc_profile_free(hc_activation_profile *p);

/* Evaluate every window on a fresh context of m (n_ctx = the longest
 * window) and count firing neurons.  `progress` may be NULL.  Counts are
 * added to `p`, which must have m's shape. */
int hc_profile_model(hc_model *m, const hc_token_windows *w, hc_progress_fn progress,
                     void *user, hc_activation_profile *p);

/* Side file I/O (format above).  Counts must fit in I32. */
int hc_profile_write(const hc_activation_profile *p, const char *path);
int hc_profile_read(const char *path, hc_activation_profile *out);

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
int hc_profile_from_pt_dir(const char *dir, int n_layer, int n_ff, uint64_t n_tokens,
                           hc_activation_profile *out, int *n_tokens_guessed);

/* The power law of one layer. */
typedef struct hc_profile_summary {
    double mean_active; /* mean fraction of neurons firing per token */
    double top10_share; /* share of all firings made by the 10% most active neurons */
    double top20_share; /* ... by the top 20% */
    double dead_frac;   /* neurons that never fired */
} hc_profile_summary;
int hc_profile_summarize(const hc_activation_profile *p, int layer, hc_profile_summary *out);

#endif /* HC_CORE_PROFILE_H */

/*
 * Where the placement solver's activation frequencies come from
 * (hc_place_layer_in.freq):
 *   (a) per-layer I32 [n_ff] counts (core/format/act_counts.h): metadata arrays in
 *       a packed PWRI model, `blk.{i}.ffn_act_count` tensors in a profile
 *       side file (and in PWRI models hotcold wrote before 2026-12);
 *   (b) PowerInfer's `activation/activation_<i>.pt` folder.
 * Both give one float per neuron, layer-major: freq[i * n_ff + r], so layer
 * i's pointer for the solver is freq + i * n_ff.  Only ratios matter to the
 * solver, so counts are passed on as they are (a float holds every count
 * below 2^24 exactly, and larger ones to 7 digits, plenty to rank by).
 */
#ifndef HC_CORE_PLACEMENT_STATS_H
#define HC_CORE_PLACEMENT_STATS_H

#include <stdint.h>

#include "format/gguf.h"

/* Counts from g (either form of act_counts.h) for layers 0..n_layer-1.
 * None of them present: 0 with *freq_out = NULL (the solver then treats
 * every neuron alike).  Some but not all present, counts that are not
 * I32 [n_ff], a negative count, or hotcold.activation.block_count (when
 * present) other than n_layer: -1 with hc_last_error() naming the tensor
 * or key.  On success *freq_out is malloc'd [n_layer * n_ff]; free() it. */
int hc_place_freq_from_gguf(const hc_gguf *g, int n_layer, int64_t n_ff, float **freq_out);

/* Counts (or frequencies) from PowerInfer's activation folder, read with
 * hc_pt_read_activation_dir (layers matched by number; the folder must hold
 * exactly n_layer layers of n_ff values).  0 with *freq_out malloc'd
 * [n_layer * n_ff], or -1 with hc_last_error() set and *freq_out = NULL. */
int hc_place_freq_from_activation_dir(const char *dir, int n_layer, int64_t n_ff,
                                      float **freq_out);

#endif /* HC_CORE_PLACEMENT_STATS_H */

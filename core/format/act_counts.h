/*
 * Where a file keeps its per-neuron activation counts (toolchain/profile.h), one I32
 * vector of n_ff per layer, in one of two forms:
 *   - metadata array  hotcold.activation.blk.{i}.ffn_act_count  (I32 [n_ff]):
 *     what PWRI model files carry (`pack`, `mkmodel`, `quantize`).  PowerInfer's
 *     loader (like llama.cpp's of its day) refuses a file holding a tensor it
 *     does not create, but skips metadata it does not know, so counts kept as
 *     metadata leave the file loadable there;
 *   - tensor  blk.{i}.ffn_act_count  (I32 [n_ff]): the profile side file
 *     (hotcold profile), and PWRI files hotcold wrote before 2026-12.
 * Readers accept both; the array wins when a file has both.
 * Internal to libhotcold.
 */
#ifndef HC_CORE_ACT_COUNTS_H
#define HC_CORE_ACT_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "format/gguf.h"

/* The profile side file (toolchain/profile.h) and the keys PWRI files share. */
#define HC_PROFILE_ARCH "hotcold.activation"
#define HC_ACT_KEY_N_TOKENS "hotcold.activation.n_tokens"
#define HC_ACT_KEY_BLOCKS "hotcold.activation.block_count"
#define HC_ACT_KEY_MODEL "hotcold.activation.model"
/* Tensor name of layer il's counts ("blk.%d.ffn_act_count"). */
#define HC_ACT_TENSOR_FMT "blk.%d.ffn_act_count"
/* "hotcold.activation.blk.%d.ffn_act_count" */
#define HC_ACT_KEY_COUNT_FMT "hotcold.activation.blk.%d.ffn_act_count"

/* Layer il's counts in g.  1: found, *data -> n little-endian int32 inside the
 * mapping, `where` (if not NULL) names the key or tensor; 0: neither form is
 * there; -1: the key or tensor is there but not a 1-D I32 vector
 * (hc_last_error() names it). */
int hc_act_counts_find(const hc_gguf *g, int il, const void **data, uint64_t *n, char *where,
                       size_t where_len);

/* 1 if `name` is a counts tensor ("blk.<i>.ffn_act_count"): files that carry
 * counts as metadata leave such tensors out. */
int hc_act_counts_is_tensor(const char *name);

/* Declare layer il's counts (n int32, host order) as the metadata array;
 * replaces an existing one.  0 or -1. */
int hc_act_counts_put(hc_gguf_writer *w, int il, const int32_t *counts, uint64_t n);

/* Copy into w, as metadata, the counts tensors of a file that has them as
 * tensors (a PWRI model written before the arrays): a layer whose array is
 * already in g is left alone (copy_kv brings it).  0 or -1. */
int hc_act_counts_carry(hc_gguf_writer *w, const hc_gguf *g);

#endif /* HC_CORE_ACT_COUNTS_H */

/*
 * The executor's steps, for the architectures' forward recipes (internal).
 *
 * A recipe says what to compute; these say nothing about where.  The
 * residual stream x and the other activations (exec/acts.h) are slots of
 * the context; each step runs on the device that holds x now, reading its
 * copy of the weights, and hc_exec_to() moves x where the placement puts
 * the next block.  The hybrid sparse FFN splits itself between the devices
 * (exec/sparse_ffn.c).  Steps work on the n tokens of the pass under way,
 * on [n][n_embd] slots unless they say otherwise.  Each returns 0, or -1
 * with the error set.
 */
#ifndef HC_CORE_EXEC_H
#define HC_CORE_EXEC_H

#include "exec/acts.h"
#include "runtime/model.h"

/* x = the embedding rows of tokens[0..n) (checked against the vocabulary),
 * on device `on` (1 = the GPU); positions n_past.. on every device. */
int hc_exec_embed(hc_context *c, const hc_weight *emb, const int32_t *tokens, int n, int on);


/* Bring x to device `on`: where the placement runs the next block. */
int hc_exec_to(hc_context *c, int on);

/* y = rmsnorm(x) * w. */
int hc_exec_rmsnorm(hc_context *c, hc_act x, const hc_weight *w, hc_act y, float eps);
/* y = op(x, param) (plugin.h's hc_unary_op), in place when x == y. */
int hc_exec_unary(hc_context *c, int op, hc_act x, hc_act y, float param);
/* y = w . x for each token (w is [rows][cols]: y [n][rows]). */
int hc_exec_matmul(hc_context *c, const hc_weight *w, hc_act x, hc_act y);
/* y += b. */
int hc_exec_add(hc_context *c, hc_act y, hc_act b);

/* Attention of layer il: q = wq . x into Q, and k = wk . x, v = wv . x
 * straight into the layer's KV-cache rows of the tokens' positions. */
int hc_exec_qkv(hc_context *c, const hc_weight *wq, const hc_weight *wk, const hc_weight *wv,
                int il);
/* Q and the new K rows of layer il rotated by their positions (the model's
 * rope settings). */
int hc_exec_rope_qk(hc_context *c, int il);
/* out = softmax(q . K^T * scale) . V over layer il's cache, causal,
 * grouped-query heads. */
int hc_exec_attention(hc_context *c, int il, hc_act out, float scale);

/* The device that must hold x while layer l's FFN runs: the one with every
 * neuron when one has them all, else wherever x is. */
int hc_ffn_home(const hc_context *c, const hc_layer *l);
/* x += down . act(gate . xn, up . xn) over the neurons that fire
 * (exec/sparse_ffn.c); xn must be computed. */
int hc_exec_sparse_ffn(hc_context *c, const hc_layer *l, int il);

/* The tokens whose logits the pass makes (the last, or all of them:
 * c->logit_rows): y = rmsnorm(x[t]) * w into XN. */
int hc_exec_rmsnorm_last(hc_context *c, const hc_weight *w, float eps);
/* logits = w . XN of those tokens, into the context's host_logits
 * (hc_forward hands them out after the pass); `logits` is the caller's,
 * unused here. */
int hc_exec_logits(hc_context *c, const hc_weight *w, float *logits);

#endif /* HC_CORE_EXEC_H */

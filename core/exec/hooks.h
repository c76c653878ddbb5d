/*
 * The diagnostics the sparse FFN runs at fixed points of every layer, when a
 * context asks for them (internal to exec/): the predictor check
 * (hc_context_params.sparse_check, `--sparse-check`) and the FFN observer
 * (hc_context_set_ffn_observer: profiling, predictor training).  Neither is
 * part of a recipe; without them each hook is one test of a flag.
 */
#ifndef HC_CORE_HOOKS_H
#define HC_CORE_HOOKS_H

#include "exec/context.h"

/* Predictor quality against the truth: the dense h of every neuron on the
 * CPU (it holds every weight), counted against host_plog.  exec/hooks.c. */
int hc_check_prediction(hc_context *c, const hc_layer *l, int il, int n);
/* Hand the observer layer il's pre-norm residual and complete h (CPU only). */
int hc_observe_ffn(hc_context *c, int il, int n);

/* The check needs xn on the CPU; the observer, every neuron's h. */
static inline int hc_hooks_need_cpu_xn(const hc_context *c)
{
    return c->sparse_check;
}

static inline int hc_hooks_need_dense(const hc_context *c)
{
    return c->observer != NULL;
}

/* After the active rows are chosen (scores in host_plog). */
static inline int hc_hook_rows_chosen(hc_context *c, const hc_layer *l, int il, int n)
{
    return c->sparse_check ? hc_check_prediction(c, l, il, n) : 0;
}

/* After a share's h is computed, before down adds it to the residual. */
static inline int hc_hook_h_ready(hc_context *c, int il, int n)
{
    return c->observer ? hc_observe_ffn(c, il, n) : 0;
}

#endif /* HC_CORE_HOOKS_H */

/*
 * One forward pass: the model's recipe (its architecture's forward, e.g.
 * arch/llama.c) between the pass's set-up and the wait for both devices,
 * or the replay of a captured one (exec/graph.c).
 */
#include "exec/context.h"

#include <string.h>

int hc_forward(hc_context *c, const int32_t *tokens, int n, float *logits)
{
    c->n_tok = n;
    memset(c->counted, 0, (size_t)c->m->hp.n_layer);
    const int replayed = hc_graph_forward(c, tokens, n, logits);
    if (replayed <= 0)
        return replayed;
    if (c->m->arch->forward(c, c->m, tokens, n, logits))
        return -1;
    /* The staging buffers and logits are only safe to reuse/read after this. */
    if ((c->m->has_gpu && hc_dev_sync(&c->gpu)) || hc_dev_sync(&c->cpu))
        return -1;
    hc_sparse_settle(c);
    if (logits)
        memcpy(logits, c->host_logits, (size_t)c->m->hp.n_vocab * sizeof *logits);
    return 0;
}

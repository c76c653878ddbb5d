/*
 * One forward pass: the model's recipe (its architecture's forward, e.g.
 * arch/llama.c) between the pass's set-up and the wait for both devices,
 * or the replay of a captured one (exec/graph.c); and the host's own part
 * of a pass: the embedding rows and positions, the GPU's counts into the
 * statistics.  The recipe is reached through the architecture's function
 * pointer, so the context needs nothing of the executor (include
 * circles: tests/include_cycles.sh).
 */
#include "exec/context.h"

#include <string.h>

#include "ref/ref.h"
#include "util/log.h"

int hc_embed_host(hc_context *c, const hc_weight *emb, const int32_t *tokens, int n)
{
    const hc_hparams *hp = &c->m->hp;
    const uint64_t emb_row = hc_type_row_size(emb->type, hp->n_embd);
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab) {
            hc_set_error("token id %d is outside the vocabulary (0..%d)", tokens[i],
                         hp->n_vocab - 1);
            return -1;
        }
        const uint8_t *row = (const uint8_t *)emb->host + (uint64_t)tokens[i] * emb_row;
        hc_scalar_dequantize_row(emb->type, row, c->host_x + (size_t)i * hp->n_embd, hp->n_embd);
        c->host_pos[i] = c->n_past + i;
    }
    return 0;
}

void hc_sparse_settle(hc_context *c)
{
    const int64_t ff = c->m->hp.n_ff;
    for (int il = 0; il < c->m->hp.n_layer; il++) {
        if (!c->counted[il])
            continue;
        const int32_t k = c->host_count[il];
        c->run.gpu_rows += k;
        c->acc[il].forwards++;
        c->acc[il].computed += (double)k / (double)ff;
        c->counted[il] = 0;
    }
}

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
        memcpy(logits, c->host_logits,
               (size_t)c->logit_rows * c->m->hp.n_vocab * sizeof *logits);
    return 0;
}

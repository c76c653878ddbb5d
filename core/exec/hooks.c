/* The sparse FFN's diagnostics (see hooks.h). */
#include "exec/hooks.h"

#include "exec/moves.h"

int hc_check_prediction(hc_context *c, const hc_layer *l, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->cpu;
    hc_acts *A = &c->a[HC_ON_CPU];
    const int64_t e = hp->n_embd, ff = hp->n_ff;
    struct hc_sparse_layer_acc *a = &c->acc[il];
    if (hc_dev_matmul(d, l->ffn_gate.type, l->ffn_gate.ref, ff, e, A->xn, n, A->gate) ||
        hc_dev_matmul(d, l->ffn_up.type, l->ffn_up.ref, ff, e, A->xn, n, A->up) ||
        hc_dev_glu(d, hp->ffn_act, A->gate, A->up, A->gate, (int64_t)n * ff,
                   hp->ffn_gate_shift) ||
        hc_dev_download(d, c->host_true, A->gate, (uint64_t)n * ff * HC_F32) || hc_dev_sync(d))
        return -1;
    for (int t = 0; t < n; t++) {
        const float *h = c->host_true + (size_t)t * ff, *lg = c->host_plog + (size_t)t * ff;
        for (int64_t r = 0; r < ff; r++) {
            int truly = h[r] != 0.0f, predicted = lg[r] >= hp->sparse_threshold;
            a->n_true += truly;
            a->n_pred += predicted;
            a->n_pred_true += truly && predicted;
        }
    }
    a->checked_tokens += n;
    return 0;
}

int hc_observe_ffn(hc_context *c, int il, int n)
{
    const hc_hparams *hp = &c->m->hp;
    hc_dev *d = &c->cpu;
    hc_acts *A = &c->a[HC_ON_CPU];
    if (hc_dev_download(d, c->host_p, A->x, (uint64_t)n * hp->n_embd * HC_F32) ||
        hc_dev_download(d, c->host_h, A->gate, (uint64_t)n * hp->n_ff * HC_F32) ||
        hc_dev_sync(d))
        return -1;
    hc_ffn_observation obs = {il, n, hp->n_embd, hp->n_ff, c->host_p, c->host_h};
    c->observer(c->observer_user, &obs);
    return 0;
}

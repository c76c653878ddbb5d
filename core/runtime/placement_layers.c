/*
 * --split layers (placement.h, hc_plan_layers): whole layers in order under
 * the budget, as llama.cpp's -ngl fills a GPU, so that the same engine and
 * the same budget can be compared against PowerInfer's neuron split.
 */
#include "runtime/placement.h"

#include <string.h>

#include "runtime/placement_internal.h"

/* Everything of layer l: hc_place_check_in bounded the model's bytes. */
static uint64_t layer_bytes(const hc_place_in *in, int l)
{
    const hc_place_layer_in *li = &in->layers[l];
    return li->attn_bytes + li->pred_bytes + li->ffn_norm_bytes + li->kv_bytes +
           li->neuron_bytes * (uint64_t)in->n_ff;
}

int hc_plan_layers(const hc_place_in *in, hc_plan **out)
{
    hc_plan *p = hc_place_begin(in, out);
    if (!p)
        return -1;
    p->whole_layers = 1;
    uint64_t left = in->budget;
    int l = 0;
    /* A prefix: the first layer that does not fit ends the fill, unlike the
     * neuron split's items, where a smaller one further down may still go. */
    for (; l < in->n_layer && layer_bytes(in, l) <= left; l++) {
        hc_place_layer *pl = &p->layers[l];
        left -= layer_bytes(in, l);
        pl->attn = pl->ffn_norm = pl->kv = 1;
        pl->pred = in->layers[l].pred_bytes != 0; /* 0 bytes: no predictor */
        memset(pl->on_gpu, 1, (size_t)in->n_ff);
    }
    p->output = l == in->n_layer && in->output_bytes <= left;
    if (hc_place_finish(in, p)) {
        hc_plan_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

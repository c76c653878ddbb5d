/* The placement as the public API shows it (hotcold.h): copies of the plan's
 * figures, so the plan's own layout (placement.h) stays internal. */
#include "runtime/model.h"

#include <string.h>

#include "util/log.h"

const hc_plan *hc_model_plan(const hc_model *m)
{
    return m ? m->plan : NULL;
}

const char *hc_model_plan_note(const hc_model *m)
{
    return m ? m->gpu_index_note : "";
}

int hc_model_split(const hc_model *m)
{
    const hc_plan *p = hc_model_plan(m);
    if (!p)
        return -1;
    return p->whole_layers ? HC_SPLIT_LAYERS : HC_SPLIT_NEURONS;
}

void hc_plan_info_of(const hc_plan *p, hc_plan_info *out)
{
    *out = (hc_plan_info){p->budget,  p->capacity, p->gpu_bytes, p->cpu_bytes, p->n_layer,
                          p->n_ff,    p->group,    p->output,    p->from_file, p->served};
}

void hc_plan_layer_of(const hc_plan *p, int layer, hc_plan_layer_info *out)
{
    const hc_place_layer *l = &p->layers[layer];
    *out = (hc_plan_layer_info){l->attn,  l->pred,   l->ffn_norm,  l->kv,
                                l->n_hot, l->served, l->gpu_bytes, l->cpu_bytes};
}

int hc_model_plan_info(const hc_model *m, hc_plan_info *out)
{
    const hc_plan *p = hc_model_plan(m);
    memset(out, 0, sizeof *out);
    if (!p) {
        hc_set_error("the model has no GPU placement (everything is on the CPU)");
        return -1;
    }
    hc_plan_info_of(p, out);
    return 0;
}

int hc_model_plan_layer(const hc_model *m, int layer, hc_plan_layer_info *out)
{
    const hc_plan *p = hc_model_plan(m);
    memset(out, 0, sizeof *out);
    if (!p) {
        hc_set_error("the model has no GPU placement (everything is on the CPU)");
        return -1;
    }
    if (layer < 0 || layer >= p->n_layer) {
        hc_set_error("layer %d is outside the plan's 0..%d", layer, p->n_layer - 1);
        return -1;
    }
    hc_plan_layer_of(p, layer, out);
    return 0;
}

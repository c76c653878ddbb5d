/* What every architecture file uses: its metadata keys, tensor names and
 * dimensions, FFN activation names (see arch.h). */
#include "arch/arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

const hc_tensor_spec *hc_arch_layer_tensor(const hc_arch *a, int id)
{
    for (int i = 0; i < a->n_layer_tensors; i++)
        if (a->layer_tensors[i].id == id)
            return &a->layer_tensors[i];
    return NULL;
}

void hc_tensor_name(char *buf, size_t size, const hc_tensor_spec *t, int il)
{
    if (il < 0)
        snprintf(buf, size, "%s", t->name);
    else
        snprintf(buf, size, "blk.%d.%s", il, t->name);
}

int64_t hc_dim_size(const hc_hparams *hp, hc_dim d, int64_t rank)
{
    switch (d) {
    case HC_DIM_ONE: return 1;
    case HC_DIM_EMBD: return hp->n_embd;
    case HC_DIM_KV: return (int64_t)hp->n_head_kv * hp->head_dim;
    case HC_DIM_FF: return hp->n_ff;
    case HC_DIM_VOCAB: return hp->n_vocab;
    case HC_DIM_RANK: return rank;
    }
    return -1;
}

int hc_ffn_act_parse(const char *name)
{
    if (!strcmp(name, "silu") || !strcmp(name, "swiglu"))
        return HC_GLU_SILU;
    if (!strcmp(name, "relu") || !strcmp(name, "reglu"))
        return HC_GLU_RELU;
    if (!strcmp(name, "relu_both") || !strcmp(name, "drelu"))
        return HC_GLU_RELU_BOTH;
    return -1;
}

int hc_arch_key_u32(const hc_gguf *g, const char *path, const char *arch, const char *suffix,
                    int64_t def, int *out)
{
    char key[128];
    uint32_t v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (hc_gguf_get_u32(g, key, &v) == 0) {
        if (v > (uint32_t)INT32_MAX) {
            hc_set_error("%s: key %s = %u is out of range", path, key, v);
            return -1;
        }
        *out = (int)v;
        return 0;
    }
    if (hc_gguf_find_key(g, key) >= 0) {
        hc_set_error("%s: key %s is not an unsigned integer", path, key);
        return -1;
    }
    if (def < 0) {
        hc_set_error("%s: required key %s is missing", path, key);
        return -1;
    }
    *out = (int)def;
    return 0;
}

int hc_arch_key_f32(const hc_gguf *g, const char *path, const char *arch, const char *suffix,
                    float def, float *out, int *present)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (present)
        *present = 0;
    if (hc_gguf_find_key(g, key) < 0) {
        *out = def;
        return 0;
    }
    if (hc_gguf_get_f32(g, key, out)) {
        hc_set_error("%s: key %s is not a float", path, key);
        return -1;
    }
    /* No hyperparameter has a meaning at NaN or infinity: such a file would
     * decode garbage without a word. */
    if (!isfinite(*out)) {
        hc_set_error("%s: key %s is %g; it must be a finite number", path, key, (double)*out);
        return -1;
    }
    if (present)
        *present = 1;
    return 0;
}

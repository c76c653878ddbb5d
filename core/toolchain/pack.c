/* `hotcold pack`: GGUF model + predictors (+ profile) -> PWRI (see pack.h). */
#include "hotcold/toolchain.h"
#include "toolchain/predictor_file.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "format/act_counts.h"
#include "format/gguf.h"
#include "ref/ref.h"
#include "util/log.h"

/* Strip buffers of the transpose hold about this many floats. */
#define STRIP_FLOATS (8u << 20)

hc_pack_params hc_pack_default_params(void)
{
    hc_pack_params p = {.size = sizeof p, .threshold = NAN};
    return p;
}

typedef struct pack_ctx {
    const hc_pack_params *prm;
    hc_gguf *model, *pred, *prof;
    char arch[64];
    const hc_arch *a;
    /* The architecture's up and down projections (as GGUF and transposed)
     * and predictor matrices. */
    const hc_tensor_spec *up, *down, *down_t, *fc1, *fc2;
    int n_layer, n_embd, n_ff;
    uint32_t down_out_type;
    hc_pack_report rep;
} pack_ctx;

/* "blk.<i>.<rest>" -> i and rest; -1 if the name is not a layer tensor. */
static int layer_of(const char *name, const char **rest)
{
    if (strncmp(name, "blk.", 4))
        return -1;
    char *end;
    long i = strtol(name + 4, &end, 10);
    if (end == name + 4 || *end != '.' || i < 0 || i > 1 << 20)
        return -1;
    *rest = end + 1;
    return (int)i;
}

static const hc_gguf_tensor *layer_tensor(const hc_gguf *g, int il, const hc_tensor_spec *t)
{
    char name[96];
    hc_tensor_name(name, sizeof name, t, il);
    return hc_gguf_find_tensor(g, name);
}

/* Is `rest` (a layer tensor's name after "blk.<i>.") tensor t's? */
static int is_tensor(const char *rest, const hc_tensor_spec *t)
{
    return !strcmp(rest, t->name);
}

static const hc_gguf_tensor *profile_counts(const hc_gguf *g, int il)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%d.ffn_act_count", il);
    return hc_gguf_find_tensor(g, name);
}

/* The model: architecture, ReLU-family FFN, and n_layer/n_embd/n_ff from
 * the tensors themselves (what the transpose actually needs). */
static int check_model(pack_ctx *c)
{
    const char *path = c->prm->model;
    char key[96], act[32] = "silu";
    uint32_t n_layer;
    if (hc_gguf_get_strbuf(c->model, "general.architecture", c->arch, sizeof c->arch)) {
        hc_set_error("%s: general.architecture is missing", path);
        return -1;
    }
    c->a = hc_arch_find(c->arch);
    if (c->a) {
        c->up = hc_arch_layer_tensor(c->a, HC_T_FFN_UP);
        c->down = hc_arch_layer_tensor(c->a, HC_T_FFN_DOWN);
        c->down_t = hc_arch_layer_tensor(c->a, HC_T_FFN_DOWN_T);
        c->fc1 = hc_arch_layer_tensor(c->a, HC_T_FC1);
        c->fc2 = hc_arch_layer_tensor(c->a, HC_T_FC2);
    }
    if (!c->a || !c->up || !c->down || !c->down_t || !c->fc1 || !c->fc2) {
        char names[128];
        hc_set_error("%s: architecture '%s' cannot be packed (supported: %s)", path, c->arch,
                     hc_arch_names(names, sizeof names));
        return -1;
    }
    snprintf(key, sizeof key, "%s.block_count", c->arch);
    if (hc_gguf_get_u32(c->model, key, &n_layer) || n_layer == 0 || n_layer > 4096) {
        hc_set_error("%s: %s is missing or invalid", path, key);
        return -1;
    }
    /* The loader's defaults (bamboo is dReLU, a PWRI llama ReGLU, a plain
     * llama SwiGLU) unless <arch>.ffn_act says otherwise. */
    snprintf(act, sizeof act, "%s",
             hc_gguf_is_pwri(c->model) ? c->a->default_act_pwri : c->a->default_act);
    snprintf(key, sizeof key, "%s.ffn_act", c->arch);
    if (hc_gguf_find_key(c->model, key) >= 0 &&
        hc_gguf_get_strbuf(c->model, key, act, sizeof act)) {
        hc_set_error("%s: %s is not a string", path, key);
        return -1;
    }
    if (hc_ffn_act_parse(act) == HC_GLU_SILU) {
        hc_set_error("%s: the FFN is SwiGLU (%s is '%s' or absent): its neurons are never "
                     "exactly zero, so PowerInfer-style sparsity does not apply; pack a "
                     "ReLU-family model",
                     path, key, act);
        return -1;
    }
    c->n_layer = (int)n_layer;
    for (int il = 0; il < c->n_layer; il++) {
        const hc_gguf_tensor *up = layer_tensor(c->model, il, c->up);
        const hc_gguf_tensor *dn = layer_tensor(c->model, il, c->down);
        const hc_gguf_tensor *dt = layer_tensor(c->model, il, c->down_t);
        if (!up || up->n_dims != 2 || (!dn && !dt) || (dn && dt)) {
            hc_set_error("%s: layer %d needs blk.%d.ffn_up.weight (2-D) and exactly one of "
                         "ffn_down / ffn_down_t",
                         path, il, il);
            return -1;
        }
        if (il == 0) {
            if (up->ne[0] > INT32_MAX || up->ne[1] > INT32_MAX) {
                hc_set_error("%s: blk.0.ffn_up.weight is too large", path);
                return -1;
            }
            c->n_embd = (int)up->ne[0];
            c->n_ff = (int)up->ne[1];
        }
        const hc_gguf_tensor *d = dn ? dn : dt;
        uint64_t want0 = dn ? (uint64_t)c->n_ff : (uint64_t)c->n_embd;
        uint64_t want1 = dn ? (uint64_t)c->n_embd : (uint64_t)c->n_ff;
        if (up->ne[0] != (uint64_t)c->n_embd || up->ne[1] != (uint64_t)c->n_ff ||
            d->n_dims != 2 || d->ne[0] != want0 || d->ne[1] != want1) {
            hc_set_error("%s: layer %d: ffn_up/%s shapes disagree with layer 0 (n_embd %d, "
                         "n_ff %d)",
                         path, il, d->name, c->n_embd, c->n_ff);
            return -1;
        }
        if (dn) {
            uint32_t t = dn->type;
            if (t != HC_TYPE_F32 && t != HC_TYPE_F16 && t != HC_TYPE_Q8_0 && t != HC_TYPE_Q4_0) {
                hc_set_error("%s: %s is %s; pack transposes f32, f16, q8_0 and q4_0 (convert "
                             "with hotcold quantize first)",
                             path, dn->name, hc_ggml_type_name(t));
                return -1;
            }
            uint32_t out = t;
            if ((t == HC_TYPE_Q8_0 || t == HC_TYPE_Q4_0) && c->n_embd % 32)
                out = HC_TYPE_F16; /* rows of n_embd cannot hold 32-blocks */
            if (il > 0 && (c->rep.down_in_type != t || !c->rep.down_was_transposed)) {
                hc_set_error("%s: layers store ffn_down in different types or layouts", path);
                return -1;
            }
            c->rep.down_in_type = t;
            c->rep.down_out_type = out;
            c->rep.down_lossy = t == HC_TYPE_Q8_0 || t == HC_TYPE_Q4_0;
            c->rep.down_was_transposed = 1;
        } else {
            if (il > 0 && c->rep.down_was_transposed) {
                hc_set_error("%s: layers store ffn_down in different layouts", path);
                return -1;
            }
            c->rep.down_in_type = c->rep.down_out_type = dt->type;
        }
    }
    return 0;
}

static int check_side_arch(const hc_gguf *g, const char *path, const char *want,
                           const char *blocks_key, int n_layer)
{
    char arch[64];
    uint32_t n;
    if (hc_gguf_get_strbuf(g, "general.architecture", arch, sizeof arch) || strcmp(arch, want)) {
        hc_set_error("%s: not a %s file (general.architecture is not '%s')", path,
                     !strcmp(want, HC_PREDICTOR_ARCH) ? "predictor" : "profile", want);
        return -1;
    }
    if (hc_gguf_get_u32(g, blocks_key, &n)) {
        hc_set_error("%s: %s is missing", path, blocks_key);
        return -1;
    }
    if (n != (uint32_t)n_layer) {
        hc_set_error("%s: made for %" PRIu32 " layers, the model has %d", path, n, n_layer);
        return -1;
    }
    return 0;
}

static int check_predictor(pack_ctx *c)
{
    const char *path = c->prm->predictor;
    if (check_side_arch(c->pred, path, HC_PREDICTOR_ARCH, HC_PRED_KEY_BLOCKS, c->n_layer))
        return -1;
    for (int il = 0; il < c->n_layer; il++) {
        const hc_gguf_tensor *f1 = layer_tensor(c->pred, il, c->fc1);
        const hc_gguf_tensor *f2 = layer_tensor(c->pred, il, c->fc2);
        if (!f1 || !f2) {
            hc_set_error("%s: blk.%d.%s is missing", path, il, (!f1 ? c->fc1 : c->fc2)->name);
            return -1;
        }
        if (f1->type != HC_TYPE_F32 || f2->type != HC_TYPE_F32) {
            hc_set_error("%s: layer %d predictors must be f32", path, il);
            return -1;
        }
        if (f1->n_dims != 2 || f2->n_dims != 2 || f1->ne[0] != (uint64_t)c->n_embd ||
            f2->ne[1] != (uint64_t)c->n_ff || f2->ne[0] != f1->ne[1] || f1->ne[1] == 0) {
            hc_set_error("%s: layer %d: fc1 is [%" PRIu64 ", %" PRIu64 "] and fc2 [%" PRIu64
                         ", %" PRIu64 "], but this model needs [%d, H] and [H, %d] "
                         "(n_embd %d, n_ff %d): the predictor was trained for another model",
                         path, il, f1->ne[0], f1->ne[1], f2->ne[0], f2->ne[1], c->n_embd,
                         c->n_ff, c->n_embd, c->n_ff);
            return -1;
        }
    }
    return 0;
}

static int check_profile(pack_ctx *c)
{
    const char *path = c->prm->profile;
    int64_t nt;
    if (check_side_arch(c->prof, path, HC_PROFILE_ARCH, HC_ACT_KEY_BLOCKS, c->n_layer))
        return -1;
    if (hc_gguf_get_i64(c->prof, HC_ACT_KEY_N_TOKENS, &nt) || nt < 0) {
        hc_set_error("%s: %s is missing", path, HC_ACT_KEY_N_TOKENS);
        return -1;
    }
    for (int il = 0; il < c->n_layer; il++) {
        const hc_gguf_tensor *t = profile_counts(c->prof, il);
        if (!t || t->type != HC_GGML_TYPE_I32 || t->n_dims != 1 ||
            t->ne[0] != (uint64_t)c->n_ff) {
            hc_set_error("%s: blk.%d.ffn_act_count must be I32 [%d] (the model's n_ff)%s", path,
                         il, c->n_ff, t ? "" : ", and it is missing");
            return -1;
        }
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------ */
static int declare_keys(pack_ctx *c, hc_gguf_writer *w)
{
    for (uint64_t i = 0; i < c->model->n_kv; i++)
        if (hc_gguf_writer_copy_kv(w, &c->model->kv[i]))
            return -1;
    /* <arch>.ffn_act came along with the rest: a plain-GGUF ReLU llama
     * keeps saying so, and a PWRI llama without it already means ReGLU. */
    if (hc_gguf_writer_set_f32(w, HC_KEY_SPARSE_THRESHOLD, c->rep.threshold))
        return -1;
    const char *arr_keys[] = {HC_PRED_KEY_RECALL, HC_PRED_KEY_PRECISION, HC_PRED_KEY_ACTIVE};
    for (int k = 0; k < 3; k++) {
        int64_t i = hc_gguf_find_key(c->pred, arr_keys[k]);
        if (i >= 0 && hc_gguf_writer_copy_kv(w, &c->pred->kv[i]))
            return -1;
    }
    if (!c->prof) /* the input's own counts, if it has any, as metadata */
        return hc_act_counts_carry(w, c->model);
    int64_t i = hc_gguf_find_key(c->prof, HC_ACT_KEY_N_TOKENS);
    if (hc_gguf_writer_copy_kv(w, &c->prof->kv[i]))
        return -1;
    /* The profile's counts (checked: I32 [n_ff]), as metadata: they
     * replace any the input carried. */
    for (int il = 0; il < c->n_layer; il++) {
        const hc_gguf_tensor *t = profile_counts(c->prof, il);
        if (hc_act_counts_put(w, il, t->data, t->ne[0]))
            return -1;
    }
    return 0;
}

static int is_replaced(const pack_ctx *c, const char *name)
{
    const char *rest;
    if (layer_of(name, &rest) < 0)
        return 0;
    if (is_tensor(rest, c->fc1) || is_tensor(rest, c->fc2))
        return 1; /* a PWRI input's old predictors */
    return hc_act_counts_is_tensor(name); /* counts go into metadata */
}

/* Tensors in output order; *n_out set.  Each entry points at the source
 * (model tensor, or predictor/profile tensor); `transpose` marks a down. */
typedef struct out_tensor {
    char name[96];
    const hc_gguf_tensor *src;
    int transpose;
} out_tensor;

static int plan_tensors(pack_ctx *c, out_tensor **plan, int *n_out)
{
    /* Each down brings two companions, and a layer has one down. */
    size_t cap = c->model->n_tensors + 2u * (size_t)c->n_layer;
    out_tensor *p = calloc(cap, sizeof *p);
    int n = 0;
    if (!p) {
        hc_set_error("pack: out of memory");
        return -1;
    }
    for (uint64_t i = 0; i < c->model->n_tensors; i++) {
        const hc_gguf_tensor *t = &c->model->tensors[i];
        const char *rest = "";
        int il = layer_of(t->name, &rest);
        if (is_replaced(c, t->name))
            continue;
        int is_down = il >= 0 && il < c->n_layer &&
                      (is_tensor(rest, c->down) || is_tensor(rest, c->down_t));
        if ((size_t)n + 1 + (is_down ? 2u : 0u) > cap) {
            free(p);
            hc_set_error("pack: internal error planning tensors");
            return -1;
        }
        p[n].src = t;
        p[n].transpose = is_down && is_tensor(rest, c->down);
        if (p[n].transpose)
            hc_tensor_name(p[n].name, sizeof p[n].name, c->down_t, il);
        else
            snprintf(p[n].name, sizeof p[n].name, "%s", t->name);
        n++;
        if (!is_down)
            continue;
        /* The layer's predictor follows its down projection. */
        const hc_tensor_spec *extra[2] = {c->fc1, c->fc2};
        for (int k = 0; k < 2; k++) {
            p[n].src = layer_tensor(c->pred, il, extra[k]);
            hc_tensor_name(p[n].name, sizeof p[n].name, extra[k], il);
            n++;
        }
    }
    *plan = p;
    *n_out = n;
    return 0;
}

static int declare_tensors(pack_ctx *c, hc_gguf_writer *w, const out_tensor *plan, int n)
{
    for (int i = 0; i < n; i++) {
        const hc_gguf_tensor *t = plan[i].src;
        if (plan[i].transpose) {
            uint64_t ne[2] = {(uint64_t)c->n_embd, (uint64_t)c->n_ff};
            if (hc_gguf_writer_add_tensor(w, plan[i].name, 2, ne, c->rep.down_out_type))
                return -1;
        } else if (hc_gguf_writer_add_tensor(w, plan[i].name, t->n_dims, t->ne, t->type)) {
            return -1;
        }
    }
    return 0;
}

/* Write down^T of one layer: strips of output rows [r0, r0 + s), each
 * gathered from every input row's columns r0..r0+s. */
static int write_transpose(pack_ctx *c, hc_gguf_writer *w, const hc_gguf_tensor *t)
{
    const int64_t E = c->n_embd, F = c->n_ff;
    const uint32_t tin = t->type, tout = c->rep.down_out_type;
    const uint64_t in_row = hc_type_row_size((hc_type)tin, F);
    const uint64_t out_row = hc_type_row_size((hc_type)tout, E);
    int64_t S = (int64_t)(STRIP_FLOATS / (uint64_t)E) / 32 * 32;
    if (S < 32)
        S = 32;
    if (S > F)
        S = F;
    int rc = -1;
    char err[1024];
    float *strip = NULL, *col = NULL;
    uint16_t *strip16 = NULL;
    uint8_t *out = NULL;
    if (tin == HC_TYPE_F16)
        strip16 = malloc((size_t)S * (size_t)E * sizeof *strip16);
    else
        strip = malloc((size_t)S * (size_t)E * sizeof *strip);
    col = malloc((size_t)S * sizeof *col);
    out = malloc((size_t)S * (size_t)out_row);
    if ((!strip && !strip16) || !col || !out) {
        hc_set_error("pack: out of memory transposing %s", t->name);
        goto out;
    }
    const uint8_t *src = t->data;
    for (int64_t r0 = 0; r0 < F; r0 += S) {
        const int64_t s = F - r0 < S ? F - r0 : S;
        for (int64_t e = 0; e < E; e++) {
            const uint8_t *row = src + (uint64_t)e * in_row;
            if (tin == HC_TYPE_F16) {
                /* Raw half bits: bit-exact, NaN payloads included. */
                for (int64_t k = 0; k < s; k++)
                    memcpy(&strip16[k * E + e], row + 2 * (uint64_t)(r0 + k), 2);
                continue;
            }
            if (tin == HC_TYPE_F32) {
                memcpy(col, row + 4 * (uint64_t)r0, (size_t)s * sizeof *col);
            } else {
                /* r0 is a multiple of 32, so the strip starts on a block. */
                const uint64_t blk = hc_type_row_size((hc_type)tin, 32);
                hc_scalar_dequantize_row((hc_type)tin, row + (uint64_t)r0 / 32 * blk, col, s);
            }
            for (int64_t k = 0; k < s; k++)
                strip[k * E + e] = col[k];
        }
        for (int64_t k = 0; k < s; k++) {
            uint8_t *dst = out + (uint64_t)k * out_row;
            if (tin == HC_TYPE_F16)
                memcpy(dst, &strip16[k * E], (size_t)out_row);
            else
                hc_scalar_quantize_row((hc_type)tout, &strip[k * E], dst, E);
        }
        if (hc_gguf_writer_write_data(w, out, (uint64_t)s * out_row, err, sizeof err))
            goto out;
    }
    rc = 0;
out:
    free(strip);
    free(strip16);
    free(col);
    free(out);
    return rc;
}

static int write_tensors(pack_ctx *c, hc_gguf_writer *w, const out_tensor *plan, int n)
{
    char err[1024];
    for (int i = 0; i < n; i++) {
        const hc_gguf_tensor *t = plan[i].src;
        if (plan[i].transpose) {
            if (write_transpose(c, w, t))
                return -1;
        } else if (hc_gguf_writer_write_data(w, t->data, t->n_bytes, err, sizeof err)) {
            return -1;
        }
        if (c->prm->progress)
            c->prm->progress(c->prm->user, i + 1, n, plan[i].name);
    }
    return 0;
}

static hc_gguf *open_input(const char *path, const char *what)
{
    char err[1024];
    if (!path) {
        hc_set_error("pack: no %s given", what);
        return NULL;
    }
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    if (!g)
        hc_set_error("%s", err);
    return g;
}

int hc_pack_file(const hc_pack_params *params, hc_pack_report *report)
{
    hc_pack_params prm = hc_pack_default_params();
    pack_ctx c = {0};
    hc_gguf_writer *w = NULL;
    out_tensor *plan = NULL;
    int n_plan = 0, rc = -1;
    char err[1024];
    if (params) {
        if (params->size == 0) {
            hc_set_error("hc_pack_file: params.size is 0 (start from hc_pack_default_params())");
            return -1;
        }
        memcpy(&prm, params, params->size < sizeof prm ? params->size : sizeof prm);
    }
    c.prm = &prm;
    if (!prm.out) {
        hc_set_error("pack: no output path given");
        return -1;
    }
    if (!(c.model = open_input(prm.model, "model")) ||
        !(c.pred = open_input(prm.predictor, "predictor file")) ||
        (prm.profile && !(c.prof = open_input(prm.profile, "profile"))))
        goto out;
    if (check_model(&c) || check_predictor(&c) || (c.prof && check_profile(&c)))
        goto out;
    c.rep.threshold = prm.threshold;
    if (isnan(prm.threshold)) {
        c.rep.threshold = 0.0f;
        if (hc_gguf_find_key(c.pred, HC_KEY_SPARSE_THRESHOLD) >= 0 &&
            hc_gguf_get_f32(c.pred, HC_KEY_SPARSE_THRESHOLD, &c.rep.threshold)) {
            hc_set_error("%s: %s is not a float", prm.predictor, HC_KEY_SPARSE_THRESHOLD);
            goto out;
        }
    }
    if (!isfinite(c.rep.threshold)) {
        hc_set_error("pack: the threshold must be a finite number");
        goto out;
    }
    if (c.rep.down_lossy)
        HC_WARN("%s: ffn_down is %s: transposing it dequantizes and quantizes it again (to %s), "
                "which is lossy",
                prm.model, hc_ggml_type_name(c.rep.down_in_type),
                hc_ggml_type_name(c.rep.down_out_type));
    w = hc_gguf_writer_new("PWRI", 3, (uint32_t)c.model->alignment);
    if (!w || declare_keys(&c, w) || plan_tensors(&c, &plan, &n_plan) ||
        declare_tensors(&c, w, plan, n_plan) || hc_gguf_writer_begin(w, prm.out, err, sizeof err) ||
        write_tensors(&c, w, plan, n_plan) || hc_gguf_writer_finish(w, err, sizeof err))
        goto out;
    c.rep.n_layer = c.n_layer;
    c.rep.n_embd = c.n_embd;
    c.rep.n_ff = c.n_ff;
    c.rep.has_profile = c.prof != NULL;
    c.rep.n_tensors = n_plan;
    if (report)
        *report = c.rep;
    rc = 0;
out:
    hc_gguf_writer_free(w);
    free(plan);
    hc_gguf_close(c.model);
    hc_gguf_close(c.pred);
    hc_gguf_close(c.prof);
    return rc;
}

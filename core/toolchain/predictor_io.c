/* The predictor side file (format in train_predictor.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "hotcold/toolchain.h"
#include "toolchain/predictor_file.h"
#include "util/log.h"

int hc_predictor_write(const hc_predictor *pr, const char *path)
{
    char err[1024];
    float *recall = NULL, *precision = NULL, *active = NULL;
    int rc = -1;
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, HC_GGUF_DEFAULT_ALIGNMENT);
    if (!w)
        return -1;
    recall = malloc((size_t)pr->n_layer * sizeof *recall);
    precision = malloc((size_t)pr->n_layer * sizeof *precision);
    active = malloc((size_t)pr->n_layer * sizeof *active);
    if (!recall || !precision || !active) {
        hc_set_error("predictor: out of memory");
        goto out;
    }
    /* Figures not measured on held-out text are written as NaN, never as
     * a number that looks measured. */
    for (int il = 0; il < pr->n_layer; il++) {
        const hc_predictor_layer *l = &pr->layers[il];
        recall[il] = l->evaluated ? (float)l->recall : NAN;
        precision[il] = l->evaluated ? (float)l->precision : NAN;
        active[il] = l->evaluated ? (float)l->pred_frac : NAN;
    }
    if (hc_gguf_writer_set_str(w, "general.architecture", HC_PREDICTOR_ARCH) ||
        hc_gguf_writer_set_u32(w, HC_PRED_KEY_BLOCKS, (uint32_t)pr->n_layer) ||
        hc_gguf_writer_set_f32(w, HC_KEY_SPARSE_THRESHOLD, pr->threshold) ||
        hc_gguf_writer_set_arr(w, HC_PRED_KEY_RECALL, HC_GGUF_F32, (uint64_t)pr->n_layer,
                               recall) ||
        hc_gguf_writer_set_arr(w, HC_PRED_KEY_PRECISION, HC_GGUF_F32, (uint64_t)pr->n_layer,
                               precision) ||
        hc_gguf_writer_set_arr(w, HC_PRED_KEY_ACTIVE, HC_GGUF_F32, (uint64_t)pr->n_layer,
                               active) ||
        hc_gguf_writer_set_str(w, HC_PRED_KEY_MODEL, pr->model))
        goto out;
    for (int il = 0; il < pr->n_layer; il++) {
        const hc_predictor_layer *l = &pr->layers[il];
        char name[64];
        uint64_t ne1[2] = {(uint64_t)pr->n_embd, (uint64_t)l->rank};
        uint64_t ne2[2] = {(uint64_t)l->rank, (uint64_t)pr->n_ff};
        if (l->rank <= 0 || !l->fc1 || !l->fc2) {
            hc_set_error("%s: layer %d has no predictor", path, il);
            goto out;
        }
        snprintf(name, sizeof name, "blk.%d.fc1.weight", il);
        if (hc_gguf_writer_add_tensor(w, name, 2, ne1, HC_TYPE_F32))
            goto out;
        snprintf(name, sizeof name, "blk.%d.fc2.weight", il);
        if (hc_gguf_writer_add_tensor(w, name, 2, ne2, HC_TYPE_F32))
            goto out;
    }
    if (hc_gguf_writer_begin(w, path, err, sizeof err))
        goto out;
    for (int il = 0; il < pr->n_layer; il++) {
        const hc_predictor_layer *l = &pr->layers[il];
        if (hc_gguf_writer_write_data(w, l->fc1, (uint64_t)l->rank * pr->n_embd * sizeof(float),
                                      err, sizeof err) ||
            hc_gguf_writer_write_data(w, l->fc2, (uint64_t)pr->n_ff * l->rank * sizeof(float),
                                      err, sizeof err))
            goto out;
    }
    if (hc_gguf_writer_finish(w, err, sizeof err))
        goto out;
    rc = 0;
out:
    hc_gguf_writer_free(w);
    free(recall);
    free(precision);
    free(active);
    return rc;
}

/* Element i of the F32 array key `key` holding n elements; NaN when the
 * key is absent or not such an array. */
static double f32_arr_at(const hc_gguf *g, const char *key, int n, int i)
{
    uint32_t et;
    uint64_t cnt;
    const void *data;
    float v = NAN;
    if (hc_gguf_get_arr(g, key, &et, &cnt, &data) == 0 && et == HC_GGUF_F32 &&
        cnt == (uint64_t)n)
        memcpy(&v, (const uint8_t *)data + 4 * (size_t)i, 4);
    return v;
}

int hc_predictor_read(const char *path, hc_predictor *out)
{
    char err[1024], arch[64];
    uint32_t n_layer;
    int rc = -1;
    memset(out, 0, sizeof *out);
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    if (!g) {
        hc_set_error("%s", err);
        return -1;
    }
    if (hc_gguf_get_strbuf(g, "general.architecture", arch, sizeof arch) ||
        strcmp(arch, HC_PREDICTOR_ARCH)) {
        hc_set_error("%s: not a predictor file (general.architecture is not '%s')", path,
                     HC_PREDICTOR_ARCH);
        goto out;
    }
    if (hc_gguf_get_u32(g, HC_PRED_KEY_BLOCKS, &n_layer) || n_layer == 0 || n_layer > 4096) {
        hc_set_error("%s: %s is missing or invalid", path, HC_PRED_KEY_BLOCKS);
        goto out;
    }
    float thr = 0.0f;
    if (hc_gguf_find_key(g, HC_KEY_SPARSE_THRESHOLD) >= 0 &&
        hc_gguf_get_f32(g, HC_KEY_SPARSE_THRESHOLD, &thr)) {
        hc_set_error("%s: %s is not a float", path, HC_KEY_SPARSE_THRESHOLD);
        goto out;
    }
    for (uint32_t il = 0; il < n_layer; il++) {
        char n1[64], n2[64];
        snprintf(n1, sizeof n1, "blk.%u.fc1.weight", il);
        snprintf(n2, sizeof n2, "blk.%u.fc2.weight", il);
        const hc_gguf_tensor *t1 = hc_gguf_find_tensor(g, n1), *t2 = hc_gguf_find_tensor(g, n2);
        if (!t1 || !t2) {
            hc_set_error("%s: tensor %s is missing", path, !t1 ? n1 : n2);
            goto out;
        }
        if (t1->type != HC_TYPE_F32 || t2->type != HC_TYPE_F32 || t1->n_dims != 2 ||
            t2->n_dims != 2) {
            hc_set_error("%s: %s and %s must be 2-D f32", path, n1, n2);
            goto out;
        }
        if (il == 0 && (t1->ne[0] > INT32_MAX || t2->ne[1] > INT32_MAX ||
                        hc_predictor_init(out, (int)n_layer, (int)t1->ne[0], (int)t2->ne[1])))
            goto out;
        uint64_t H = t1->ne[1];
        if (t1->ne[0] != (uint64_t)out->n_embd || t2->ne[1] != (uint64_t)out->n_ff ||
            t2->ne[0] != H || H == 0 || H > (1u << 24)) {
            hc_set_error("%s: layer %u: fc1 is [%" PRIu64 ", %" PRIu64 "] and fc2 [%" PRIu64
                         ", %" PRIu64 "]; expected [%d, H] and [H, %d]",
                         path, il, t1->ne[0], t1->ne[1], t2->ne[0], t2->ne[1], out->n_embd,
                         out->n_ff);
            goto out;
        }
        hc_predictor_layer *l = &out->layers[il];
        l->rank = (int)H;
        l->fc1 = malloc(t1->n_bytes);
        l->fc2 = malloc(t2->n_bytes);
        if (!l->fc1 || !l->fc2) {
            hc_set_error("%s: out of memory", path);
            goto out;
        }
        memcpy(l->fc1, t1->data, t1->n_bytes);
        memcpy(l->fc2, t2->data, t2->n_bytes);
    }
    out->threshold = thr;
    hc_gguf_get_strbuf(g, HC_PRED_KEY_MODEL, out->model, sizeof out->model);
    for (int il = 0; il < (int)n_layer; il++) {
        hc_predictor_layer *l = &out->layers[il];
        l->recall = f32_arr_at(g, HC_PRED_KEY_RECALL, (int)n_layer, il);
        l->precision = f32_arr_at(g, HC_PRED_KEY_PRECISION, (int)n_layer, il);
        l->pred_frac = f32_arr_at(g, HC_PRED_KEY_ACTIVE, (int)n_layer, il);
        l->evaluated = !isnan(l->recall);
    }
    rc = 0;
out:
    if (rc)
        hc_predictor_free(out);
    hc_gguf_close(g);
    return rc;
}

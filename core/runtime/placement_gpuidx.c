/*
 * The neuron split on disk: PowerInfer's `<model>.generated.gpuidx` (the
 * layout below is what PowerInfer writes), so a split solved once is
 * reused by later runs and files written by PowerInfer load here.
 *
 *   magic PWRI, GGUF v3
 *   general.architecture           = "generic.gpu_index"
 *   generic.gpu_index.block_count  u32
 *   split.vram_capacity            u64 (bytes the budget left for hot neurons:
 *                                  hc_plan.capacity, PowerInfer's meaning)
 *   per layer i, in this order:
 *     blk.i.gpu_idx     I32 [n_ff]  1 = neuron on the GPU
 *     blk.i.gpu_bucket  I32 [k_i]   the GPU neuron ids, ascending
 * I32 is ggml type 18 on disk, as PowerInfer numbers it; the GGUF reader and
 * writer translate (gguf.h), so this file sees the modern id.
 * A layer with no GPU neuron gets a gpu_bucket of 0 elements (GGUF allows
 * an empty tensor; our reader and writer both handle one), so every layer
 * has both tensors and the file's shape never depends on the split.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "runtime/placement.h"
#include "runtime/placement_internal.h"
#include "util/log.h"

#define GPUIDX_ARCH "generic.gpu_index"
#define KEY_ARCH "general.architecture"
#define KEY_BLOCKS "generic.gpu_index.block_count"
#define KEY_CAPACITY "split.vram_capacity"

/* Prefix the recorded error with the file (the writer's own messages do
 * not always name it).  Copies first: hc_set_error writes the buffer that
 * hc_last_error() returns. */
static void error_in(const char *path)
{
    char msg[768];
    snprintf(msg, sizeof msg, "%s", hc_last_error());
    if (strncmp(msg, path, strlen(path)))
        hc_set_error("%s: %s", path, msg);
}

/* ---- save -------------------------------------------------------------- */
static int check_plan(const hc_plan *p, const char *path)
{
    if (!p || !p->layers || p->n_layer <= 0 || p->n_ff <= 0 || p->n_ff > INT32_MAX) {
        hc_set_error("%s: cannot save an empty or malformed plan", path);
        return -1;
    }
    for (int l = 0; l < p->n_layer; l++) {
        const hc_place_layer *pl = &p->layers[l];
        if (!pl->on_gpu || pl->n_hot < 0 || pl->n_hot > p->n_ff || (pl->n_hot && !pl->hot)) {
            hc_set_error("%s: plan layer %d is malformed (n_hot %" PRId64 ")", path, l,
                         pl->n_hot);
            return -1;
        }
    }
    return 0;
}

int hc_plan_save_gpuidx(const hc_plan *p, const char *path)
{
    int rc = -1;
    char err[1024], name[64];
    int32_t *row = NULL;
    hc_gguf_writer *w = NULL;
    if (!path) {
        hc_set_error("gpuidx: path is NULL");
        return -1;
    }
    if (check_plan(p, path))
        return -1;
    row = malloc((size_t)p->n_ff * sizeof *row);
    w = hc_gguf_writer_new("PWRI", 3, HC_GGUF_DEFAULT_ALIGNMENT);
    if (!row || !w) {
        hc_set_error("%s: out of memory", path);
        goto out;
    }
    uint64_t cap = p->capacity;
    if (hc_gguf_writer_set_str(w, KEY_ARCH, GPUIDX_ARCH) ||
        hc_gguf_writer_set_u32(w, KEY_BLOCKS, (uint32_t)p->n_layer) ||
        hc_gguf_writer_set_scalar(w, KEY_CAPACITY, HC_GGUF_U64, &cap))
        goto fail;
    for (int l = 0; l < p->n_layer; l++) {
        uint64_t ne_idx[1] = {(uint64_t)p->n_ff}, ne_bucket[1] = {(uint64_t)p->layers[l].n_hot};
        snprintf(name, sizeof name, "blk.%d.gpu_idx", l);
        if (hc_gguf_writer_add_tensor(w, name, 1, ne_idx, HC_GGML_TYPE_I32))
            goto fail;
        snprintf(name, sizeof name, "blk.%d.gpu_bucket", l);
        if (hc_gguf_writer_add_tensor(w, name, 1, ne_bucket, HC_GGML_TYPE_I32))
            goto fail;
    }
    if (hc_gguf_writer_begin(w, path, err, sizeof err))
        goto fail;
    for (int l = 0; l < p->n_layer; l++) {
        const hc_place_layer *pl = &p->layers[l];
        for (int64_t r = 0; r < p->n_ff; r++)
            row[r] = pl->on_gpu[r] != 0;
        if (hc_gguf_writer_write_data(w, row, (uint64_t)p->n_ff * sizeof *row, err, sizeof err) ||
            hc_gguf_writer_write_data(w, pl->hot, (uint64_t)pl->n_hot * sizeof *pl->hot, err,
                                      sizeof err))
            goto fail;
    }
    if (hc_gguf_writer_finish(w, err, sizeof err))
        goto fail;
    rc = 0;
    goto out;
fail:
    error_in(path);
out:
    hc_gguf_writer_free(w);
    free(row);
    return rc;
}

/* ---- load -------------------------------------------------------------- */
static int32_t i32_at(const hc_gguf_tensor *t, int64_t i)
{
    int32_t v;
    memcpy(&v, (const uint8_t *)t->data + 4 * (size_t)i, 4);
    return v;
}

static const hc_gguf_tensor *i32_vector(const hc_gguf *g, const char *path, int l,
                                        const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s", l, what);
    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, name);
    if (!t) {
        hc_set_error("%s: tensor %s is missing", path, name);
        return NULL;
    }
    if (t->type != HC_GGML_TYPE_I32 || t->n_dims != 1) {
        hc_set_error("%s: tensor %s is %s with %" PRIu32 " dims, expected a 1-D i32 vector", path,
                     name, hc_ggml_type_name(t->type), t->n_dims);
        return NULL;
    }
    return t;
}

/* One layer's two tensors into pl->on_gpu, every consistency rule checked;
 * *n_out = its GPU neurons. */
static int read_layer(const hc_gguf *g, const char *path, int l, int64_t n_ff, hc_place_layer *pl,
                      int64_t *n_out)
{
    const hc_gguf_tensor *idx = i32_vector(g, path, l, "gpu_idx");
    const hc_gguf_tensor *bucket = idx ? i32_vector(g, path, l, "gpu_bucket") : NULL;
    if (!bucket)
        return -1;
    if (idx->ne[0] != (uint64_t)n_ff) {
        hc_set_error("%s: blk.%d.gpu_idx has %" PRIu64 " entries, the model's n_ff is %" PRId64,
                     path, l, idx->ne[0], n_ff);
        return -1;
    }
    int64_t n = 0;
    for (int64_t r = 0; r < n_ff; r++) {
        int32_t v = i32_at(idx, r);
        if (v != 0 && v != 1) {
            hc_set_error("%s: blk.%d.gpu_idx[%" PRId64 "] = %" PRId32 " (must be 0 or 1)", path,
                         l, r, v);
            return -1;
        }
        pl->on_gpu[r] = (uint8_t)v;
        n += v;
    }
    if (bucket->ne[0] != (uint64_t)n) {
        hc_set_error("%s: blk.%d.gpu_bucket holds %" PRIu64
                     " ids but blk.%d.gpu_idx marks %" PRId64 " neurons",
                     path, l, bucket->ne[0], l, n);
        return -1;
    }
    int64_t prev = -1;
    for (int64_t i = 0; i < n; i++) {
        int32_t id = i32_at(bucket, i);
        if (id < 0 || id >= n_ff) {
            hc_set_error("%s: blk.%d.gpu_bucket[%" PRId64 "] = %" PRId32
                         " is outside 0..%" PRId64,
                         path, l, i, id, n_ff - 1);
            return -1;
        }
        if (id <= prev) {
            hc_set_error("%s: blk.%d.gpu_bucket[%" PRId64 "] = %" PRId32
                         " is not above the id before it (%" PRId64 "): not ascending",
                         path, l, i, id, prev);
            return -1;
        }
        if (!pl->on_gpu[id]) {
            hc_set_error("%s: blk.%d.gpu_bucket[%" PRId64 "] = %" PRId32
                         " but blk.%d.gpu_idx[%" PRId32 "] is 0",
                         path, l, i, id, l, id);
            return -1;
        }
        prev = id;
    }
    *n_out = n;
    return 0;
}

static int read_capacity(const hc_gguf *g, const char *path, uint64_t *cap)
{
    int64_t k = hc_gguf_find_key(g, KEY_CAPACITY), v;
    if (k >= 0 && g->kv[k].type == HC_GGUF_U64) {
        memcpy(cap, g->kv[k].data, 8);
        return 0;
    }
    /* Another integer type holding a non-negative value is as good. */
    if (k >= 0 && g->kv[k].type != HC_GGUF_BOOL && !hc_gguf_get_i64(g, KEY_CAPACITY, &v) &&
        v >= 0) {
        *cap = (uint64_t)v;
        return 0;
    }
    hc_set_error("%s: %s is %s", path, KEY_CAPACITY,
                 k < 0 ? "missing" : "not a non-negative integer");
    return -1;
}

/* Do two plans put the same neurons on the GPU?  (on_gpu alone: a plan
 * read from a file gets its n_hot only from hc_place_finish.) */
static int same_split(const hc_plan *a, const hc_plan *b, const hc_place_in *in)
{
    for (int l = 0; l < in->n_layer; l++)
        if (memcmp(a->layers[l].on_gpu, b->layers[l].on_gpu, (size_t)in->n_ff) != 0)
            return 0;
    return 1;
}

int hc_plan_load_gpuidx(const char *path, const hc_place_in *in, hc_plan **out,
                        hc_gpuidx_load *how)
{
    int rc = -1;
    char err[1024], arch[64];
    uint32_t blocks;
    uint64_t cap, need = 0;
    hc_gguf *g = NULL;
    hc_plan *p = NULL, *fresh = NULL;
    hc_gpuidx_load info = {0};
    if (out)
        *out = NULL;
    if (how)
        *how = info;
    if (!out || !path) {
        hc_set_error("gpuidx: %s is NULL", !out ? "out" : "path");
        return -1;
    }
    if (hc_place_check_in(in, path))
        return -1;
    g = hc_gguf_open(path, err, sizeof err);
    if (!g) {
        hc_set_error("%s", err);
        goto out;
    }
    if (hc_gguf_get_strbuf(g, KEY_ARCH, arch, sizeof arch)) {
        hc_set_error("%s: %s is missing (not a gpuidx file)", path, KEY_ARCH);
        goto out;
    }
    if (strcmp(arch, GPUIDX_ARCH)) {
        hc_set_error("%s: %s is '%s', expected '%s'", path, KEY_ARCH, arch, GPUIDX_ARCH);
        goto out;
    }
    if (hc_gguf_get_u32(g, KEY_BLOCKS, &blocks)) {
        hc_set_error("%s: %s is missing or not an integer", path, KEY_BLOCKS);
        goto out;
    }
    if ((int64_t)blocks != in->n_layer) {
        hc_set_error("%s: %s is %" PRIu32 ", the model has %d layers", path, KEY_BLOCKS, blocks,
                     in->n_layer);
        goto out;
    }
    if (read_capacity(g, path, &cap))
        goto out;
    p = hc_place_alloc(in);
    if (!p)
        goto out;
    /* The whole file is checked even when it will not be used below: a
     * broken or foreign file is worth an error rather than a silent pass. */
    for (int l = 0; l < in->n_layer; l++) {
        int64_t n;
        if (read_layer(g, path, l, in->n_ff, &p->layers[l], &n))
            goto out;
        need += in->layers[l].neuron_bytes * (uint64_t)n; /* bounded by check_in */
    }
    info.saved_capacity = cap;
    info.need = need;
    info.capacity = p->capacity = hc_place_fill_items(in, p);
    /* Another capacity (a default budget moves with the GPU's free memory)
     * still reuses the file when a fresh solve gives the very same split:
     * the greedy is cheap, and then nothing need be rewritten. */
    if (cap != info.capacity && need <= info.capacity) {
        if (hc_plan_solve(in, &fresh))
            goto out;
        if (same_split(fresh, p, in))
            info.outcome = HC_GPUIDX_SAME_SPLIT;
    }
    if (info.outcome != HC_GPUIDX_SAME_SPLIT && (cap != info.capacity || need > info.capacity)) {
        /* Another capacity: a fresh solve may place more (or must place
         * fewer) neurons.  The same capacity with neurons that do not fit
         * it: a file that is not what it says (PowerInfer counts neuron
         * bytes with its own factor, not real ones). */
        info.outcome = cap != info.capacity ? HC_GPUIDX_OTHER_CAPACITY : HC_GPUIDX_NO_FIT;
        hc_plan_free(p);
        p = NULL;
        if (fresh) {
            *out = fresh;
            fresh = NULL;
        } else if (hc_plan_solve(in, out)) {
            goto out;
        }
    } else {
        if (hc_place_finish(in, p))
            goto out;
        p->from_file = 1;
        if (info.outcome != HC_GPUIDX_SAME_SPLIT)
            info.outcome = HC_GPUIDX_REUSED;
        *out = p;
        p = NULL;
    }
    if (how)
        *how = info;
    rc = 0;
out:
    hc_plan_free(fresh);
    hc_plan_free(p);
    hc_gguf_close(g);
    return rc;
}

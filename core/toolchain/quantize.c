/*
 * hc_quantize_file(): see quantize.h for the rules.  The work per tensor is
 * chunked (CHUNK elements at a time, a multiple of every block size), so
 * memory use is a few hundred KiB whatever the model or tensor size.
 */
#include "hotcold/toolchain.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format/act_counts.h"
#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "ref/ref.h"
#include "util/log.h"

#define CHUNK 65536 /* elements converted per step; a multiple of 32 and 256 */
#define COPY_CHUNK (8u << 20) /* bytes per write when copying unchanged */

int hc_quantize_file_type(hc_type type)
{
    switch (type) {
    case HC_TYPE_F32: return 0;
    case HC_TYPE_F16: return 1;
    case HC_TYPE_Q4_0: return 2;
    case HC_TYPE_Q8_0: return 7;
    case HC_TYPE_Q6_K: return 18;
    }
    return -1;
}

static int convertible(uint32_t t)
{
    return t == HC_TYPE_F32 || t == HC_TYPE_F16 || t == HC_TYPE_Q8_0 || t == HC_TYPE_Q4_0 ||
           t == HC_TYPE_Q6_K;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Why a tensor is not stored in the type asked for. */
enum { KEPT = 0, FALLBACK_ROWS, FALLBACK_DOWN_T };

/* The output type of tensor t, per the rules in quantize.h; *fallback says
 * when and why it is not the one asked for. */
static uint32_t out_type(const hc_gguf_tensor *t, hc_type target, hc_type output_target,
                         int *fallback)
{
    *fallback = KEPT;
    if (!ends_with(t->name, ".weight"))
        return t->type;
    if (t->n_dims < 2)
        return HC_TYPE_F32;
    if (!strcmp(t->name, "output.weight"))
        target = output_target;
    if (target == HC_TYPE_Q6_K && ends_with(t->name, ".ffn_down_t.weight")) {
        *fallback = FALLBACK_DOWN_T;
        target = HC_TYPE_Q8_0;
    }
    if (target == HC_TYPE_Q6_K && t->ne[0] % 256) {
        *fallback = FALLBACK_ROWS;
        target = HC_TYPE_Q8_0; /* as PowerInfer's quantize does */
    }
    if ((target == HC_TYPE_Q8_0 || target == HC_TYPE_Q4_0) && t->ne[0] % 32) {
        *fallback = FALLBACK_ROWS;
        return HC_TYPE_F16;
    }
    return target;
}

/* Decode and re-encode one tensor, CHUNK elements at a time.  Rows are
 * independent (block boundaries never cross rows), and so are chunks of a
 * row because CHUNK is a multiple of the block size. */
static int convert_tensor(hc_gguf_writer *w, const hc_gguf_tensor *t, hc_type to, float *f,
                          uint8_t *buf, char *err, size_t errlen)
{
    const hc_type from = (hc_type)t->type;
    const int64_t cols = (int64_t)t->ne[0];
    if (cols == 0)
        return 0;
    const uint64_t rows = t->n_elements / (uint64_t)cols;
    const uint64_t in_row = hc_type_row_size(from, cols);
    const uint8_t *src = t->data;
    for (uint64_t r = 0; r < rows; r++) {
        for (int64_t c0 = 0; c0 < cols; c0 += CHUNK) {
            int64_t n = cols - c0 < CHUNK ? cols - c0 : CHUNK;
            hc_scalar_dequantize_row(from, src + r * in_row + hc_type_row_size(from, c0), f, n);
            hc_scalar_quantize_row(to, f, buf, n);
            if (hc_gguf_writer_write_data(w, buf, hc_type_row_size(to, n), err, errlen))
                return -1;
        }
    }
    return 0;
}

static int copy_tensor(hc_gguf_writer *w, const hc_gguf_tensor *t, char *err, size_t errlen)
{
    const uint8_t *p = t->data;
    for (uint64_t done = 0; done < t->n_bytes;) {
        uint64_t n = t->n_bytes - done < COPY_CHUNK ? t->n_bytes - done : COPY_CHUNK;
        if (hc_gguf_writer_write_data(w, p + done, n, err, errlen))
            return -1;
        done += n;
    }
    return 0;
}

/* A PWRI input's counts tensors (written by hotcold before 2026-12) go out
 * as metadata (act_counts.h), so PowerInfer can load the result. */
static int moved_to_metadata(const hc_gguf *g, const hc_gguf_tensor *t)
{
    return hc_gguf_is_pwri(g) && hc_act_counts_is_tensor(t->name);
}

int hc_quantize_file(const char *in, const char *out, hc_type type,
                     void (*progress)(void *user, int done, int total, const char *tensor),
                     void *user)
{
    return hc_quantize_file_mixed(in, out, type, type, progress, user);
}

int hc_quantize_file_mixed(const char *in, const char *out, hc_type type, hc_type output_type,
                           void (*progress)(void *user, int done, int total, const char *tensor),
                           void *user)
{
    char err[1024];
    int rc = -1;
    hc_gguf *g = NULL;
    hc_gguf_writer *w = NULL;
    uint32_t *types = NULL;
    float *f = NULL;
    uint8_t *buf = NULL;

    if (!in || !out) {
        hc_set_error("quantize: NULL input or output path");
        goto out;
    }
    int ftype = hc_quantize_file_type(type);
    if (ftype < 0 || hc_quantize_file_type(output_type) < 0) {
        hc_set_error("quantize: target type %s is not one of f32, f16, q8_0, q4_0, q6_k",
                     hc_ggml_type_name((uint32_t)(ftype < 0 ? type : output_type)));
        goto out;
    }
    g = hc_gguf_open(in, err, sizeof err);
    if (!g) {
        hc_set_error("%s", err);
        goto out;
    }
    if (g->n_tensors > INT32_MAX) {
        hc_set_error("%s: %" PRIu64 " tensors is more than this tool handles", in, g->n_tensors);
        goto out;
    }
    /* Decide every tensor's output type, and refuse bad inputs, before any
     * output exists. */
    types = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *types);
    f = malloc(CHUNK * sizeof *f);
    buf = malloc(CHUNK * sizeof(float)); /* the largest encoding of CHUNK elements */
    if (!types || !f || !buf) {
        hc_set_error("quantize: out of memory");
        goto out;
    }
    int has_output = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        const int is_output = !strcmp(t->name, "output.weight");
        int fallback;
        has_output |= is_output;
        types[i] = out_type(t, type, output_type, &fallback);
        if (types[i] != t->type && !convertible(t->type)) {
            hc_set_error("%s: tensor '%s' (#%" PRIu64 "): cannot convert from type %s "
                         "(inputs must be f32, f16, q8_0, q4_0 or q6_k)",
                         in, t->name, i, hc_ggml_type_name(t->type));
            goto out;
        }
        const hc_type wanted = is_output ? output_type : type;
        if (fallback == FALLBACK_ROWS)
            HC_WARN("%s: tensor '%s': ne0 = %" PRIu64 " is not a multiple of %d, stored as %s "
                    "instead of %s",
                    in, t->name, t->ne[0], types[i] == HC_TYPE_F16 ? 32 : 256,
                    hc_ggml_type_name(types[i]), hc_ggml_type_name((uint32_t)wanted));
        else if (fallback == FALLBACK_DOWN_T)
            HC_WARN("%s: tensor '%s' stored as q8_0: hotcold sums its rows (axpy_rows), which "
                    "has no q6_k kernel",
                    in, t->name);
    }
    if (output_type != type && !has_output)
        HC_WARN("%s: no tensor output.weight (the head is tied to token_embd.weight): the "
                "output type %s applies to nothing",
                in, hc_ggml_type_name((uint32_t)output_type));

    char magic[4];
    memcpy(magic, g->magic, 4);
    w = hc_gguf_writer_new(magic, g->version, (uint32_t)g->alignment);
    if (!w)
        goto out; /* error already set */
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (hc_gguf_writer_copy_kv(w, &g->kv[i]))
            goto out;
    if (hc_gguf_is_pwri(g) && hc_act_counts_carry(w, g))
        goto out;
    if (hc_gguf_writer_set_u32(w, "general.file_type", (uint32_t)ftype))
        goto out;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        if (!moved_to_metadata(g, t) &&
            hc_gguf_writer_add_tensor(w, t->name, t->n_dims, t->ne, types[i]))
            goto out;
    }
    if (hc_gguf_writer_begin(w, out, err, sizeof err))
        goto out; /* hc_set_error done by the writer */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        int bad = moved_to_metadata(g, t) ? 0
                  : types[i] == t->type
                      ? copy_tensor(w, t, err, sizeof err)
                      : convert_tensor(w, t, (hc_type)types[i], f, buf, err, sizeof err);
        if (bad)
            goto out;
        if (progress)
            progress(user, (int)i + 1, (int)g->n_tensors, t->name);
    }
    if (hc_gguf_writer_finish(w, err, sizeof err))
        goto out;
    rc = 0;
out:
    hc_gguf_writer_free(w); /* leaves no partial file unless finished */
    hc_gguf_close(g);
    free(types);
    free(f);
    free(buf);
    return rc;
}

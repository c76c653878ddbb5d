/*
 * Streaming GGUF writer.  Metadata and tensor infos are collected in memory
 * (they are small); tensor data is streamed straight to the output in
 * declaration order.  Where the bytes go follows output_file.h: a temporary
 * file renamed into place only when every declared tensor received exactly
 * its bytes (or a device or FIFO, written directly).
 *
 * One write_data call never crosses a tensor boundary: a caller that writes a
 * tensor with the wrong size is then caught at the tensor it got wrong rather
 * than only as a total mismatch at the end.
 */
#include "format/gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/output_file.h"
#include "hotcold/hotcold.h"
#include "util/log.h"

/* Values are copied as raw host bytes, which is GGUF's byte order only on a
 * little-endian host (every target of this project). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF writer assumes a little-endian host"
#endif

#define MAX_KEY_LEN 65535u
#define MAX_TENSOR_NAME 255u

typedef struct wkv {
    char *key;
    uint32_t type;
    uint8_t *payload; /* the encoded value, everything after the type field */
    uint64_t len;
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t n_dims;
    uint64_t ne[HC_GGUF_MAX_DIMS];
    uint32_t type; /* as stored: PowerInfer's numbering in a PWRI file */
    uint64_t offset;
    uint64_t n_bytes;
} wtensor;

enum { W_DECLARING, W_WRITING, W_FINISHED, W_FAILED };

struct hc_gguf_writer {
    char magic[4];
    uint32_t version;
    uint32_t alignment;
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint64_t data_end; /* end of the last declared tensor, data-section relative */
    int state;
    hc_output_file out; /* open from begin until finish */
    char *path;         /* as the caller named it, for messages */
    size_t cur;        /* tensor being written */
    uint64_t cur_done; /* its bytes written so far */
    uint64_t pos;      /* bytes written into the data section */
};

static int wfail(char *err, size_t errlen, const char *fmt, ...) HC_PRINTF(3, 4);
static int wfail(char *err, size_t errlen, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hc_set_error("%s", msg);
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return -1;
}

static uint32_t scalar_size(uint32_t t)
{
    switch (t) {
    case HC_GGUF_U8: case HC_GGUF_I8: case HC_GGUF_BOOL: return 1;
    case HC_GGUF_U16: case HC_GGUF_I16: return 2;
    case HC_GGUF_U32: case HC_GGUF_I32: case HC_GGUF_F32: return 4;
    case HC_GGUF_U64: case HC_GGUF_I64: case HC_GGUF_F64: return 8;
    default: return 0;
    }
}

hc_gguf_writer *hc_gguf_writer_new(const char magic[4], uint32_t version, uint32_t alignment)
{
    if (!magic || (memcmp(magic, "GGUF", 4) && memcmp(magic, "PWRI", 4))) {
        hc_set_error("gguf writer: magic must be GGUF or PWRI");
        return NULL;
    }
    if (version != 2 && version != 3) {
        hc_set_error("gguf writer: version %" PRIu32 " unsupported (only 2 and 3)", version);
        return NULL;
    }
    if (alignment == 0)
        alignment = HC_GGUF_DEFAULT_ALIGNMENT;
    if (alignment & (alignment - 1)) {
        hc_set_error("gguf writer: alignment %" PRIu32 " is not a power of two", alignment);
        return NULL;
    }
    hc_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) {
        hc_set_error("gguf writer: out of memory");
        return NULL;
    }
    memcpy(w->magic, magic, 4);
    w->version = version;
    w->alignment = alignment;
    return w;
}

void hc_gguf_writer_free(hc_gguf_writer *w)
{
    if (!w)
        return;
    hc_output_abandon(&w->out); /* not finished: never leave a partial file behind */
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].payload);
    }
    for (size_t i = 0; i < w->n_t; i++)
        free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w->path);
    free(w);
}

/* ---- metadata ------------------------------------------------------------ */
/* Takes ownership of payload (also on failure). */
static int put_kv(hc_gguf_writer *w, const char *key, uint32_t type, uint8_t *payload,
                  uint64_t len)
{
    int rc = -1;
    if (!w || !key) {
        hc_set_error("gguf writer: NULL writer or key");
        goto out;
    }
    if (w->state != W_DECLARING) {
        hc_set_error("gguf writer: key '%s' set after the header was written", key);
        goto out;
    }
    size_t klen = strlen(key);
    if (klen == 0 || klen > MAX_KEY_LEN) {
        hc_set_error("gguf writer: key length %zu outside 1..%u", klen, MAX_KEY_LEN);
        goto out;
    }
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key)) {
            /* Same name: replace the value, keep the position. */
            free(w->kv[i].payload);
            w->kv[i].type = type;
            w->kv[i].payload = payload;
            w->kv[i].len = len;
            return 0;
        }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 16;
        wkv *kv = realloc(w->kv, cap * sizeof *kv);
        if (!kv) {
            hc_set_error("gguf writer: out of memory");
            goto out;
        }
        w->kv = kv;
        w->cap_kv = cap;
    }
    char *k = strdup(key);
    if (!k) {
        hc_set_error("gguf writer: out of memory");
        goto out;
    }
    w->kv[w->n_kv++] = (wkv){.key = k, .type = type, .payload = payload, .len = len};
    return 0;
out:
    free(payload);
    return rc;
}

/* Growable byte buffer for encoding values. */
typedef struct bytes {
    uint8_t *p;
    uint64_t len, cap;
    int oom;
} bytes;

static void put(bytes *b, const void *src, uint64_t n)
{
    if (b->oom)
        return;
    if (n > b->cap - b->len) {
        uint64_t cap = b->cap ? b->cap : 64, need;
        if (__builtin_add_overflow(b->len, n, &need) || need > SIZE_MAX / 2) {
            b->oom = 1;
            return;
        }
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(b->p, (size_t)cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
}

static void put32(bytes *b, uint32_t v) { put(b, &v, 4); }
static void put64(bytes *b, uint64_t v) { put(b, &v, 8); }

static int put_encoded(hc_gguf_writer *w, const char *key, uint32_t type, bytes *b)
{
    if (b->oom) {
        free(b->p);
        hc_set_error("gguf writer: out of memory encoding key '%s'", key ? key : "");
        return -1;
    }
    return put_kv(w, key, type, b->p, b->len);
}

int hc_gguf_writer_set_scalar(hc_gguf_writer *w, const char *key, uint32_t type,
                              const void *value)
{
    uint32_t n = scalar_size(type);
    bytes b = {0};
    if (!n || !value) {
        hc_set_error("gguf writer: key '%s': type %" PRIu32 " is not a scalar type",
                     key ? key : "", type);
        return -1;
    }
    if (type == HC_GGUF_BOOL) {
        uint8_t v = *(const uint8_t *)value != 0;
        put(&b, &v, 1);
    } else {
        put(&b, value, n);
    }
    return put_encoded(w, key, type, &b);
}

int hc_gguf_writer_set_u32(hc_gguf_writer *w, const char *key, uint32_t v)
{
    return hc_gguf_writer_set_scalar(w, key, HC_GGUF_U32, &v);
}

int hc_gguf_writer_set_f32(hc_gguf_writer *w, const char *key, float v)
{
    return hc_gguf_writer_set_scalar(w, key, HC_GGUF_F32, &v);
}

int hc_gguf_writer_set_str(hc_gguf_writer *w, const char *key, const char *v)
{
    bytes b = {0};
    if (!v) {
        hc_set_error("gguf writer: key '%s': NULL string", key ? key : "");
        return -1;
    }
    uint64_t n = strlen(v);
    put64(&b, n);
    put(&b, v, n);
    return put_encoded(w, key, HC_GGUF_STRING, &b);
}

int hc_gguf_writer_set_arr(hc_gguf_writer *w, const char *key, uint32_t elem_type, uint64_t n,
                           const void *data)
{
    uint32_t es = scalar_size(elem_type);
    uint64_t total;
    bytes b = {0};
    if (!es) {
        hc_set_error("gguf writer: key '%s': array element type %" PRIu32 " is not numeric",
                     key ? key : "", elem_type);
        return -1;
    }
    if (__builtin_mul_overflow(n, (uint64_t)es, &total) || (n && !data)) {
        hc_set_error("gguf writer: key '%s': bad array of %" PRIu64 " elements",
                     key ? key : "", n);
        return -1;
    }
    put32(&b, elem_type);
    put64(&b, n);
    put(&b, data, total);
    return put_encoded(w, key, HC_GGUF_ARRAY, &b);
}

int hc_gguf_writer_set_str_arr(hc_gguf_writer *w, const char *key, uint64_t n,
                               const char *const *strs)
{
    bytes b = {0};
    put32(&b, HC_GGUF_STRING);
    put64(&b, n);
    for (uint64_t i = 0; i < n; i++) {
        const char *s = strs[i] ? strs[i] : "";
        uint64_t len = strlen(s);
        put64(&b, len);
        put(&b, s, len);
    }
    return put_encoded(w, key, HC_GGUF_ARRAY, &b);
}

int hc_gguf_writer_copy_kv(hc_gguf_writer *w, const hc_gguf_kv *kv)
{
    bytes b = {0};
    if (!kv || !kv->key) {
        hc_set_error("gguf writer: NULL key/value to copy");
        return -1;
    }
    uint32_t t = kv->type;
    if (t == HC_GGUF_STRING) {
        put64(&b, kv->str_len);
        put(&b, kv->str, kv->str_len);
    } else if (t == HC_GGUF_ARRAY) {
        put32(&b, kv->arr_type);
        put64(&b, kv->arr_n);
        if (kv->arr_type == HC_GGUF_STRING) {
            for (uint64_t i = 0; i < kv->arr_n && !b.oom; i++) {
                uint64_t len;
                const char *s = hc_gguf_arr_str(kv, i, &len);
                if (!s) {
                    free(b.p);
                    hc_set_error("gguf writer: key '%s': string element %" PRIu64 " missing",
                                 kv->key, i);
                    return -1;
                }
                put64(&b, len);
                put(&b, s, len);
            }
        } else {
            uint64_t total;
            uint32_t es = scalar_size(kv->arr_type);
            if (!es || __builtin_mul_overflow(kv->arr_n, (uint64_t)es, &total)) {
                free(b.p);
                hc_set_error("gguf writer: key '%s': cannot copy an array of type %" PRIu32,
                             kv->key, kv->arr_type);
                return -1;
            }
            put(&b, kv->data, total);
        }
    } else if (scalar_size(t)) {
        put(&b, kv->data, scalar_size(t));
    } else {
        hc_set_error("gguf writer: key '%s': unknown value type %" PRIu32, kv->key, t);
        return -1;
    }
    return put_encoded(w, kv->key, t, &b);
}

/* ---- tensors --------------------------------------------------------------- */
int hc_gguf_writer_add_tensor(hc_gguf_writer *w, const char *name, uint32_t n_dims,
                              const uint64_t *ne, uint32_t type)
{
    if (!w || !name || !ne) {
        hc_set_error("gguf writer: NULL argument to add_tensor");
        return -1;
    }
    if (w->state != W_DECLARING) {
        hc_set_error("gguf writer: tensor '%s' added after the header was written", name);
        return -1;
    }
    size_t len = strlen(name);
    if (len == 0 || len > MAX_TENSOR_NAME) {
        hc_set_error("gguf writer: tensor name length %zu outside 1..%u", len, MAX_TENSOR_NAME);
        return -1;
    }
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) {
            hc_set_error("gguf writer: duplicate tensor name '%s'", name);
            return -1;
        }
    if (n_dims < 1 || n_dims > HC_GGUF_MAX_DIMS) {
        hc_set_error("gguf writer: tensor '%s': n_dims %" PRIu32 " outside 1..%d", name, n_dims,
                     HC_GGUF_MAX_DIMS);
        return -1;
    }
    uint32_t blck = hc_ggml_block_size(type), tsize = hc_ggml_type_size(type);
    if (!blck) {
        hc_set_error("gguf writer: tensor '%s': unknown type id %" PRIu32, name, type);
        return -1;
    }
    uint32_t file_type = type;
    if (!memcmp(w->magic, "PWRI", 4) && hc_pwri_type_write(type, &file_type)) {
        hc_set_error("gguf writer: tensor '%s': type %s cannot go in a PWRI file (PowerInfer's "
                     "ggml has no id for it)",
                     name, hc_ggml_type_name(type));
        return -1;
    }
    wtensor t = {.n_dims = n_dims, .type = file_type};
    uint64_t nel = 1;
    for (uint32_t d = 0; d < HC_GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] > (uint64_t)INT64_MAX || __builtin_mul_overflow(nel, t.ne[d], &nel) ||
            nel > (uint64_t)INT64_MAX) {
            hc_set_error("gguf writer: tensor '%s': element count overflows", name);
            return -1;
        }
    }
    if (t.ne[0] % blck) {
        hc_set_error("gguf writer: tensor '%s': ne[0] = %" PRIu64
                     " is not a multiple of the %s block size %" PRIu32,
                     name, t.ne[0], hc_ggml_type_name(type), blck);
        return -1;
    }
    uint64_t nb = t.ne[0] / blck * tsize, a = w->alignment;
    for (uint32_t d = 1; d < HC_GGUF_MAX_DIMS; d++)
        if (__builtin_mul_overflow(nb, t.ne[d], &nb)) {
            hc_set_error("gguf writer: tensor '%s': size in bytes overflows", name);
            return -1;
        }
    t.n_bytes = nb;
    if (__builtin_add_overflow(w->data_end, a - 1, &t.offset) ||
        __builtin_add_overflow(t.offset & ~(a - 1), nb, &w->data_end)) {
        hc_set_error("gguf writer: tensor '%s': data section size overflows", name);
        return -1;
    }
    t.offset &= ~(a - 1);
    if (w->n_t == w->cap_t) {
        size_t cap = w->cap_t ? 2 * w->cap_t : 16;
        wtensor *nt = realloc(w->t, cap * sizeof *nt);
        if (!nt) {
            hc_set_error("gguf writer: out of memory");
            return -1;
        }
        w->t = nt;
        w->cap_t = cap;
    }
    t.name = strdup(name);
    if (!t.name) {
        hc_set_error("gguf writer: out of memory");
        return -1;
    }
    w->t[w->n_t++] = t;
    return 0;
}

/* ---- output -------------------------------------------------------------- */
static int out_bytes(hc_gguf_writer *w, const void *p, uint64_t n, char *err, size_t errlen)
{
    if (n && fwrite(p, 1, (size_t)n, w->out.f) != n) {
        w->state = W_FAILED;
        return wfail(err, errlen, "%s: write failed: %s", w->path, strerror(errno));
    }
    hc_output_wrote(&w->out, n);
    return 0;
}

static int out_zeros(hc_gguf_writer *w, uint64_t n, char *err, size_t errlen)
{
    static const uint8_t zeros[256];
    while (n) {
        uint64_t k = n < sizeof zeros ? n : sizeof zeros;
        if (out_bytes(w, zeros, k, err, errlen))
            return -1;
        n -= k;
    }
    return 0;
}

static uint64_t pad_of(uint64_t pos, uint64_t a)
{
    return (a - pos % a) % a;
}

static int out_str(hc_gguf_writer *w, const char *s, char *err, size_t errlen)
{
    uint64_t n = strlen(s);
    return out_bytes(w, &n, 8, err, errlen) || out_bytes(w, s, n, err, errlen) ? -1 : 0;
}

int hc_gguf_writer_begin(hc_gguf_writer *w, const char *path, char *err, size_t errlen)
{
    if (!w || !path)
        return wfail(err, errlen, "gguf writer: NULL writer or path");
    if (w->state != W_DECLARING)
        return wfail(err, errlen, "%s: gguf writer: begin called twice", path);
    /* Keep general.alignment consistent with the padding actually used. */
    int64_t has = -1;
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, "general.alignment"))
            has = (int64_t)i;
    if ((has >= 0 || w->alignment != HC_GGUF_DEFAULT_ALIGNMENT) &&
        hc_gguf_writer_set_u32(w, "general.alignment", w->alignment))
        return wfail(err, errlen, "%s: %s", path, hc_last_error());
    if (!(w->path = strdup(path)))
        return wfail(err, errlen, "%s: out of memory", path);
    /* Replacing an existing file is the caller's decision (the tools ask for
     * --force before any work); the writer only keeps to output_file.h. */
    if (hc_output_open(&w->out, path, 1) != 0) {
        w->state = W_FAILED;
        return wfail(err, errlen, "%s", hc_last_error());
    }
    w->state = W_WRITING;

    uint64_t n_t = w->n_t, n_kv = w->n_kv;
    if (out_bytes(w, w->magic, 4, err, errlen) || out_bytes(w, &w->version, 4, err, errlen) ||
        out_bytes(w, &n_t, 8, err, errlen) || out_bytes(w, &n_kv, 8, err, errlen))
        return -1;
    uint64_t pos = 24;
    for (size_t i = 0; i < w->n_kv; i++) {
        const wkv *kv = &w->kv[i];
        if (out_str(w, kv->key, err, errlen) || out_bytes(w, &kv->type, 4, err, errlen) ||
            out_bytes(w, kv->payload, kv->len, err, errlen))
            return -1;
        pos += 8 + strlen(kv->key) + 4 + kv->len;
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (out_str(w, t->name, err, errlen) || out_bytes(w, &t->n_dims, 4, err, errlen) ||
            out_bytes(w, t->ne, 8ull * t->n_dims, err, errlen) ||
            out_bytes(w, &t->type, 4, err, errlen) || out_bytes(w, &t->offset, 8, err, errlen))
            return -1;
        pos += 8 + strlen(t->name) + 4 + 8ull * t->n_dims + 4 + 8;
    }
    if (out_zeros(w, pad_of(pos, w->alignment), err, errlen))
        return -1;
    w->cur = 0;
    w->cur_done = 0;
    w->pos = 0;
    return 0;
}

/* Move past finished (and empty) tensors, writing the padding after each. */
static int advance(hc_gguf_writer *w, char *err, size_t errlen)
{
    while (w->cur < w->n_t && w->cur_done == w->t[w->cur].n_bytes) {
        uint64_t next = w->cur + 1 < w->n_t ? w->t[w->cur + 1].offset
                                            : w->pos + pad_of(w->pos, w->alignment);
        if (out_zeros(w, next - w->pos, err, errlen))
            return -1;
        w->pos = next;
        w->cur++;
        w->cur_done = 0;
    }
    return 0;
}

int hc_gguf_writer_write_data(hc_gguf_writer *w, const void *data, uint64_t n, char *err,
                              size_t errlen)
{
    if (w && w->state == W_FAILED)
        return wfail(err, errlen, "%s: gguf writer: an earlier step failed",
                     w->path ? w->path : "gguf writer");
    if (!w || w->state != W_WRITING)
        return wfail(err, errlen, "%s: gguf writer: write_data outside begin..finish",
                     w && w->path ? w->path : "gguf writer");
    if (advance(w, err, errlen))
        return -1;
    if (n == 0)
        return 0;
    if (w->cur >= w->n_t) {
        w->state = W_FAILED;
        return wfail(err, errlen, "%s: %" PRIu64 " bytes written past the last tensor", w->path,
                     n);
    }
    const wtensor *t = &w->t[w->cur];
    if (n > t->n_bytes - w->cur_done) {
        w->state = W_FAILED;
        return wfail(err, errlen,
                     "%s: tensor '%s': write of %" PRIu64 " bytes crosses its end (%" PRIu64
                     " of %" PRIu64 " bytes left)",
                     w->path, t->name, n, t->n_bytes - w->cur_done, t->n_bytes);
    }
    if (out_bytes(w, data, n, err, errlen))
        return -1;
    w->cur_done += n;
    w->pos += n;
    return advance(w, err, errlen);
}

int hc_gguf_writer_finish(hc_gguf_writer *w, char *err, size_t errlen)
{
    if (!w || w->state != W_WRITING)
        return wfail(err, errlen, "%s: gguf writer: finish without a successful begin",
                     w && w->path ? w->path : "gguf writer");
    if (advance(w, err, errlen))
        return -1;
    if (w->cur < w->n_t) {
        const wtensor *t = &w->t[w->cur];
        w->state = W_FAILED;
        return wfail(err, errlen,
                     "%s: tensor '%s' (#%zu) got %" PRIu64 " of its %" PRIu64 " bytes", w->path,
                     t->name, w->cur, w->cur_done, t->n_bytes);
    }
    if (hc_output_commit(&w->out) != 0) {
        w->state = W_FAILED;
        return wfail(err, errlen, "%s", hc_last_error());
    }
    w->state = W_FINISHED;
    return 0;
}

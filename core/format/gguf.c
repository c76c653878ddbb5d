/*
 * GGUF reader: memory-maps the file and validates every count, length and
 * offset against the file size before using it.  Nothing in the file is
 * trusted: all arithmetic on file values is overflow-checked, and a failure
 * produces exactly one line "<file>: <field>: <problem>".
 *
 * Choices where the format leaves room (each with its reason):
 *  - Arrays of arrays are rejected: the hc_gguf_kv view cannot describe
 *    them, no llama.cpp/PowerInfer writer produces them, and ggml's own
 *    reader rejects them too.
 *  - n_dims must be 1..4: ggml never writes 0 (ggml_n_dims() >= 1), and
 *    callers index ne[n_dims - 1].
 *  - A dimension of 0 is accepted (ggml accepts empty tensors); such a tensor
 *    has no bytes.  Each ne must fit int64 (ggml's ne is int64_t) and so must
 *    their product.
 *  - Keys and tensor names are exposed as C strings, so an embedded NUL (which
 *    would make two different names compare equal) is rejected, as are empty
 *    names.  Tensor names are limited to 255 bytes (ggml's own limit is 63,
 *    so anything ggml opens opens here), keys to 65535 (the GGUF spec).
 *  - Bool values other than 0/1 are rejected (the spec calls them invalid).
 *  - Tensor infos may describe overlapping or unordered data ranges; each
 *    range is only required to lie inside the file, which is all the reader
 *    needs for memory safety.
 *  - A file with no tensors (vocab-only) need not contain the padding before
 *    its (empty) data section.
 */
#include "format/gguf.h"
#include "util/hugemem.h"
#include "util/hugemove.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* ---- ggml type table --------------------------------------------------------
 * Every ggml type id a GGUF file may carry, so that files whose tensors we do
 * not compute still open and say what they hold.  Block layouts are ggml's
 * (block_* structs in ggml-common.h).  Ids 4 and 5 were retired before GGUF
 * existed; 31..33 and 36..38 are the repacked Q4_0 / IQ4_NL variants that
 * llama.cpp briefly wrote into files (same block size as their base type). */
typedef struct type_info {
    const char *name;
    uint32_t blck; /* elements per block; 0 = unknown id */
    uint32_t size; /* bytes per block */
} type_info;

static const type_info k_types[] = {
    [0] = {"f32", 1, 4},          [1] = {"f16", 1, 2},
    [2] = {"q4_0", 32, 18},       [3] = {"q4_1", 32, 20},
    [6] = {"q5_0", 32, 22},       [7] = {"q5_1", 32, 24},
    [8] = {"q8_0", 32, 34},       [9] = {"q8_1", 32, 36},
    [10] = {"q2_K", 256, 84},     [11] = {"q3_K", 256, 110},
    [12] = {"q4_K", 256, 144},    [13] = {"q5_K", 256, 176},
    [14] = {"q6_K", 256, 210},    [15] = {"q8_K", 256, 292},
    [16] = {"iq2_xxs", 256, 66},  [17] = {"iq2_xs", 256, 74},
    [18] = {"iq3_xxs", 256, 98},  [19] = {"iq1_s", 256, 50},
    [20] = {"iq4_nl", 32, 18},    [21] = {"iq3_s", 256, 110},
    [22] = {"iq2_s", 256, 82},    [23] = {"iq4_xs", 256, 136},
    [24] = {"i8", 1, 1},          [25] = {"i16", 1, 2},
    [26] = {"i32", 1, 4},         [27] = {"i64", 1, 8},
    [28] = {"f64", 1, 8},         [29] = {"iq1_m", 256, 56},
    [30] = {"bf16", 1, 2},        [31] = {"q4_0_4_4", 32, 18},
    [32] = {"q4_0_4_8", 32, 18},  [33] = {"q4_0_8_8", 32, 18},
    [34] = {"tq1_0", 256, 54},    [35] = {"tq2_0", 256, 66},
    [36] = {"iq4_nl_4_4", 32, 18}, [37] = {"iq4_nl_4_8", 32, 18},
    [38] = {"iq4_nl_8_8", 32, 18}, [39] = {"mxfp4", 32, 17},
};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

/* ---- PowerInfer's numbering inside PWRI files ---------------------------------
 * PowerInfer's ggml (November 2023) ends its type enum with I8 = 16, I16 = 17,
 * I32 = 18 (GGML_TYPE_COUNT = 19); ggml later put IQ2_XXS, IQ2_XS and IQ3_XXS
 * at 16..18 and moved the integer types to 24..26.  Everything inside hotcold
 * uses the modern ids, and this pair is the one place that translates:
 *  - the reader maps 16..18 to I8/I16/I32 in a file whose magic is PWRI (a
 *    PowerInfer-made gpuidx has blk.i.gpu_idx as 18).  The IQ types cannot
 *    occur there: PowerInfer's ggml has none of them, and our writer refuses
 *    them in PWRI (below).  24..26 keep their modern meaning: hotcold wrote
 *    them before 2026-12, and PowerInfer has no type there, so nothing is
 *    ambiguous.  Plain GGUF files keep the modern numbering untouched;
 *  - the writer stores I8/I16/I32 as 16..18 in a PWRI file, so PowerInfer can
 *    load what `pack`, `mkmodel`, `quantize` and the gpuidx writer make (it
 *    divides by a zero block size, SIGFPE, on an id it does not know), and
 *    refuses a type PowerInfer's ggml has no id for: a PWRI file is meant for
 *    PowerInfer, and a tensor it cannot read is better refused at write time. */
#define PWRI_INT_FIRST 16u /* PowerInfer's I8; I16 and I32 follow */
#define GGML_INT_FIRST 24u /* modern ggml's I8; I16 and I32 follow */
#define PWRI_TYPE_COUNT 19u

uint32_t hc_pwri_type_read(uint32_t file_type)
{
    if (file_type >= PWRI_INT_FIRST && file_type < PWRI_TYPE_COUNT)
        return file_type - PWRI_INT_FIRST + GGML_INT_FIRST;
    return file_type;
}

int hc_pwri_type_write(uint32_t type, uint32_t *file_type)
{
    if (type >= GGML_INT_FIRST && type < GGML_INT_FIRST + 3) {
        *file_type = type - GGML_INT_FIRST + PWRI_INT_FIRST;
        return 0;
    }
    if (type < PWRI_INT_FIRST && hc_ggml_block_size(type)) {
        *file_type = type; /* f32 .. q8_K: the same ids in both */
        return 0;
    }
    return -1;
}

const char *hc_ggml_type_name(uint32_t type)
{
    static _Thread_local char unknown[24];
    if (type < N_TYPES && k_types[type].blck)
        return k_types[type].name;
    snprintf(unknown, sizeof unknown, "type%" PRIu32, type);
    return unknown;
}

uint32_t hc_ggml_block_size(uint32_t type)
{
    return type < N_TYPES ? k_types[type].blck : 0;
}

uint32_t hc_ggml_type_size(uint32_t type)
{
    return type < N_TYPES && k_types[type].blck ? k_types[type].size : 0;
}

/* Bytes of one scalar metadata value; 0 for STRING/ARRAY and unknown ids. */
static uint32_t vtype_size(uint32_t t)
{
    switch (t) {
    case HC_GGUF_U8: case HC_GGUF_I8: case HC_GGUF_BOOL: return 1;
    case HC_GGUF_U16: case HC_GGUF_I16: return 2;
    case HC_GGUF_U32: case HC_GGUF_I32: case HC_GGUF_F32: return 4;
    case HC_GGUF_U64: case HC_GGUF_I64: case HC_GGUF_F64: return 8;
    default: return 0;
    }
}

static const char *vtype_name(uint32_t t)
{
    static const char *const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* ---- little-endian loads (the file is LE; no alignment assumed) ---------- */
static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

/* ---- name index: open addressing over FNV-1a hashes ------------------------
 * Used to reject duplicates while parsing and for O(1) lookups afterwards.
 * Slots hold index+1 (0 = empty); the table is at least twice the count. */
typedef struct name_index {
    uint32_t *slot;
    uint64_t mask;
} name_index;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int index_init(name_index *ix, uint64_t n)
{
    uint64_t cap = 16;
    while (cap < 2 * n)
        cap <<= 1;
    ix->slot = calloc(cap, sizeof *ix->slot);
    ix->mask = cap - 1;
    return ix->slot ? 0 : -1;
}

/* Names are the first member of both hc_gguf_kv and hc_gguf_tensor. */
static const char *name_at(const void *arr, size_t stride, uint64_t i)
{
    return *(char *const *)(const void *)((const char *)arr + i * stride);
}

/* Find `name`; returns its index or -1.  If `insert_as` >= 0 and the name is
 * absent, records it under that index. */
static int64_t index_find(const name_index *ix, const void *arr, size_t stride, const char *name,
                          int64_t insert_as)
{
    if (!ix->slot)
        return -1;
    for (uint64_t h = fnv1a(name) & ix->mask;; h = (h + 1) & ix->mask) {
        uint32_t s = ix->slot[h];
        if (!s) {
            if (insert_as >= 0)
                ix->slot[h] = (uint32_t)insert_as + 1;
            return -1;
        }
        if (!strcmp(name_at(arr, stride, s - 1), name))
            return (int64_t)s - 1;
    }
}

/* The public struct plus what only this file needs. */
typedef struct gguf_impl {
    hc_gguf pub;
    name_index kv_ix, t_ix;
} gguf_impl;

/* ---- parser state and error reporting ------------------------------------ */
typedef struct parser {
    const uint8_t *p;
    uint64_t size;
    uint64_t pos;
    const char *file; /* for messages */
    char *err;
    size_t errlen;
} parser;

static int fail(parser *ps, const char *fmt, ...) HC_PRINTF(2, 3);
static int fail(parser *ps, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hc_set_error("%s: %s", ps->file, msg);
    if (ps->err && ps->errlen)
        snprintf(ps->err, ps->errlen, "%s: %s", ps->file, msg);
    return -1;
}

/* A printable, bounded copy of a name from the file, for messages. */
static void printable(char *dst, size_t dstlen, const uint8_t *s, uint64_t len)
{
    size_t n = 0;
    for (uint64_t i = 0; i < len && n + 4 < dstlen; i++)
        dst[n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char)s[i] : '?';
    if (len > dstlen - 4 && dstlen > 4) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = 0;
}

static int take(parser *ps, uint64_t n, const uint8_t **out)
{
    if (n > ps->size - ps->pos)
        return -1;
    *out = ps->p + ps->pos;
    ps->pos += n;
    return 0;
}

static int take32(parser *ps, uint32_t *v)
{
    const uint8_t *b;
    if (take(ps, 4, &b))
        return -1;
    *v = ld32(b);
    return 0;
}

static int take64(parser *ps, uint64_t *v)
{
    const uint8_t *b;
    if (take(ps, 8, &b))
        return -1;
    *v = ld64(b);
    return 0;
}

/* Read a fixed-size field of `ctx` or report it as truncated. */
static int field32(parser *ps, const char *ctx, const char *field, uint32_t *v)
{
    uint64_t at = ps->pos;
    if (take32(ps, v))
        return fail(ps, "%s: %s at offset %" PRIu64 " runs past end of file (%" PRIu64 " bytes)",
                    ctx, field, at, ps->size);
    return 0;
}

static int field64(parser *ps, const char *ctx, const char *field, uint64_t *v)
{
    uint64_t at = ps->pos;
    if (take64(ps, v))
        return fail(ps, "%s: %s at offset %" PRIu64 " runs past end of file (%" PRIu64 " bytes)",
                    ctx, field, at, ps->size);
    return 0;
}

static int field_str(parser *ps, const char *ctx, const char *field, const uint8_t **s,
                     uint64_t *len)
{
    uint64_t at = ps->pos;
    if (field64(ps, ctx, field, len))
        return -1;
    if (take(ps, *len, s))
        return fail(ps,
                    "%s: %s of length %" PRIu64 " at offset %" PRIu64
                    " runs past end of file (%" PRIu64 " bytes)",
                    ctx, field, *len, at, ps->size);
    return 0;
}

/* ---- metadata ------------------------------------------------------------ */
#define MAX_KEY_LEN 65535u
#define MAX_TENSOR_NAME 255u
#define MAX_COUNT 0x7fffffffu /* index slots are uint32 index+1 */
/* Smallest encodings, used to reject counts the file cannot possibly hold
 * before allocating for them. */
#define MIN_KV_BYTES (8 + 1 + 4 + 1)              /* key len, 1-byte key, type, u8 */
#define MIN_TENSOR_INFO_BYTES (8 + 1 + 4 + 8 + 4 + 8) /* name, n_dims, ne0, type, offset */

static int parse_array(parser *ps, const char *ctx, hc_gguf_kv *kv)
{
    if (field32(ps, ctx, "array element type", &kv->arr_type) ||
        field64(ps, ctx, "array count", &kv->arr_n))
        return -1;
    uint32_t at = kv->arr_type;
    uint64_t n = kv->arr_n;
    uint64_t start = ps->pos;
    if (at == HC_GGUF_ARRAY)
        return fail(ps, "%s: arrays of arrays are not supported", ctx);
    if (at > HC_GGUF_F64)
        return fail(ps, "%s: unknown array element type %" PRIu32, ctx, at);
    kv->data = ps->p + start;
    if (at == HC_GGUF_STRING) {
        /* Each element needs at least its 8-byte length. */
        if (n > (ps->size - start) / 8)
            return fail(ps,
                        "%s: array count %" PRIu64 " of strings at offset %" PRIu64
                        " cannot fit in the %" PRIu64 " bytes left",
                        ctx, n, start, ps->size - start);
        if (n) {
            kv->str_offsets = malloc(n * sizeof *kv->str_offsets);
            if (!kv->str_offsets)
                return fail(ps, "%s: out of memory for %" PRIu64 " strings", ctx, n);
        }
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *s;
            uint64_t len, el = ps->pos;
            if (take64(ps, &len) || take(ps, len, &s))
                return fail(ps,
                            "%s: string element #%" PRIu64 " at offset %" PRIu64
                            " runs past end of file (%" PRIu64 " bytes)",
                            ctx, i, el, ps->size);
            kv->str_offsets[i] = el - start;
        }
        return 0;
    }
    uint64_t bytes;
    uint32_t esize = vtype_size(at);
    const uint8_t *b;
    if (__builtin_mul_overflow(n, (uint64_t)esize, &bytes))
        return fail(ps, "%s: array count %" PRIu64 " x %" PRIu32 "-byte %s overflows", ctx, n,
                    esize, vtype_name(at));
    if (take(ps, bytes, &b))
        return fail(ps,
                    "%s: array of %" PRIu64 " %s (%" PRIu64 " bytes) at offset %" PRIu64
                    " runs past end of file (%" PRIu64 " bytes)",
                    ctx, n, vtype_name(at), bytes, start, ps->size);
    if (at == HC_GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (b[i] > 1)
                return fail(ps, "%s: bool element #%" PRIu64 " has value %u (must be 0 or 1)",
                            ctx, i, b[i]);
    return 0;
}

static int parse_kv(parser *ps, uint64_t i, hc_gguf_kv *kv)
{
    char ctx[160], name[80];
    const uint8_t *s;
    uint64_t len;
    snprintf(ctx, sizeof ctx, "key #%" PRIu64, i);
    if (field_str(ps, ctx, "name", &s, &len))
        return -1;
    if (len == 0)
        return fail(ps, "%s: empty name", ctx);
    if (len > MAX_KEY_LEN)
        return fail(ps, "%s: name length %" PRIu64 " exceeds %u", ctx, len, MAX_KEY_LEN);
    printable(name, sizeof name, s, len);
    if (memchr(s, 0, len))
        return fail(ps, "%s: name '%s' contains a NUL byte", ctx, name);
    kv->key = malloc(len + 1);
    if (!kv->key)
        return fail(ps, "%s: out of memory", ctx);
    memcpy(kv->key, s, len);
    kv->key[len] = 0;
    snprintf(ctx, sizeof ctx, "key '%s' (#%" PRIu64 ")", name, i);

    if (field32(ps, ctx, "value type", &kv->type))
        return -1;
    uint32_t t = kv->type;
    if (t > HC_GGUF_F64)
        return fail(ps, "%s: unknown value type %" PRIu32, ctx, t);
    if (t == HC_GGUF_STRING) {
        if (field_str(ps, ctx, "string value", &s, &kv->str_len))
            return -1;
        kv->str = (const char *)s;
        kv->data = s;
        return 0;
    }
    if (t == HC_GGUF_ARRAY)
        return parse_array(ps, ctx, kv);
    uint64_t at = ps->pos;
    if (take(ps, vtype_size(t), &s))
        return fail(ps,
                    "%s: %s value at offset %" PRIu64 " runs past end of file (%" PRIu64
                    " bytes)",
                    ctx, vtype_name(t), at, ps->size);
    if (t == HC_GGUF_BOOL && s[0] > 1)
        return fail(ps, "%s: bool value %u (must be 0 or 1)", ctx, s[0]);
    kv->data = s;
    return 0;
}

/* general.alignment, if present, must be a nonzero power-of-two u32. */
static int read_alignment(parser *ps, gguf_impl *gi)
{
    hc_gguf *g = &gi->pub;
    int64_t i = hc_gguf_find_key(g, "general.alignment");
    g->alignment = HC_GGUF_DEFAULT_ALIGNMENT;
    if (i < 0)
        return 0;
    const hc_gguf_kv *kv = &g->kv[i];
    if (kv->type != HC_GGUF_U32)
        return fail(ps, "key 'general.alignment': type %s, expected u32", vtype_name(kv->type));
    uint32_t a = ld32(kv->data);
    if (a == 0 || (a & (a - 1)))
        return fail(ps, "key 'general.alignment': %" PRIu32 " is not a nonzero power of two", a);
    g->alignment = a;
    return 0;
}

/* ---- tensor infos ---------------------------------------------------------- */
static int parse_tensor_info(parser *ps, gguf_impl *gi, uint64_t i)
{
    hc_gguf *g = &gi->pub;
    hc_gguf_tensor *t = &g->tensors[i];
    char ctx[160], name[80];
    const uint8_t *s;
    uint64_t len;
    snprintf(ctx, sizeof ctx, "tensor #%" PRIu64, i);
    if (field_str(ps, ctx, "name", &s, &len))
        return -1;
    if (len == 0)
        return fail(ps, "%s: empty name", ctx);
    if (len > MAX_TENSOR_NAME)
        return fail(ps, "%s: name length %" PRIu64 " exceeds %u", ctx, len, MAX_TENSOR_NAME);
    printable(name, sizeof name, s, len);
    if (memchr(s, 0, len))
        return fail(ps, "%s: name '%s' contains a NUL byte", ctx, name);
    t->name = malloc(len + 1);
    if (!t->name)
        return fail(ps, "%s: out of memory", ctx);
    memcpy(t->name, s, len);
    t->name[len] = 0;
    snprintf(ctx, sizeof ctx, "tensor '%s' (#%" PRIu64 ")", name, i);
    int64_t dup = index_find(&gi->t_ix, g->tensors, sizeof *g->tensors, t->name, (int64_t)i);
    if (dup >= 0)
        return fail(ps, "%s: duplicate tensor name (first at #%" PRId64 ")", ctx, dup);

    if (field32(ps, ctx, "n_dims", &t->n_dims))
        return -1;
    if (t->n_dims < 1 || t->n_dims > HC_GGUF_MAX_DIMS)
        return fail(ps, "%s: n_dims %" PRIu32 " outside 1..%d", ctx, t->n_dims,
                    HC_GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < HC_GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    uint64_t nel = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        char what[16];
        snprintf(what, sizeof what, "ne[%" PRIu32 "]", d);
        if (field64(ps, ctx, what, &t->ne[d]))
            return -1;
        if (t->ne[d] > (uint64_t)INT64_MAX)
            return fail(ps, "%s: ne[%" PRIu32 "] = %" PRIu64 " exceeds INT64_MAX", ctx, d,
                        t->ne[d]);
        if (__builtin_mul_overflow(nel, t->ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return fail(ps, "%s: element count overflows at ne[%" PRIu32 "] = %" PRIu64, ctx, d,
                        t->ne[d]);
    }
    t->n_elements = nel;

    if (field32(ps, ctx, "type", &t->type))
        return -1;
    if (hc_gguf_is_pwri(g))
        t->type = hc_pwri_type_read(t->type);
    uint32_t blck = hc_ggml_block_size(t->type), tsize = hc_ggml_type_size(t->type);
    if (!blck)
        return fail(ps, "%s: unknown type id %" PRIu32, ctx, t->type);
    if (t->ne[0] % blck)
        return fail(ps, "%s: ne[0] = %" PRIu64 " is not a multiple of the %s block size %" PRIu32,
                    ctx, t->ne[0], hc_ggml_type_name(t->type), blck);
    /* Row bytes first, then rows: the element count is known to fit, so the
     * row size does too; the product with the rows may still overflow. */
    uint64_t bytes = t->ne[0] / blck * tsize;
    for (uint32_t d = 1; d < HC_GGUF_MAX_DIMS; d++)
        if (__builtin_mul_overflow(bytes, t->ne[d], &bytes))
            return fail(ps, "%s: size in bytes overflows", ctx);
    t->n_bytes = bytes;

    if (field64(ps, ctx, "offset", &t->offset))
        return -1;
    if (t->offset % g->alignment)
        return fail(ps, "%s: offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, ctx,
                    t->offset, g->alignment);
    return 0;
}

/* Place each tensor's bytes inside the data section. */
static int place_tensors(parser *ps, hc_gguf *g)
{
    if (g->n_tensors && g->data_offset > ps->size)
        return fail(ps,
                    "data section: starts at offset %" PRIu64 ", past end of file (%" PRIu64
                    " bytes)",
                    g->data_offset, ps->size);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        hc_gguf_tensor *t = &g->tensors[i];
        uint64_t start, end;
        if (__builtin_add_overflow(g->data_offset, t->offset, &start) ||
            __builtin_add_overflow(start, t->n_bytes, &end) || end > ps->size) {
            char name[80];
            printable(name, sizeof name, (const uint8_t *)t->name, strlen(t->name));
            return fail(ps,
                        "tensor '%s' (#%" PRIu64 "): data [%" PRIu64 " + %" PRIu64 ", +%" PRIu64
                        ") ends past end of file (%" PRIu64 " bytes)",
                        name, i, g->data_offset, t->offset, t->n_bytes, ps->size);
        }
        t->data = ps->p + start;
    }
    return 0;
}

static int parse(parser *ps, gguf_impl *gi)
{
    hc_gguf *g = &gi->pub;
    const uint8_t *m;
    if (take(ps, 4, &m))
        return fail(ps, "header: magic: file is only %" PRIu64 " bytes", ps->size);
    if (memcmp(m, "GGUF", 4) && memcmp(m, "PWRI", 4)) {
        char shown[8];
        printable(shown, sizeof shown, m, 4);
        return fail(ps, "header: magic '%s' is neither GGUF nor PWRI", shown);
    }
    memcpy(g->magic, m, 4);
    g->magic[4] = 0;
    if (field32(ps, "header", "version", &g->version))
        return -1;
    if (g->version != 2 && g->version != 3) {
        /* A byte-swapped small number means a big-endian file. */
        uint32_t v = g->version;
        uint32_t swapped = v >> 24 | (v >> 8 & 0xff00u) | (v << 8 & 0xff0000u) | v << 24;
        return fail(ps, "header: version %" PRIu32 " unsupported (only 2 and 3)%s", v,
                    swapped >= 1 && swapped <= 3 ? "; this looks like a big-endian file" : "");
    }
    if (field64(ps, "header", "n_tensors", &g->n_tensors) ||
        field64(ps, "header", "n_kv", &g->n_kv))
        return -1;
    uint64_t left = ps->size - ps->pos;
    if (g->n_tensors > MAX_COUNT || g->n_tensors > left / MIN_TENSOR_INFO_BYTES)
        return fail(ps,
                    "header: n_tensors = %" PRIu64 " is implausible for the %" PRIu64
                    " bytes left (each tensor info takes at least %d)",
                    g->n_tensors, left, MIN_TENSOR_INFO_BYTES);
    if (g->n_kv > MAX_COUNT || g->n_kv > left / MIN_KV_BYTES)
        return fail(ps,
                    "header: n_kv = %" PRIu64 " is implausible for the %" PRIu64
                    " bytes left (each key/value takes at least %d)",
                    g->n_kv, left, MIN_KV_BYTES);
    /* Both bounded above, so this cannot overflow. */
    if (g->n_kv * MIN_KV_BYTES + g->n_tensors * MIN_TENSOR_INFO_BYTES > left)
        return fail(ps,
                    "header: n_kv = %" PRIu64 " and n_tensors = %" PRIu64
                    " together are implausible for the %" PRIu64 " bytes left",
                    g->n_kv, g->n_tensors, left);

    g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors || index_init(&gi->kv_ix, g->n_kv) ||
        index_init(&gi->t_ix, g->n_tensors))
        return fail(ps, "header: out of memory for %" PRIu64 " keys and %" PRIu64 " tensors",
                    g->n_kv, g->n_tensors);

    for (uint64_t i = 0; i < g->n_kv; i++) {
        if (parse_kv(ps, i, &g->kv[i]))
            return -1;
        int64_t dup = index_find(&gi->kv_ix, g->kv, sizeof *g->kv, g->kv[i].key, (int64_t)i);
        if (dup >= 0) {
            char name[80];
            printable(name, sizeof name, (const uint8_t *)g->kv[i].key, strlen(g->kv[i].key));
            return fail(ps, "key '%s' (#%" PRIu64 "): duplicate key (first at #%" PRId64 ")",
                        name, i, dup);
        }
    }
    if (read_alignment(ps, gi))
        return -1;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (parse_tensor_info(ps, gi, i))
            return -1;
    /* pos <= size < 2^64 - alignment in any real file; still check. */
    uint64_t a = g->alignment;
    if (__builtin_add_overflow(ps->pos, a - 1, &g->data_offset))
        return fail(ps, "data section: offset overflows");
    g->data_offset &= ~(a - 1);
    return place_tensors(ps, g);
}

static void free_parts(hc_gguf *g)
{
    gguf_impl *gi = (gguf_impl *)g;
    if (g->kv)
        for (uint64_t i = 0; i < g->n_kv; i++) {
            free(g->kv[i].key);
            free(g->kv[i].str_offsets);
        }
    if (g->tensors)
        for (uint64_t i = 0; i < g->n_tensors; i++)
            free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    free(gi->kv_ix.slot);
    free(gi->t_ix.slot);
}

static hc_gguf *open_buffer(const uint8_t *buf, uint64_t len, const char *file, char *err,
                            size_t errlen)
{
    parser ps = {.p = buf, .size = len, .file = file, .err = err, .errlen = errlen};
    gguf_impl *gi = calloc(1, sizeof *gi);
    if (!gi) {
        fail(&ps, "out of memory");
        return NULL;
    }
    gi->pub.base = buf;
    gi->pub.file_size = len;
    if (parse(&ps, gi)) {
        free_parts(&gi->pub);
        free(gi);
        return NULL;
    }
    return &gi->pub;
}

hc_gguf *hc_gguf_open_memory(const void *buf, size_t len, char *err, size_t errlen)
{
    static const uint8_t empty[1];
    return open_buffer(buf ? buf : empty, buf ? len : 0, "<memory>", err, errlen);
}

/* The whole file into huge-page memory (hugemem.h), in chunks so a signal
 * or a short read resumes where it stopped. */
static void *read_whole(parser *ps, int fd, uint64_t size, uint64_t *len,
                        hc_gguf_progress_fn progress, void *user)
{
    uint8_t *mem = hc_huge_alloc(size, len);
    if (!mem) {
        fail(ps, "cannot allocate %" PRIu64 " bytes to read the file into: %s", size,
             strerror(errno));
        return NULL;
    }
    uint64_t done = 0;
    while (done < size) {
        const uint64_t chunk = size - done < (64u << 20) ? size - done : (64u << 20);
        ssize_t r = pread(fd, mem + done, (size_t)chunk, (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0)
                fail(ps, "read failed at byte %" PRIu64 ": %s", done, strerror(errno));
            else
                fail(ps, "file ended at byte %" PRIu64 " of %" PRIu64 " while reading it", done,
                     size);
            hc_huge_free(mem, *len);
            *len = 0;
            return NULL;
        }
        done += (uint64_t)r;
        if (progress)
            progress(user, done, size);
    }
    return mem;
}

/* How open_file holds the file. */
enum { OPEN_MAP, OPEN_READ, OPEN_MOVE };

static hc_gguf *open_file(const char *path, int how, hc_gguf_progress_fn progress, void *user,
                          char *err, size_t errlen)
{
    parser ps = {.file = path, .err = err, .errlen = errlen};
    const int resident = how == OPEN_READ;
    hc_gguf *g = NULL;
    hc_huge_move *move = NULL;
    void *map = MAP_FAILED;
    uint64_t mem_len = 0;
    struct stat st;
    uint64_t size = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before fstat
     * refuses it (reads of a regular file ignore the flag). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        fail(&ps, "cannot open: %s", strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        fail(&ps, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(&ps, "not a regular file");
        goto out;
    }
    size = (uint64_t)st.st_size;
    if (size == 0) {
        fail(&ps, "header: magic: file is empty");
        goto out;
    }
    if (size > SIZE_MAX) {
        fail(&ps, "file of %" PRIu64 " bytes is too large to map", size);
        goto out;
    }
    if (resident) {
        void *mem = read_whole(&ps, fd, size, &mem_len, progress, user);
        if (!mem)
            goto out;
        map = mem;
    } else if (how == OPEN_MOVE) {
        const uint8_t *at;
        if (!(move = hc_huge_move_start(fd, size, &at))) {
            fail(&ps, "cannot map %" PRIu64 " bytes: %s", size, strerror(errno));
            goto out;
        }
        /* The header is parsed from the mapping while the move goes on:
         * the bytes are the file's either way. */
        g = open_buffer(at, size, path, err, errlen);
        if (g) {
            g->mapped = 3;
            g->move = move;
            move = NULL;
        }
        goto out;
    } else {
        map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            fail(&ps, "cannot map %" PRIu64 " bytes: %s", size, strerror(errno));
            goto out;
        }
    }
    g = open_buffer(map, size, path, err, errlen);
    if (g) {
        g->mapped = resident ? 2 : 1;
        g->map_len = resident ? mem_len : size;
        map = MAP_FAILED; /* owned by g now */
    }
out:
    hc_huge_move_end(move);
    if (map != MAP_FAILED) {
        if (resident)
            hc_huge_free(map, mem_len);
        else
            munmap(map, (size_t)size);
    }
    if (fd >= 0)
        close(fd);
    return g;
}

hc_gguf *hc_gguf_open(const char *path, char *err, size_t errlen)
{
    return open_file(path, OPEN_MAP, NULL, NULL, err, errlen);
}

hc_gguf *hc_gguf_open_resident(const char *path, hc_gguf_progress_fn progress, void *user,
                               char *err, size_t errlen)
{
    return open_file(path, OPEN_READ, progress, user, err, errlen);
}

hc_gguf *hc_gguf_open_moving(const char *path, char *err, size_t errlen)
{
    return open_file(path, OPEN_MOVE, NULL, NULL, err, errlen);
}

uint64_t hc_gguf_move_wait(hc_gguf *g, int *error)
{
    int finished;
    *error = 0;
    if (!g || g->mapped != 3)
        return 0;
    hc_huge_move_wait(g->move);
    return hc_huge_move_state(g->move, &finished, error);
}

void hc_gguf_close(hc_gguf *g)
{
    if (!g)
        return;
    if (g->mapped == 1)
        munmap((void *)g->base, (size_t)g->map_len);
    else if (g->mapped == 2)
        hc_huge_free((void *)g->base, g->map_len);
    else if (g->mapped == 3)
        hc_huge_move_end(g->move);
    free_parts(g);
    free((gguf_impl *)g);
}

int hc_gguf_is_pwri(const hc_gguf *g)
{
    return g && !memcmp(g->magic, "PWRI", 4);
}

/* ---- lookups and typed getters ---------------------------------------------- */
int64_t hc_gguf_find_key(const hc_gguf *g, const char *key)
{
    if (!g || !key)
        return -1;
    const gguf_impl *gi = (const gguf_impl *)g;
    return index_find(&gi->kv_ix, g->kv, sizeof *g->kv, key, -1);
}

const hc_gguf_tensor *hc_gguf_find_tensor(const hc_gguf *g, const char *name)
{
    if (!g || !name)
        return NULL;
    const gguf_impl *gi = (const gguf_impl *)g;
    int64_t i = index_find(&gi->t_ix, g->tensors, sizeof *g->tensors, name, -1);
    return i < 0 ? NULL : &g->tensors[i];
}

static const hc_gguf_kv *get_kv(const hc_gguf *g, const char *key)
{
    int64_t i = hc_gguf_find_key(g, key);
    return i < 0 ? NULL : &g->kv[i];
}

/* An integer value as either signed or unsigned 64-bit; -1 if not integer. */
static int kv_integer(const hc_gguf_kv *kv, int *is_signed, int64_t *sv, uint64_t *uv)
{
    const uint8_t *p = kv->data;
    *is_signed = 0;
    switch (kv->type) {
    case HC_GGUF_U8: *uv = p[0]; return 0;
    case HC_GGUF_U16: *uv = ld16(p); return 0;
    case HC_GGUF_U32: *uv = ld32(p); return 0;
    case HC_GGUF_U64: *uv = ld64(p); return 0;
    default: break;
    }
    *is_signed = 1;
    switch (kv->type) {
    case HC_GGUF_I8: *sv = (int8_t)p[0]; return 0;
    case HC_GGUF_I16: *sv = (int16_t)ld16(p); return 0;
    case HC_GGUF_I32: *sv = (int32_t)ld32(p); return 0;
    case HC_GGUF_I64: *sv = (int64_t)ld64(p); return 0;
    default: return -1;
    }
}

int hc_gguf_get_u32(const hc_gguf *g, const char *key, uint32_t *out)
{
    const hc_gguf_kv *kv = get_kv(g, key);
    int is_signed;
    int64_t sv = 0;
    uint64_t uv = 0;
    if (!kv || kv_integer(kv, &is_signed, &sv, &uv))
        return -1;
    if (is_signed) {
        if (sv < 0 || sv > (int64_t)UINT32_MAX)
            return -1;
        *out = (uint32_t)sv;
    } else {
        if (uv > UINT32_MAX)
            return -1;
        *out = (uint32_t)uv;
    }
    return 0;
}

int hc_gguf_get_i64(const hc_gguf *g, const char *key, int64_t *out)
{
    const hc_gguf_kv *kv = get_kv(g, key);
    int is_signed;
    int64_t sv = 0;
    uint64_t uv = 0;
    if (!kv || kv_integer(kv, &is_signed, &sv, &uv))
        return -1;
    if (!is_signed) {
        if (uv > (uint64_t)INT64_MAX)
            return -1;
        sv = (int64_t)uv;
    }
    *out = sv;
    return 0;
}

int hc_gguf_get_f32(const hc_gguf *g, const char *key, float *out)
{
    const hc_gguf_kv *kv = get_kv(g, key);
    if (!kv)
        return -1;
    if (kv->type == HC_GGUF_F32) {
        uint32_t bits = ld32(kv->data);
        memcpy(out, &bits, sizeof *out);
        return 0;
    }
    if (kv->type == HC_GGUF_F64) {
        uint64_t bits = ld64(kv->data);
        double d;
        memcpy(&d, &bits, sizeof d);
        /* A finite double beyond float's range does not fit (and converting it
         * would be undefined behaviour). */
        if (isfinite(d) && fabs(d) > FLT_MAX)
            return -1;
        *out = (float)d;
        return 0;
    }
    return -1;
}

int hc_gguf_get_bool(const hc_gguf *g, const char *key, int *out)
{
    const hc_gguf_kv *kv = get_kv(g, key);
    if (!kv || kv->type != HC_GGUF_BOOL)
        return -1;
    *out = ((const uint8_t *)kv->data)[0] != 0;
    return 0;
}

int hc_gguf_get_str(const hc_gguf *g, const char *key, const char **s, uint64_t *len)
{
    const hc_gguf_kv *kv = get_kv(g, key);
    if (!kv || kv->type != HC_GGUF_STRING)
        return -1;
    *s = kv->str;
    *len = kv->str_len;
    return 0;
}

int hc_gguf_get_strbuf(const hc_gguf *g, const char *key, char *buf, size_t bufsize)
{
    const char *s;
    uint64_t len;
    if (!buf || !bufsize || hc_gguf_get_str(g, key, &s, &len))
        return -1;
    size_t n = len < bufsize - 1 ? (size_t)len : bufsize - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    return 0;
}

int hc_gguf_get_arr(const hc_gguf *g, const char *key, uint32_t *elem_type, uint64_t *n,
                    const void **data)
{
    const hc_gguf_kv *kv = get_kv(g, key);
    if (!kv || kv->type != HC_GGUF_ARRAY)
        return -1;
    if (elem_type)
        *elem_type = kv->arr_type;
    if (n)
        *n = kv->arr_n;
    if (data)
        *data = kv->data;
    return 0;
}

const char *hc_gguf_arr_str(const hc_gguf_kv *kv, uint64_t i, uint64_t *len)
{
    if (!kv || kv->type != HC_GGUF_ARRAY || kv->arr_type != HC_GGUF_STRING || i >= kv->arr_n ||
        !kv->str_offsets)
        return NULL;
    const uint8_t *p = (const uint8_t *)kv->data + kv->str_offsets[i];
    if (len)
        *len = ld64(p);
    return (const char *)p + 8;
}

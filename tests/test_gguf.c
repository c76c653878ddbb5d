/*
 * GGUF reader and writer.
 *
 * Known facts about the shipped files were taken with an independent
 * Python dump of the GGUF bytes (struct.unpack), not with this reader.
 * Malformed files are built byte by byte here (tbuf below), never with the
 * writer under test, and every malformed case has a valid twin built by the
 * same code that must open, so a "fails" result means the fault was seen.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "test_util.h"

/* ---- a tiny, independent GGUF byte builder ------------------------------- */
typedef struct tbuf {
    uint8_t *p;
    size_t len, cap;
} tbuf;

static void tb_put(tbuf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        ck_assert_ptr_nonnull(b->p);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void tb_u8(tbuf *b, uint8_t v) { tb_put(b, &v, 1); }
static void tb_u32(tbuf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    tb_put(b, x, 4);
}
static void tb_u64(tbuf *b, uint64_t v)
{
    tb_u32(b, (uint32_t)v);
    tb_u32(b, (uint32_t)(v >> 32));
}
static void tb_str(tbuf *b, const char *s)
{
    tb_u64(b, strlen(s));
    tb_put(b, s, strlen(s));
}
static void tb_key(tbuf *b, const char *key, uint32_t type)
{
    tb_str(b, key);
    tb_u32(b, type);
}
static void tb_tensor(tbuf *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                      uint32_t type, uint64_t offset)
{
    tb_str(b, name);
    tb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        tb_u64(b, ne[i]);
    tb_u32(b, type);
    tb_u64(b, offset);
}
static void tb_pad(tbuf *b, size_t a)
{
    while (b->len % a)
        tb_u8(b, 0);
}

static uint64_t walk(const hc_gguf *g);

/* Opens a copy of exactly `len` bytes, so that ASan sees any over-read, and
 * walks it if it opens.  Returns 1 if it opened. */
static int open_exact(const void *p, size_t len, char *err, size_t errlen)
{
    uint8_t *copy = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(copy);
    if (len)
        memcpy(copy, p, len);
    hc_gguf *g = hc_gguf_open_memory(copy, len, err, errlen);
    if (g) {
        walk(g);
        hc_gguf_close(g);
    }
    free(copy);
    return g != NULL;
}

/* ---- the mini file and its faults ---------------------------------------- */
enum fault {
    F_NONE,
    F_MAGIC,
    F_V1,
    F_V4,
    F_BIG_ENDIAN,
    F_NT_HUGE,
    F_NKV_HUGE,
    F_STR_PAST_END,
    F_KEY_PAST_END,
    F_EMPTY_KEY,
    F_VTYPE_UNKNOWN,
    F_ARR_OVERFLOW,
    F_ARR_PAST_END,
    F_STRARR_HUGE,
    F_NESTED_ARRAY,
    F_BOOL2,
    F_ALIGN0,
    F_ALIGN3,
    F_ALIGN_TYPE,
    F_DUP_KEY,
    F_NDIMS5,
    F_NDIMS0,
    F_NE_OVERFLOW,
    F_NE_HUGE,
    F_TYPE_UNKNOWN,
    F_TYPE_HUGE,
    F_ROW_NOT_BLOCK,
    F_OFFSET_PAST_END,
    F_OFFSET_WRAP,
    F_MISALIGNED,
    F_DUP_TENSOR,
    F_EMPTY_TENSOR_NAME,
    F_LONG_TENSOR_NAME,
    F_NUL_IN_NAME,
    F_DATA_TRUNC,
    F_COUNT
};

static const struct {
    const char *a, *b; /* both must appear in the error */
} k_expect[F_COUNT] = {
    [F_MAGIC] = {"header", "magic"},
    [F_V1] = {"header", "version 1 "},
    [F_V4] = {"header", "version 4 "},
    [F_BIG_ENDIAN] = {"version", "big-endian"},
    [F_NT_HUGE] = {"header", "n_tensors"},
    [F_NKV_HUGE] = {"header", "n_kv"},
    [F_STR_PAST_END] = {"general.architecture", "string value of length 1000000"},
    [F_KEY_PAST_END] = {"key #0", "name of length"},
    [F_EMPTY_KEY] = {"key #0", "empty name"},
    [F_VTYPE_UNKNOWN] = {"general.architecture", "unknown value type 13"},
    [F_ARR_OVERFLOW] = {"test.arr", "overflows"},
    [F_ARR_PAST_END] = {"test.arr", "runs past end of file"},
    [F_STRARR_HUGE] = {"test.strs", "array count"},
    [F_NESTED_ARRAY] = {"test.arr", "arrays of arrays"},
    [F_BOOL2] = {"test.flag", "bool value 2"},
    [F_ALIGN0] = {"general.alignment", "0 is not a nonzero power of two"},
    [F_ALIGN3] = {"general.alignment", "3 is not a nonzero power of two"},
    [F_ALIGN_TYPE] = {"general.alignment", "expected u32"},
    [F_DUP_KEY] = {"test.arr", "duplicate key"},
    [F_NDIMS5] = {"b.weight", "n_dims 5"},
    [F_NDIMS0] = {"b.weight", "n_dims 0"},
    [F_NE_OVERFLOW] = {"b.weight", "element count overflows"},
    [F_NE_HUGE] = {"b.weight", "ne[0]"},
    [F_TYPE_UNKNOWN] = {"b.weight", "unknown type id 4"},
    [F_TYPE_HUGE] = {"b.weight", "unknown type id 4294967295"},
    [F_ROW_NOT_BLOCK] = {"b.weight", "block size 32"},
    [F_OFFSET_PAST_END] = {"b.weight", "ends past end of file"},
    [F_OFFSET_WRAP] = {"b.weight", "ends past end of file"},
    [F_MISALIGNED] = {"b.weight", "not a multiple of the alignment 32"},
    [F_DUP_TENSOR] = {"a.weight", "duplicate tensor name"},
    [F_EMPTY_TENSOR_NAME] = {"tensor #1", "empty name"},
    [F_LONG_TENSOR_NAME] = {"tensor #1", "name length 300"},
    [F_NUL_IN_NAME] = {"tensor #1", "NUL"},
    [F_DATA_TRUNC] = {"b.weight", "ends past end of file"},
};

/* A small valid file: 6 keys (string, u32 alignment, u32 array, string
 * array, bool, i8) and tensors a.weight F32[8] @0, b.weight Q8_0[32,2] @32
 * (68 bytes), data padded to 128 bytes.  `f` injects one fault. */
static tbuf mini(enum fault f)
{
    tbuf b = {0};
    uint64_t nt = f == F_DUP_TENSOR ? 3 : 2, nkv = f == F_DUP_KEY ? 7 : 6;
    tb_put(&b, f == F_MAGIC ? "GGUX" : "GGUF", 4);
    tb_u32(&b, f == F_V1 ? 1 : f == F_V4 ? 4 : f == F_BIG_ENDIAN ? 0x03000000u : 3);
    tb_u64(&b, f == F_NT_HUGE ? 1ull << 40 : nt);
    tb_u64(&b, f == F_NKV_HUGE ? UINT64_MAX : nkv);

    if (f == F_KEY_PAST_END) {
        tb_u64(&b, 5000);
    } else {
        tb_key(&b, f == F_EMPTY_KEY ? "" : "general.architecture",
               f == F_VTYPE_UNKNOWN ? 13 : 8);
        if (f == F_STR_PAST_END)
            tb_u64(&b, 1000000);
        else
            tb_str(&b, "llama");
    }

    tb_key(&b, "general.alignment", f == F_ALIGN_TYPE ? 10 : 4);
    uint32_t align = f == F_ALIGN0 ? 0 : f == F_ALIGN3 ? 3 : 32;
    if (f == F_ALIGN_TYPE)
        tb_u64(&b, 32);
    else
        tb_u32(&b, align);

    tb_key(&b, "test.arr", 9);
    if (f == F_ARR_OVERFLOW) {
        tb_u32(&b, 10); /* u64 elements */
        tb_u64(&b, (1ull << 61) + 1);
    } else if (f == F_NESTED_ARRAY) {
        tb_u32(&b, 9);
        tb_u64(&b, 1);
    } else {
        tb_u32(&b, 4);
        tb_u64(&b, f == F_ARR_PAST_END ? 100000 : 3);
        tb_u32(&b, 1);
        tb_u32(&b, 2);
        tb_u32(&b, 3);
    }

    tb_key(&b, "test.strs", 9);
    tb_u32(&b, 8);
    tb_u64(&b, f == F_STRARR_HUGE ? 1ull << 59 : 2);
    tb_str(&b, "a");
    tb_str(&b, "bc");

    tb_key(&b, "test.flag", 7);
    tb_u8(&b, f == F_BOOL2 ? 2 : 1);

    tb_key(&b, "test.neg", 1);
    tb_u8(&b, 0xff); /* i8 -1 */

    if (f == F_DUP_KEY) {
        tb_key(&b, "test.arr", 4);
        tb_u32(&b, 9);
    }

    uint64_t ne_a[1] = {8};
    tb_tensor(&b, "a.weight", 1, ne_a, 0, 0);

    uint64_t ne_b[5] = {32, 2, 1, 1, 1};
    uint32_t nd_b = 2, type_b = 8;
    uint64_t off_b = 32;
    const char *name_b = "b.weight";
    char long_name[301];
    switch (f) {
    case F_NDIMS5: nd_b = 5; break;
    case F_NDIMS0: nd_b = 0; break;
    case F_NE_OVERFLOW: ne_b[0] = 1ull << 32; ne_b[1] = 1ull << 32; break;
    case F_NE_HUGE: ne_b[0] = 1ull << 63; break;
    case F_TYPE_UNKNOWN: type_b = 4; break;
    case F_TYPE_HUGE: type_b = UINT32_MAX; break;
    case F_ROW_NOT_BLOCK: ne_b[0] = 40; break;
    case F_OFFSET_PAST_END: off_b = 1u << 20; break;
    case F_OFFSET_WRAP: off_b = UINT64_MAX - 31; break;
    case F_MISALIGNED: off_b = 48; break;
    case F_EMPTY_TENSOR_NAME: name_b = ""; break;
    case F_LONG_TENSOR_NAME:
        memset(long_name, 'x', 300);
        long_name[300] = 0;
        name_b = long_name;
        break;
    default: break;
    }
    if (f == F_NUL_IN_NAME) {
        tb_u64(&b, 3);
        tb_put(&b, "b\0c", 3);
        tb_u32(&b, nd_b);
        for (uint32_t i = 0; i < nd_b; i++)
            tb_u64(&b, ne_b[i]);
        tb_u32(&b, type_b);
        tb_u64(&b, off_b);
    } else {
        tb_tensor(&b, name_b, nd_b, ne_b, type_b, off_b);
    }
    if (f == F_DUP_TENSOR)
        tb_tensor(&b, "a.weight", 1, ne_a, 0, 128);
    tb_pad(&b, 32);
    size_t data_start = b.len;
    for (int i = 0; i < (f == F_DUP_TENSOR ? 160 : 128); i++)
        tb_u8(&b, (uint8_t)(i * 7 + 1));
    if (f == F_DATA_TRUNC)
        b.len = data_start + 99; /* b.weight needs [32, 100) */
    return b;
}

static void expect_fault(enum fault f)
{
    char err[512] = "";
    tbuf b = mini(f);
    ck_assert_msg(!open_exact(b.p, b.len, err, sizeof err), "fault %d: file opened", (int)f);
    ck_assert_msg(strncmp(err, "<memory>: ", 10) == 0, "fault %d: '%s'", (int)f, err);
    ck_assert_msg(strstr(err, k_expect[f].a) && strstr(err, k_expect[f].b),
                  "fault %d: error '%s' lacks '%s' / '%s'", (int)f, err, k_expect[f].a,
                  k_expect[f].b);
    ck_assert_msg(!strchr(err, '\n'), "fault %d: multi-line error", (int)f);
    ck_assert_str_eq(hc_last_error(), err);
    free(b.p);
}

/* ---- walking a file through every accessor (crash/ASan coverage) ---------- */
static uint64_t walk(const hc_gguf *g)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const hc_gguf_kv *kv = &g->kv[i];
        uint32_t u;
        int64_t s;
        float f;
        int bo;
        const char *str;
        uint64_t len, n;
        uint32_t et;
        const void *data;
        char buf[16];
        ck_assert_int_eq(hc_gguf_find_key(g, kv->key), (int64_t)i);
        if (!hc_gguf_get_u32(g, kv->key, &u))
            acc += u;
        if (!hc_gguf_get_i64(g, kv->key, &s))
            acc += (uint64_t)s;
        if (!hc_gguf_get_f32(g, kv->key, &f))
            acc += (uint64_t)(f == f);
        if (!hc_gguf_get_bool(g, kv->key, &bo))
            acc += (uint64_t)bo;
        if (!hc_gguf_get_str(g, kv->key, &str, &len) && len)
            acc += (uint8_t)str[len - 1];
        hc_gguf_get_strbuf(g, kv->key, buf, sizeof buf);
        if (!hc_gguf_get_arr(g, kv->key, &et, &n, &data)) {
            if (et == HC_GGUF_STRING) {
                for (uint64_t j = 0; j < n; j++) {
                    const char *e = hc_gguf_arr_str(kv, j, &len);
                    ck_assert_ptr_nonnull(e);
                    if (len)
                        acc += (uint8_t)e[len - 1];
                }
                ck_assert_ptr_null(hc_gguf_arr_str(kv, n, &len));
            } else if (n) {
                acc += ((const uint8_t *)data)[0];
            }
        }
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        ck_assert_ptr_eq(hc_gguf_find_tensor(g, t->name), t);
        if (t->n_bytes)
            acc += ((const uint8_t *)t->data)[0] + ((const uint8_t *)t->data)[t->n_bytes - 1];
        acc += strlen(hc_ggml_type_name(t->type));
    }
    return acc;
}

/* ---- real files ------------------------------------------------------------- */
static hc_gguf *open_path(const char *path)
{
    char err[512] = "";
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s: %s", path, err);
    return g;
}

/* The resident copy holds the file's bytes, 2 MiB aligned, with the same
 * parse. */
START_TEST(test_resident_equals_mapped)
{
    char err[512] = "";
    const char *path = hc_test_path(HC_MODELS_DIR, "relu2M.gguf");
    hc_gguf *m = open_path(path);
    hc_gguf *r = hc_gguf_open_resident(path, NULL, NULL, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert_int_eq(m->mapped, 1);
    ck_assert_int_eq(r->mapped, 2);
    ck_assert_uint_eq((uintptr_t)r->base % (2u << 20), 0);
    ck_assert_uint_ge(r->map_len, r->file_size);
    ck_assert_uint_eq(r->file_size, m->file_size);
    ck_assert_int_eq(memcmp(r->base, m->base, (size_t)m->file_size), 0);
    ck_assert_uint_eq(r->n_kv, m->n_kv);
    ck_assert_uint_eq(r->n_tensors, m->n_tensors);
    for (uint64_t i = 0; i < m->n_tensors; i++) {
        ck_assert_str_eq(r->tensors[i].name, m->tensors[i].name);
        ck_assert_uint_eq(r->tensors[i].offset, m->tensors[i].offset);
        ck_assert_int_eq((const uint8_t *)r->tensors[i].data - r->base,
                         (const uint8_t *)m->tensors[i].data - m->base);
    }
    hc_gguf_close(r);
    hc_gguf_close(m);
    ck_assert_ptr_null(hc_gguf_open_resident("/nonexistent/x.gguf", NULL, NULL, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.gguf: cannot open"));
}
END_TEST

/* Whether [p, p + len) is mapped from no file (anonymous memory) in
 * /proc/self/maps, and the huge pages smaps counts in it. */
static int anonymous_range(const void *p, uint64_t len, uint64_t *huge_kib)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int anon = 1, in = 0, seen = 0;
    unsigned long long a, b, inode;
    *huge_kib = 0;
    ck_assert(f != NULL);
    while (fgets(line, sizeof line, f)) {
        unsigned long long kib;
        if (sscanf(line, "%llx-%llx %*s %*s %*s %llu", &a, &b, &inode) == 3) {
            in = b > (uintptr_t)p && a < (uintptr_t)p + len;
            if (in) {
                seen = 1;
                anon &= inode == 0;
            }
        } else if (in && sscanf(line, "AnonHugePages: %llu kB", &kib) == 1) {
            *huge_kib += kib;
        }
    }
    fclose(f);
    return seen && anon;
}

/* The moving open parses as the mapped one, reads the file's bytes at
 * every moment, and ends with all of it in anonymous memory at the same
 * addresses. */
START_TEST(test_moving_equals_mapped)
{
    char err[512] = "";
    const char *path = hc_test_path(HC_MODELS_DIR, "relu2M.powerinfer.gguf");
    hc_gguf *m = open_path(path);
    hc_gguf *v = hc_gguf_open_moving(path, err, sizeof err);
    ck_assert_msg(v != NULL, "%s", err);
    ck_assert_int_eq(v->mapped, 3);
    ck_assert_uint_eq((uintptr_t)v->base % (2u << 20), 0);
    ck_assert_uint_eq(v->file_size, m->file_size);
    /* While it moves (the first bytes may be moved or not: the same). */
    ck_assert_int_eq(memcmp(v->base, m->base, (size_t)m->file_size), 0);
    ck_assert_uint_eq(v->n_tensors, m->n_tensors);
    for (uint64_t i = 0; i < m->n_tensors; i++)
        ck_assert_int_eq((const uint8_t *)v->tensors[i].data - v->base,
                         (const uint8_t *)m->tensors[i].data - m->base);
    int error = -1;
    const uint64_t moved = hc_gguf_move_wait(v, &error);
    ck_assert_int_eq(error, 0);
    ck_assert_uint_eq(moved, (v->file_size + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1));
    ck_assert_int_eq(memcmp(v->base, m->base, (size_t)m->file_size), 0);
    uint64_t huge = 0;
    ck_assert_msg(anonymous_range(v->base, v->file_size, &huge),
                  "the moved range is still mapped from a file");
    printf("moving open: %llu bytes moved, %llu KiB of them in huge pages\n",
           (unsigned long long)moved, (unsigned long long)huge);
    hc_gguf_close(v);
    /* The mapped file is no anonymous memory: the check can tell. */
    ck_assert(!anonymous_range(m->base, m->file_size, &huge));
    hc_gguf_close(m);
    /* A moving open that fails parses nothing and leaks nothing. */
    ck_assert_ptr_null(hc_gguf_open_moving("/nonexistent/x.gguf", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.gguf: cannot open"));
}
END_TEST

START_TEST(test_stories260k)
{
    hc_gguf *g = open_path(hc_test_path(HC_MODELS_DIR, "stories260K.gguf"));
    ck_assert_str_eq(g->magic, "GGUF");
    ck_assert_uint_eq(g->version, 3);
    ck_assert_uint_eq(g->n_tensors, 48);
    ck_assert_uint_eq(g->n_kv, 19);
    ck_assert_uint_eq(g->alignment, 32);
    ck_assert_uint_eq(g->data_offset, 14176); /* tensor infos end at 14152 */
    ck_assert_uint_eq(g->file_size, 1185376);
    ck_assert_int_eq(hc_gguf_is_pwri(g), 0);

    uint32_t u = 0;
    ck_assert_int_eq(hc_gguf_get_u32(g, "llama.embedding_length", &u), 0);
    ck_assert_uint_eq(u, 64);
    ck_assert_int_eq(hc_gguf_get_u32(g, "llama.feed_forward_length", &u), 0);
    ck_assert_uint_eq(u, 172);
    ck_assert_int_eq(hc_gguf_get_u32(g, "llama.attention.head_count_kv", &u), 0);
    ck_assert_uint_eq(u, 4);
    /* u32 4294967295: fits u32 and i64. */
    int64_t s = 0;
    ck_assert_int_eq(hc_gguf_get_u32(g, "tokenizer.ggml.padding_token_id", &u), 0);
    ck_assert_uint_eq(u, 4294967295u);
    ck_assert_int_eq(hc_gguf_get_i64(g, "tokenizer.ggml.padding_token_id", &s), 0);
    ck_assert_int_eq(s, 4294967295ll);
    float f = 0;
    ck_assert_int_eq(hc_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f), 0);
    ck_assert_float_eq(f, 1e-5f);
    ck_assert_int_eq(hc_gguf_get_f32(g, "llama.embedding_length", &f), -1); /* u32, not float */
    ck_assert_int_eq(hc_gguf_get_u32(g, "llama.attention.layer_norm_rms_epsilon", &u), -1);
    ck_assert_int_eq(hc_gguf_get_u32(g, "no.such.key", &u), -1);
    ck_assert_int_eq(hc_gguf_find_key(g, "no.such.key"), -1);
    ck_assert_int_eq(hc_gguf_find_key(g, "tokenizer.ggml.tokens"), 0);
    ck_assert_int_eq(hc_gguf_find_key(g, "llama.attention.layer_norm_rms_epsilon"), 18);

    const char *str;
    uint64_t len;
    ck_assert_int_eq(hc_gguf_get_str(g, "general.architecture", &str, &len), 0);
    ck_assert_uint_eq(len, 5);
    ck_assert_int_eq(memcmp(str, "llama", 5), 0);
    char buf[4];
    ck_assert_int_eq(hc_gguf_get_strbuf(g, "general.architecture", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "lla");
    ck_assert_int_eq(hc_gguf_get_str(g, "llama.block_count", &str, &len), -1);

    uint32_t et;
    uint64_t n;
    const void *data;
    ck_assert_int_eq(hc_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, &data), 0);
    ck_assert_uint_eq(et, HC_GGUF_STRING);
    ck_assert_uint_eq(n, 512);
    const hc_gguf_kv *tok = &g->kv[0];
    const char *e = hc_gguf_arr_str(tok, 1, &len);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(memcmp(e, "<s>", 3), 0);
    e = hc_gguf_arr_str(tok, 0, &len);
    ck_assert_int_eq(memcmp(e, "<unk>", 5), 0);
    ck_assert_ptr_null(hc_gguf_arr_str(tok, 512, &len));
    ck_assert_int_eq(hc_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n, &data), 0);
    ck_assert_uint_eq(et, HC_GGUF_I32);
    ck_assert_uint_eq(n, 512);
    int32_t tt[3];
    memcpy(tt, data, sizeof tt);
    ck_assert_int_eq(tt[0], 2);
    ck_assert_int_eq(tt[1], 3);
    ck_assert_int_eq(hc_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n, &data), 0);
    ck_assert_uint_eq(et, HC_GGUF_F32);

    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, "token_embd.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->n_dims, 2);
    ck_assert_uint_eq(t->ne[0], 64);
    ck_assert_uint_eq(t->ne[1], 512);
    ck_assert_uint_eq(t->ne[2], 1);
    ck_assert_uint_eq(t->type, HC_TYPE_F32);
    ck_assert_uint_eq(t->n_elements, 64 * 512);
    ck_assert_uint_eq(t->n_bytes, 64 * 512 * 4);
    ck_assert_uint_eq(t->offset, 0);
    ck_assert_ptr_eq(t->data, g->base + 14176);
    float first;
    memcpy(&first, t->data, 4);
    ck_assert_float_eq_tol(first, -0.29474878f, 1e-7f);
    t = hc_gguf_find_tensor(g, "blk.0.ffn_down.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->ne[0], 172);
    ck_assert_uint_eq(t->ne[1], 64);
    t = hc_gguf_find_tensor(g, "blk.4.ffn_norm.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->n_dims, 1);
    ck_assert_uint_eq(t->offset, 1170944);
    ck_assert_uint_eq(g->data_offset + t->offset + t->n_bytes, g->file_size);
    ck_assert_ptr_null(hc_gguf_find_tensor(g, "token_embd"));
    walk(g);
    hc_gguf_close(g);
}
END_TEST

START_TEST(test_relu2m_reglu1m)
{
    hc_gguf *g = open_path(hc_test_path(HC_MODELS_DIR, "relu2M.gguf"));
    ck_assert_uint_eq(g->n_tensors, 57);
    ck_assert_uint_eq(g->n_kv, 20);
    ck_assert_uint_eq(g->data_offset, 96768);
    float f = 0;
    ck_assert_int_eq(hc_gguf_get_f32(g, "llama.ffn_gate_shift", &f), 0);
    ck_assert_float_eq(f, 0.25f);
    char buf[16];
    ck_assert_int_eq(hc_gguf_get_strbuf(g, "llama.ffn_act", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "relu");
    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, "blk.0.attn_q.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->offset, 4194816);
    ck_assert_uint_eq(t->n_bytes, 65536);
    ck_assert_ptr_eq(t->data, g->base + 96768 + 4194816);
    uint64_t n;
    ck_assert_int_eq(hc_gguf_get_arr(g, "tokenizer.ggml.tokens", NULL, &n, NULL), 0);
    ck_assert_uint_eq(n, 4096);
    walk(g);
    hc_gguf_close(g);

    g = open_path(hc_test_path(HC_MODELS_DIR, "reglu1M.gguf"));
    ck_assert_uint_eq(g->n_tensors, 48);
    ck_assert_uint_eq(g->n_kv, 19);
    ck_assert_uint_eq(g->data_offset, 14144);
    uint32_t u;
    ck_assert_int_eq(hc_gguf_get_u32(g, "llama.feed_forward_length", &u), 0);
    ck_assert_uint_eq(u, 1024);
    ck_assert_int_eq(hc_gguf_get_u32(g, "general.file_type", &u), 0);
    ck_assert_uint_eq(u, 0);
    t = hc_gguf_find_tensor(g, "blk.0.ffn_up.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->ne[0], 64);
    ck_assert_uint_eq(t->ne[1], 1024);
    walk(g);
    hc_gguf_close(g);
}
END_TEST

START_TEST(test_vocab_only)
{
    hc_gguf *g = open_path(hc_test_path(HC_TEST_DATA, "tokenizer/ggml-vocab-llama-spm.gguf"));
    ck_assert_uint_eq(g->n_tensors, 0);
    ck_assert_uint_eq(g->n_kv, 22);
    uint32_t et;
    uint64_t n, len;
    ck_assert_int_eq(hc_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n, NULL), 0);
    ck_assert_uint_eq(et, HC_GGUF_STRING);
    ck_assert_uint_eq(n, 32000);
    const hc_gguf_kv *kv = &g->kv[hc_gguf_find_key(g, "tokenizer.ggml.tokens")];
    const char *e = hc_gguf_arr_str(kv, 2, &len);
    ck_assert_int_eq((int)len, 4);
    ck_assert_int_eq(memcmp(e, "</s>", 4), 0);
    int b = -1;
    ck_assert_int_eq(hc_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b), 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(hc_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b), 0);
    ck_assert_int_eq(b, 0);
    ck_assert_int_eq(hc_gguf_get_bool(g, "llama.vocab_size", &b), -1);
    uint32_t u;
    ck_assert_int_eq(hc_gguf_get_u32(g, "llama.vocab_size", &u), 0);
    ck_assert_uint_eq(u, 32000);
    walk(g);
    hc_gguf_close(g);
}
END_TEST

START_TEST(test_type_table)
{
    /* Block layouts from ggml-common.h's static_asserts. */
    static const struct {
        uint32_t id, blck, size;
        const char *name;
    } k[] = {{0, 1, 4, "f32"},      {1, 1, 2, "f16"},       {2, 32, 18, "q4_0"},
             {3, 32, 20, "q4_1"},   {6, 32, 22, "q5_0"},    {7, 32, 24, "q5_1"},
             {8, 32, 34, "q8_0"},   {9, 32, 36, "q8_1"},    {10, 256, 84, "q2_K"},
             {11, 256, 110, "q3_K"}, {12, 256, 144, "q4_K"}, {13, 256, 176, "q5_K"},
             {14, 256, 210, "q6_K"}, {15, 256, 292, "q8_K"}, {16, 256, 66, "iq2_xxs"},
             {17, 256, 74, "iq2_xs"}, {18, 256, 98, "iq3_xxs"}, {19, 256, 50, "iq1_s"},
             {20, 32, 18, "iq4_nl"}, {21, 256, 110, "iq3_s"}, {22, 256, 82, "iq2_s"},
             {23, 256, 136, "iq4_xs"}, {24, 1, 1, "i8"},     {25, 1, 2, "i16"},
             {26, 1, 4, "i32"},     {27, 1, 8, "i64"},      {28, 1, 8, "f64"},
             {29, 256, 56, "iq1_m"}, {30, 1, 2, "bf16"},    {34, 256, 54, "tq1_0"},
             {35, 256, 66, "tq2_0"}, {39, 32, 17, "mxfp4"}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        ck_assert_uint_eq(hc_ggml_block_size(k[i].id), k[i].blck);
        ck_assert_uint_eq(hc_ggml_type_size(k[i].id), k[i].size);
        ck_assert_str_eq(hc_ggml_type_name(k[i].id), k[i].name);
    }
    static const uint32_t unknown[] = {4, 5, 40, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        ck_assert_uint_eq(hc_ggml_block_size(unknown[i]), 0);
        ck_assert_uint_eq(hc_ggml_type_size(unknown[i]), 0);
    }
    ck_assert_str_eq(hc_ggml_type_name(4), "type4");
    ck_assert_str_eq(hc_ggml_type_name(UINT32_MAX), "type4294967295");
}
END_TEST

/* ---- malformed inputs --------------------------------------------------------- */
START_TEST(test_mini_valid)
{
    char err[256] = "";
    tbuf b = mini(F_NONE);
    hc_gguf *g = hc_gguf_open_memory(b.p, b.len, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    ck_assert_uint_eq(g->n_kv, 6);
    ck_assert_uint_eq(g->n_tensors, 2);
    uint32_t u;
    int64_t s;
    ck_assert_int_eq(hc_gguf_get_u32(g, "test.neg", &u), -1); /* i8 -1 does not fit u32 */
    ck_assert_int_eq(hc_gguf_get_i64(g, "test.neg", &s), 0);
    ck_assert_int_eq(s, -1);
    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, "b.weight");
    ck_assert_uint_eq(t->type, HC_TYPE_Q8_0);
    ck_assert_uint_eq(t->n_bytes, 68);
    ck_assert_uint_eq(g->data_offset % 32, 0);
    ck_assert_ptr_eq(t->data, b.p + g->data_offset + 32);
    walk(g);
    hc_gguf_close(g);
    free(b.p);
}
END_TEST

START_TEST(test_faults)
{
    expect_fault((enum fault)_i);
}
END_TEST

START_TEST(test_fault_from_file)
{
    /* Through hc_gguf_open, the message names the file. */
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/offset-past-end.gguf", hc_test_tmpdir());
    tbuf b = mini(F_OFFSET_PAST_END);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b.p, 1, b.len, f), b.len);
    fclose(f);
    ck_assert_ptr_null(hc_gguf_open(path, err, sizeof err));
    ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "tensor 'b.weight' (#1): data ["));
    /* Read into memory instead of mapped: the same verdict, word for word. */
    char err2[512] = "";
    ck_assert_ptr_null(hc_gguf_open_resident(path, NULL, NULL, err2, sizeof err2));
    ck_assert_str_eq(err2, err);
    /* err may be NULL; the message still lands in hc_last_error(). */
    ck_assert_ptr_null(hc_gguf_open(path, NULL, 0));
    ck_assert_str_eq(hc_last_error(), err);
    /* A tiny err buffer is never overrun. */
    char small[8];
    memset(small, 'z', sizeof small);
    ck_assert_ptr_null(hc_gguf_open(path, small, 5));
    ck_assert_uint_eq(strlen(small), 4);
    unlink(path);
    free(b.p);

    ck_assert_ptr_null(hc_gguf_open("/nonexistent/x.gguf", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.gguf: cannot open"));
    ck_assert_ptr_null(hc_gguf_open(hc_test_tmpdir(), err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
    snprintf(path, sizeof path, "%s/empty.gguf", hc_test_tmpdir());
    f = fopen(path, "wb");
    fclose(f);
    ck_assert_ptr_null(hc_gguf_open(path, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "empty"));
    unlink(path);
    ck_assert_ptr_null(hc_gguf_open_memory(NULL, 0, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "magic"));
}
END_TEST

/* Every prefix of stories260K's header + metadata + tensor infos (and the
 * padding up to the data section) must fail cleanly; then the data section. */
START_TEST(test_truncations)
{
    size_t len = 0;
    char *file = hc_test_read_file(hc_test_path(HC_MODELS_DIR, "stories260K.gguf"), &len);
    ck_assert_ptr_nonnull(file);
    ck_assert_uint_eq(len, 1185376);
    char err[512];
    for (size_t n = 0; n <= 14176; n++) {
        err[0] = 0;
        ck_assert_msg(!open_exact(file, n, err, sizeof err), "prefix %zu opened", n);
        ck_assert_msg(err[0] && !strchr(err, '\n'), "prefix %zu: error '%s'", n, err);
        if (n >= 24 && n < 14152)
            ck_assert_msg(strstr(err, "runs past end of file") || strstr(err, "implausible") ||
                              strstr(err, "cannot fit"),
                          "prefix %zu: %s", n, err);
    }
    /* Between the last tensor info and the data section. */
    open_exact(file, 14160, err, sizeof err);
    ck_assert_msg(strstr(err, "data section: starts at offset 14176"), "%s", err);
    /* The data section itself: the last tensor (in file order) loses bytes. */
    static const size_t cut[] = {14176, 14177, 100000, 1185376 - 256, 1185375};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        ck_assert(!open_exact(file, cut[i], err, sizeof err));
        ck_assert_msg(strstr(err, "ends past end of file"), "cut %zu: %s", cut[i], err);
    }
    open_exact(file, 1185375, err, sizeof err);
    ck_assert_msg(strstr(err, "tensor 'blk.4.ffn_norm.weight' (#"), "%s", err);
    ck_assert_msg(strstr(err, "(1185375 bytes)"), "%s", err);
    ck_assert(open_exact(file, len, err, sizeof err));
    free(file);
}
END_TEST

/* Deterministic mutations of the mini file and of stories260K's header: may
 * open or fail, must never crash (ASan/UBSan builds check the "never"). */
START_TEST(test_mutations)
{
    size_t slen = 0;
    char *stories = hc_test_read_file(hc_test_path(HC_MODELS_DIR, "stories260K.gguf"), &slen);
    ck_assert_ptr_nonnull(stories);
    tbuf m = mini(F_NONE);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char err[256];
    int opened = 0;
    for (int it = 0; it < 4000; it++) {
        int use_stories = it & 1;
        size_t len = use_stories ? 14176 + 4096 : m.len;
        uint8_t *buf = malloc(len);
        memcpy(buf, use_stories ? (const uint8_t *)stories : m.p, len);
        int nmut = 1 + (int)(x % 4);
        for (int k = 0; k < nmut; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = (size_t)(x % len);
            switch ((x >> 32) % 4) {
            case 0: buf[at] ^= (uint8_t)(1u << ((x >> 40) % 8)); break;
            case 1: buf[at] = (uint8_t)(x >> 48); break;
            case 2: buf[at] = 0xff; break;
            default: len = at + 1; break; /* truncate */
            }
        }
        hc_gguf *g = hc_gguf_open_memory(buf, len, err, sizeof err);
        if (g) {
            opened++;
            walk(g);
            hc_gguf_close(g);
        } else {
            ck_assert(err[0] != 0);
        }
        free(buf);
    }
    ck_assert_int_gt(opened, 0); /* some mutations are harmless (e.g. in data) */
    free(m.p);
    free(stories);
}
END_TEST

/* ---- writer ----------------------------------------------------------------- */
static void fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

/* The writer's bytes for a trivial file must equal a hand-built encoding. */
START_TEST(test_writer_bytes)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/tiny.gguf", hc_test_tmpdir());
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(hc_gguf_writer_set_u32(w, "a", 7), 0);
    ck_assert_int_eq(hc_gguf_writer_set_str(w, "s", "xy"), 0);
    uint64_t ne[1] = {2};
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "t", 1, ne, HC_TYPE_F32), 0);
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
    float v[2] = {1.5f, -2.0f};
    ck_assert_int_eq(hc_gguf_writer_write_data(w, v, sizeof v, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), 0);
    hc_gguf_writer_free(w);

    tbuf b = {0};
    tb_put(&b, "GGUF", 4);
    tb_u32(&b, 3);
    tb_u64(&b, 1);
    tb_u64(&b, 2);
    tb_key(&b, "a", 4);
    tb_u32(&b, 7);
    tb_key(&b, "s", 8);
    tb_str(&b, "xy");
    tb_tensor(&b, "t", 1, ne, 0, 0);
    tb_pad(&b, 32);
    tb_put(&b, v, sizeof v);
    tb_pad(&b, 32);
    size_t len = 0;
    char *got = hc_test_read_file(path, &len);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(len, b.len);
    ck_assert_int_eq(memcmp(got, b.p, len), 0);
    free(got);
    free(b.p);
    unlink(path);
}
END_TEST

typedef struct wt {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;
    size_t n_bytes;
} wt;

static void roundtrip(const char *magic, uint32_t alignment)
{
    char path[512], tmp[520], err[256];
    snprintf(path, sizeof path, "%s/rt-%s-%u.gguf", hc_test_tmpdir(), magic, alignment);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    hc_gguf *src = open_path(hc_test_path(HC_MODELS_DIR, "stories260K.gguf"));
    hc_gguf_writer *w = hc_gguf_writer_new(magic, 3, alignment);
    ck_assert_ptr_nonnull(w);

    /* One key per scalar type, with values that stress sign and width. */
    uint8_t v_u8 = 250;
    int8_t v_i8 = -100;
    uint16_t v_u16 = 65000;
    int16_t v_i16 = -30000;
    uint32_t v_u32 = 4000000000u;
    int32_t v_i32 = -2000000000;
    float v_f32 = 3.25f;
    uint8_t v_bool = 1;
    uint64_t v_u64 = 18000000000000000000ull;
    int64_t v_i64 = -9000000000000000000ll;
    double v_f64 = -1.0 / 3.0;
    const struct {
        const char *key;
        uint32_t type;
        const void *v;
        size_t size;
    } sc[] = {{"t.u8", HC_GGUF_U8, &v_u8, 1},     {"t.i8", HC_GGUF_I8, &v_i8, 1},
              {"t.u16", HC_GGUF_U16, &v_u16, 2},  {"t.i16", HC_GGUF_I16, &v_i16, 2},
              {"t.u32", HC_GGUF_U32, &v_u32, 4},  {"t.i32", HC_GGUF_I32, &v_i32, 4},
              {"t.f32", HC_GGUF_F32, &v_f32, 4},  {"t.bool", HC_GGUF_BOOL, &v_bool, 1},
              {"t.u64", HC_GGUF_U64, &v_u64, 8},  {"t.i64", HC_GGUF_I64, &v_i64, 8},
              {"t.f64", HC_GGUF_F64, &v_f64, 8}};
    const size_t n_sc = sizeof sc / sizeof sc[0];
    ck_assert_int_eq(hc_gguf_writer_set_u32(w, "t.u8", 1), 0); /* replaced below */
    for (size_t i = 0; i < n_sc; i++)
        ck_assert_int_eq(hc_gguf_writer_set_scalar(w, sc[i].key, sc[i].type, sc[i].v), 0);
    ck_assert_int_eq(hc_gguf_writer_set_str(w, "t.str", "hello, gguf"), 0);
    ck_assert_int_eq(hc_gguf_writer_set_str(w, "t.empty", ""), 0);
    int16_t arr_i16[5] = {-1, 2, -3, 4, -32768};
    double arr_f64[3] = {0.5, -0.25, 1e300};
    ck_assert_int_eq(hc_gguf_writer_set_arr(w, "t.arr_i16", HC_GGUF_I16, 5, arr_i16), 0);
    ck_assert_int_eq(hc_gguf_writer_set_arr(w, "t.arr_f64", HC_GGUF_F64, 3, arr_f64), 0);
    ck_assert_int_eq(hc_gguf_writer_set_arr(w, "t.arr_empty", HC_GGUF_U32, 0, NULL), 0);
    const char *strs[3] = {"one", "", "three"};
    ck_assert_int_eq(hc_gguf_writer_set_str_arr(w, "t.strs", 3, strs), 0);
    /* Copy every key of a real file (string arrays, f32 arrays, ...). */
    for (uint64_t i = 0; i < src->n_kv; i++)
        ck_assert_int_eq(hc_gguf_writer_copy_kv(w, &src->kv[i]), 0);
    /* Replacing keeps one key, with the new value and type. */
    ck_assert_int_eq(hc_gguf_writer_set_str(w, "general.name", "renamed"), 0);
    ck_assert_int_eq(hc_gguf_writer_set_f32(w, "llama.block_count", 5.5f), 0);
    /* Non-numeric array types are refused by set_arr. */
    ck_assert_int_eq(hc_gguf_writer_set_arr(w, "bad", HC_GGUF_STRING, 1, strs), -1);
    ck_assert_int_eq(hc_gguf_writer_set_scalar(w, "bad", HC_GGUF_ARRAY, &v_u8), -1);

    wt ts[] = {
        {"w.f32", 2, {8, 3, 1, 1}, HC_TYPE_F32, 8 * 3 * 4},
        {"w.empty", 1, {0, 1, 1, 1}, HC_TYPE_F32, 0},
        {"w.f16", 1, {5, 1, 1, 1}, HC_TYPE_F16, 10},
        {"w.q8", 3, {64, 2, 2, 1}, HC_TYPE_Q8_0, 2 * 34 * 4},
        {"w.q4", 4, {32, 1, 3, 2}, HC_TYPE_Q4_0, 18 * 6},
        {"w.q6k", 2, {256, 2, 1, 1}, 14, 210 * 2},
    };
    const size_t n_t = sizeof ts / sizeof ts[0];
    uint8_t *data[sizeof ts / sizeof ts[0]];
    for (size_t i = 0; i < n_t; i++) {
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, ts[i].name, ts[i].n_dims, ts[i].ne,
                                                   ts[i].type),
                         0);
        data[i] = malloc(ts[i].n_bytes + 1);
        fill_pattern(data[i], ts[i].n_bytes, (uint32_t)i + 1);
    }
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
    struct stat st;
    ck_assert_int_eq(stat(tmp, &st), 0);       /* writing goes to .tmp */
    ck_assert_int_ne(stat(path, &st), 0);      /* nothing under the final name yet */
    ck_assert_int_eq(hc_gguf_writer_set_u32(w, "late", 1), -1); /* header is out */
    for (size_t i = 0; i < n_t; i++) {
        /* Two pieces per tensor: streaming within a tensor works. */
        size_t half = ts[i].n_bytes / 2;
        ck_assert_int_eq(hc_gguf_writer_write_data(w, data[i], half, err, sizeof err), 0);
        ck_assert_int_eq(
            hc_gguf_writer_write_data(w, data[i] + half, ts[i].n_bytes - half, err, sizeof err),
            0);
    }
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
    ck_assert_int_ne(stat(tmp, &st), 0);

    hc_gguf *g = open_path(path);
    ck_assert_str_eq(g->magic, magic);
    ck_assert_int_eq(hc_gguf_is_pwri(g), !strcmp(magic, "PWRI"));
    ck_assert_uint_eq(g->version, 3);
    ck_assert_uint_eq(g->alignment, alignment);
    uint32_t al;
    if (alignment != 32) {
        ck_assert_int_eq(hc_gguf_get_u32(g, "general.alignment", &al), 0);
        ck_assert_uint_eq(al, alignment);
    }
    /* Scalars: type and bytes identical. */
    for (size_t i = 0; i < n_sc; i++) {
        int64_t k = hc_gguf_find_key(g, sc[i].key);
        ck_assert_int_ge(k, 0);
        ck_assert_uint_eq(g->kv[k].type, sc[i].type);
        ck_assert_int_eq(memcmp(g->kv[k].data, sc[i].v, sc[i].size), 0);
    }
    ck_assert_int_eq(hc_gguf_find_key(g, "t.u8"), 0); /* replaced in place */
    int64_t s64;
    ck_assert_int_eq(hc_gguf_get_i64(g, "t.u64", &s64), -1); /* > INT64_MAX */
    ck_assert_int_eq(hc_gguf_get_i64(g, "t.i64", &s64), 0);
    ck_assert_int_eq(s64, v_i64);
    float f;
    ck_assert_int_eq(hc_gguf_get_f32(g, "t.f64", &f), 0);
    ck_assert_float_eq(f, (float)v_f64);
    const char *s;
    uint64_t len;
    ck_assert_int_eq(hc_gguf_get_str(g, "t.str", &s, &len), 0);
    ck_assert_uint_eq(len, 11);
    ck_assert_int_eq(memcmp(s, "hello, gguf", 11), 0);
    ck_assert_int_eq(hc_gguf_get_str(g, "t.empty", &s, &len), 0);
    ck_assert_uint_eq(len, 0);
    uint32_t et;
    uint64_t n;
    const void *d;
    ck_assert_int_eq(hc_gguf_get_arr(g, "t.arr_i16", &et, &n, &d), 0);
    ck_assert_uint_eq(et, HC_GGUF_I16);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(memcmp(d, arr_i16, sizeof arr_i16), 0);
    ck_assert_int_eq(hc_gguf_get_arr(g, "t.arr_f64", &et, &n, &d), 0);
    ck_assert_int_eq(memcmp(d, arr_f64, sizeof arr_f64), 0);
    ck_assert_int_eq(hc_gguf_get_arr(g, "t.arr_empty", &et, &n, &d), 0);
    ck_assert_uint_eq(n, 0);
    const hc_gguf_kv *kv = &g->kv[hc_gguf_find_key(g, "t.strs")];
    ck_assert_uint_eq(kv->arr_n, 3);
    for (int i = 0; i < 3; i++) {
        s = hc_gguf_arr_str(kv, (uint64_t)i, &len);
        ck_assert_uint_eq(len, strlen(strs[i]));
        ck_assert_int_eq(memcmp(s, strs[i], len), 0);
    }
    ck_assert_int_eq(hc_gguf_get_f32(g, "llama.block_count", &f), 0);
    ck_assert_float_eq(f, 5.5f);
    char name[32];
    ck_assert_int_eq(hc_gguf_get_strbuf(g, "general.name", name, sizeof name), 0);
    ck_assert_str_eq(name, "renamed");
    /* Copied keys: identical to the source, element by element. */
    for (uint64_t i = 0; i < src->n_kv; i++) {
        const hc_gguf_kv *a = &src->kv[i];
        if (!strcmp(a->key, "general.name") || !strcmp(a->key, "llama.block_count"))
            continue;
        int64_t k = hc_gguf_find_key(g, a->key);
        ck_assert_int_ge(k, 0);
        const hc_gguf_kv *bkv = &g->kv[k];
        ck_assert_uint_eq(a->type, bkv->type);
        if (a->type == HC_GGUF_STRING) {
            ck_assert_uint_eq(a->str_len, bkv->str_len);
            ck_assert_int_eq(memcmp(a->str, bkv->str, a->str_len), 0);
        } else if (a->type == HC_GGUF_ARRAY) {
            ck_assert_uint_eq(a->arr_type, bkv->arr_type);
            ck_assert_uint_eq(a->arr_n, bkv->arr_n);
            for (uint64_t j = 0; j < a->arr_n; j++) {
                if (a->arr_type == HC_GGUF_STRING) {
                    uint64_t la, lb;
                    const char *sa = hc_gguf_arr_str(a, j, &la), *sb = hc_gguf_arr_str(bkv, j, &lb);
                    ck_assert_uint_eq(la, lb);
                    ck_assert_int_eq(memcmp(sa, sb, la), 0);
                }
            }
            if (a->arr_type != HC_GGUF_STRING)
                ck_assert_int_eq(memcmp(a->data, bkv->data, a->arr_n * 4), 0);
        } else {
            ck_assert_int_eq(memcmp(a->data, bkv->data, 4), 0); /* all u32/f32 here */
        }
    }
    ck_assert_uint_eq(g->n_kv, n_sc + 2 + 3 + 1 + src->n_kv + (alignment != 32));
    /* Tensors: declaration order, shape, type, aligned offsets, exact bytes. */
    ck_assert_uint_eq(g->n_tensors, n_t);
    for (size_t i = 0; i < n_t; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        ck_assert_str_eq(t->name, ts[i].name);
        ck_assert_uint_eq(t->n_dims, ts[i].n_dims);
        for (int dd = 0; dd < 4; dd++)
            ck_assert_uint_eq(t->ne[dd], ts[i].ne[dd]);
        ck_assert_uint_eq(t->type, ts[i].type);
        ck_assert_uint_eq(t->n_bytes, ts[i].n_bytes);
        ck_assert_uint_eq(t->offset % alignment, 0);
        ck_assert_uint_eq(((uintptr_t)t->data - (uintptr_t)g->base) % alignment, 0);
        ck_assert_int_eq(memcmp(t->data, data[i], ts[i].n_bytes), 0);
        free(data[i]);
    }
    hc_gguf_close(g);
    hc_gguf_close(src);
    unlink(path);
}

START_TEST(test_writer_roundtrip)
{
    roundtrip("GGUF", 32);
    roundtrip("PWRI", 32);
    roundtrip("PWRI", 64);
    roundtrip("GGUF", 128);
}
END_TEST

START_TEST(test_writer_errors)
{
    char path[512], tmp[520], err[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/bad.gguf", hc_test_tmpdir());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    uint64_t ne[2] = {32, 2};

    ck_assert_ptr_null(hc_gguf_writer_new("GGML", 3, 32));
    ck_assert_ptr_null(hc_gguf_writer_new("GGUF", 1, 32));
    ck_assert_ptr_null(hc_gguf_writer_new("GGUF", 3, 3));

    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "x", 2, ne, HC_TYPE_Q8_0), 0);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "x", 2, ne, HC_TYPE_F32), -1); /* duplicate */
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "y", 5, ne, HC_TYPE_F32), -1);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "y", 2, ne, 4), -1);
    uint64_t ne_bad[2] = {40, 1};
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "y", 2, ne_bad, HC_TYPE_Q4_0), -1);
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "block size"));
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "", 2, ne, HC_TYPE_F32), -1);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "y", 1, ne, HC_TYPE_F32), 0);
    ck_assert_int_eq(hc_gguf_writer_set_u32(w, "", 1), -1);
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), -1);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "z", 1, ne, HC_TYPE_F32), -1);
    uint8_t buf[256] = {0};
    /* x has 68 bytes: 60 then 10 crosses its end. */
    ck_assert_int_eq(hc_gguf_writer_write_data(w, buf, 60, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_write_data(w, buf, 10, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "tensor 'x'") && strstr(err, "crosses"), "%s", err);
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), -1);
    hc_gguf_writer_free(w);
    ck_assert_int_ne(stat(tmp, &st), 0);
    ck_assert_int_ne(stat(path, &st), 0);

    /* Short data: finish names the tensor and leaves no file. */
    w = hc_gguf_writer_new("GGUF", 3, 32);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "x", 2, ne, HC_TYPE_Q8_0), 0);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "y", 1, ne, HC_TYPE_F32), 0);
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_write_data(w, buf, 68, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_write_data(w, buf, 100, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "tensor 'y' (#1) got 100 of its 128 bytes"), "%s", err);
    hc_gguf_writer_free(w);
    ck_assert_int_ne(stat(tmp, &st), 0);
    ck_assert_int_ne(stat(path, &st), 0);

    /* Too much data. */
    w = hc_gguf_writer_new("GGUF", 3, 32);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "y", 1, ne, HC_TYPE_F32), 0);
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_write_data(w, buf, 128, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_write_data(w, buf, 1, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "past the last tensor"));
    hc_gguf_writer_free(w);
    ck_assert_int_ne(stat(path, &st), 0);

    /* Unwritable destination. */
    w = hc_gguf_writer_new("GGUF", 3, 32);
    ck_assert_int_eq(hc_gguf_writer_begin(w, "/nonexistent/dir/x.gguf", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/dir/x.gguf.tmp: cannot create"));
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), -1);
    hc_gguf_writer_free(w);

    /* A file with no tensors and no keys is valid. */
    w = hc_gguf_writer_new("PWRI", 2, 32);
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), 0);
    hc_gguf_writer_free(w);
    hc_gguf *g = open_path(path);
    ck_assert_uint_eq(g->version, 2);
    ck_assert_uint_eq(g->n_kv + g->n_tensors, 0);
    hc_gguf_close(g);
    unlink(path);
}
END_TEST

/* ---- PowerInfer's type ids in PWRI files ------------------------------------------ */
/* Tensors i8/i16/i32 with ids 16, 17, 18 (PowerInfer's I8, I16, I32; modern
 * ggml's IQ2_XXS, IQ2_XS, IQ3_XXS), new32 with 26 (modern I32) and q4 with 2,
 * all [256] at offset 0 (ranges may overlap): bytes built here, not by the
 * writer under test. */
static tbuf pwri_ids_file(const char *magic)
{
    static const struct {
        const char *name;
        uint32_t type;
    } t[] = {{"i8", 16}, {"i16", 17}, {"i32", 18}, {"new32", 26}, {"q4", 2}};
    tbuf b = {0};
    uint64_t ne[1] = {256};
    tb_put(&b, magic, 4);
    tb_u32(&b, 3);
    tb_u64(&b, 5);
    tb_u64(&b, 0);
    for (size_t i = 0; i < 5; i++)
        tb_tensor(&b, t[i].name, 1, ne, t[i].type, 0);
    tb_pad(&b, 32);
    for (int i = 0; i < 1024; i++)
        tb_u8(&b, (uint8_t)i);
    return b;
}

START_TEST(test_pwri_type_ids)
{
    char err[256] = "";
    /* PWRI: 16..18 are PowerInfer's integer types, 26 stays I32. */
    tbuf b = pwri_ids_file("PWRI");
    hc_gguf *g = hc_gguf_open_memory(b.p, b.len, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    static const uint32_t pwri_type[5] = {24, 25, 26, 26, 2};
    static const uint64_t pwri_bytes[5] = {256, 512, 1024, 1024, 144};
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(g->tensors[i].type, pwri_type[i]);
        ck_assert_uint_eq(g->tensors[i].n_bytes, pwri_bytes[i]);
    }
    ck_assert_str_eq(hc_ggml_type_name(g->tensors[2].type), "i32");
    hc_gguf_close(g);
    free(b.p);
    /* The same bytes as plain GGUF: the modern ids, IQ types included. */
    b = pwri_ids_file("GGUF");
    g = hc_gguf_open_memory(b.p, b.len, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    static const uint32_t gguf_type[5] = {16, 17, 18, 26, 2};
    static const uint64_t gguf_bytes[5] = {66, 74, 98, 1024, 144};
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(g->tensors[i].type, gguf_type[i]);
        ck_assert_uint_eq(g->tensors[i].n_bytes, gguf_bytes[i]);
    }
    ck_assert_str_eq(hc_ggml_type_name(g->tensors[2].type), "iq3_xxs");
    hc_gguf_close(g);
    free(b.p);
}
END_TEST

/* What the writer stores: PowerInfer's ids in a PWRI file, modern ones in a
 * GGUF file (checked on the raw bytes), the same modern ids read back. */
START_TEST(test_writer_pwri_type_ids)
{
    static const struct {
        const char *name;
        uint32_t type, pwri_id;
        uint64_t ne0, n_bytes;
    } t[] = {{"t.i8", 24, 16, 8, 8},       {"t.i16", 25, 17, 8, 16},   {"t.i32", 26, 18, 8, 32},
             {"t.f32", 0, 0, 8, 32},       {"t.f16", 1, 1, 8, 16},     {"t.q4", 2, 2, 32, 18},
             {"t.q8", 8, 8, 32, 34},       {"t.q6k", 14, 14, 256, 210}};
    const size_t n = sizeof t / sizeof t[0];
    const char *magics[2] = {"PWRI", "GGUF"};
    char err[256], path[512], magic[5];
    uint8_t data[256];
    fill_pattern(data, sizeof data, 7);
    for (int m = 0; m < 2; m++) {
        snprintf(path, sizeof path, "%s/ids-%s.gguf", hc_test_tmpdir(), magics[m]);
        hc_gguf_writer *w = hc_gguf_writer_new(magics[m], 3, 32);
        ck_assert_ptr_nonnull(w);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(hc_gguf_writer_add_tensor(w, t[i].name, 1, &t[i].ne0, t[i].type) == 0,
                          "%s: %s", t[i].name, hc_last_error());
        ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
        for (size_t i = 0; i < n; i++)
            ck_assert_int_eq(hc_gguf_writer_write_data(w, data, t[i].n_bytes, err, sizeof err),
                             0);
        ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
        hc_gguf_writer_free(w);
        for (size_t i = 0; i < n; i++) {
            uint32_t raw = UINT32_MAX;
            ck_assert_int_eq(hc_test_raw_tensor_type(path, t[i].name, &raw, magic), 0);
            ck_assert_str_eq(magic, magics[m]);
            ck_assert_msg(raw == (m == 0 ? t[i].pwri_id : t[i].type), "%s %s: stored as %u",
                          magics[m], t[i].name, raw);
        }
        hc_gguf *g = open_path(path);
        for (size_t i = 0; i < n; i++) {
            const hc_gguf_tensor *ti = hc_gguf_find_tensor(g, t[i].name);
            ck_assert_ptr_nonnull(ti);
            ck_assert_uint_eq(ti->type, t[i].type);
            ck_assert_uint_eq(ti->n_bytes, t[i].n_bytes);
            ck_assert_int_eq(memcmp(ti->data, data, t[i].n_bytes), 0);
        }
        hc_gguf_close(g);
        unlink(path);
    }
    /* Types PowerInfer's ggml has no id for are refused in a PWRI file (and
     * still written to a GGUF one). */
    static const uint32_t foreign[] = {16, 17, 18, 19, 23, 27, 28, 30, 39};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        uint64_t ne0 = 256;
        hc_gguf_writer *w = hc_gguf_writer_new("PWRI", 3, 32);
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "x", 1, &ne0, foreign[i]), -1);
        ck_assert_ptr_nonnull(strstr(hc_last_error(), "PWRI"));
        ck_assert_ptr_nonnull(strstr(hc_last_error(), hc_ggml_type_name(foreign[i])));
        hc_gguf_writer_free(w);
        w = hc_gguf_writer_new("GGUF", 3, 32);
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "x", 1, &ne0, foreign[i]), 0);
        hc_gguf_writer_free(w);
    }
}
END_TEST

static Suite *gguf_suite(void)
{
    Suite *s = suite_create("gguf");
    TCase *tc = tcase_create("reader");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_stories260k);
    tcase_add_test(tc, test_resident_equals_mapped);
    tcase_add_test(tc, test_moving_equals_mapped);
    tcase_add_test(tc, test_relu2m_reglu1m);
    tcase_add_test(tc, test_vocab_only);
    tcase_add_test(tc, test_type_table);
    tcase_add_test(tc, test_pwri_type_ids);
    tcase_add_test(tc, test_mini_valid);
    tcase_add_loop_test(tc, test_faults, F_NONE + 1, F_COUNT);
    tcase_add_test(tc, test_fault_from_file);
    tcase_add_test(tc, test_truncations);
    tcase_add_test(tc, test_mutations);
    suite_add_tcase(s, tc);
    TCase *tw = tcase_create("writer");
    tcase_set_timeout(tw, 120);
    tcase_add_test(tw, test_writer_bytes);
    tcase_add_test(tw, test_writer_roundtrip);
    tcase_add_test(tw, test_writer_errors);
    tcase_add_test(tw, test_writer_pwri_type_ids);
    suite_add_tcase(s, tw);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(gguf_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/*
 * torch .pt reader.
 *
 * Expected values come from torch itself: tests/data/pt/make_fixtures.py saved the fixtures
 * with Debian's python3-torch and wrote what torch reports for each (dtype, shape, storage
 * offset, tolist()) into expected.txt.  Archives with faults are built byte by byte here by
 * a tiny zip and pickle writer of the test's own (never by the reader under test); each
 * faulty build has a valid twin made by the same code that must read back to values the
 * test computes, so a "fails" result means the fault was seen.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/torch_pt.h"
#include "hotcold/hotcold.h"
#include "test_util.h"

#define PT_DIR HC_TEST_DATA "/pt"

/* ---- byte buffer ------------------------------------------------------------------- */
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
static void tb_u16(tbuf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    tb_put(b, x, 2);
}
static void tb_u32(tbuf *b, uint32_t v)
{
    tb_u16(b, (uint16_t)v);
    tb_u16(b, (uint16_t)(v >> 16));
}
static void tb_u64(tbuf *b, uint64_t v)
{
    tb_u32(b, (uint32_t)v);
    tb_u32(b, (uint32_t)(v >> 32));
}
static void tb_free(tbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- a minimal zip writer (stored entries only, like torch) -------------------------- */
typedef struct zent {
    const char *name;
    const void *data;
    size_t len;
    uint16_t method; /* what the headers claim; the bytes are always stored */
} zent;

/* zip64: also write the zip64 end record and locator and put 0xFFFF.. in the classic
 * end record, as torch (miniz) does for large archives. */
static void zip_build(tbuf *out, const zent *e, int n, int zip64)
{
    uint64_t *lho = calloc((size_t)n, sizeof *lho), cd_off, cd_size, z64;
    ck_assert_ptr_nonnull(lho);
    for (int i = 0; i < n; i++) {
        lho[i] = out->len;
        tb_u32(out, 0x04034b50);
        tb_u16(out, 20);
        tb_u16(out, 0);
        tb_u16(out, e[i].method);
        tb_u32(out, 0); /* time, date */
        tb_u32(out, 0); /* crc: not checked by the reader */
        tb_u32(out, (uint32_t)e[i].len);
        tb_u32(out, (uint32_t)e[i].len);
        tb_u16(out, (uint16_t)strlen(e[i].name));
        tb_u16(out, 0);
        tb_put(out, e[i].name, strlen(e[i].name));
        tb_put(out, e[i].data, e[i].len);
    }
    cd_off = out->len;
    for (int i = 0; i < n; i++) {
        tb_u32(out, 0x02014b50);
        tb_u16(out, 20);
        tb_u16(out, 20);
        tb_u16(out, 0);
        tb_u16(out, e[i].method);
        tb_u32(out, 0);
        tb_u32(out, 0);
        tb_u32(out, (uint32_t)e[i].len);
        tb_u32(out, (uint32_t)e[i].len);
        tb_u16(out, (uint16_t)strlen(e[i].name));
        tb_u16(out, 0); /* extra */
        tb_u16(out, 0); /* comment */
        tb_u16(out, 0); /* disk */
        tb_u16(out, 0);
        tb_u32(out, 0);
        tb_u32(out, (uint32_t)lho[i]);
        tb_put(out, e[i].name, strlen(e[i].name));
    }
    cd_size = out->len - cd_off;
    if (zip64) {
        z64 = out->len;
        tb_u32(out, 0x06064b50);
        tb_u64(out, 44);
        tb_u16(out, 45);
        tb_u16(out, 45);
        tb_u32(out, 0);
        tb_u32(out, 0);
        tb_u64(out, (uint64_t)n);
        tb_u64(out, (uint64_t)n);
        tb_u64(out, cd_size);
        tb_u64(out, cd_off);
        tb_u32(out, 0x07064b50);
        tb_u32(out, 0);
        tb_u64(out, z64);
        tb_u32(out, 1);
    }
    tb_u32(out, 0x06054b50);
    tb_u16(out, 0);
    tb_u16(out, 0);
    tb_u16(out, zip64 ? 0xFFFF : (uint16_t)n);
    tb_u16(out, zip64 ? 0xFFFF : (uint16_t)n);
    tb_u32(out, zip64 ? 0xFFFFFFFFu : (uint32_t)cd_size);
    tb_u32(out, zip64 ? 0xFFFFFFFFu : (uint32_t)cd_off);
    tb_u16(out, 0);
    free(lho);
}

/* ---- a minimal pickle writer --------------------------------------------------------- */
static void pb_str(tbuf *b, const char *s)
{
    tb_u8(b, 'X');
    tb_u32(b, (uint32_t)strlen(s));
    tb_put(b, s, strlen(s));
}
static void pb_int(tbuf *b, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX) {
        tb_u8(b, 'J');
        tb_u32(b, (uint32_t)(int32_t)v);
    } else {
        tb_u8(b, 0x8a);
        tb_u8(b, 8);
        tb_u64(b, (uint64_t)v);
    }
}
static void pb_global(tbuf *b, const char *mod, const char *name)
{
    tb_u8(b, 'c');
    tb_put(b, mod, strlen(mod));
    tb_u8(b, '\n');
    tb_put(b, name, strlen(name));
    tb_u8(b, '\n');
}

typedef struct spec {
    const char *storage_cls; /* torch.<this> */
    const char *key;
    int64_t numel;           /* storage elements (bytes for UntypedStorage) */
    int64_t offset;
    int ndim;
    int64_t size[4], stride[4];
    const char *v3_dtype;    /* non-NULL: _rebuild_tensor_v3 with torch.<this> */
} spec;

/* What torch writes for one tensor, but with a plain dict for the hooks and BININT ints. */
static void pb_tensor(tbuf *b, const spec *s)
{
    tb_u8(b, 0x80);
    tb_u8(b, 2);
    pb_global(b, "torch._utils", s->v3_dtype ? "_rebuild_tensor_v3" : "_rebuild_tensor_v2");
    tb_u8(b, '(');
    tb_u8(b, '(');
    pb_str(b, "storage");
    pb_global(b, "torch", s->storage_cls);
    pb_str(b, s->key);
    pb_str(b, "cpu");
    pb_int(b, s->numel);
    tb_u8(b, 't');
    tb_u8(b, 'Q');
    pb_int(b, s->offset);
    tb_u8(b, '(');
    for (int d = 0; d < s->ndim; d++)
        pb_int(b, s->size[d]);
    tb_u8(b, 't');
    tb_u8(b, '(');
    for (int d = 0; d < s->ndim; d++)
        pb_int(b, s->stride[d]);
    tb_u8(b, 't');
    tb_u8(b, 0x89);
    tb_u8(b, '}');
    if (s->v3_dtype)
        pb_global(b, "torch", s->v3_dtype);
    tb_u8(b, 't');
    tb_u8(b, 'R');
    tb_u8(b, '.');
}

/* Archive "t/" with data.pkl = pkl, data/<key> = data, version "3\n". */
typedef struct zopts {
    uint16_t pkl_method;
    int no_version;
    const char *byteorder;
    int zip64;
    const char *data_name; /* default t/data/0 */
} zopts;

static void build_pt(tbuf *out, const tbuf *pkl, const void *data, size_t dlen, const zopts *o)
{
    static const zopts none;
    zent e[4];
    int n = 0;
    if (!o)
        o = &none;
    e[n++] = (zent){"t/data.pkl", pkl->p, pkl->len, o->pkl_method};
    e[n++] = (zent){o->data_name ? o->data_name : "t/data/0", data, dlen, 0};
    if (!o->no_version)
        e[n++] = (zent){"t/version", "3\n", 2, 0};
    if (o->byteorder)
        e[n++] = (zent){"t/byteorder", o->byteorder, strlen(o->byteorder), 0};
    zip_build(out, e, n, o->zip64);
}

/* ---- reading helpers ----------------------------------------------------------------- */
/* Reads a copy of exactly len bytes (so ASan sees any over-read).  On failure checks the
 * message is one line naming the buffer. */
static int read_exact(const void *p, size_t len, hc_pt_tensor *t)
{
    uint8_t *copy = malloc(len ? len : 1);
    int rc;
    ck_assert_ptr_nonnull(copy);
    if (len)
        memcpy(copy, p, len);
    rc = hc_pt_read_memory(copy, len, "mem.pt", t);
    free(copy);
    if (rc) {
        const char *e = hc_last_error();
        ck_assert_msg(strncmp(e, "mem.pt: ", 8) == 0, "message does not name the file: %s", e);
        ck_assert_msg(strchr(e, '\n') == NULL, "message is not one line: %s", e);
        ck_assert_ptr_null(t->f64);
    } else {
        ck_assert_int_ge(t->numel, 0);
        ck_assert_ptr_nonnull(t->f64);
        for (int64_t k = 0; k < t->numel; k++)
            if (t->i64)
                ck_assert(t->f64[k] == (double)t->i64[k]);
    }
    return rc;
}

/* Expect failure with a message containing `want`. */
static void expect_fail(const void *p, size_t len, const char *want)
{
    hc_pt_tensor t;
    int rc = read_exact(p, len, &t);
    if (rc == 0)
        hc_pt_tensor_free(&t);
    ck_assert_msg(rc != 0, "read succeeded, expected an error containing \"%s\"", want);
    ck_assert_msg(strstr(hc_last_error(), want) != NULL, "error \"%s\" lacks \"%s\"",
                  hc_last_error(), want);
}

static uint8_t *load(const char *name, size_t *len)
{
    uint8_t *p = (uint8_t *)hc_test_read_file(hc_test_path(PT_DIR, name), len);
    ck_assert_msg(p != NULL, "cannot read %s", name);
    return p;
}

/* Replace the only occurrence of `from` (n bytes) in buf with `to`. */
static void patch(uint8_t *buf, size_t len, const void *from, const void *to, size_t n)
{
    uint8_t *hit = memmem(buf, len, from, n);
    ck_assert_msg(hit != NULL, "patch pattern not found");
    ck_assert_msg(memmem(hit + 1, len - (size_t)(hit + 1 - buf), from, n) == NULL,
                  "patch pattern not unique");
    memcpy(hit, to, n);
}

/* ---- expected.txt -------------------------------------------------------------------- */
typedef struct expect {
    char name[128], dtype[16];
    int n_dims;
    int64_t shape[8];
    int64_t offset;
    int64_t n;
    char **vals; /* textual, compared by type */
} expect;

static void expect_free(expect *e)
{
    for (int64_t k = 0; k < e->n; k++)
        free(e->vals[k]);
    free(e->vals);
    memset(e, 0, sizeof *e);
}

/* Parse one line of expected.txt. */
static void parse_expect(char *line, expect *e)
{
    char *save = NULL, *tok, *shape;
    memset(e, 0, sizeof *e);
    tok = strtok_r(line, " \n", &save);
    ck_assert_ptr_nonnull(tok);
    snprintf(e->name, sizeof e->name, "%s", tok);
    tok = strtok_r(NULL, " \n", &save);
    ck_assert_ptr_nonnull(tok);
    snprintf(e->dtype, sizeof e->dtype, "%s", tok);
    shape = strtok_r(NULL, " \n", &save);
    ck_assert_ptr_nonnull(shape);
    tok = strtok_r(NULL, " \n", &save);
    ck_assert_ptr_nonnull(tok);
    e->offset = strtoll(tok, NULL, 10);
    if (strcmp(shape, "-") != 0) {
        char *s2 = NULL;
        for (char *d = strtok_r(shape, ",", &s2); d; d = strtok_r(NULL, ",", &s2))
            e->shape[e->n_dims++] = strtoll(d, NULL, 10);
    }
    while ((tok = strtok_r(NULL, " \n", &save)) != NULL) {
        e->vals = realloc(e->vals, (size_t)(e->n + 1) * sizeof *e->vals);
        ck_assert_ptr_nonnull(e->vals);
        e->vals[e->n++] = strdup(tok);
    }
}

/* Every line of expected.txt, in order; returns the count. */
static int load_expected(expect **out)
{
    FILE *f = fopen(PT_DIR "/expected.txt", "r");
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    expect *all = NULL;
    ck_assert_ptr_nonnull(f);
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        all = realloc(all, (size_t)(n + 1) * sizeof *all);
        ck_assert_ptr_nonnull(all);
        parse_expect(line, &all[n++]);
    }
    free(line);
    fclose(f);
    *out = all;
    return n;
}

static void free_expected(expect *all, int n)
{
    for (int i = 0; i < n; i++)
        expect_free(&all[i]);
    free(all);
}

static int is_float_dtype(const char *d)
{
    return strncmp(d, "float", 5) == 0 || strcmp(d, "bfloat16") == 0;
}

/* Compare a tensor the reader returned with torch's account of it. */
static void check_against(const hc_pt_tensor *t, const expect *e)
{
    int64_t numel = 1;
    ck_assert_msg(strcmp(hc_pt_dtype_name(t->dtype), e->dtype) == 0, "%s: dtype %s, torch %s",
                  e->name, hc_pt_dtype_name(t->dtype), e->dtype);
    ck_assert_int_eq(t->n_dims, e->n_dims);
    for (int d = 0; d < e->n_dims; d++) {
        ck_assert_int_eq(t->shape[d], e->shape[d]);
        numel *= e->shape[d];
    }
    ck_assert_int_eq(t->numel, numel);
    ck_assert_int_eq(t->numel, e->n);
    ck_assert_int_eq(t->storage_offset, e->offset);
    if (is_float_dtype(e->dtype))
        ck_assert_ptr_null(t->i64);
    else
        ck_assert_ptr_nonnull(t->i64);
    for (int64_t k = 0; k < e->n; k++) {
        if (is_float_dtype(e->dtype)) {
            double want = strtod(e->vals[k], NULL), got = t->f64[k];
            if (isnan(want))
                ck_assert_msg(isnan(got), "%s[%lld]: %a, torch nan", e->name, (long long)k, got);
            else
                ck_assert_msg(got == want && signbit(got) == signbit(want),
                              "%s[%lld]: %a, torch %a", e->name, (long long)k, got, want);
        } else {
            long long want = strtoll(e->vals[k], NULL, 10);
            ck_assert_msg(t->i64[k] == want, "%s[%lld]: %lld, torch %lld", e->name,
                          (long long)k, (long long)t->i64[k], want);
            ck_assert(t->f64[k] == (double)want);
        }
    }
}

/* ---- fixtures from a real torch ----------------------------------------------------- */
START_TEST(fixtures_match_torch)
{
    expect *all;
    int n = load_expected(&all), legacy = 0;
    ck_assert_int_ge(n, 30);
    for (int i = 0; i < n; i++) {
        hc_pt_tensor t;
        const char *path = hc_test_path(PT_DIR, all[i].name);
        ck_assert_msg(hc_pt_read(path, &t) == 0, "%s: %s", all[i].name, hc_last_error());
        check_against(&t, &all[i]);
        legacy += t.legacy;
        ck_assert_int_eq(t.legacy, strcmp(all[i].name, "legacy.pt") == 0);
        hc_pt_tensor_free(&t);
    }
    ck_assert_int_eq(legacy, 1);
    free_expected(all, n);
}
END_TEST

/* The same fixtures through the in-memory entry point, with exact-size copies. */
START_TEST(fixtures_from_memory)
{
    expect *all;
    int n = load_expected(&all);
    for (int i = 0; i < n; i++) {
        size_t len;
        uint8_t *p = load(all[i].name, &len);
        hc_pt_tensor t;
        ck_assert_msg(read_exact(p, len, &t) == 0, "%s: %s", all[i].name, hc_last_error());
        check_against(&t, &all[i]);
        hc_pt_tensor_free(&t);
        free(p);
    }
    free_expected(all, n);
}
END_TEST

START_TEST(read_1d_rejects_other_shapes)
{
    hc_pt_tensor t;
    ck_assert_int_eq(hc_pt_read_1d(PT_DIR "/counts_i64.pt", &t), 0);
    ck_assert_int_eq(t.numel, 384);
    hc_pt_tensor_free(&t);
    ck_assert_int_ne(hc_pt_read_1d(PT_DIR "/two_d.pt", &t), 0);
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "2-D tensor [3, 4]"));
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "two_d.pt"));
    ck_assert_ptr_null(t.f64);
    ck_assert_int_ne(hc_pt_read_1d(PT_DIR "/scalar.pt", &t), 0);
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "scalar"));
    /* hc_pt_read takes any shape. */
    ck_assert_int_eq(hc_pt_read(PT_DIR "/two_d.pt", &t), 0);
    ck_assert_int_eq(t.n_dims, 2);
    hc_pt_tensor_free(&t);
}
END_TEST

START_TEST(not_a_tensor_or_not_a_file)
{
    hc_pt_tensor t;
    ck_assert_int_ne(hc_pt_read(PT_DIR "/dict.pt", &t), 0);
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "pickled object has type dict, not tensor"));
    ck_assert_int_ne(hc_pt_read(PT_DIR "/no-such-file.pt", &t), 0);
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "no-such-file.pt: cannot open"));
    ck_assert_int_ne(hc_pt_read(PT_DIR, &t), 0);
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "not a regular file"));
    ck_assert_int_ne(hc_pt_read(PT_DIR "/expected.txt", &t), 0);
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "not a torch file"));
    expect_fail("", 0, "not a torch file");
}
END_TEST

/* ---- activation/ directories --------------------------------------------------------- */
static void copy_file(const char *from, const char *to)
{
    size_t len;
    char *p = hc_test_read_file(from, &len);
    FILE *f;
    ck_assert_ptr_nonnull(p);
    f = fopen(to, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, len, f), len);
    fclose(f);
    free(p);
}

/* A fresh directory under the test's scratch dir holding activation_<i>.pt copies of
 * the fixture layers listed (-1 ends the list). */
static const char *make_dir(const char *tag, const int *layers)
{
    static char dir[4][512];
    static int next;
    char *d = dir[next++ % 4];
    snprintf(d, sizeof dir[0], "%s/%s", hc_test_tmpdir(), tag);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    for (int i = 0; layers[i] >= 0; i++) {
        char from[64], to[600];
        snprintf(from, sizeof from, "activation/activation_%d.pt", layers[i]);
        snprintf(to, sizeof to, "%s/activation_%d.pt", d, layers[i]);
        copy_file(hc_test_path(PT_DIR, from), to);
    }
    return d;
}

static void expect_dir_fail(const char *dir, int n_layer, int64_t n_ff, const char *want)
{
    hc_pt_activation a;
    ck_assert_msg(hc_pt_read_activation_dir(dir, n_layer, n_ff, &a) != 0,
                  "%s read, expected \"%s\"", dir, want);
    ck_assert_ptr_null(a.counts);
    ck_assert_msg(strstr(hc_last_error(), want) != NULL, "error \"%s\" lacks \"%s\"",
                  hc_last_error(), want);
    ck_assert_ptr_null(strchr(hc_last_error(), '\n'));
}

START_TEST(activation_dir_numeric_order)
{
    expect *all;
    int n = load_expected(&all);
    hc_pt_activation a;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: told the shape; pass 1: discovers it. */
        ck_assert_msg(hc_pt_read_activation_dir(PT_DIR "/activation", pass ? 0 : 12,
                                                pass ? 0 : 96, &a) == 0, "%s", hc_last_error());
        ck_assert_int_eq(a.n_layer, 12);
        ck_assert_int_eq(a.n_ff, 96);
        ck_assert_int_eq(a.whole, 1);
        for (int l = 0; l < 12; l++) {
            char name[64];
            const expect *e = NULL;
            snprintf(name, sizeof name, "activation/activation_%d.pt", l);
            for (int i = 0; i < n && !e; i++)
                if (strcmp(all[i].name, name) == 0)
                    e = &all[i];
            ck_assert_ptr_nonnull(e);
            ck_assert_int_eq(e->n, 96);
            for (int r = 0; r < 96; r++)
                ck_assert_msg(a.counts[l * 96 + r] == (double)strtoll(e->vals[r], NULL, 10),
                              "layer %d neuron %d: %g, torch %s", l, r, a.counts[l * 96 + r],
                              e->vals[r]);
        }
        hc_pt_activation_free(&a);
        ck_assert_ptr_null(a.counts);
    }
    free_expected(all, n);
}
END_TEST

START_TEST(activation_dir_faults)
{
    static const int all12[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -1};
    static const int gap[] = {0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, -1};
    static const int none[] = {-1};
    const char *d;
    char p1[1200], p2[600];
    hc_pt_activation a;

    /* The model's layer count disagrees with the files. */
    expect_dir_fail(PT_DIR "/activation", 6, 96, "activation_6.pt is beyond the model's 6 layers");
    expect_dir_fail(PT_DIR "/activation", 13, 96, "no activation_12.pt: the model has 13 layers");
    expect_dir_fail(PT_DIR "/activation", 12, 384, "96 values, expected 384 (n_ff)");
    expect_dir_fail(PT_DIR "/no-such-dir", 12, 96, "cannot open directory");

    d = make_dir("gap", gap);
    expect_dir_fail(d, 0, 0, "no activation_5.pt");
    expect_dir_fail(d, 12, 96, "no activation_5.pt");

    d = make_dir("empty", none);
    expect_dir_fail(d, 0, 0, "no activation_<i>.pt files");

    /* Unrelated names are ignored; a second name for layer 1 is a duplicate. */
    d = make_dir("dup", all12);
    snprintf(p1, sizeof p1, "%s/README", d);
    copy_file(PT_DIR "/expected.txt", p1);
    snprintf(p1, sizeof p1, "%s/activation_3.pt.bak", d);
    copy_file(PT_DIR "/two_d.pt", p1);
    snprintf(p1, sizeof p1, "%s/activation_x.pt", d);
    copy_file(PT_DIR "/two_d.pt", p1);
    ck_assert_int_eq(hc_pt_read_activation_dir(d, 12, 96, &a), 0);
    hc_pt_activation_free(&a);
    snprintf(p1, sizeof p1, "%s/activation_01.pt", d);
    copy_file(PT_DIR "/activation/activation_1.pt", p1);
    expect_dir_fail(d, 12, 96, "layer 1 appears twice (activation_01.pt and activation_1.pt)");

    /* A layer of the wrong length, shape or content. */
    d = make_dir("bad", all12);
    snprintf(p1, sizeof p1, "%s/activation_3.pt", d);
    copy_file(PT_DIR "/i32.pt", p1);
    expect_dir_fail(d, 12, 96, "activation_3.pt: 7 values, expected 96 (n_ff)");
    expect_dir_fail(d, 0, 0, "activation_3.pt: 7 values, expected 96 (n_ff)");
    copy_file(PT_DIR "/two_d.pt", p1);
    expect_dir_fail(d, 12, 96, "activation_3.pt: holds a 2-D tensor");
    copy_file(PT_DIR "/expected.txt", p1);
    expect_dir_fail(d, 12, 96, "activation_3.pt: not a torch file");
    /* counts_i64 holds negative values: as layer 0 (n_ff 384) it is read, then refused. */
    snprintf(p2, sizeof p2, "%s/one", hc_test_tmpdir());
    ck_assert_int_eq(mkdir(p2, 0755), 0);
    snprintf(p1, sizeof p1, "%s/activation_0.pt", p2);
    copy_file(PT_DIR "/counts_i64.pt", p1);
    expect_dir_fail(p2, 1, 384, "value -5 at [2] is not a count");
    copy_file(PT_DIR "/f32.pt", p1);
    expect_dir_fail(p2, 1, 12, "not a count");
}
END_TEST

/* Frequencies (fractions) are read, and flagged as not whole. */
START_TEST(activation_dir_fractions)
{
    float vals[4] = {0.5f, 1.0f, 0.0f, 0.25f};
    spec s = {"FloatStorage", "0", 4, 0, 1, {4}, {1}, NULL};
    tbuf pkl = {0}, file = {0};
    char dir[512], path[600];
    FILE *f;
    hc_pt_activation a;
    pb_tensor(&pkl, &s);
    build_pt(&file, &pkl, vals, sizeof vals, NULL);
    snprintf(dir, sizeof dir, "%s/frac", hc_test_tmpdir());
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    for (int l = 0; l < 2; l++) {
        snprintf(path, sizeof path, "%s/activation_%d.pt", dir, l);
        f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        fwrite(file.p, 1, file.len, f);
        fclose(f);
    }
    ck_assert_int_eq(hc_pt_read_activation_dir(dir, 2, 4, &a), 0);
    ck_assert_int_eq(a.whole, 0);
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < 4; r++)
            ck_assert(a.counts[l * 4 + r] == vals[r]);
    hc_pt_activation_free(&a);
    tb_free(&pkl);
    tb_free(&file);
}
END_TEST

/* ---- archives built here ------------------------------------------------------------- */
static const float base_f32[10] = {0, 1.5f, 3, 4.5f, 6, 7.5f, 9, 10.5f, 12, 13.5f};

/* Valid twins: every variant of the builder reads back to the values computed here. */
START_TEST(built_valid)
{
    spec s = {"FloatStorage", "0", 10, 2, 1, {3}, {2}, NULL};
    spec e2 = {"FloatStorage", "0", 10, 1, 2, {3, 2}, {0, 1}, NULL}; /* expanded rows */
    tbuf pkl = {0}, file = {0};
    hc_pt_tensor t;
    for (int zip64 = 0; zip64 < 2; zip64++) {
        zopts o = {.zip64 = zip64, .byteorder = zip64 ? "little" : NULL};
        pb_tensor(&pkl, &s);
        build_pt(&file, &pkl, base_f32, sizeof base_f32, &o);
        ck_assert_msg(read_exact(file.p, file.len, &t) == 0, "%s", hc_last_error());
        ck_assert_int_eq(t.dtype, HC_PT_F32);
        ck_assert_int_eq(t.numel, 3);
        ck_assert(t.f64[0] == 3 && t.f64[1] == 6 && t.f64[2] == 9);
        hc_pt_tensor_free(&t);
        tb_free(&pkl);
        tb_free(&file);
    }
    pb_tensor(&pkl, &e2);
    build_pt(&file, &pkl, base_f32, sizeof base_f32, NULL);
    ck_assert_msg(read_exact(file.p, file.len, &t) == 0, "%s", hc_last_error());
    ck_assert_int_eq(t.numel, 6);
    for (int k = 0; k < 6; k++)
        ck_assert(t.f64[k] == base_f32[1 + k % 2]);
    hc_pt_tensor_free(&t);
    tb_free(&pkl);
    tb_free(&file);
}
END_TEST

/* torch >= 2.x: an untyped (byte) storage plus a dtype argument. */
START_TEST(built_v3_untyped)
{
    const uint16_t half[5] = {0x3C00, 0xC000, 0x0001, 0x7BFF, 0x8000};
    const double want[5] = {1.0, -2.0, 5.9604644775390625e-08, 65504.0, -0.0};
    spec s = {"UntypedStorage", "0", sizeof half, 0, 1, {5}, {1}, "float16"};
    tbuf pkl = {0}, file = {0};
    hc_pt_tensor t;
    pb_tensor(&pkl, &s);
    build_pt(&file, &pkl, half, sizeof half, NULL);
    ck_assert_msg(read_exact(file.p, file.len, &t) == 0, "%s", hc_last_error());
    ck_assert_int_eq(t.dtype, HC_PT_F16);
    ck_assert_int_eq(t.numel, 5);
    for (int k = 0; k < 5; k++)
        ck_assert(t.f64[k] == want[k] && signbit(t.f64[k]) == signbit(want[k]));
    hc_pt_tensor_free(&t);
    tb_free(&pkl);
    tb_free(&file);

    /* 5 halves need 10 bytes: 5 elements past the 10-byte storage. */
    s.size[0] = 6;
    pb_tensor(&pkl, &s);
    build_pt(&file, &pkl, half, sizeof half, NULL);
    expect_fail(file.p, file.len, "reaches element 5 of a storage of 5 float16 elements");
    tb_free(&pkl);
    tb_free(&file);

    s.size[0] = 5;
    s.v3_dtype = "uint16";
    pb_tensor(&pkl, &s);
    build_pt(&file, &pkl, half, sizeof half, NULL);
    expect_fail(file.p, file.len, "unsupported dtype torch.uint16");
    tb_free(&pkl);
    tb_free(&file);
}
END_TEST

/* Container faults: compression, missing records, byte order. */
START_TEST(built_container_faults)
{
    spec s = {"FloatStorage", "0", 10, 0, 1, {10}, {1}, NULL};
    struct {
        zopts o;
        const char *want;
    } cases[] = {
        {{.pkl_method = 8}, "zip entry t/data.pkl is deflate-compressed"},
        {{.pkl_method = 12}, "uses compression method 12"},
        {{.no_version = 1}, "no t/version record"},
        {{.byteorder = "big"}, "big-endian archive"},
        {{.byteorder = "middle"}, "byteorder record is \"middle\""},
        {{.data_name = "t/data/1"}, "storage key \"0\" has no t/data/0 record"},
        {{.data_name = "u/data.pkl"}, "more than one <name>/data.pkl"},
    };
    tbuf pkl = {0};
    pb_tensor(&pkl, &s);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tbuf file = {0};
        build_pt(&file, &pkl, base_f32, sizeof base_f32, &cases[i].o);
        expect_fail(file.p, file.len, cases[i].want);
        tb_free(&file);
    }
    /* The data record is shorter than numel x element size. */
    {
        tbuf file = {0};
        build_pt(&file, &pkl, base_f32, sizeof base_f32 - 4, NULL);
        expect_fail(file.p, file.len, "holds 10 float32 elements but its record has only 36 bytes");
        tb_free(&file);
    }
    /* No data.pkl at all. */
    {
        tbuf file = {0};
        zent e[1] = {{"t/version", "3\n", 2, 0}};
        zip_build(&file, e, 1, 0);
        expect_fail(file.p, file.len, "no <name>/data.pkl record");
        tb_free(&file);
    }
    tb_free(&pkl);
}
END_TEST

/* Pickle faults, each in an otherwise valid archive. */
START_TEST(built_pickle_faults)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *want;
    } cases[] = {
#define P(s, w) {s, sizeof(s) - 1, w}
        P("\x80\x02Z.", "unsupported pickle opcode 0x5a at offset 2"),
        P("\x80\x02i__main__\nX\n.", "unsupported pickle opcode 0x69"), /* INST */
        P("\x80\x09N.", "unsupported pickle protocol"),
        P("\x80\x02N", "pickle ends without STOP"),
        P("\x80\x02.", "pickle stack underflow"),
        P("\x80\x02h\x05.", "memo lookup of an unset index"),
        P("\x80\x02X\xff\x00\x00\x00" "ab.", "string runs past the end"),
        P("\x80\x02J\x01\x00", "pickle truncated"),
        P("\x80\x02(J\x01\x00\x00\x00" "d.", "odd number of items for a dict"),
        P("\x80\x02N\x85Ja\x00\x00\x00" "a.", "APPEND into a tuple"),
        P("\x80\x02t.", "no MARK"),
        P("\x80\x02" "cos\nsystem\nX\x02\x00\x00\x00ls\x85R.", "pickle calls os.system"),
        P("\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n)R.", "_rebuild_tensor_v2 with 0 arguments"),
        P("\x80\x02N\x85Q.", "persistent id at offset 4 is a tuple of 1 items"),
        P("\x80\x02(X\x07\x00\x00\x00storagectorch\nComplexFloatStorage\nX\x01\x00\x00\x00" "0"
          "X\x03\x00\x00\x00" "cpuK\x01tQ.", "unsupported storage type torch.ComplexFloatStorage"),
        P("\x80\x02(X\x07\x00\x00\x00storagecnumpy\nFloatStorage\nX\x01\x00\x00\x00" "0"
          "X\x03\x00\x00\x00" "cpuK\x01tQ.", "storage type numpy.FloatStorage"),
        P("\x80\x02J\x07\x00\x00\x00.", "pickled object has type int, not tensor"),
        P("\x80\x02]q\x00h\x00" "a.", "pickled object has type list, not tensor"), /* a list holding itself */
        P("\x80\x02" "c\n\n)R.", "pickle calls . with 0 arguments"),
        P("\x80\x02" "cos\nsys\ntem\n.", "no MARK"), /* a newline ends the name */
        P("\x80\x02\x8a\x01\xff)R.", "REDUCE calls a int"),
        /* Empty containers (once undefined behaviour, found by fuzz_pt). */
        P("\x80\x02(t.", "pickled object has type tuple, not tensor"),
        P("\x80\x02](e.", "pickled object has type list, not tensor"),
        P("\x80\x02}(u.", "pickled object has type dict, not tensor"),
#undef P
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tbuf pkl = {0}, file = {0};
        tb_put(&pkl, cases[i].bytes, cases[i].len);
        build_pt(&file, &pkl, base_f32, sizeof base_f32, NULL);
        expect_fail(file.p, file.len, cases[i].want);
        tb_free(&pkl);
        tb_free(&file);
    }
}
END_TEST

/* Tensor geometry against its storage. */
START_TEST(built_geometry_faults)
{
    struct {
        spec s;
        const char *want;
    } cases[] = {
        {{"FloatStorage", "0", 10, 8, 1, {3}, {1}, NULL}, "reaches element 10 of a storage of 10"},
        {{"FloatStorage", "0", 10, 0, 1, {4}, {3}, NULL}, "reaches element 9"}, /* valid twin below */
        {{"FloatStorage", "0", 10, 0, 2, {2, 2}, {9, 1}, NULL}, "reaches element 10"},
        {{"FloatStorage", "0", 10, -1, 1, {3}, {1}, NULL}, "storage offset is not a non-negative"},
        {{"FloatStorage", "0", 10, 0, 1, {-3}, {1}, NULL}, "size or stride is not a non-negative"},
        {{"FloatStorage", "0", 10, 0, 1, {3}, {-1}, NULL}, "size or stride is not a non-negative"},
        {{"FloatStorage", "0", 10, 0, 2, {INT64_MAX / 2, 4}, {0, 0}, NULL}, "more than"},
        {{"FloatStorage", "0", 10, 0, 2, {3, 3}, {INT64_MAX / 2 + 1, 0}, NULL}, "strides overflow"},
        {{"FloatStorage", "0", 11, 0, 1, {3}, {1}, NULL}, "holds 11 float32 elements"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tbuf pkl = {0}, file = {0};
        hc_pt_tensor t;
        pb_tensor(&pkl, &cases[i].s);
        build_pt(&file, &pkl, base_f32, sizeof base_f32, NULL);
        if (i == 1) {
            /* size 4 stride 3 reaches element 9 exactly: the last one, valid. */
            ck_assert_msg(read_exact(file.p, file.len, &t) == 0, "%s", hc_last_error());
            ck_assert(t.f64[3] == base_f32[9]);
            hc_pt_tensor_free(&t);
        } else {
            expect_fail(file.p, file.len, cases[i].want);
        }
        tb_free(&pkl);
        tb_free(&file);
    }
}
END_TEST

/* ---- faults in real torch files ------------------------------------------------------ */
START_TEST(real_file_pickle_edits)
{
    size_t len;
    uint8_t *orig = load("counts_i64.pt", &len), *p = malloc(len);
    hc_pt_tensor t;
    /* Patterns in counts_i64/data.pkl (see pickletools.dis): the storage key '0', the
     * storage numel 384 (BININT2 then TUPLE) and the storage offset after BINPERSID. */
    static const uint8_t key0[] = "X\x01\x00\x00\x00" "0q\x03", key7[] = "X\x01\x00\x00\x00" "7q\x03";
    static const uint8_t n384[] = "M\x80\x01t", n385[] = "M\x81\x01t";
    static const uint8_t off0[] = "QK\x00M\x80\x01\x85", off1[] = "QK\x01M\x80\x01\x85";
    static const uint8_t sz384[] = "QK\x00M\x80\x01\x85", sz385[] = "QK\x00M\x81\x01\x85";
    static const uint8_t cls[] = "LongStorage", cls2[] = "LongStorag3";
    ck_assert_ptr_nonnull(p);

    memcpy(p, orig, len);
    ck_assert_int_eq(read_exact(p, len, &t), 0); /* the unedited twin */
    hc_pt_tensor_free(&t);

    memcpy(p, orig, len);
    patch(p, len, key0, key7, sizeof key0 - 1);
    expect_fail(p, len, "storage key \"7\" has no counts_i64/data/7 record");

    memcpy(p, orig, len);
    patch(p, len, n384, n385, sizeof n384 - 1);
    expect_fail(p, len, "holds 385 int64 elements but its record has only 3072 bytes");

    memcpy(p, orig, len);
    patch(p, len, off0, off1, sizeof off0 - 1);
    expect_fail(p, len, "reaches element 384 of a storage of 384 int64 elements");

    memcpy(p, orig, len);
    patch(p, len, sz384, sz385, sizeof sz384 - 1);
    expect_fail(p, len, "reaches element 384");

    memcpy(p, orig, len);
    patch(p, len, cls, cls2, sizeof cls - 1);
    expect_fail(p, len, "unsupported storage type torch.LongStorag3");

    memcpy(p, orig, len);
    patch(p, len, "\x80\x02" "ctorch._utils", "\x80\x02" "Ztorch._utils", 15);
    expect_fail(p, len, "data.pkl: unsupported pickle opcode 0x5a at offset 2");
    free(p);
    free(orig);
}
END_TEST

/* The zip structure of a real file: end record, zip64 records, central directory. */
START_TEST(real_file_zip_edits)
{
    size_t len;
    uint8_t *orig = load("counts_i64.pt", &len), *p = malloc(len), *hit;
    ck_assert_ptr_nonnull(p);

    /* Truncated anywhere: always an error, never a crash. */
    for (size_t n = 0; n < len; n += (n < 64 || len - n < 600) ? 1 : 97)
        expect_fail(orig, n, "");
    expect_fail(orig, len - 1, "no zip end-of-central-directory record");
    expect_fail(orig, 3, "not a torch file");

    /* Central directory entry signature. */
    memcpy(p, orig, len);
    hit = memmem(p, len, "PK\x01\x02", 4);
    ck_assert_ptr_nonnull(hit);
    hit[3] = 9;
    expect_fail(p, len, "zip central directory entry 0 has a bad signature");

    /* Central directory offset in the zip64 end record (torch always writes one). */
    memcpy(p, orig, len);
    hit = memmem(p, len, "PK\x06\x06", 4);
    ck_assert_ptr_nonnull(hit);
    hit[50] = 0x7f;
    expect_fail(p, len, "lies outside the file");

    /* Entry count far above what the directory can hold. */
    memcpy(p, orig, len);
    hit = memmem(p, len, "PK\x06\x06", 4);
    hit[32 + 5] = 1;
    expect_fail(p, len, "central directory claims");

    /* zip64 locator pointing nowhere. */
    memcpy(p, orig, len);
    hit = memmem(p, len, "PK\x06\x07", 4);
    ck_assert_ptr_nonnull(hit);
    hit[8] ^= 0x10;
    expect_fail(p, len, "zip64 end record");

    /* A local header offset past the directory. */
    memcpy(p, orig, len);
    hit = memmem(p, len, "PK\x01\x02", 4);
    hit[42 + 2] = 0x7f;
    expect_fail(p, len, "local header offset");

    /* A local header renamed: central and local names must agree. */
    memcpy(p, orig, len);
    hit = memmem(p, len, "PK\x03\x04", 4);
    hit[30] = 'X';
    expect_fail(p, len, "local header names a different file");

    /* Central name field longer than the directory. */
    memcpy(p, orig, len);
    hit = memmem(p, len, "PK\x01\x02", 4);
    hit[29] = 0x7f;
    expect_fail(p, len, "runs past the directory");
    free(p);
    free(orig);
}
END_TEST

START_TEST(legacy_faults)
{
    size_t len;
    uint8_t *orig = load("legacy.pt", &len), *p = malloc(len);
    ck_assert_ptr_nonnull(p);
    for (size_t n = 0; n < len; n++)
        expect_fail(orig, n, "");
    expect_fail(orig, len - 8, "20 elements run past the end of the file");
    memcpy(p, orig, len);
    p[5] ^= 1; /* inside the magic number */
    expect_fail(p, len, "legacy magic number is missing");
    memcpy(p, orig, len);
    patch(p, len, "M\xe9\x03.", "M\xea\x03.", 4);
    expect_fail(p, len, "legacy protocol version is not 1001");
    memcpy(p, orig, len);
    patch(p, len, "little_endianq\x02\x88", "little_endianq\x02\x89", 16);
    expect_fail(p, len, "big-endian legacy file");
    /* The storage size field (the first 8 bytes after the key list's STOP). */
    memcpy(p, orig, len);
    p[len - 20 * 8 - 8] = 21;
    expect_fail(p, len, "21 elements run past the end of the file");
    memcpy(p, orig, len);
    p[len - 20 * 8 - 8] = 19;
    expect_fail(p, len, "holds 19 elements, the pickle says 20");
    free(p);
    free(orig);
}
END_TEST

/* Every single-byte corruption of real files: an error or a sane tensor, never a crash
 * (run under ASan/UBSan this is a small deterministic fuzz). */
START_TEST(byte_flips_never_crash)
{
    static const char *names[] = {"counts_i64.pt", "legacy.pt", "proto4.pt", "two_d_t.pt"};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        size_t len;
        uint8_t *orig = load(names[f], &len), *p = malloc(len);
        ck_assert_ptr_nonnull(p);
        for (size_t i = 0; i < len; i++) {
            static const uint8_t x[3] = {0xff, 0x01, 0x80};
            for (int k = 0; k < 3; k++) {
                hc_pt_tensor t;
                memcpy(p, orig, len);
                p[i] ^= x[k];
                if (read_exact(p, len, &t) == 0)
                    hc_pt_tensor_free(&t);
            }
        }
        free(p);
        free(orig);
    }
}
END_TEST

static Suite *pt_suite(void)
{
    Suite *s = suite_create("torch_pt");
    TCase *tf = tcase_create("fixtures");
    TCase *ta = tcase_create("activation_dir");
    TCase *tb = tcase_create("malformed");
    tcase_add_test(tf, fixtures_match_torch);
    tcase_add_test(tf, fixtures_from_memory);
    tcase_add_test(tf, read_1d_rejects_other_shapes);
    tcase_add_test(tf, not_a_tensor_or_not_a_file);
    suite_add_tcase(s, tf);
    tcase_add_test(ta, activation_dir_numeric_order);
    tcase_add_test(ta, activation_dir_faults);
    tcase_add_test(ta, activation_dir_fractions);
    suite_add_tcase(s, ta);
    tcase_set_timeout(tb, 240);
    tcase_add_test(tb, built_valid);
    tcase_add_test(tb, built_v3_untyped);
    tcase_add_test(tb, built_container_faults);
    tcase_add_test(tb, built_pickle_faults);
    tcase_add_test(tb, built_geometry_faults);
    tcase_add_test(tb, real_file_pickle_edits);
    tcase_add_test(tb, real_file_zip_edits);
    tcase_add_test(tb, legacy_faults);
    tcase_add_test(tb, byte_flips_never_crash);
    suite_add_tcase(s, tb);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(pt_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/*
 * hc_quantize_file() and `hotcold quantize`.
 *
 * Outputs are decoded here with this file's own decoders (block layouts as
 * documented in plugin.h), not with core/ref, and compared with the source
 * values under a per-type bound derived from the format:
 *   F16   round to nearest: |e| <= |x| * 2^-11 (half an ulp) + 2^-25 (half
 *         the subnormal spacing).
 *   Q8_0  d = amax/127 per block of 32, q = round(x/d): rounding costs d/2,
 *         and storing d as fp16 (relative error <= 2^-11) costs up to
 *         |q| * d * 2^-11 <= 127/2048 d, so |e| <= 0.5625 d; checked at 0.57 d.
 *   Q4_0  |d| = amax/8, q in 0..15 => x = d(q-8) reaches -8d..7d: values on
 *         the short side may clamp by up to |d|, plus the fp16 d error
 *         8 |d| 2^-11, so |e| <= 1.004 |d|; checked at 1.01 |d|.
 *   Q6_K  (core/ref's encoder) a group of 16 gets the step d * scale with
 *         |scale| <= gmax/32/|d| + 1 (rounded up), |d| = amax/32/128 over
 *         the 256-block (fp16: 2^-11), so step <= gmax/32 + amax/4096;
 *         rounding costs half a step, the clamp at q = 63 one, and a scale
 *         clamped to 127 up to 1.27 steps: checked at 1.3 steps.
 * Tensors the rules keep in F32 must be bit-exact.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "runtime/placement_stats.h"
#include "test_util.h"

/* ---- independent decoders ----------------------------------------------- */
static float half_to_float(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexpf((float)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Element i (flat index) of a tensor of type t with row length cols. */
static float decode(uint32_t t, const uint8_t *data, uint64_t cols, uint64_t i)
{
    uint64_t r = i / cols, c = i % cols;
    switch (t) {
    case HC_TYPE_F32: {
        float f;
        memcpy(&f, data + 4 * i, 4);
        return f;
    }
    case HC_TYPE_F16: return half_to_float(rd16(data + 2 * i));
    case HC_TYPE_Q8_0: {
        const uint8_t *blk = data + r * (cols / 32 * 34) + c / 32 * 34;
        return half_to_float(rd16(blk)) * (float)(int8_t)blk[2 + c % 32];
    }
    case HC_TYPE_Q4_0: {
        const uint8_t *blk = data + r * (cols / 32 * 18) + c / 32 * 18;
        int j = (int)(c % 32);
        int q = j < 16 ? blk[2 + j] & 0xf : blk[2 + j - 16] >> 4;
        return half_to_float(rd16(blk)) * (float)(q - 8);
    }
    case HC_TYPE_Q6_K: {
        /* 210-byte blocks of 256: ql[128], qh[64], int8 scales[16], fp16 d;
         * element 128h + 32g + l: ql[64h + 32(g & 1) + l] (low nibble for
         * g < 2), bits 2g, 2g+1 of qh[32h + l]. */
        const uint8_t *blk = data + r * (cols / 256 * 210) + c / 256 * 210;
        int e = (int)(c % 256), h = e / 128, g = e % 128 / 32, l = e % 32;
        int lo = blk[64 * h + 32 * (g & 1) + l], hi = blk[128 + 32 * h + l];
        int q = (g < 2 ? lo & 0xf : lo >> 4) | ((hi >> (2 * g)) & 3) << 4;
        return half_to_float(rd16(blk + 208)) * (float)(int8_t)blk[192 + e / 16] * (float)(q - 32);
    }
    }
    ck_abort_msg("decode: type %u", t);
    return 0;
}

/* ---- helpers -------------------------------------------------------------- */
static const char *tmp(const char *name)
{
    return hc_test_path(hc_test_tmpdir(), name);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static hc_gguf *open_ok(const char *path)
{
    char err[512] = "";
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    return g;
}

typedef struct prog {
    int calls, last_done, total, bad;
} prog;

static void on_progress(void *user, int done, int total, const char *tensor)
{
    prog *p = user;
    if (done != p->last_done + 1 || !tensor || !tensor[0] || (p->total && total != p->total))
        p->bad = 1;
    p->calls++;
    p->last_done = done;
    p->total = total;
}

/* Encoded bytes of a kv's value, compared byte for byte. */
static void assert_kv_equal(const hc_gguf_kv *a, const hc_gguf_kv *b)
{
    static const unsigned sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    ck_assert_str_eq(a->key, b->key);
    ck_assert_uint_eq(a->type, b->type);
    if (a->type == HC_GGUF_STRING) {
        ck_assert_uint_eq(a->str_len, b->str_len);
        ck_assert_int_eq(memcmp(a->str, b->str, a->str_len), 0);
    } else if (a->type == HC_GGUF_ARRAY) {
        ck_assert_uint_eq(a->arr_type, b->arr_type);
        ck_assert_uint_eq(a->arr_n, b->arr_n);
        if (a->arr_type == HC_GGUF_STRING) {
            for (uint64_t i = 0; i < a->arr_n; i++) {
                uint64_t la, lb;
                const char *sa = hc_gguf_arr_str(a, i, &la), *sb = hc_gguf_arr_str(b, i, &lb);
                ck_assert_uint_eq(la, lb);
                ck_assert_int_eq(memcmp(sa, sb, la), 0);
            }
        } else {
            ck_assert_int_eq(memcmp(a->data, b->data, a->arr_n * sz[a->arr_type]), 0);
        }
    } else {
        ck_assert_int_eq(memcmp(a->data, b->data, sz[a->type]), 0);
    }
}

/* Every key of src is in dst, identical, except general.file_type, which dst
 * has with value ftype. */
static void assert_keys(const hc_gguf *src, const hc_gguf *dst, uint32_t ftype)
{
    int src_has_ft = hc_gguf_find_key(src, "general.file_type") >= 0;
    ck_assert_uint_eq(dst->n_kv, src->n_kv + (src_has_ft ? 0 : 1));
    for (uint64_t i = 0; i < src->n_kv; i++) {
        if (!strcmp(src->kv[i].key, "general.file_type"))
            continue;
        ck_assert_int_eq(hc_gguf_find_key(dst, src->kv[i].key), (int64_t)i); /* order kept */
        assert_kv_equal(&src->kv[i], &dst->kv[i]);
    }
    uint32_t ft = 99;
    int64_t k = hc_gguf_find_key(dst, "general.file_type");
    ck_assert_int_ge(k, 0);
    ck_assert_uint_eq(dst->kv[k].type, HC_GGUF_U32);
    ck_assert_int_eq(hc_gguf_get_u32(dst, "general.file_type", &ft), 0);
    ck_assert_uint_eq(ft, ftype);
}

/* Q6_K values of `out` against `ref`, per 256-block (ne0 is a multiple of 256). */
static void assert_close_q6_k(const hc_gguf_tensor *ref, const hc_gguf_tensor *out)
{
    const uint64_t cols = ref->ne[0];
    for (uint64_t b0 = 0; b0 < ref->n_elements; b0 += 256) {
        float x[256], amax = 0, gmax[16] = {0};
        for (int j = 0; j < 256; j++) {
            x[j] = decode(ref->type, ref->data, cols, b0 + (uint64_t)j);
            amax = fmaxf(amax, fabsf(x[j]));
            gmax[j / 16] = fmaxf(gmax[j / 16], fabsf(x[j]));
        }
        for (int j = 0; j < 256; j++) {
            const double step = (gmax[j / 16] / 32.0 + amax / 4096.0) * (1 + 0x1p-10);
            const double bound = 1.3 * step + 1e-9;
            const float y = decode(out->type, out->data, cols, b0 + (uint64_t)j);
            const double e = fabs((double)y - (double)x[j]);
            ck_assert_msg(e <= bound, "%s[%llu]: %g vs %g (error %g > bound %g, q6_k)", out->name,
                          (unsigned long long)(b0 + (uint64_t)j), y, x[j], e, bound);
        }
    }
}

/* Values of `out` against `ref` (any type), within the bound for out->type. */
static void assert_close(const hc_gguf_tensor *ref, const hc_gguf_tensor *out)
{
    uint64_t cols = ref->ne[0];
    double worst = 0;
    if (out->type == HC_TYPE_Q6_K) {
        assert_close_q6_k(ref, out);
        return;
    }
    for (uint64_t b0 = 0; b0 < ref->n_elements; b0 += 32) {
        /* Blocks of 32 along rows (ne0 is a multiple of 32 for Q types). */
        uint64_t n = ref->n_elements - b0 < 32 ? ref->n_elements - b0 : 32;
        float x[32], amax = 0;
        for (uint64_t j = 0; j < n; j++) {
            x[j] = decode(ref->type, ref->data, cols, b0 + j);
            amax = fmaxf(amax, fabsf(x[j]));
        }
        for (uint64_t j = 0; j < n; j++) {
            float y = decode(out->type, out->data, cols, b0 + j);
            double bound;
            switch (out->type) {
            case HC_TYPE_F32: bound = 0; break;
            case HC_TYPE_F16: bound = fabsf(x[j]) * 0x1p-11 + 0x1p-25; break;
            case HC_TYPE_Q8_0: bound = 0.57 * amax / 127 + 1e-9; break;
            default: bound = 1.01 * amax / 8 + 1e-9; break;
            }
            double e = fabs((double)y - (double)x[j]);
            ck_assert_msg(e <= bound, "%s[%llu]: %g vs %g (error %g > bound %g, type %s)",
                          out->name, (unsigned long long)(b0 + j), y, x[j], e, bound,
                          hc_ggml_type_name(out->type));
            if (bound > 0 && e / bound > worst)
                worst = e / bound;
        }
    }
    (void)worst;
}

/* The output type the rules in quantize.h give (output.weight: `head`). */
static uint32_t expected_type_head(const hc_gguf_tensor *t, hc_type target, hc_type head)
{
    size_t n = strlen(t->name);
    if (n < 7 || strcmp(t->name + n - 7, ".weight"))
        return t->type;
    if (t->n_dims < 2)
        return HC_TYPE_F32;
    if (!strcmp(t->name, "output.weight"))
        target = head;
    if (target == HC_TYPE_Q6_K &&
        (t->ne[0] % 256 || (n > 18 && !strcmp(t->name + n - 18, ".ffn_down_t.weight"))))
        target = HC_TYPE_Q8_0;
    if (target != HC_TYPE_F16 && t->ne[0] % 32)
        return HC_TYPE_F16;
    return target;
}

static void check_output_head(const char *in, const char *out, hc_type target, hc_type head,
                              uint32_t ftype);

static void check_output(const char *in, const char *out, hc_type target, uint32_t ftype)
{
    check_output_head(in, out, target, target, ftype);
}

static void check_output_head(const char *in, const char *out, hc_type target, hc_type head,
                              uint32_t ftype)
{
    hc_gguf *src = open_ok(in), *dst = open_ok(out);
    ck_assert_str_eq(dst->magic, src->magic);
    ck_assert_uint_eq(dst->version, src->version);
    ck_assert_uint_eq(dst->alignment, src->alignment);
    assert_keys(src, dst, ftype);
    ck_assert_uint_eq(dst->n_tensors, src->n_tensors);
    for (uint64_t i = 0; i < src->n_tensors; i++) {
        const hc_gguf_tensor *a = &src->tensors[i], *b = &dst->tensors[i];
        ck_assert_str_eq(a->name, b->name);
        ck_assert_uint_eq(a->n_dims, b->n_dims);
        for (int d = 0; d < 4; d++)
            ck_assert_uint_eq(a->ne[d], b->ne[d]);
        const uint32_t want = expected_type_head(a, target, head);
        ck_assert_msg(b->type == want, "%s: type %s, expected %s", b->name,
                      hc_ggml_type_name(b->type), hc_ggml_type_name(want));
        if (a->type == b->type)
            ck_assert_int_eq(memcmp(a->data, b->data, a->n_bytes), 0); /* copied */
        else
            assert_close(a, b);
    }
    hc_gguf_close(src);
    hc_gguf_close(dst);
}

/* ---- tests ------------------------------------------------------------------ */
static const struct {
    hc_type type;
    const char *name;
    uint32_t ftype;
} k_targets[] = {
    {HC_TYPE_F16, "f16", 1}, {HC_TYPE_Q8_0, "q8_0", 7}, {HC_TYPE_Q4_0, "q4_0", 2}};

START_TEST(test_stories_each_type)
{
    const char *in = hc_test_path(HC_MODELS_DIR, "stories260K.gguf");
    char name[64];
    snprintf(name, sizeof name, "stories-%s.gguf", k_targets[_i].name);
    const char *out = tmp(name);
    prog p = {0};
    ck_assert_msg(hc_quantize_file(in, out, k_targets[_i].type, on_progress, &p) == 0, "%s",
                  hc_last_error());
    ck_assert_int_eq(p.bad, 0);
    ck_assert_int_eq(p.calls, 48);
    ck_assert_int_eq(p.total, 48);
    char tmpname[600];
    snprintf(tmpname, sizeof tmpname, "%s.tmp", out);
    ck_assert(!exists(tmpname));
    check_output(in, out, k_targets[_i].type, k_targets[_i].ftype);

    /* Spot checks against facts, independent of expected_type(). */
    hc_gguf *g = open_ok(out);
    ck_assert_uint_eq(hc_gguf_find_tensor(g, "token_embd.weight")->type, k_targets[_i].type);
    ck_assert_uint_eq(hc_gguf_find_tensor(g, "blk.0.attn_norm.weight")->type, HC_TYPE_F32);
    ck_assert_uint_eq(hc_gguf_find_tensor(g, "blk.2.ffn_down.weight")->type, HC_TYPE_F16);
    ck_assert_uint_eq(g->n_kv, 20);
    hc_gguf_close(g);
    unlink(out);
}
END_TEST

/* Quantized inputs: q8_0 -> f16 and -> q4_0 (dequantize path), f16 -> f16
 * (copy path). */
START_TEST(test_quantized_inputs)
{
    const char *in = hc_test_path(HC_MODELS_DIR, "stories260K.gguf");
    char q8[512], f16[512], out[512];
    snprintf(q8, sizeof q8, "%s", tmp("in-q8.gguf"));
    snprintf(f16, sizeof f16, "%s", tmp("in-f16.gguf"));
    snprintf(out, sizeof out, "%s", tmp("out.gguf"));
    ck_assert_int_eq(hc_quantize_file(in, q8, HC_TYPE_Q8_0, NULL, NULL), 0);
    ck_assert_int_eq(hc_quantize_file(in, f16, HC_TYPE_F16, NULL, NULL), 0);

    ck_assert_int_eq(hc_quantize_file(q8, out, HC_TYPE_F16, NULL, NULL), 0);
    check_output(q8, out, HC_TYPE_F16, 1);
    ck_assert_int_eq(hc_quantize_file(q8, out, HC_TYPE_Q4_0, NULL, NULL), 0);
    check_output(q8, out, HC_TYPE_Q4_0, 2);
    ck_assert_int_eq(hc_quantize_file(f16, out, HC_TYPE_F16, NULL, NULL), 0);
    check_output(f16, out, HC_TYPE_F16, 1);
    /* The f16 file's weights are bit-identical after a second pass. */
    size_t la, lb;
    char *a = hc_test_read_file(f16, &la), *b = hc_test_read_file(out, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(a, b, la), 0);
    free(a);
    free(b);
    unlink(q8);
    unlink(f16);
    unlink(out);
}
END_TEST

/* reglu1M has general.file_type already: it is replaced in place. */
START_TEST(test_existing_file_type)
{
    const char *in = hc_test_path(HC_MODELS_DIR, "reglu1M.gguf");
    const char *out = tmp("reglu-q8.gguf");
    ck_assert_int_eq(hc_quantize_file(in, out, HC_TYPE_Q8_0, NULL, NULL), 0);
    check_output(in, out, HC_TYPE_Q8_0, 7);
    hc_gguf *g = open_ok(out);
    ck_assert_int_eq(hc_gguf_find_key(g, "general.file_type"), 11);
    ck_assert_uint_eq(g->n_kv, 19);
    hc_gguf_close(g);
    unlink(out);
}
END_TEST

START_TEST(test_pwri_stays_pwri)
{
    size_t len;
    char *bytes = hc_test_read_file(hc_test_path(HC_MODELS_DIR, "stories260K.gguf"), &len);
    ck_assert_ptr_nonnull(bytes);
    memcpy(bytes, "PWRI", 4);
    char in[512], out[512];
    snprintf(in, sizeof in, "%s", tmp("pwri-in.gguf"));
    snprintf(out, sizeof out, "%s", tmp("pwri-out.gguf"));
    FILE *f = fopen(in, "wb");
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    free(bytes);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(hc_quantize_file(in, out, k_targets[i].type, NULL, NULL), 0);
        hc_gguf *g = open_ok(out);
        ck_assert_str_eq(g->magic, "PWRI");
        ck_assert_int_eq(hc_gguf_is_pwri(g), 1);
        hc_gguf_close(g);
        size_t olen;
        char *ob = hc_test_read_file(out, &olen);
        ck_assert_int_eq(memcmp(ob, "PWRI", 4), 0); /* the raw bytes, not just the parse */
        free(ob);
        check_output(in, out, k_targets[i].type, k_targets[i].ftype);
    }
    unlink(in);
    unlink(out);
}
END_TEST

/* relu2M.powerinfer.gguf, as shipped, keeps its activation counts as I32
 * tensors (hotcold before 2026-12), which PowerInfer's loader refuses: the
 * quantized file carries them as metadata arrays, bit for bit, and the
 * placement reads the same counts from both. */
START_TEST(test_pwri_counts_become_metadata)
{
    const char *in = hc_test_path(HC_MODELS_DIR, "relu2M.powerinfer.gguf");
    char out[512];
    snprintf(out, sizeof out, "%s", tmp("relu2M-q8.powerinfer.gguf"));
    ck_assert_msg(hc_quantize_file(in, out, HC_TYPE_Q8_0, NULL, NULL) == 0, "%s",
                  hc_last_error());
    hc_gguf *a = open_ok(in), *b = open_ok(out);
    ck_assert_uint_eq(b->n_tensors, a->n_tensors - 6);
    for (int il = 0; il < 6; il++) {
        char name[64], key[96];
        uint32_t et;
        uint64_t n;
        const void *data;
        snprintf(name, sizeof name, "blk.%d.ffn_act_count", il);
        snprintf(key, sizeof key, "hotcold.activation.blk.%d.ffn_act_count", il);
        const hc_gguf_tensor *t = hc_gguf_find_tensor(a, name);
        ck_assert(t && t->type == 26 && hc_gguf_find_key(a, key) < 0);
        ck_assert(hc_gguf_find_tensor(b, name) == NULL);
        ck_assert_msg(hc_gguf_get_arr(b, key, &et, &n, &data) == 0, "key %s missing", key);
        ck_assert(et == HC_GGUF_I32 && n == t->ne[0] && !memcmp(data, t->data, 4 * n));
    }
    float *fa = NULL, *fb = NULL;
    ck_assert_msg(hc_place_freq_from_gguf(a, 6, 384, &fa) == 0, "%s", hc_last_error());
    ck_assert_msg(hc_place_freq_from_gguf(b, 6, 384, &fb) == 0, "%s", hc_last_error());
    ck_assert(fa && fb && !memcmp(fa, fb, 6 * 384 * sizeof *fa));
    free(fa);
    free(fb);
    hc_gguf_close(a);
    hc_gguf_close(b);
    const char *odd = hc_test_tensor_unknown_to_powerinfer(out);
    ck_assert_ptr_nonnull(odd);
    ck_assert_msg(!*odd, "tensor %s would stop PowerInfer loading the file", odd);
    unlink(out);
}
END_TEST

/* A synthetic file exercising the rules: non-weight tensors copied as they
 * are (any type), 1-D f16 weights widened to f32, short rows kept f16. */
START_TEST(test_rules_synthetic)
{
    char in[512], out[512], err[256];
    snprintf(in, sizeof in, "%s", tmp("rules-in.gguf"));
    snprintf(out, sizeof out, "%s", tmp("rules-out.gguf"));
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
    hc_gguf_writer_set_str(w, "general.architecture", "llama");
    uint64_t ne_idx[1] = {64}, ne_norm[1] = {48}, ne_w[2] = {64, 3}, ne_short[2] = {40, 2},
             ne_f16[2] = {32, 2};
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "blk.0.gpu_idx", 1, ne_idx, 26), 0); /* I32 */
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "x_norm.weight", 1, ne_norm, HC_TYPE_F16), 0);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "a.weight", 2, ne_w, HC_TYPE_F32), 0);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "short.weight", 2, ne_short, HC_TYPE_F32), 0);
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "h.weight", 2, ne_f16, HC_TYPE_F16), 0);
    ck_assert_int_eq(hc_gguf_writer_begin(w, in, err, sizeof err), 0);
    int32_t idx[64];
    for (int i = 0; i < 64; i++)
        idx[i] = i % 3 == 0;
    ck_assert_int_eq(hc_gguf_writer_write_data(w, idx, sizeof idx, err, sizeof err), 0);
    uint16_t h[64];
    for (int i = 0; i < 64; i++)
        h[i] = (uint16_t)(0x3c00 + i * 3); /* 1.0 and up */
    ck_assert_int_eq(hc_gguf_writer_write_data(w, h, 48 * 2, err, sizeof err), 0);
    float fw[192];
    for (int i = 0; i < 192; i++)
        fw[i] = sinf((float)i * 0.37f) * (1.0f + (float)(i % 7));
    ck_assert_int_eq(hc_gguf_writer_write_data(w, fw, sizeof fw, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_write_data(w, fw, 80 * 4, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_write_data(w, h, 64 * 2, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), 0);
    hc_gguf_writer_free(w);

    ck_assert_msg(hc_quantize_file(in, out, HC_TYPE_Q4_0, NULL, NULL) == 0, "%s",
                  hc_last_error());
    check_output(in, out, HC_TYPE_Q4_0, 2);
    hc_gguf *g = open_ok(out);
    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, "blk.0.gpu_idx");
    ck_assert_uint_eq(t->type, 26);
    ck_assert_int_eq(memcmp(t->data, idx, sizeof idx), 0);
    t = hc_gguf_find_tensor(g, "x_norm.weight");
    ck_assert_uint_eq(t->type, HC_TYPE_F32);
    for (int i = 0; i < 48; i++) {
        float v;
        memcpy(&v, (const uint8_t *)t->data + 4 * i, 4);
        ck_assert_float_eq(v, half_to_float(h[i])); /* exact: f16 widens losslessly */
    }
    ck_assert_uint_eq(hc_gguf_find_tensor(g, "a.weight")->type, HC_TYPE_Q4_0);
    ck_assert_uint_eq(hc_gguf_find_tensor(g, "short.weight")->type, HC_TYPE_F16);
    ck_assert_uint_eq(hc_gguf_find_tensor(g, "h.weight")->type, HC_TYPE_Q4_0);
    hc_gguf_close(g);
    unlink(in);
    unlink(out);
}
END_TEST

/* The log lines a conversion wrote (WARN and up), for the tests below. */
static char g_warn[4096];

static void capture_warn(void *user, int level, const char *msg)
{
    (void)user;
    size_t len = strlen(g_warn);
    if (level >= HC_LOG_WARN)
        snprintf(g_warn + len, sizeof g_warn - len, "%s\n", msg);
}

/* A file with rows of 256 (the head, the embeddings, a PWRI down_t), rows
 * of 96 (no Q6_K) and of 40 (no block type at all), and a norm. */
static void write_q6_k_input(const char *path, int with_head)
{
    char err[256];
    hc_gguf_writer *w = hc_gguf_writer_new("PWRI", 3, 32);
    hc_gguf_writer_set_str(w, "general.architecture", "llama");
    const uint64_t ne_head[2] = {256, 8}, ne_emb[2] = {256, 8}, ne_dt[2] = {256, 4},
                   ne_odd[2] = {96, 2}, ne_short[2] = {40, 2}, ne_norm[1] = {256};
    const char *names[6] = {"output.weight", "token_embd.weight", "blk.0.ffn_down_t.weight",
                            "odd.weight", "short.weight", "output_norm.weight"};
    const uint64_t *ne[6] = {ne_head, ne_emb, ne_dt, ne_odd, ne_short, ne_norm};
    uint64_t count[6];
    for (int i = with_head ? 0 : 1; i < 6; i++) {
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, names[i], i == 5 ? 1 : 2, ne[i],
                                                   HC_TYPE_F32),
                         0);
        count[i] = ne[i][0] * (i == 5 ? 1 : ne[i][1]);
    }
    ck_assert_int_eq(hc_gguf_writer_begin(w, path, err, sizeof err), 0);
    float v[2048];
    for (int i = with_head ? 0 : 1; i < 6; i++) {
        /* Group scales that differ by up to 8x, both signs. */
        for (uint64_t k = 0; k < count[i]; k++)
            v[k] = sinf((float)(k * 7 + (uint64_t)i) * 0.61f) * (1.0f + (float)(k / 16 % 8));
        ck_assert_int_eq(hc_gguf_writer_write_data(w, v, count[i] * 4, err, sizeof err), 0);
    }
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), 0);
    hc_gguf_writer_free(w);
}

static uint32_t type_of(const char *path, const char *tensor)
{
    hc_gguf *g = open_ok(path);
    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, tensor);
    ck_assert_ptr_nonnull(t);
    uint32_t ty = t->type;
    hc_gguf_close(g);
    return ty;
}

/* q6_k as the target, as the head's type beside q4_0 (PowerInfer's q4
 * layout), and as an input. */
START_TEST(test_q6_k)
{
    char in[512], out[512], back[512];
    snprintf(in, sizeof in, "%s", tmp("q6-in.gguf"));
    snprintf(out, sizeof out, "%s", tmp("q6-out.gguf"));
    snprintf(back, sizeof back, "%s", tmp("q6-back.gguf"));
    write_q6_k_input(in, 1);

    /* Every weight q4_0 but the head. */
    ck_assert_msg(hc_quantize_file_mixed(in, out, HC_TYPE_Q4_0, HC_TYPE_Q6_K, NULL, NULL) == 0,
                  "%s", hc_last_error());
    check_output_head(in, out, HC_TYPE_Q4_0, HC_TYPE_Q6_K, 2);
    ck_assert_uint_eq(type_of(out, "output.weight"), HC_TYPE_Q6_K);
    ck_assert_uint_eq(type_of(out, "token_embd.weight"), HC_TYPE_Q4_0);
    ck_assert_uint_eq(type_of(out, "blk.0.ffn_down_t.weight"), HC_TYPE_Q4_0);

    /* Everything q6_k where it can be: rows of 96 and the PWRI down_t
     * (no q6_k axpy) fall back to q8_0, rows of 40 to f16, each with a
     * warning. */
    g_warn[0] = 0;
    hc_log_set_level(HC_LOG_WARN);
    hc_log_set_callback(capture_warn, NULL);
    ck_assert_msg(hc_quantize_file(in, out, HC_TYPE_Q6_K, NULL, NULL) == 0, "%s",
                  hc_last_error());
    hc_log_set_callback(NULL, NULL);
    hc_log_set_level(HC_LOG_ERROR);
    check_output(in, out, HC_TYPE_Q6_K, 18);
    ck_assert_uint_eq(type_of(out, "output.weight"), HC_TYPE_Q6_K);
    ck_assert_uint_eq(type_of(out, "token_embd.weight"), HC_TYPE_Q6_K);
    ck_assert_uint_eq(type_of(out, "blk.0.ffn_down_t.weight"), HC_TYPE_Q8_0);
    ck_assert_uint_eq(type_of(out, "odd.weight"), HC_TYPE_Q8_0);
    ck_assert_uint_eq(type_of(out, "short.weight"), HC_TYPE_F16);
    ck_assert_msg(strstr(g_warn, "blk.0.ffn_down_t.weight' stored as q8_0") &&
                      strstr(g_warn, "'odd.weight': ne0 = 96 is not a multiple of 256") &&
                      strstr(g_warn, "'short.weight': ne0 = 40 is not a multiple of 32"),
                  "warnings: %s", g_warn);

    /* Q6_K in: decoded exactly and re-encoded (f16), or copied (q6_k). */
    ck_assert_int_eq(hc_quantize_file(out, back, HC_TYPE_F16, NULL, NULL), 0);
    check_output(out, back, HC_TYPE_F16, 1);
    ck_assert_int_eq(hc_quantize_file_mixed(out, back, HC_TYPE_F16, HC_TYPE_Q6_K, NULL, NULL), 0);
    hc_gguf *a = open_ok(out), *b = open_ok(back);
    const hc_gguf_tensor *ha = hc_gguf_find_tensor(a, "output.weight");
    const hc_gguf_tensor *hb = hc_gguf_find_tensor(b, "output.weight");
    ck_assert_uint_eq(hb->type, HC_TYPE_Q6_K);
    ck_assert_int_eq(memcmp(ha->data, hb->data, ha->n_bytes), 0);
    hc_gguf_close(a);
    hc_gguf_close(b);

    /* A tied head (no output.weight): the head type applies to nothing,
     * which a warning says. */
    write_q6_k_input(in, 0);
    g_warn[0] = 0;
    hc_log_set_level(HC_LOG_WARN);
    hc_log_set_callback(capture_warn, NULL);
    ck_assert_int_eq(hc_quantize_file_mixed(in, out, HC_TYPE_Q4_0, HC_TYPE_Q6_K, NULL, NULL), 0);
    hc_log_set_callback(NULL, NULL);
    hc_log_set_level(HC_LOG_ERROR);
    ck_assert_msg(strstr(g_warn, "no tensor output.weight"), "warnings: %s", g_warn);
    check_output(in, out, HC_TYPE_Q4_0, 2);
    unlink(in);
    unlink(out);
    unlink(back);
}
END_TEST

/* Each failure: -1, a message naming the problem, no output, no .tmp, and a
 * pre-existing output file untouched. */
static void expect_failure(const char *in, const char *out, hc_type type, const char *needle)
{
    char tmpname[600];
    snprintf(tmpname, sizeof tmpname, "%s.tmp", out);
    ck_assert_int_eq(hc_quantize_file(in, out, type, NULL, NULL), -1);
    const char *e = hc_last_error();
    ck_assert_msg(e[0] && strstr(e, needle), "error '%s' lacks '%s'", e, needle);
    ck_assert_msg(!strchr(e, '\n'), "multi-line error '%s'", e);
    ck_assert(!exists(tmpname));
}

START_TEST(test_bad_inputs)
{
    char out[512], trunc[512], k4[512], err[256];
    snprintf(out, sizeof out, "%s", tmp("bad-out.gguf"));
    snprintf(trunc, sizeof trunc, "%s", tmp("trunc.gguf"));
    snprintf(k4, sizeof k4, "%s", tmp("q4k.gguf"));
    const char *stories = hc_test_path(HC_MODELS_DIR, "stories260K.gguf");

    expect_failure("/nonexistent/in.gguf", out, HC_TYPE_Q8_0, "/nonexistent/in.gguf");
    ck_assert(!exists(out));

    size_t len;
    char *bytes = hc_test_read_file(stories, &len);
    FILE *f = fopen(trunc, "wb");
    ck_assert_uint_eq(fwrite(bytes, 1, 500000, f), 500000);
    fclose(f);
    free(bytes);
    expect_failure(trunc, out, HC_TYPE_Q4_0, "ends past end of file");
    ck_assert(!exists(out));

    /* A k-quant weight: the reader opens it, the converter refuses it. */
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
    uint64_t ne[2] = {256, 2};
    ck_assert_int_eq(hc_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", 2, ne, 12), 0);
    ck_assert_int_eq(hc_gguf_writer_begin(w, k4, err, sizeof err), 0);
    uint8_t zeros[288] = {0};
    ck_assert_int_eq(hc_gguf_writer_write_data(w, zeros, 288, err, sizeof err), 0);
    ck_assert_int_eq(hc_gguf_writer_finish(w, err, sizeof err), 0);
    hc_gguf_writer_free(w);
    expect_failure(k4, out, HC_TYPE_Q8_0, "tensor 'blk.0.ffn_up.weight'");
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "q4_K"));
    ck_assert(!exists(out));

    expect_failure(stories, out, (hc_type)3, "target type");
    expect_failure(stories, "/nonexistent/dir/out.gguf", HC_TYPE_Q8_0, "/nonexistent/dir");

    /* An existing output survives a failed run unchanged. */
    f = fopen(out, "wb");
    fputs("keep me", f);
    fclose(f);
    expect_failure(trunc, out, HC_TYPE_Q8_0, "trunc.gguf");
    char *kept = hc_test_read_file(out, &len);
    ck_assert_str_eq(kept, "keep me");
    free(kept);
    unlink(out);
    unlink(trunc);
    unlink(k4);
}
END_TEST

static int run_cli(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1", HC_CLI, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_cli)
{
    if (access(HC_CLI, X_OK) != 0) {
        /* quantize.cmake makes the test depend on the CLI, so this means a
         * broken build tree, not a skip. */
        ck_abort_msg("%s not built", HC_CLI);
    }
    char args[2048], out[512];
    snprintf(out, sizeof out, "%s", tmp("cli-out.gguf"));
    const char *in = hc_test_path(HC_MODELS_DIR, "stories260K.gguf");
    ck_assert_int_eq(run_cli("quantize --help"), 0);
    ck_assert_int_eq(run_cli("quantize"), 2);
    ck_assert_int_eq(run_cli("quantize a b"), 2);
    snprintf(args, sizeof args, "quantize '%s' '%s' q5_1", in, out);
    ck_assert_int_eq(run_cli(args), 2);
    ck_assert(!exists(out));
    snprintf(args, sizeof args, "quantize /nonexistent.gguf '%s' q8_0", out);
    ck_assert_int_eq(run_cli(args), 1);
    ck_assert(!exists(out));
    snprintf(args, sizeof args, "quantize '%s' '%s' q8_0", in, out);
    ck_assert_int_eq(run_cli(args), 0);
    check_output(in, out, HC_TYPE_Q8_0, 7);
    /* The message on failure is one line naming the file (the output must
     * not exist, or that is what the message is about). */
    unlink(out);
    char cmd[2048], line[1024] = "";
    snprintf(cmd, sizeof cmd, "'%s' quantize /nonexistent.gguf '%s' q4_0 2>&1", HC_CLI, out);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
    pclose(p);
    ck_assert_msg(strstr(line, "hotcold quantize: /nonexistent.gguf"), "%s", line);
    unlink(out);

    /* PowerInfer's q4 layout: the head in its own type. */
    char q6in[512];
    snprintf(q6in, sizeof q6in, "%s", tmp("cli-q6-in.gguf"));
    write_q6_k_input(q6in, 1);
    snprintf(args, sizeof args, "quantize '%s' '%s' q4_0 --output-tensor-type q6_k", q6in, out);
    ck_assert_int_eq(run_cli(args), 0);
    check_output_head(q6in, out, HC_TYPE_Q4_0, HC_TYPE_Q6_K, 2);
    unlink(out);
    snprintf(args, sizeof args, "quantize --output-tensor-type=q6_k '%s' '%s' q6_k", q6in, out);
    ck_assert_int_eq(run_cli(args), 0);
    check_output(q6in, out, HC_TYPE_Q6_K, 18);
    unlink(out);
    snprintf(args, sizeof args, "quantize '%s' '%s' q8_0 --output-tensor-type f32", q6in, out);
    ck_assert_int_eq(run_cli(args), 0);
    check_output_head(q6in, out, HC_TYPE_Q8_0, HC_TYPE_F32, 7);
    unlink(out);
    snprintf(args, sizeof args, "quantize '%s' '%s' q4_0 --output-tensor-type q5_1", q6in, out);
    ck_assert_int_eq(run_cli(args), 2);
    snprintf(args, sizeof args, "quantize '%s' '%s' q4_0 --output-tensor-type", q6in, out);
    ck_assert_int_eq(run_cli(args), 2);
    ck_assert(!exists(out));
    unlink(q6in);
}
END_TEST

static Suite *quantize_suite(void)
{
    Suite *s = suite_create("quantize");
    TCase *tc = tcase_create("quantize");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_stories_each_type, 0, 3);
    tcase_add_test(tc, test_quantized_inputs);
    tcase_add_test(tc, test_existing_file_type);
    tcase_add_test(tc, test_pwri_stays_pwri);
    tcase_add_test(tc, test_pwri_counts_become_metadata);
    tcase_add_test(tc, test_rules_synthetic);
    tcase_add_test(tc, test_q6_k);
    tcase_add_test(tc, test_bad_inputs);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* The converter's f16-fallback notices go to the log; keep test output
     * readable. */
    hc_log_set_level(HC_LOG_ERROR);
    SRunner *sr = srunner_create(quantize_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

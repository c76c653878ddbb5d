/*
 * The CPU plugin (plugins/cpu-avx2) on its own: both builds, libhc-cpu-avx2.so
 * and libhc-cpu-generic.so, dlopen'ed straight from the build directory.
 *
 *  - entry point, ops table header and probe (against the CPU's own flags),
 *  - the device, buffers (zero-copy wrap_host), streams, transfers,
 *  - every op gives bit-identical results for 1, 2 and 3 threads, and the
 *    sparse ops leave unlisted rows untouched,
 *  - a few spot checks against core/ref (the full numerical suite is
 *    test_conformance),
 *  - the shrinking parts matmul splits rows into (hc_cpu_split_tapered) cover
 *    every row once, in order, aligned, largest first,
 *  - argument checking: out-of-range and overflowing refs, bad row indices,
 *    NULL buffers, misalignment and overlap are HC_E_INVALID with a message,
 *    unknown types and op codes HC_E_UNSUPPORTED, and nothing is written.
 *
 * Each test runs for both variants (the loop index picks the file).  When
 * this CPU cannot run the avx2 build, its tests check probe() == 0 and stop.
 */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h" /* hc_cpu_split_tapered, checked on its own below */
#include "hotcold/plugin.h"
#include "ref/ref.h"
#include "test_util.h"

#define N_VARIANTS 2
static const char *const VARIANT_FILE[N_VARIANTS] = {"libhc-cpu-avx2.so", "libhc-cpu-generic.so"};
static const char *const VARIANT_NAME[N_VARIANTS] = {"avx2", "generic"};

static const hc_type ALL_TYPES[] = {HC_TYPE_F32, HC_TYPE_F16, HC_TYPE_Q8_0, HC_TYPE_Q4_0,
                                    HC_TYPE_Q6_K};
#define N_TYPES (sizeof ALL_TYPES / sizeof ALL_TYPES[0])

/* ---- the plugin under test -------------------------------------------- */

typedef struct plug {
    void *dl;
    const hc_plugin_ops *ops;
    hc_plugin_ctx *ctx;
    hc_device *dev;
    hc_stream *s;
    char log[1024]; /* messages the plugin sent to the host log */
} plug;

static void log_cb(void *user, int level, const char *msg)
{
    plug *p = user;
    size_t len = strlen(p->log);
    snprintf(p->log + len, sizeof p->log - len, "[%d] %s\n", level, msg);
}

static const hc_plugin_ops *load_ops(int variant, void **dl)
{
    const char *path = hc_test_path(HC_PLUGIN_BUILD_DIR, VARIANT_FILE[variant]);
    *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(*dl != NULL, "dlopen %s: %s", path, dlerror());
    hc_plugin_entry_fn entry = (hc_plugin_entry_fn)dlsym(*dl, HC_PLUGIN_ENTRY_SYMBOL);
    ck_assert_msg(entry != NULL, "%s has no %s", path, HC_PLUGIN_ENTRY_SYMBOL);
    const hc_plugin_ops *ops = entry(HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR);
    ck_assert_ptr_nonnull(ops);
    return ops;
}

/* Opens variant with n_threads; returns 0 (and prints why) when this CPU
 * cannot run it. */
static int plug_open(plug *p, int variant, int n_threads)
{
    memset(p, 0, sizeof *p);
    p->ops = load_ops(variant, &p->dl);
    if (p->ops->probe() == 0) {
        hc_test_skip("cpu-%s op tests: probe() = 0 on this CPU", VARIANT_NAME[variant]);
        return 0;
    }
    hc_plugin_host host = {sizeof host, HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR, log_cb, p,
                           n_threads};
    ck_assert_int_eq(p->ops->init(&host, &p->ctx), HC_OK);
    ck_assert_int_eq(p->ops->device_open(p->ctx, 0, &p->dev), HC_OK);
    ck_assert_int_eq(p->ops->stream_create(p->dev, &p->s), HC_OK);
    return 1;
}

static void plug_close(plug *p)
{
    if (p->ops && p->ctx) {
        p->ops->stream_destroy(p->s);
        p->ops->device_close(p->dev);
        p->ops->shutdown(p->ctx);
    }
    if (p->dl)
        dlclose(p->dl);
    memset(p, 0, sizeof *p);
}

/* A buffer holding `bytes` copied from host (NULL: uninitialised). */
static hc_buffer *buf_from(plug *p, const void *host, uint64_t bytes)
{
    hc_buffer *b = NULL;
    ck_assert_int_eq(p->ops->buffer_alloc(p->dev, bytes, &b), HC_OK);
    if (host)
        memcpy(p->ops->buffer_host_ptr(b), host, (size_t)bytes);
    return b;
}

static hc_ref at(hc_buffer *b)
{
    return (hc_ref){b, 0};
}

/* ---- test data ---------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* Uniform in [-1, 1). */
static float rng_f(void)
{
    return (float)((double)rng_u32() / 2147483648.0 - 1.0);
}

static float *rand_floats(int64_t n, float scale)
{
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = rng_f() * scale;
    return v;
}

/* rows x cols weights of type t made from random floats. */
static uint8_t *rand_weights(hc_type t, int64_t rows, int64_t cols)
{
    uint64_t rb = hc_type_row_size(t, cols);
    uint8_t *w = malloc((size_t)(rows * rb > 0 ? rows * rb : 1));
    float *src = rand_floats(cols, 1.0f);
    ck_assert_ptr_nonnull(w);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < cols; c++)
            src[c] = rng_f();
        hc_scalar_quantize_row(t, src, w + r * rb, cols);
    }
    free(src);
    return w;
}

/* k distinct rows of [0, rows) in random order. */
static int32_t *rand_rows(int64_t rows, int64_t k)
{
    int32_t *all = malloc((size_t)rows * sizeof(int32_t));
    ck_assert_ptr_nonnull(all);
    for (int64_t i = 0; i < rows; i++)
        all[i] = (int32_t)i;
    for (int64_t i = 0; i < k; i++) {
        int64_t j = i + rng_u32() % (uint32_t)(rows - i);
        int32_t tmp = all[i];
        all[i] = all[j];
        all[j] = tmp;
    }
    return all;
}

static double nmse(const float *got, const float *want, int64_t n)
{
    double se = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)want[i];
        se += d * d;
        ss += (double)want[i] * (double)want[i];
    }
    return ss > 0 ? se / ss : se;
}

static const char *type_name(hc_type t)
{
    return t == HC_TYPE_F32    ? "F32"
           : t == HC_TYPE_F16  ? "F16"
           : t == HC_TYPE_Q8_0 ? "Q8_0"
           : t == HC_TYPE_Q4_0 ? "Q4_0"
                               : "Q6_K";
}

/* ---- entry point and probe ------------------------------------------------ */

static int cpu_runs_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("avx");
}

START_TEST(test_entry_and_probe)
{
    void *dl;
    const hc_plugin_ops *ops = load_ops(_i, &dl);
    hc_plugin_entry_fn entry = (hc_plugin_entry_fn)dlsym(dl, HC_PLUGIN_ENTRY_SYMBOL);

    ck_assert_ptr_null(entry(HC_PLUGIN_ABI_MAJOR + 1, 0));
    ck_assert_ptr_null(entry(0, 0));
    ck_assert_ptr_eq(entry(HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR + 5), ops);
    /* Only the entry point is exported. */
    ck_assert_ptr_null(dlsym(dl, "hc_cpu_probe"));
    ck_assert_ptr_null(dlsym(dl, "hc_cpu_mm_task"));

    ck_assert_uint_eq(ops->size, sizeof(hc_plugin_ops));
    ck_assert_uint_eq(ops->abi_major, HC_PLUGIN_ABI_MAJOR);
    ck_assert_uint_eq(ops->abi_minor, HC_PLUGIN_ABI_MINOR);
    ck_assert_str_eq(ops->family, "cpu");
    ck_assert_str_eq(ops->variant, VARIANT_NAME[_i]);
    ck_assert_ptr_nonnull(ops->version);
    /* Every entry of ABI 1.0 is implemented, and 1.2's matmul_batch (1.1's
     * stream_flush is for queuing devices: the CPU runs ops as issued). */
    const void *const required[] = {
        ops->probe, ops->init, ops->shutdown, ops->last_error, ops->device_count,
        ops->device_info, ops->device_open, ops->device_close, ops->buffer_alloc,
        ops->buffer_free, ops->buffer_wrap_host, ops->buffer_host_ptr, ops->stream_create,
        ops->stream_destroy, ops->stream_sync, ops->upload, ops->download, ops->copy,
        ops->matmul, ops->matvec_rows, ops->axpy_rows, ops->rmsnorm, ops->rope,
        ops->attention, ops->unary, ops->binary, ops->glu, ops->op_cost, ops->set_threads,
        ops->matmul_batch};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        ck_assert_msg(required[i] != NULL, "entry %zu is NULL", i);

    int pr = ops->probe();
    if (_i == 0) {
        /* avx2 must say yes exactly when the CPU has the ISA, and outrank generic. */
        ck_assert_int_eq(pr, cpu_runs_avx2() ? 20 : 0);
    } else {
        ck_assert_int_eq(pr, 1);
    }
    ck_assert_int_eq(ops->probe(), pr); /* cheap and stable */
    dlclose(dl);
}
END_TEST

/* ---- device, buffers, streams ------------------------------------------------ */

START_TEST(test_device_info)
{
    plug p;
    if (!plug_open(&p, _i, 2))
        return;
    const hc_plugin_ops *o = p.ops;
    hc_device_info info;

    ck_assert_int_eq(o->device_count(p.ctx), 1);
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    ck_assert_int_eq(o->device_info(p.ctx, 0, &info), HC_OK);
    ck_assert_uint_eq(info.size, sizeof info);
    ck_assert_uint_gt(strlen(info.name), 0);
    ck_assert_int_eq(info.kind, HC_DEVICE_CPU);
    ck_assert_uint_eq(info.caps & (HC_CAP_HOST_MAPPED | HC_CAP_WRAP_HOST),
                      HC_CAP_HOST_MAPPED | HC_CAP_WRAP_HOST);
    ck_assert_uint_gt(info.mem_total, 1u << 20);
    ck_assert_uint_le(info.mem_free, info.mem_total);
    ck_assert_uint_gt(info.max_buffer, 0);
    ck_assert_int_eq(info.n_threads, 2);
    printf("cpu-%s: \"%s\", %.1f GiB (%.1f free), %d threads\n", VARIANT_NAME[_i], info.name,
           info.mem_total / 1073741824.0, info.mem_free / 1073741824.0, info.n_threads);
    /* The thread count was logged at INFO when the context started. */
    ck_assert_msg(strstr(p.log, "[1] ") && strstr(p.log, "2 worker threads"), "log: %s", p.log);

    /* A caller that knows a shorter struct gets only its prefix written. */
    _Alignas(hc_device_info) unsigned char raw[sizeof info + 16];
    memset(raw, 0xab, sizeof raw);
    size_t small = offsetof(hc_device_info, caps);
    memcpy(raw, &small, sizeof small);
    ck_assert_int_eq(o->device_info(p.ctx, 0, (hc_device_info *)raw), HC_OK);
    for (size_t i = small; i < sizeof raw; i++)
        ck_assert_uint_eq(raw[i], 0xab);
    ck_assert_int_eq(((hc_device_info *)raw)->kind, HC_DEVICE_CPU);

    ck_assert_int_eq(o->device_info(p.ctx, 1, &info), HC_E_NODEV);
    ck_assert_uint_gt(strlen(o->last_error(p.ctx)), 0);
    hc_device *d2 = NULL;
    ck_assert_int_eq(o->device_open(p.ctx, 1, &d2), HC_E_NODEV);
    ck_assert_ptr_null(d2);

    /* set_threads: 0 = plugin's choice, negative refused, others reported. */
    ck_assert_int_eq(o->set_threads(p.ctx, 3), HC_OK);
    ck_assert_int_eq(o->device_info(p.ctx, 0, &info), HC_OK);
    ck_assert_int_eq(info.n_threads, 3);
    ck_assert_int_eq(o->set_threads(p.ctx, -1), HC_E_INVALID);
    ck_assert_int_eq(o->set_threads(p.ctx, 0), HC_OK);
    ck_assert_int_eq(o->device_info(p.ctx, 0, &info), HC_OK);
    ck_assert_int_ge(info.n_threads, 1);

    /* op_cost: positive for what runs, negative for what cannot. */
    double c1 = o->op_cost(p.dev, HC_OP_MATMUL, HC_TYPE_Q4_0, 4096, 4096, 1);
    double c2 = o->op_cost(p.dev, HC_OP_MATMUL, HC_TYPE_Q4_0, 4096, 11008, 1);
    ck_assert(c1 > 0 && c2 > c1);
    ck_assert(o->op_cost(p.dev, HC_OP_MATMUL, (hc_type)3, 64, 64, 1) < 0);
    ck_assert(o->op_cost(p.dev, HC_OP_MATMUL, HC_TYPE_Q4_0, 64, 33, 1) < 0);
    ck_assert(o->op_cost(p.dev, 99, HC_TYPE_F32, 64, 64, 1) < 0);
    ck_assert(o->op_cost(p.dev, HC_OP_RMSNORM, HC_TYPE_F32, 1, 4096, 1) > 0);
    plug_close(&p);
}
END_TEST

START_TEST(test_buffers_and_transfers)
{
    plug p;
    if (!plug_open(&p, _i, 2))
        return;
    const hc_plugin_ops *o = p.ops;
    unsigned char src[1000], dst[1000];

    for (int i = 0; i < 1000; i++)
        src[i] = (unsigned char)(i * 7 + 1);
    hc_buffer *a = buf_from(&p, NULL, 1000), *b = buf_from(&p, NULL, 1000), *z = NULL;
    ck_assert_uint_eq((uintptr_t)o->buffer_host_ptr(a) % 64, 0);
    ck_assert_int_eq(o->upload(p.s, (hc_ref){a, 0}, src, 1000), HC_OK);
    ck_assert_int_eq(o->copy(p.s, (hc_ref){b, 100}, (hc_ref){a, 0}, 900), HC_OK);
    ck_assert_int_eq(o->stream_sync(p.s), HC_OK);
    ck_assert_int_eq(o->download(p.s, dst, (hc_ref){b, 100}, 900), HC_OK);
    ck_assert_int_eq(memcmp(dst, src, 900), 0);
    /* Zero-byte transfers at the very end are fine, one byte more is not. */
    ck_assert_int_eq(o->upload(p.s, (hc_ref){a, 1000}, src, 0), HC_OK);
    ck_assert_int_eq(o->upload(p.s, (hc_ref){a, 1000}, src, 1), HC_E_INVALID);
    ck_assert_int_eq(o->download(p.s, dst, (hc_ref){a, 1}, 1000), HC_E_INVALID);
    ck_assert_ptr_nonnull(strstr(o->last_error(p.ctx), "src"));
    ck_assert_int_eq(o->copy(p.s, (hc_ref){a, 0}, (hc_ref){b, 500}, 501), HC_E_INVALID);
    ck_assert_int_eq(o->upload(p.s, (hc_ref){NULL, 0}, src, 1), HC_E_INVALID);
    ck_assert_int_eq(o->upload(p.s, (hc_ref){a, 0}, NULL, 1), HC_E_INVALID);
    ck_assert_int_eq(o->buffer_alloc(p.dev, 0, &z), HC_OK);
    o->buffer_free(z);
    o->buffer_free(NULL);

    /* wrap_host: the buffer IS the host memory (zero copy both ways). */
    float host[64];
    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    hc_buffer *wb = NULL;
    ck_assert_int_eq(o->buffer_wrap_host(p.dev, host, sizeof host, &wb), HC_OK);
    ck_assert_ptr_eq(o->buffer_host_ptr(wb), host);
    float one = 42.0f;
    ck_assert_int_eq(o->upload(p.s, (hc_ref){wb, 4 * 10}, &one, 4), HC_OK);
    ck_assert(host[10] == 42.0f);
    /* An op reads the host array as it is now: scale 2 writes into host. */
    host[3] = 1.5f;
    ck_assert_int_eq(o->unary(p.s, HC_UNARY_SCALE, (hc_ref){wb, 0}, (hc_ref){wb, 0}, 64, 2.0f),
                     HC_OK);
    ck_assert(host[3] == 3.0f && host[10] == 84.0f && host[63] == 126.0f);
    hc_buffer *none = NULL;
    ck_assert_int_eq(o->buffer_wrap_host(p.dev, NULL, 16, &none), HC_E_INVALID);
    ck_assert_ptr_null(none);
    o->buffer_free(wb); /* frees the handle, not the host array */
    ck_assert(host[3] == 3.0f);
    o->buffer_free(a);
    o->buffer_free(b);
    plug_close(&p);
}
END_TEST

/* ---- bit-identical results for 1, 2 and 3 threads -------------------------- */

/* Runs `fn` (which writes the outputs in `out` of `bytes`) with 1, 2 and 3
 * threads and checks the outputs match bit for bit. */
typedef void (*run_fn)(plug *p, void *arg);

static void same_for_thread_counts(plug *p, const char *what, run_fn fn, void *arg,
                                   hc_buffer *out, size_t bytes, const void *init)
{
    unsigned char *first = malloc(bytes ? bytes : 1);
    ck_assert_ptr_nonnull(first);
    for (int nt = 1; nt <= 3; nt++) {
        ck_assert_int_eq(p->ops->set_threads(p->ctx, nt), HC_OK);
        if (init)
            memcpy(p->ops->buffer_host_ptr(out), init, bytes);
        fn(p, arg);
        ck_assert_int_eq(p->ops->stream_sync(p->s), HC_OK);
        if (nt == 1)
            memcpy(first, p->ops->buffer_host_ptr(out), bytes);
        else
            ck_assert_msg(memcmp(first, p->ops->buffer_host_ptr(out), bytes) == 0,
                          "%s: %d threads differ from 1 thread", what, nt);
    }
    free(first);
}

typedef struct mm_case {
    hc_type t;
    int64_t rows, cols, n, n_idx;
    hc_buffer *w, *x, *idx, *y;
} mm_case;

static void run_matmul(plug *p, void *arg)
{
    mm_case *c = arg;
    ck_assert_int_eq(p->ops->matmul(p->s, c->t, at(c->w), c->rows, c->cols, at(c->x), c->n, at(c->y)),
                     HC_OK);
}

static void run_matvec_rows(plug *p, void *arg)
{
    mm_case *c = arg;
    ck_assert_int_eq(p->ops->matvec_rows(p->s, c->t, at(c->w), c->rows, c->cols, at(c->x), c->n,
                                         at(c->idx), c->n_idx, at(c->y)),
                     HC_OK);
}

static void run_axpy_rows(plug *p, void *arg)
{
    mm_case *c = arg;
    ck_assert_int_eq(p->ops->axpy_rows(p->s, c->t, at(c->w), c->rows, c->cols, at(c->x), c->n,
                                       at(c->idx), c->n_idx, at(c->y)),
                     HC_OK);
}

/* Q6_K is an output-head type without an axpy kernel: the op refuses it
 * (HC_E_UNSUPPORTED, naming the type), op_cost agrees, y keeps its bits. */
static void expect_no_q6_k_axpy(plug *p, const mm_case *c)
{
    const size_t bytes = (size_t)(c->n * c->cols) * 4;
    unsigned char *before = malloc(bytes);
    ck_assert_ptr_nonnull(before);
    memcpy(before, p->ops->buffer_host_ptr(c->y), bytes);
    hc_status st = p->ops->axpy_rows(p->s, c->t, at(c->w), c->rows, c->cols, at(c->x), c->n,
                                     at(c->idx), c->n_idx, at(c->y));
    ck_assert_int_eq(st, HC_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(p->ops->last_error(p->ctx), "Q6_K"));
    ck_assert(p->ops->op_cost(p->dev, HC_OP_AXPY_ROWS, c->t, c->n_idx, c->cols, c->n) < 0);
    ck_assert_int_eq(p->ops->stream_sync(p->s), HC_OK);
    ck_assert(memcmp(before, p->ops->buffer_host_ptr(c->y), bytes) == 0);
    free(before);
}

/* matmul_batch: every row of W into the first half of y, the listed rows
 * into the second: one job over both. */
static void run_matmul_batch(plug *p, void *arg)
{
    mm_case *c = arg;
    const hc_matmul_desc d[2] = {
        {c->t, at(c->w), c->rows, {NULL, 0}, 0, {c->y, 0}},
        {c->t, at(c->w), c->rows, at(c->idx), c->n_idx, {c->y, (uint64_t)(c->n * c->rows) * 4}}};
    ck_assert_int_eq(p->ops->matmul_batch(p->s, d, 2, c->cols, at(c->x), c->n), HC_OK);
}

START_TEST(test_threads_weight_ops)
{
    plug p;
    if (!plug_open(&p, _i, 1))
        return;
    /* Large enough that every op really splits (>= 2^15 multiply-adds),
     * with row counts and column counts that leave tails everywhere (Q6_K:
     * two super-blocks). */
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const hc_type t = ALL_TYPES[ti];
        const int64_t rows = 301, cols = t == HC_TYPE_F32 || t == HC_TYPE_F16 ? 357
                                         : t == HC_TYPE_Q6_K                  ? 512
                                                                              : 352;
        const int64_t ns[] = {1, 2, 5, 9};
        uint8_t *w = rand_weights(t, rows, cols);
        int32_t *idx = rand_rows(rows, 131);
        hc_buffer *wb = buf_from(&p, w, rows * hc_type_row_size(t, cols));
        hc_buffer *ib = buf_from(&p, idx, 131 * 4);
        for (size_t ni = 0; ni < 4; ni++) {
            const int64_t n = ns[ni];
            float *x = rand_floats(n * (rows > cols ? rows : cols), 1.0f);
            float *y0 = rand_floats(n * (rows > cols ? rows : cols), 1.0f);
            hc_buffer *xb = buf_from(&p, x, n * (rows > cols ? rows : cols) * 4);
            hc_buffer *yb = buf_from(&p, NULL, n * (rows > cols ? rows : cols) * 4);
            mm_case c = {t, rows, cols, n, 131, wb, xb, ib, yb};
            char what[96];

            snprintf(what, sizeof what, "matmul %s n=%lld", type_name(t), (long long)n);
            same_for_thread_counts(&p, what, run_matmul, &c, yb, n * rows * 4, NULL);
            snprintf(what, sizeof what, "matvec_rows %s n=%lld", type_name(t), (long long)n);
            same_for_thread_counts(&p, what, run_matvec_rows, &c, yb, n * rows * 4, y0);
            /* Unlisted rows keep their bits. */
            const float *y = p.ops->buffer_host_ptr(yb);
            unsigned char *listed = calloc((size_t)rows, 1);
            for (int64_t k = 0; k < 131; k++)
                listed[idx[k]] = 1;
            for (int64_t tk = 0; tk < n; tk++)
                for (int64_t r = 0; r < rows; r++)
                    if (!listed[r])
                        ck_assert_msg(memcmp(&y[tk * rows + r], &y0[tk * rows + r], 4) == 0,
                                      "%s: unlisted row %lld changed", what, (long long)r);
            free(listed);
            snprintf(what, sizeof what, "axpy_rows %s n=%lld", type_name(t), (long long)n);
            if (t == HC_TYPE_Q6_K)
                expect_no_q6_k_axpy(&p, &c);
            else
                same_for_thread_counts(&p, what, run_axpy_rows, &c, yb, n * cols * 4, y0);
            const size_t half = (size_t)(n * rows);
            float *init = malloc(2 * half * sizeof(float));
            ck_assert_ptr_nonnull(init);
            memcpy(init, y0, half * sizeof(float));
            memcpy(init + half, y0, half * sizeof(float));
            hc_buffer *bb = buf_from(&p, NULL, 2 * half * 4);
            mm_case cb = {t, rows, cols, n, 131, wb, xb, ib, bb};
            snprintf(what, sizeof what, "matmul_batch %s n=%lld", type_name(t), (long long)n);
            same_for_thread_counts(&p, what, run_matmul_batch, &cb, bb, 2 * half * 4, init);
            p.ops->buffer_free(bb);
            free(init);
            p.ops->buffer_free(xb);
            p.ops->buffer_free(yb);
            free(x);
            free(y0);
        }
        p.ops->buffer_free(wb);
        p.ops->buffer_free(ib);
        free(w);
        free(idx);
    }
    plug_close(&p);
}
END_TEST

typedef struct layer_case {
    hc_buffer *a, *b, *c, *d, *out, *pos;
    int64_t n, dim, n_head, n_head_kv, head_dim, n_rot;
    int op;
} layer_case;

static void run_rmsnorm(plug *p, void *arg)
{
    layer_case *c = arg;
    ck_assert_int_eq(p->ops->rmsnorm(p->s, at(c->a), at(c->b), at(c->out), c->n, c->dim, 1e-5f),
                     HC_OK);
}

static void run_rope(plug *p, void *arg)
{
    layer_case *c = arg;
    ck_assert_int_eq(p->ops->rope(p->s, at(c->out), c->n, c->n_head, c->head_dim, c->n_rot,
                                  at(c->pos), 10000.0f, 1.0f, c->op),
                     HC_OK);
}

static void run_attention(plug *p, void *arg)
{
    layer_case *c = arg;
    ck_assert_int_eq(p->ops->attention(p->s, at(c->a), at(c->b), at(c->c), at(c->out), c->n,
                                       at(c->pos), c->n_head, c->n_head_kv, c->head_dim,
                                       0.125f),
                     HC_OK);
}

static void run_unary(plug *p, void *arg)
{
    layer_case *c = arg;
    ck_assert_int_eq(p->ops->unary(p->s, c->op, at(c->a), at(c->out), c->n, 0.1f), HC_OK);
}

static void run_binary(plug *p, void *arg)
{
    layer_case *c = arg;
    ck_assert_int_eq(p->ops->binary(p->s, c->op, at(c->a), at(c->b), at(c->out), c->n), HC_OK);
}

static void run_glu(plug *p, void *arg)
{
    layer_case *c = arg;
    ck_assert_int_eq(p->ops->glu(p->s, c->op, at(c->a), at(c->b), at(c->out), c->n, 0.05f), HC_OK);
}

START_TEST(test_threads_layer_ops)
{
    plug p;
    if (!plug_open(&p, _i, 1))
        return;
    const int64_t big = 100003; /* above the split threshold, not a multiple of 8 */
    float *va = rand_floats(big, 4.0f), *vb = rand_floats(big, 2.0f);
    hc_buffer *a = buf_from(&p, va, big * 4), *b = buf_from(&p, vb, big * 4);
    hc_buffer *out = buf_from(&p, NULL, big * 4);
    layer_case c = {.a = a, .b = b, .out = out, .n = big};

    for (int op = 0; op <= 2; op++) {
        c.op = op;
        same_for_thread_counts(&p, "unary", run_unary, &c, out, big * 4, NULL);
        same_for_thread_counts(&p, "glu", run_glu, &c, out, big * 4, NULL);
        if (op <= 1)
            same_for_thread_counts(&p, "binary", run_binary, &c, out, big * 4, NULL);
    }
    /* rmsnorm: 40 rows of 2001. */
    c = (layer_case){.a = a, .b = b, .out = out, .n = 40, .dim = 2001};
    same_for_thread_counts(&p, "rmsnorm", run_rmsnorm, &c, out, 40 * 2001 * 4, NULL);

    /* rope, both modes, partial rotation; positions large and varied. */
    int32_t pos[24];
    for (int i = 0; i < 24; i++)
        pos[i] = (int32_t)(rng_u32() % 5000);
    hc_buffer *pb = buf_from(&p, pos, sizeof pos);
    for (int mode = 0; mode <= 2; mode += 2) {
        c = (layer_case){.out = out, .pos = pb, .n = 24, .n_head = 32, .head_dim = 128, .n_rot = 96,
                         .op = mode};
        same_for_thread_counts(&p, "rope", run_rope, &c, out, 24 * 32 * 128 * 4, va);
    }

    /* attention: 5 tokens, GQA 8/2, positions up to 300. */
    int32_t apos[5] = {0, 17, 299, 150, 300};
    const int64_t hd = 64, kvw = 2 * hd;
    float *kv = rand_floats(301 * kvw, 1.0f);
    hc_buffer *kb = buf_from(&p, kv, 301 * kvw * 4), *vbuf = buf_from(&p, vb, 301 * kvw * 4);
    hc_buffer *ab = buf_from(&p, apos, sizeof apos);
    c = (layer_case){.a = a, .b = kb, .c = vbuf, .out = out, .pos = ab, .n = 5, .n_head = 8,
                     .n_head_kv = 2, .head_dim = hd};
    same_for_thread_counts(&p, "attention", run_attention, &c, out, 5 * 8 * hd * 4, NULL);

    hc_buffer *bufs[] = {a, b, out, pb, kb, vbuf, ab};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        p.ops->buffer_free(bufs[i]);
    free(va);
    free(vb);
    free(kv);
    plug_close(&p);
}
END_TEST

/* ---- spot checks against core/ref ------------------------------------------ */

START_TEST(test_reference_spot_checks)
{
    plug p;
    if (!plug_open(&p, _i, 2))
        return;
    const hc_plugin_ops *o = p.ops;
    /* Bounds as in test_conformance: F32 1e-8, F16 1e-6, 8-bit x 5e-4 (over
     * many rows, so one small dot cannot dominate). */
    const double bound[] = {1e-8, 1e-6, 5e-4, 5e-4, 5e-4};

    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const hc_type t = ALL_TYPES[ti];
        const int64_t rows = 200, cols = 4096, n = 3, n_idx = 57;
        uint8_t *w = rand_weights(t, rows, cols);
        float *x = rand_floats(n * cols, 1.0f), *h = rand_floats(n * rows, 1.0f);
        float *got = malloc(n * cols * 4), *want = malloc(n * cols * 4);
        int32_t *idx = rand_rows(rows, n_idx);
        hc_buffer *wb = buf_from(&p, w, rows * hc_type_row_size(t, cols));
        hc_buffer *xb = buf_from(&p, x, n * cols * 4), *hb = buf_from(&p, h, n * rows * 4);
        hc_buffer *ib = buf_from(&p, idx, n_idx * 4), *yb = buf_from(&p, NULL, n * cols * 4);

        ck_assert_int_eq(o->matmul(p.s, t, at(wb), rows, cols, at(xb), n, at(yb)), HC_OK);
        hc_scalar_matmul(t, w, rows, cols, x, n, want);
        double e = nmse(o->buffer_host_ptr(yb), want, n * rows);
        printf("cpu-%s matmul %-4s 200x4096 n=3: nmse %.2e\n", VARIANT_NAME[_i], type_name(t), e);
        ck_assert_msg(e <= bound[ti], "matmul %s nmse %g", type_name(t), e);

        /* axpy_rows onto a non-zero y: y += listed rows. */
        float *y0 = rand_floats(n * cols, 1.0f);
        memcpy(o->buffer_host_ptr(yb), y0, n * cols * 4);
        memcpy(want, y0, n * cols * 4);
        if (t == HC_TYPE_Q6_K) {
            mm_case c6 = {t, rows, cols, n, n_idx, wb, hb, ib, yb};
            expect_no_q6_k_axpy(&p, &c6);
            memcpy(got, o->buffer_host_ptr(yb), n * cols * 4);
        } else {
            ck_assert_int_eq(
                o->axpy_rows(p.s, t, at(wb), rows, cols, at(hb), n, at(ib), n_idx, at(yb)),
                HC_OK);
            hc_scalar_axpy_rows(t, w, rows, cols, h, n, idx, n_idx, want);
            memcpy(got, o->buffer_host_ptr(yb), n * cols * 4);
            e = nmse(got, want, n * cols);
            printf("cpu-%s axpy   %-4s 200x4096 n=3: nmse %.2e\n", VARIANT_NAME[_i], type_name(t),
                   e);
            /* axpy has no activation quantization: float accuracy for all types. */
            ck_assert_msg(e <= 1e-8, "axpy_rows %s nmse %g", type_name(t), e);
        }

        hc_buffer *bufs[] = {wb, xb, hb, ib, yb};
        for (size_t i = 0; i < 5; i++)
            o->buffer_free(bufs[i]);
        free(w);
        free(x);
        free(h);
        free(got);
        free(want);
        free(idx);
        free(y0);
    }

    /* Layer ops on one shape each. */
    const int64_t nt = 3, nh = 8, nkv = 4, hd = 64, width = nh * hd;
    int32_t pos[3] = {5, 40, 41};
    float *q = rand_floats(nt * width, 1.0f), *k = rand_floats(42 * nkv * hd, 1.0f);
    float *v = rand_floats(42 * nkv * hd, 1.0f), *want = malloc(nt * width * 4);
    hc_buffer *qb = buf_from(&p, q, nt * width * 4), *kb = buf_from(&p, k, 42 * nkv * hd * 4);
    hc_buffer *vb = buf_from(&p, v, 42 * nkv * hd * 4), *ob = buf_from(&p, NULL, nt * width * 4);
    hc_buffer *pb = buf_from(&p, pos, sizeof pos);

    ck_assert_int_eq(o->attention(p.s, at(qb), at(kb), at(vb), at(ob), nt, at(pb), nh, nkv, hd,
                                  0.125f),
                     HC_OK);
    hc_scalar_attention(q, k, v, want, nt, pos, nh, nkv, hd, 0.125f);
    ck_assert_msg(nmse(o->buffer_host_ptr(ob), want, nt * width) <= 1e-8, "attention");

    for (int mode = 0; mode <= 2; mode += 2) {
        memcpy(want, q, nt * width * 4);
        memcpy(o->buffer_host_ptr(ob), q, nt * width * 4);
        ck_assert_int_eq(o->rope(p.s, at(ob), nt, nh, hd, 32, at(pb), 10000.0f, 1.0f, mode), HC_OK);
        hc_scalar_rope(want, nt, nh, hd, 32, pos, 10000.0f, 1.0f, mode);
        ck_assert_msg(nmse(o->buffer_host_ptr(ob), want, nt * width) <= 1e-8, "rope mode %d", mode);
    }

    ck_assert_int_eq(o->rmsnorm(p.s, at(qb), at(kb), at(ob), nt, width, 1e-6f), HC_OK);
    hc_scalar_rmsnorm(q, k, want, nt, width, 1e-6f);
    ck_assert_msg(nmse(o->buffer_host_ptr(ob), want, nt * width) <= 1e-10, "rmsnorm");

    for (int op = 0; op <= 2; op++) {
        ck_assert_int_eq(o->unary(p.s, op, at(qb), at(ob), nt * width, 0.3f), HC_OK);
        hc_scalar_unary(op, q, want, nt * width, 0.3f);
        ck_assert_msg(nmse(o->buffer_host_ptr(ob), want, nt * width) <= 1e-10, "unary %d", op);
        ck_assert_int_eq(o->glu(p.s, op, at(qb), at(vb), at(ob), nt * width, 0.3f), HC_OK);
        hc_scalar_glu(op, q, v, want, nt * width, 0.3f);
        ck_assert_msg(nmse(o->buffer_host_ptr(ob), want, nt * width) <= 1e-10, "glu %d", op);
    }
    for (int op = 0; op <= 1; op++) {
        ck_assert_int_eq(o->binary(p.s, op, at(qb), at(vb), at(ob), nt * width), HC_OK);
        hc_scalar_binary(op, q, v, want, nt * width);
        ck_assert_msg(nmse(o->buffer_host_ptr(ob), want, nt * width) <= 1e-12, "binary %d", op);
    }

    hc_buffer *bufs[] = {qb, kb, vb, ob, pb};
    for (size_t i = 0; i < 5; i++)
        o->buffer_free(bufs[i]);
    free(q);
    free(k);
    free(v);
    free(want);
    plug_close(&p);
}
END_TEST

/* ---- the decode shapes the kernels are tuned for ------------------------------ */

/* One token against rows of 2048 (TinyLlama's n_embd): the fast paths of
 * the sparse ops (grouped rows, prefetching, Q4_0's own decoding in axpy,
 * cache-line aligned column shares) must agree with the reference and give
 * the same bits for 1, 2 and 3 threads (3 threads take another split). */
START_TEST(test_decode_shapes)
{
    plug p;
    if (!plug_open(&p, _i, 1))
        return;
    const hc_plugin_ops *o = p.ops;
    const double bound[] = {1e-8, 1e-6, 5e-4, 5e-4, 5e-4};
    const int64_t rows = 700, cols = 2048;

    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const hc_type t = ALL_TYPES[ti];
        const int64_t lens[] = {70, 333, rows}; /* 10%: 8 groups of 8 + 6; ~half; all */
        uint8_t *w = rand_weights(t, rows, cols);
        float *x = rand_floats(cols, 1.0f), *h = rand_floats(rows, 1.0f);
        float *y0 = rand_floats(cols > rows ? cols : rows, 1.0f);
        float *want = malloc((size_t)(cols > rows ? cols : rows) * sizeof(float));
        hc_buffer *wb = buf_from(&p, w, rows * hc_type_row_size(t, cols));
        hc_buffer *xb = buf_from(&p, x, cols * 4), *hb = buf_from(&p, h, rows * 4);
        hc_buffer *yb = buf_from(&p, NULL, (cols > rows ? cols : rows) * 4);
        char what[96];

        mm_case c = {t, rows, cols, 1, 0, wb, xb, NULL, yb};
        snprintf(what, sizeof what, "decode matmul %s", type_name(t));
        same_for_thread_counts(&p, what, run_matmul, &c, yb, rows * 4, NULL);
        hc_scalar_matmul(t, w, rows, cols, x, 1, want);
        double e = nmse(o->buffer_host_ptr(yb), want, rows);
        ck_assert_msg(e <= bound[ti], "%s: nmse %g", what, e);

        for (size_t li = 0; li < 3; li++) {
            const int64_t k = lens[li];
            int32_t *idx = rand_rows(rows, k);
            /* Sorted, as a predictor emits them. */
            for (int64_t i = 1; i < k; i++)
                for (int64_t j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
                    int32_t tmp = idx[j];
                    idx[j] = idx[j - 1];
                    idx[j - 1] = tmp;
                }
            hc_buffer *ib = buf_from(&p, idx, k * 4);
            mm_case cs = {t, rows, cols, 1, k, wb, xb, ib, yb};
            mm_case ca = {t, rows, cols, 1, k, wb, hb, ib, yb};

            snprintf(what, sizeof what, "decode matvec_rows %s %lld rows", type_name(t),
                     (long long)k);
            same_for_thread_counts(&p, what, run_matvec_rows, &cs, yb, rows * 4, y0);
            memcpy(want, y0, rows * 4);
            float *full = malloc(rows * 4);
            hc_scalar_matmul(t, w, rows, cols, x, 1, full);
            for (int64_t i = 0; i < k; i++)
                want[idx[i]] = full[idx[i]];
            free(full);
            e = nmse(o->buffer_host_ptr(yb), want, rows);
            ck_assert_msg(e <= bound[ti], "%s: nmse %g", what, e);

            snprintf(what, sizeof what, "decode axpy_rows %s %lld rows", type_name(t),
                     (long long)k);
            if (t == HC_TYPE_Q6_K) {
                expect_no_q6_k_axpy(&p, &ca);
                p.ops->buffer_free(ib);
                free(idx);
                continue;
            }
            same_for_thread_counts(&p, what, run_axpy_rows, &ca, yb, cols * 4, y0);
            memcpy(want, y0, cols * 4);
            hc_scalar_axpy_rows(t, w, rows, cols, h, 1, idx, k, want);
            e = nmse(o->buffer_host_ptr(yb), want, cols);
            printf("cpu-%s %s: nmse %.2e\n", VARIANT_NAME[_i], what, e);
            /* Float accuracy, as for several tokens (no activation
             * quantization; Q4_0's one-token path carries an offset in its
             * running sums, NMSE ~1e-12). */
            ck_assert_msg(e <= 1e-10, "%s: nmse %g", what, e);
            p.ops->buffer_free(ib);
            free(idx);
        }
        hc_buffer *bufs[] = {wb, xb, hb, yb};
        for (size_t i = 0; i < 4; i++)
            o->buffer_free(bufs[i]);
        free(w);
        free(x);
        free(h);
        free(y0);
        free(want);
    }
    plug_close(&p);
}
END_TEST

/* ---- argument checking ------------------------------------------------------- */

/* st must be `want`, with a message naming `needle`. */
static void expect(plug *p, hc_status got, hc_status want, const char *needle, const char *what)
{
    const char *msg = p->ops->last_error(p->ctx);
    ck_assert_msg(got == want, "%s: status %d, want %d (%s)", what, (int)got, (int)want, msg);
    ck_assert_msg(msg != NULL && strlen(msg) > 0, "%s: empty last_error", what);
    ck_assert_msg(!needle || strstr(msg, needle), "%s: message \"%s\" does not name \"%s\"", what,
                  msg, needle);
}

/* Opens the avx2 plugin (2 threads) with the kernel choice `env` forced
 * off (=0) or left to the plugin; *has says whether its init log names
 * `marker`, i.e. whether the choice was taken.  0 when avx2 cannot run. */
static int open_with(plug *p, const char *env, int on, const char *marker, int *has)
{
    if (on)
        unsetenv(env);
    else
        setenv(env, "0", 1);
    const int ok = plug_open(p, 0, 2);
    unsetenv(env);
    if (!ok)
        return 0;
    *has = strstr(p->log, marker) != NULL;
    ck_assert_msg(on || !*has, "%s=0 still used %s: %s", env, marker, p->log);
    return 1;
}

/* Products of type t (Q4_0 or Q6_K) of the avx2 plugin with AVX-VNNI
 * forced off (HOTCOLD_CPU_VNNI=0) and on; y for every shape the tiles take
 * (one token, several tokens, a row list), into out (3 x rows x n floats). */
static int dot_products(hc_type t, int vnni, const uint8_t *w, const float *x, const int32_t *idx,
                        int64_t rows, int64_t cols, int64_t n, int64_t n_idx, float *out)
{
    plug p;
    int has;
    if (!open_with(&p, "HOTCOLD_CPU_VNNI", vnni, "AVX-VNNI", &has))
        return -1;
    hc_buffer *wb = buf_from(&p, w, rows * hc_type_row_size(t, cols));
    hc_buffer *xb = buf_from(&p, x, cols * n * 4), *ib = buf_from(&p, idx, n_idx * 4);
    hc_buffer *yb = buf_from(&p, NULL, rows * n * 4);
    const int64_t ns[3] = {1, n, 1};
    for (int k = 0; k < 3; k++) {
        memset(p.ops->buffer_host_ptr(yb), 0, (size_t)(rows * n * 4));
        mm_case c = {t, rows, cols, ns[k], k == 2 ? n_idx : 0, wb, xb, ib, yb};
        if (k == 2)
            run_matvec_rows(&p, &c);
        else
            run_matmul(&p, &c);
        memcpy(out + k * rows * n, p.ops->buffer_host_ptr(yb), (size_t)(rows * n * 4));
    }
    hc_buffer *bufs[] = {wb, xb, ib, yb};
    for (size_t i = 0; i < 4; i++)
        p.ops->buffer_free(bufs[i]);
    plug_close(&p);
    return has;
}

/* AVX-VNNI's vpdpbusd and AVX2's maddubs/madd form the same exact int32
 * sums, so the two builds of the dot kernels must agree bit for bit (Q4_0
 * uses vpdpbusd; Q6_K's kernel is the same code built with -mavxvnni). */
START_TEST(test_vnni_matches_avx2)
{
    const int64_t rows = 300, cols = 2048, n = 5, n_idx = 77;
    const hc_type t = _i ? HC_TYPE_Q6_K : HC_TYPE_Q4_0;
    uint8_t *w = rand_weights(t, rows, cols);
    float *x = rand_floats(cols * n, 1.0f);
    int32_t *idx = rand_rows(rows, n_idx);
    float *a = malloc((size_t)(3 * rows * n * 4)), *b = malloc((size_t)(3 * rows * n * 4));
    ck_assert(a && b);
    const int plain = dot_products(t, 0, w, x, idx, rows, cols, n, n_idx, a);
    const int vnni = plain < 0 ? -1 : dot_products(t, 1, w, x, idx, rows, cols, n, n_idx, b);
    if (plain < 0)
        hc_test_skip("cpu-avx2 AVX-VNNI vs AVX2 comparison: the plugin cannot run here");
    else if (vnni == 0)
        hc_test_skip("cpu-avx2 AVX-VNNI vs AVX2 comparison: no AVX-VNNI on this CPU or compiler");
    else {
        ck_assert_msg(memcmp(a, b, (size_t)(3 * rows * n * 4)) == 0,
                      "%s products differ between AVX-VNNI and AVX2", type_name(t));
        printf("cpu-avx2: AVX-VNNI and AVX2 %s products bit-identical (matmul n=1, n=%lld, "
               "matvec_rows)\n", type_name(t), (long long)n);
    }
    free(w);
    free(x);
    free(idx);
    free(a);
    free(b);
}
END_TEST

/* One-token Q4_0 axpy_rows of the avx2 plugin with AVX-512 forced off
 * (HOTCOLD_CPU_AVX512=0) or allowed, for each list length in lens (the
 * first lens[i] rows of idx), into out (one y of cols floats per length). */
#define AXPY512_CASES 4
static int axpy512_products(int on, const uint8_t *w, const float *h, const float *y0,
                            const int32_t *idx, int64_t rows, int64_t cols, const int64_t *lens,
                            float *out)
{
    plug p;
    int has;
    if (!open_with(&p, "HOTCOLD_CPU_AVX512", on, "AVX-512", &has))
        return -1;
    hc_buffer *wb = buf_from(&p, w, rows * hc_type_row_size(HC_TYPE_Q4_0, cols));
    hc_buffer *hb = buf_from(&p, h, rows * 4), *ib = buf_from(&p, idx, rows * 4);
    hc_buffer *yb = buf_from(&p, NULL, cols * 4);
    for (int k = 0; k < AXPY512_CASES; k++) {
        memcpy(p.ops->buffer_host_ptr(yb), y0, (size_t)cols * 4);
        mm_case c = {HC_TYPE_Q4_0, rows, cols, 1, lens[k], wb, hb, ib, yb};
        run_axpy_rows(&p, &c);
        memcpy(out + k * cols, p.ops->buffer_host_ptr(yb), (size_t)cols * 4);
    }
    hc_buffer *bufs[] = {wb, hb, ib, yb};
    for (size_t i = 0; i < 4; i++)
        p.ops->buffer_free(bufs[i]);
    plug_close(&p);
    return has;
}

/* The AVX-512 build of the one-token Q4_0 axpy does every y element's
 * operations in the AVX2 path's order, so the two must agree bit for bit:
 * one row, a partial last group (77), one slice of several chunks of
 * columns (150 blocks: 64 + 64 + 22, whose last 2 blocks miss a whole step
 * of 4), and 300 rows in 4 slices. */
START_TEST(test_avx512_matches_avx2)
{
    const int64_t rows = 300, cols = 150 * 32, lens[AXPY512_CASES] = {1, 77, 95, rows};
    uint8_t *w = rand_weights(HC_TYPE_Q4_0, rows, cols);
    float *h = rand_floats(rows, 1.0f), *y0 = rand_floats(cols, 1.0f);
    int32_t *idx = rand_rows(rows, rows);
    const size_t bytes = (size_t)(AXPY512_CASES * cols * 4);
    float *a = malloc(bytes), *b = malloc(bytes);
    ck_assert(a && b);
    const int plain = axpy512_products(0, w, h, y0, idx, rows, cols, lens, a);
    const int wide = plain < 0 ? -1 : axpy512_products(1, w, h, y0, idx, rows, cols, lens, b);
    if (plain < 0)
        hc_test_skip("cpu-avx2 AVX-512 vs AVX2 axpy comparison: the plugin cannot run here");
    else if (wide == 0)
        hc_test_skip("cpu-avx2 AVX-512 vs AVX2 axpy comparison: no AVX-512 on this CPU or "
                     "compiler");
    else {
        for (int k = 0; k < AXPY512_CASES; k++)
            ck_assert_msg(memcmp(a + k * cols, b + k * cols, (size_t)cols * 4) == 0,
                          "one-token Q4_0 axpy_rows of %lld rows differs between AVX-512 and "
                          "AVX2", (long long)lens[k]);
        printf("cpu-avx2: AVX-512 and AVX2 one-token Q4_0 axpy_rows bit-identical (1, 77, 95, "
               "300 rows of %lld columns)\n", (long long)cols);
    }
    free(w);
    free(h);
    free(y0);
    free(idx);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_argument_checks)
{
    plug p;
    if (!plug_open(&p, _i, 2))
        return;
    const hc_plugin_ops *o = p.ops;
    const int64_t rows = 8, cols = 64;
    uint8_t *w = rand_weights(HC_TYPE_Q4_0, rows, cols);
    float *x = rand_floats(cols, 1.0f);
    int32_t idx[3] = {1, 7, 3}, bad_hi[2] = {0, 8}, bad_neg[2] = {-1, 2};
    hc_buffer *wb = buf_from(&p, w, rows * hc_type_row_size(HC_TYPE_Q4_0, cols));
    hc_buffer *xb = buf_from(&p, x, cols * 4), *yb = buf_from(&p, NULL, 256 * 4);
    hc_buffer *ib = buf_from(&p, idx, sizeof idx), *bh = buf_from(&p, bad_hi, sizeof bad_hi);
    hc_buffer *bn = buf_from(&p, bad_neg, sizeof bad_neg);
    float *y = o->buffer_host_ptr(yb);
    const hc_type q4 = HC_TYPE_Q4_0;

    /* Another context of the same plugin keeps its own (empty) message. */
    hc_plugin_ctx *ctx2 = NULL;
    hc_plugin_host host = {sizeof host, HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR, NULL, NULL, 1};
    ck_assert_int_eq(o->init(&host, &ctx2), HC_OK);

    for (int i = 0; i < 256; i++)
        y[i] = -7.0f;
    /* Ranges: past the end, overflowing off + bytes, overflowing sizes. */
    expect(&p, o->matmul(p.s, q4, (hc_ref){wb, 1}, rows, cols, at(xb), 1, at(yb)), HC_E_INVALID,
           "w", "w one byte past the end");
    expect(&p, o->matmul(p.s, q4, at(wb), rows, cols, (hc_ref){xb, 8}, 1, at(yb)), HC_E_INVALID,
           "x", "x past the end");
    expect(&p, o->matmul(p.s, q4, at(wb), rows, cols, at(xb), 1, (hc_ref){yb, UINT64_MAX - 15}),
           HC_E_INVALID, "y", "y offset near 2^64");
    expect(&p, o->matmul(p.s, q4, at(wb), rows, cols, at(xb), INT64_MAX / 2, at(yb)), HC_E_INVALID,
           "x", "n * cols * 4 overflows");
    expect(&p, o->matmul(p.s, HC_TYPE_F32, at(wb), INT64_MAX / 4, cols, at(xb), 1, at(yb)),
           HC_E_INVALID, "w", "rows * row bytes overflows");
    expect(&p, o->matmul(p.s, q4, at(wb), -1, cols, at(xb), 1, at(yb)), HC_E_INVALID, "matmul",
           "negative rows");
    expect(&p, o->matmul(p.s, q4, at(wb), rows, cols, at(xb), -2, at(yb)), HC_E_INVALID, "matmul",
           "negative n");
    expect(&p, o->matmul(p.s, q4, (hc_ref){NULL, 0}, rows, cols, at(xb), 1, at(yb)), HC_E_INVALID,
           "w", "NULL weights");
    expect(&p, o->matmul(p.s, q4, at(wb), rows, cols, at(xb), 1, (hc_ref){yb, 2}), HC_E_INVALID,
           "y", "misaligned y");
    expect(&p, o->matmul(p.s, q4, at(wb), rows, 48, at(xb), 1, at(yb)), HC_E_INVALID, "48",
           "cols not a multiple of 32");
    expect(&p, o->matmul(p.s, q4, at(wb), rows, cols, at(yb), 1, (hc_ref){yb, 64}), HC_E_INVALID,
           "overlaps", "y overlapping x");
    expect(&p, o->matmul(p.s, (hc_type)3, at(wb), rows, cols, at(xb), 1, at(yb)), HC_E_UNSUPPORTED,
           "3", "unknown weight type");
    expect(&p, o->matvec_rows(p.s, (hc_type)20, at(wb), rows, cols, at(xb), 1, at(ib), 3, at(yb)),
           HC_E_UNSUPPORTED, "20", "unknown weight type (matvec_rows)");
    /* Row lists: an index equal to rows, a negative one, a list past its buffer. */
    expect(&p, o->matvec_rows(p.s, q4, at(wb), rows, cols, at(xb), 1, at(bh), 2, at(yb)),
           HC_E_INVALID, "idx[1] = 8", "row index == rows");
    expect(&p, o->matvec_rows(p.s, q4, at(wb), rows, cols, at(xb), 1, at(bn), 2, at(yb)),
           HC_E_INVALID, "idx[0] = -1", "negative row index");
    expect(&p, o->matvec_rows(p.s, q4, at(wb), rows, cols, at(xb), 1, at(ib), 4, at(yb)),
           HC_E_INVALID, "idx", "idx past its buffer");
    expect(&p, o->matvec_rows(p.s, q4, at(wb), rows, cols, at(xb), 1, at(ib), -1, at(yb)),
           HC_E_INVALID, "n_idx", "negative n_idx");
    expect(&p, o->axpy_rows(p.s, q4, at(wb), rows, cols, at(xb), 1, at(bh), 2, at(yb)),
           HC_E_INVALID, "idx[1] = 8", "axpy row index == rows");
    expect(&p, o->axpy_rows(p.s, q4, at(wb), rows, cols, at(xb), 1, at(ib), 3, (hc_ref){yb, 800}),
           HC_E_INVALID, "y", "axpy y past the end");
    /* Layer ops. */
    expect(&p, o->rmsnorm(p.s, at(xb), at(xb), at(yb), 1, 0, 1e-5f), HC_E_INVALID, "dim",
           "rmsnorm dim 0");
    expect(&p, o->rmsnorm(p.s, at(xb), at(xb), at(yb), 2, cols, 1e-5f), HC_E_INVALID, "x",
           "rmsnorm x too short");
    expect(&p, o->rope(p.s, at(yb), 1, 2, 16, 16, at(ib), 1e4f, 1.0f, 1), HC_E_UNSUPPORTED, "mode",
           "rope mode 1");
    expect(&p, o->rope(p.s, at(yb), 1, 2, 16, 18, at(ib), 1e4f, 1.0f, 0), HC_E_INVALID, "n_rot",
           "rope n_rot > head_dim");
    expect(&p, o->attention(p.s, at(xb), at(xb), at(xb), at(yb), 1, at(ib), 6, 4, 8, 1.0f),
           HC_E_INVALID, "n_head_kv", "n_head not a multiple of n_head_kv");
    expect(&p, o->attention(p.s, at(xb), at(xb), at(xb), at(yb), 1, at(bn), 2, 2, 8, 1.0f),
           HC_E_INVALID, "pos[0] = -1", "negative position");
    expect(&p, o->attention(p.s, at(xb), at(xb), at(xb), at(yb), 2, at(bh), 2, 2, 16, 1.0f),
           HC_E_INVALID, "k", "kv cache shorter than pos");
    expect(&p, o->unary(p.s, 7, at(xb), at(yb), 4, 0.0f), HC_E_UNSUPPORTED, "7", "unary op 7");
    expect(&p, o->binary(p.s, 2, at(xb), at(xb), at(yb), 4), HC_E_UNSUPPORTED, "2", "binary op 2");
    expect(&p, o->glu(p.s, 3, at(xb), at(xb), at(yb), 4, 0.0f), HC_E_UNSUPPORTED, "3", "glu 3");
    expect(&p, o->glu(p.s, 0, at(xb), (hc_ref){NULL, 0}, at(yb), 4, 0.0f), HC_E_INVALID, "u",
           "glu NULL u");
    expect(&p, o->unary(p.s, 0, at(yb), (hc_ref){yb, 4}, 8, 0.0f), HC_E_INVALID, "overlaps",
           "unary partial overlap");
    expect(&p, o->set_threads(p.ctx, 100000), HC_E_INVALID, "set_threads", "100000 threads");
    /* A NULL stream has no context to hold a message, but is refused. */
    ck_assert_int_eq(o->matmul(NULL, q4, at(wb), rows, cols, at(xb), 1, at(yb)), HC_E_INVALID);

    /* Nothing above wrote y. */
    for (int i = 0; i < 256; i++)
        ck_assert_msg(y[i] == -7.0f, "y[%d] written by a refused call", i);
    ck_assert_str_eq(o->last_error(ctx2), "");

    /* And the valid calls still work. */
    ck_assert_int_eq(o->matvec_rows(p.s, q4, at(wb), rows, cols, at(xb), 1, at(ib), 3, at(yb)), HC_OK);
    ck_assert(y[0] == -7.0f && y[1] != -7.0f && y[7] != -7.0f);
    ck_assert_int_eq(o->matmul(p.s, q4, at(wb), 0, cols, at(xb), 1, at(yb)), HC_OK);

    o->shutdown(ctx2);
    hc_buffer *bufs[] = {wb, xb, yb, ib, bh, bn};
    for (size_t i = 0; i < 6; i++)
        o->buffer_free(bufs[i]);
    free(w);
    free(x);
    plug_close(&p);
}
END_TEST

/* Parts are claimed in index order, so part k must follow part k-1 exactly,
 * the parts must cover [0, total) once, start at multiples of align, and
 * shrink (in align units, up to one unit of rounding; a part clipped by
 * total is exempt).  The first part is about twice the average and the last about
 * 1/n of it: check both within one unit. */
START_TEST(test_tapered_split)
{
    const int64_t totals[] = {0, 1, 3, 5, 64, 131, 301, 563, 5632, 32000};
    const int parts[] = {1, 2, 3, 8, 16, 17, 128};
    const int64_t aligns[] = {1, 4, 8};
    for (size_t ti = 0; ti < sizeof totals / sizeof *totals; ti++)
        for (size_t pi = 0; pi < sizeof parts / sizeof *parts; pi++)
            for (size_t ai = 0; ai < sizeof aligns / sizeof *aligns; ai++) {
                const int64_t total = totals[ti], align = aligns[ai];
                const int n = parts[pi];
                const int64_t units = (total + align - 1) / align;
                int64_t at = 0, prev = 0;
                for (int k = 0; k < n; k++) {
                    int64_t b, e;
                    hc_cpu_split_tapered(total, k, n, align, &b, &e);
                    ck_assert_msg(b == at && e >= b && e <= total,
                                  "total %lld, %d parts, align %lld: part %d is [%lld, %lld) "
                                  "after %lld",
                                  (long long)total, n, (long long)align, k, (long long)b,
                                  (long long)e, (long long)at);
                    ck_assert(b == total || b % align == 0);
                    const int64_t size = (e - b + align - 1) / align;
                    if (k > 0 && e < total)
                        ck_assert_msg(size <= prev + 1, "part %d grows", k);
                    if (k == 0)
                        ck_assert(size <= (2 * units + n - 1) / n + 1);
                    if (k == n - 1)
                        ck_assert(size <= units / ((int64_t)n * n) + 1);
                    prev = size;
                    at = e;
                }
                ck_assert_int_eq(at, total);
            }
}
END_TEST

static Suite *cpu_plugin_suite(void)
{
    Suite *s = suite_create("cpu_plugin");
    TCase *tc = tcase_create("cpu_plugin");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_entry_and_probe, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_device_info, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_buffers_and_transfers, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_threads_weight_ops, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_threads_layer_ops, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_reference_spot_checks, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_decode_shapes, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_argument_checks, 0, N_VARIANTS);
    tcase_add_loop_test(tc, test_vnni_matches_avx2, 0, 2); /* Q4_0, Q6_K */
    tcase_add_test(tc, test_avx512_matches_avx2);
    tcase_add_test(tc, test_tapered_split);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cpu_plugin_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

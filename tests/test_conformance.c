/*
 * Plugin conformance: every op of hc_plugin_ops that a plugin provides, on
 * every device of every plugin the loader finds, against the reference
 * kernels of core/ref.
 *
 * Each case allocates device buffers with a guard region before and after
 * the data (ops get a ref at a non-zero offset), checks the guards and the
 * inputs unchanged afterwards, compares the output by NMSE with a bound per
 * weight type (justified at conf_bounds below), and prints one summary line
 * so the log shows the margins.  Sparse ops also check that rows they must
 * not touch are bit-identical.
 *
 * Which plugins: `test_conformance PLUGIN_FILE` (or $HOTCOLD_CONF_PLUGIN)
 * tests that one file alone, and fails if it does not load; without one,
 * the loader reads $HOTCOLD_PLUGIN_PATH (set by CTest to the build's plugin
 * directory) and $HOTCOLD_PLUGINS (e.g. "cpu-generic" to test one variant).
 * tests/conformance.cmake has the CTest entries (one for a file named at
 * configure time, one for docs/example-plugin).
 *
 * The cases: one per entry of hc_plugin_ops, made from HC_PLUGIN_ENTRIES
 * (plugin.h), so a new entry without a case does not build; an optional
 * entry a plugin lacks is reported "skipped", never passed.  Plus the
 * cross-cutting bad_refs and determinism.
 * Failures inside a test are counted and printed as "FAIL ..." lines, and the
 * test fails at its end, so one bug does not hide the cases after it.
 * GPU contexts do not survive fork(): the runner uses CK_NOFORK.
 *
 * $HOTCOLD_CONF_REQUIRE_LAYER=1 (set for the Vulkan runs by
 * tests/conformance_vulkan.cmake) makes the layer ops and stream_flush
 * mandatory for every plugin under test: one that is missing, or that
 * answers HC_E_UNSUPPORTED for a case, fails instead of being skipped, so
 * a plugin that claims them is really exercised.
 *
 * A selection without the CPU plugin (HOTCOLD_PLUGINS=vulkan, as in
 * tests/conformance_vulkan.cmake) on a machine where the selected plugins
 * load but find no device, or are not built, has nothing to test: the
 * binary prints "skipped" and exits 77 (CTest's SKIP_RETURN_CODE).  A
 * selected plugin that is rejected still fails (test_devices_found).
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"
#include "runtime/loader.h"
#include "test_util.h"

/* ---- bounds ------------------------------------------------------------- */

/*
 * NMSE = sum (got - ref)^2 / sum ref^2, and "max" = the largest |got - ref|
 * divided by the RMS of ref.  For the weight products (matmul, matvec_rows,
 * axpy_rows) the denominator is instead the energy of the products summed
 * into each output, sum_c (W[r][c] x[c])^2: for random data it equals ref^2
 * in expectation, but a dot that happens to cancel to near zero (a one-row
 * list has a single output) does not inflate the ratio, while a rounding
 * error still scales with the terms that produced it.
 *
 * The reference runs on the same weight bytes
 * (already quantized), so weight quantization error is not measured here;
 * what remains is the plugin's own arithmetic:
 *
 *  F32   float products summed in any fixed order: the rounding error of a
 *        length-N dot is ~ eps * sqrt(N) relative (eps = 6e-8), i.e. NMSE
 *        ~ 1e-11 at N = 11008.  Bound 1e-8 leaves 1000x for blocked or
 *        tree sums; a wrong element among 4096 already gives ~5e-4.
 *  F16   weights decode exactly to float, so the same, plus room for a
 *        plugin that rounds activations to half (relative 2^-11 per element:
 *        NMSE ~ 1e-7): bound 1e-6.  Half-precision accumulation over long
 *        rows (error ~ sqrt(N) * 2^-11) fails it, on purpose.
 *  Q8_0, Q4_0, Q6_K  a plugin may quantize activations to 8 bits per
 *        32-block (as ggml does for these dots; for Q6_K ggml uses one
 *        scale per 256, the CPU plugin per 32): step amax/127 with amax ~
 *        1.7-2.5 sigma gives a relative error variance ~ (2.5/127)^2 / 12 =
 *        3e-5.  Bound 5e-4 (15x margin); max error 0.1 RMS (~15 sigma).
 *
 * Layer ops are F32 only: element-wise ops and rmsnorm are a few roundings
 * (NMSE ~ 1e-14): bound 1e-10.  Attention sums up to ~2000 softmax-weighted
 * rows with float exp (NMSE ~ 1e-12): bound 1e-8.  RoPE angles are
 * pos * freq computed in float: at pos ~ 4100 one ulp is 5e-4 rad, so
 * elements move by up to ~1e-3 (NMSE ~ 1e-7): bound 1e-5.
 */
typedef struct conf_bound {
    double nmse, max;
} conf_bound;

static conf_bound bound_for_type(hc_type t)
{
    switch (t) {
    case HC_TYPE_F32: return (conf_bound){1e-8, 1e-3};
    case HC_TYPE_F16: return (conf_bound){1e-6, 1e-2};
    case HC_TYPE_Q8_0:
    case HC_TYPE_Q4_0:
    case HC_TYPE_Q6_K: return (conf_bound){5e-4, 0.1};
    }
    return (conf_bound){0, 0};
}

static const conf_bound BOUND_ELEMENTWISE = {1e-10, 1e-4};
static const conf_bound BOUND_ATTENTION = {1e-8, 1e-3};
static const conf_bound BOUND_ROPE = {1e-5, 1e-2};

static const hc_type ALL_TYPES[] = {HC_TYPE_F32, HC_TYPE_F16, HC_TYPE_Q8_0, HC_TYPE_Q4_0,
                                    HC_TYPE_Q6_K};
#define N_TYPES ((int)(sizeof ALL_TYPES / sizeof ALL_TYPES[0]))

static const char *type_name(hc_type t)
{
    switch (t) {
    case HC_TYPE_F32: return "F32";
    case HC_TYPE_F16: return "F16";
    case HC_TYPE_Q8_0: return "Q8_0";
    case HC_TYPE_Q4_0: return "Q4_0";
    case HC_TYPE_Q6_K: return "Q6_K";
    }
    return "?";
}

static int type_fits(hc_type t, int64_t cols)
{
    return hc_type_row_size(t, cols) != 0 || cols == 0;
}

/* ---- worst NMSE seen, per weight type and for the layer ops ------------- */

enum { WORST_LAYER = 5, WORST_N = 6 };
static double g_worst[WORST_N];
static char g_worst_what[WORST_N][384];

static int worst_slot(hc_type t)
{
    for (int i = 0; i < N_TYPES; i++)
        if (ALL_TYPES[i] == t)
            return i;
    return WORST_LAYER;
}

/* ---- devices ------------------------------------------------------------- */

#define CONF_MAX_DEVS 32

typedef struct conf_dev {
    const hc_plugin *plugin;
    const hc_plugin_ops *ops;
    hc_device *dev;
    hc_stream *st;
    hc_device_info info;
    int index;  /* within its plugin */
    int is_cpu; /* the CPU family is everyone's fallback: it must support all */
    char name[96];
} conf_dev;

static hc_registry g_reg;
static conf_dev g_dev[CONF_MAX_DEVS];
static int g_n_dev;
static char g_setup_error[2048];

/* Failures within the running test (reset at its start). */
static int g_fail;

static void conf_fail(const conf_dev *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void conf_fail(const conf_dev *d, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FAIL %s: %s\n", d ? d->name : "-", msg);
    fflush(stdout);
    g_fail++;
}

static const char *plugin_error(const conf_dev *d)
{
    const char *e = d->ops->last_error(d->plugin->ctx);
    return e ? e : "(null)";
}

/* Run `call`; on anything but HC_OK record a failure and jump to `out`. */
#define CONF_CALL(d, call)                                                                   \
    do {                                                                                     \
        hc_status st_ = (call);                                                              \
        if (st_ != HC_OK) {                                                                  \
            conf_fail((d), "%s returned %d (%s)", #call, (int)st_, plugin_error(d));       \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)

#define CONF_TEST_END() ck_assert_msg(g_fail == 0, "%d failure(s): see the FAIL lines", g_fail)

/* op_cost's answer when it was not asked (or is not provided). */
#define COST_UNKNOWN (-1.0)

/* An op returned `s`.  1: go on and check the result.  0: the plugin does
 * not support this case (allowed, except on the CPU plugin, and unless
 * op_cost promised it could: `cost` >= 0), or it failed (recorded). */
static int op_accepted(const conf_dev *d, hc_status s, double cost, const char *what)
{
    if (s == HC_OK)
        return 1;
    if (s == HC_E_UNSUPPORTED && !d->is_cpu && !(cost >= 0)) {
        hc_test_skip("conf %s %s: unsupported by the plugin (the core runs such a call on the "
                     "CPU)",
                     d->name, what);
        return 0;
    }
    conf_fail(d, "%s: status %d (%s)%s", what, (int)s, plugin_error(d),
              s == HC_E_UNSUPPORTED ? (d->is_cpu ? " - the CPU plugin must support every case"
                                                 : " - but op_cost said it could, or the op is "
                                                   "required here")
                                    : "");
    return 0;
}

/* $HOTCOLD_CONF_REQUIRE_LAYER=1: the layer ops and stream_flush must be
 * provided and must accept every case (see the top of this file). */
static int layer_required(void)
{
    const char *e = getenv("HOTCOLD_CONF_REQUIRE_LAYER");
    return e && strcmp(e, "1") == 0;
}

/* The `cost` op_accepted gets for a layer op: one that may not refuse. */
static double layer_cost(void)
{
    return layer_required() ? 0.0 : COST_UNKNOWN;
}

/* The entries HOTCOLD_CONF_REQUIRE_LAYER=1 makes mandatory. */
static int layer_entry(const char *name)
{
    static const char *const LAYER[] = {"rmsnorm", "rope",  "attention",   "unary",
                                        "binary",  "glu",   "stream_flush"};
    for (size_t i = 0; i < sizeof LAYER / sizeof LAYER[0]; i++)
        if (strcmp(name, LAYER[i]) == 0)
            return 1;
    return 0;
}

/* op_cost for a matrix op, checked to be a number. */
static double query_cost(const conf_dev *d, int op, hc_type t, int64_t rows, int64_t cols,
                         int64_t n)
{
    if (!HC_OPS_HAS(d->ops, op_cost))
        return COST_UNKNOWN;
    double c = d->ops->op_cost(d->dev, op, t, rows, cols, n);
    if (isnan(c))
        conf_fail(d, "op_cost(op %d, %s, %lldx%lld, n %lld) is nan", op, type_name(t),
                  (long long)rows, (long long)cols, (long long)n);
    return c;
}

/* ---- random data ------------------------------------------------------------ */

typedef struct conf_rng {
    uint64_t s;
} conf_rng;

static conf_rng rng_seed(uint64_t seed)
{
    conf_rng r = {seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull};
    if (!r.s)
        r.s = 1;
    return r;
}

static uint64_t rng_next(conf_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* Uniform in [-1, 1). */
static float rng_unit(conf_rng *r)
{
    return (float)((double)(rng_next(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void fill_uniform(conf_rng *r, float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_unit(r) * scale;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    ck_assert_msg(p != NULL, "out of host memory (%zu bytes)", bytes);
    return p;
}

/* Random weights in type t: uniform rows, encoded by the reference. */
static void *make_weights(hc_type t, int64_t rows, int64_t cols, uint64_t seed, uint64_t *bytes)
{
    uint64_t row_bytes = hc_type_row_size(t, cols);
    uint8_t *w = xmalloc((size_t)(row_bytes * (uint64_t)rows));
    float *src = xmalloc((size_t)cols * sizeof(float));
    conf_rng r = rng_seed(seed);
    for (int64_t i = 0; i < rows; i++) {
        fill_uniform(&r, src, (size_t)cols, 1.0f);
        hc_scalar_quantize_row(t, src, w + (uint64_t)i * row_bytes, cols);
    }
    free(src);
    *bytes = row_bytes * (uint64_t)rows;
    return w;
}

/* ---- guarded device buffers -------------------------------------------- */

/* Bytes of guard before and after the data.  256 keeps the data offset
 * aligned for any device; the guard after starts right at the data's end. */
#define GUARD 256

typedef struct dbuf {
    conf_dev *d;
    hc_buffer *buf;
    uint64_t bytes;
} dbuf;

static uint8_t guard_byte(uint64_t i)
{
    return (uint8_t)(0xa5u ^ (i * 37u));
}

static hc_ref dref(const dbuf *b)
{
    return (hc_ref){b->buf, GUARD};
}

static int dbuf_put(dbuf *b, uint64_t off, const void *src, uint64_t n)
{
    conf_dev *d = b->d;
    if (n == 0)
        return 0;
    CONF_CALL(d, d->ops->upload(d->st, (hc_ref){b->buf, GUARD + off}, src, n));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    return 0;
out:
    return -1;
}

static int dbuf_get(dbuf *b, void *dst, uint64_t off, uint64_t n)
{
    conf_dev *d = b->d;
    if (n == 0)
        return 0;
    CONF_CALL(d, d->ops->download(d->st, dst, (hc_ref){b->buf, GUARD + off}, n));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    return 0;
out:
    return -1;
}

/* A buffer of `bytes` data bytes between two guards, holding `data` (if
 * not NULL).  Returns 0, -1 on failure (recorded), 1 when the device's
 * max_buffer is too small for it (the caller skips the case). */
static int dbuf_new(conf_dev *d, dbuf *b, uint64_t bytes, const void *data)
{
    uint8_t guard[GUARD];
    b->d = d;
    b->buf = NULL;
    b->bytes = bytes;
    if (d->info.max_buffer && bytes + 2 * GUARD > d->info.max_buffer)
        return 1;
    CONF_CALL(d, d->ops->buffer_alloc(d->dev, bytes + 2 * GUARD, &b->buf));
    for (uint64_t i = 0; i < GUARD; i++)
        guard[i] = guard_byte(i);
    CONF_CALL(d, d->ops->upload(d->st, (hc_ref){b->buf, 0}, guard, GUARD));
    for (uint64_t i = 0; i < GUARD; i++)
        guard[i] = guard_byte(GUARD + i);
    CONF_CALL(d, d->ops->upload(d->st, (hc_ref){b->buf, GUARD + bytes}, guard, GUARD));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (data && dbuf_put(b, 0, data, bytes) != 0)
        goto out;
    return 0;
out:
    return -1;
}

static void dbuf_free(dbuf *b)
{
    if (b->buf)
        b->d->ops->buffer_free(b->buf);
    b->buf = NULL;
}

/* Both guards unchanged?  Records a failure naming `what` if not. */
static int dbuf_guards_ok(dbuf *b, const char *case_name, const char *what)
{
    uint8_t got[GUARD];
    conf_dev *d = b->d;
    for (int side = 0; side < 2; side++) {
        uint64_t at = side ? GUARD + b->bytes : 0;
        CONF_CALL(d, d->ops->download(d->st, got, (hc_ref){b->buf, at}, GUARD));
        CONF_CALL(d, d->ops->stream_sync(d->st));
        for (uint64_t i = 0; i < GUARD; i++)
            if (got[i] != guard_byte(side * GUARD + i)) {
                conf_fail(d, "%s: guard %s %s overwritten at byte %llu", case_name,
                          side ? "after" : "before", what, (unsigned long long)i);
                return 0;
            }
    }
    return 1;
out:
    return 0;
}

/* Guards intact and the data still equal to `data` (an input the op must
 * only read). */
static int dbuf_input_ok(dbuf *b, const void *data, const char *case_name, const char *what)
{
    int ok = dbuf_guards_ok(b, case_name, what);
    if (!ok || b->bytes == 0)
        return ok;
    uint8_t *now = xmalloc((size_t)b->bytes);
    if (dbuf_get(b, now, 0, b->bytes) != 0) {
        ok = 0;
    } else if (memcmp(now, data, (size_t)b->bytes) != 0) {
        conf_fail(b->d, "%s: input %s was modified", case_name, what);
        ok = 0;
    }
    free(now);
    return ok;
}

/* ---- comparison and reporting ------------------------------------------ */

typedef struct conf_err {
    double nmse, max;
} conf_err;

/* Over n pairs; nan/inf in got counts as infinite error.  `energy` (may be
 * NULL: use want^2) is each output's normalizer, see conf_bound. */
static conf_err compare_energy(const float *got, const double *want, const double *energy,
                               size_t n)
{
    double se = 0, ss = 0, maxe = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)got[i] - want[i];
        if (!isfinite(got[i]))
            e = INFINITY;
        se += e * e;
        ss += energy ? energy[i] : want[i] * want[i];
        if (fabs(e) > maxe || isnan(e))
            maxe = fabs(e);
    }
    conf_err r;
    if (n == 0) {
        r.nmse = r.max = 0;
    } else if (ss == 0) {
        r.nmse = se; /* nothing to normalize by: absolute */
        r.max = maxe;
    } else {
        r.nmse = se / ss;
        r.max = maxe / sqrt(ss / (double)n);
    }
    return r;
}

static conf_err compare(const float *got, const double *want, size_t n)
{
    return compare_energy(got, want, NULL, n);
}

/* Energy of a dot-product output: sum_c (W[r][c] x[t][c])^2 for every
 * token t and row r (only the rows in idx when idx is not NULL; others 0).
 * n x rows doubles. */
static double *dot_energy(hc_type t, const void *w, int64_t rows, int64_t cols, const float *x,
                          int64_t n, const int32_t *idx, int64_t n_idx)
{
    uint64_t row_bytes = hc_type_row_size(t, cols);
    double *e = calloc((size_t)(n * rows) + 1, sizeof(double));
    float *row = xmalloc((size_t)cols * sizeof(float));
    ck_assert(e != NULL);
    int64_t count = idx ? n_idx : rows;
    for (int64_t k = 0; k < count; k++) {
        int64_t r = idx ? idx[k] : k;
        hc_scalar_dequantize_row(t, (const uint8_t *)w + (uint64_t)r * row_bytes, row, cols);
        for (int64_t tok = 0; tok < n; tok++) {
            double s = 0;
            for (int64_t c = 0; c < cols; c++) {
                double p = (double)row[c] * x[tok * cols + c];
                s += p * p;
            }
            e[tok * rows + r] = s;
        }
    }
    free(row);
    return e;
}

/* The same for axpy_rows: sum_k (h[t][idx[k]] * Wt[idx[k]][c])^2, n x cols. */
static double *axpy_energy(hc_type t, const void *wt, int64_t rows, int64_t cols, const float *h,
                           int64_t n, const int32_t *idx, int64_t n_idx)
{
    uint64_t row_bytes = hc_type_row_size(t, cols);
    double *e = calloc((size_t)(n * cols) + 1, sizeof(double));
    float *row = xmalloc((size_t)cols * sizeof(float));
    ck_assert(e != NULL);
    for (int64_t k = 0; k < n_idx; k++) {
        hc_scalar_dequantize_row(t, (const uint8_t *)wt + (uint64_t)idx[k] * row_bytes, row, cols);
        for (int64_t tok = 0; tok < n; tok++) {
            double hv = h[tok * rows + idx[k]];
            for (int64_t c = 0; c < cols; c++)
                e[tok * cols + c] += (hv * row[c]) * (hv * row[c]);
        }
    }
    free(row);
    return e;
}

/* Print the summary line, record the worst NMSE, and fail if out of bounds. */
static void report(const conf_dev *d, const char *op, int slot, const char *what, conf_err e,
                   conf_bound b)
{
    int ok = e.nmse <= b.nmse && e.max <= b.max;
    printf("conf %-28s %-11s %-44s nmse %.2e (<= %.0e) max %.2e (<= %.0e)%s\n", d->name, op,
           what, e.nmse, b.nmse, e.max, b.max, ok ? "" : "  <-- FAIL");
    fflush(stdout);
    if (g_worst_what[slot][0] == 0 || e.nmse > g_worst[slot] || isnan(e.nmse)) {
        g_worst[slot] = e.nmse;
        snprintf(g_worst_what[slot], sizeof g_worst_what[slot], "%s %s %s", d->name, op, what);
    }
    if (!ok)
        conf_fail(d, "%s %s: nmse %.3g (bound %.0g), max %.3g (bound %.0g)", op, what, e.nmse,
                  b.nmse, e.max, b.max);
}

static double *to_double(const float *x, size_t n)
{
    double *r = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        r[i] = x[i];
    return r;
}

/* Outputs start as nan, so an element the op never writes shows up. */
static void fill_nan(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
}

/* ---- dense matmul -------------------------------------------------------- */

typedef struct conf_shape {
    int64_t rows, cols;
    const int64_t *ns; /* token counts, terminated by 0 */
} conf_shape;

static const int64_t NS_SMALL[] = {1, 3, 17, 0};
static const int64_t NS_MID[] = {1, 3, 17, 64, 0};
static const int64_t NS_ONE[] = {1, 0};
static const int64_t NS_ONE_17[] = {1, 17, 0};

/* Odd shapes (F32/F16 only where cols is not a multiple of 32; Q6_K needs
 * multiples of 256), the test models' shapes (stories260K: dim 64, ffn
 * 172, vocab 512; the Q6_K-head model of test_golden: vocab 512 x 256), a
 * batch path, and 7B-sized rows. */
static const conf_shape MATMUL_SHAPES[] = {
    {7, 33, NS_SMALL},    {1, 1, NS_SMALL},     {5, 3, NS_SMALL},     {7, 64, NS_SMALL},
    {13, 96, NS_SMALL},   {3, 32, NS_SMALL},    {172, 64, NS_SMALL},  {64, 172, NS_SMALL},
    {512, 64, NS_SMALL},  {64, 192, NS_SMALL},  {256, 512, NS_MID},   {512, 256, NS_SMALL},
    {5, 768, NS_SMALL},   {4096, 4096, NS_ONE_17}, {4096, 11008, NS_ONE}, {11008, 4096, NS_ONE},
};

static void shape_name(char *buf, size_t len, hc_type t, int64_t rows, int64_t cols, int64_t n,
                       const char *extra)
{
    snprintf(buf, len, "%-4s %5lldx%-5lld n=%-3lld%s%s", type_name(t), (long long)rows,
             (long long)cols, (long long)n, extra && *extra ? " " : "", extra ? extra : "");
}

static void matmul_case(conf_dev *d, hc_type t, dbuf *w, const void *wq, int64_t rows,
                        int64_t cols, int64_t n, uint64_t seed)
{
    char what[128];
    dbuf x = {0}, y = {0};
    size_t nx = (size_t)(n * cols), ny = (size_t)(n * rows);
    float *hx = xmalloc(nx * sizeof(float));
    float *hy = xmalloc(ny * sizeof(float));
    float *want = xmalloc(ny * sizeof(float));
    double *wantd = NULL, *energy = NULL;
    conf_rng r = rng_seed(seed);

    shape_name(what, sizeof what, t, rows, cols, n, NULL);
    fill_uniform(&r, hx, nx, 1.0f);
    fill_nan(hy, ny); /* an element the plugin never writes shows up as nan */
    if (dbuf_new(d, &x, nx * 4, hx) != 0 || dbuf_new(d, &y, ny * 4, hy) != 0)
        goto out;
    double cost = query_cost(d, HC_OP_MATMUL, t, rows, cols, n);
    hc_status s = d->ops->matmul(d->st, t, dref(w), rows, cols, dref(&x), n, dref(&y));
    if (!op_accepted(d, s, cost, what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&y, hy, 0, ny * 4) != 0)
        goto out;
    if (!dbuf_guards_ok(&y, what, "y") || !dbuf_input_ok(&x, hx, what, "x") ||
        !dbuf_guards_ok(w, what, "w"))
        goto out;
    hc_scalar_matmul(t, wq, rows, cols, hx, n, want);
    wantd = to_double(want, ny);
    energy = dot_energy(t, wq, rows, cols, hx, n, NULL, 0);
    report(d, "matmul", worst_slot(t), what, compare_energy(hy, wantd, energy, ny),
           bound_for_type(t));
out:
    free(energy);
    dbuf_free(&x);
    dbuf_free(&y);
    free(hx);
    free(hy);
    free(want);
    free(wantd);
}

static void conf_matmul(conf_dev *d)
{
    for (size_t si = 0; si < sizeof MATMUL_SHAPES / sizeof MATMUL_SHAPES[0]; si++) {
        const conf_shape *sh = &MATMUL_SHAPES[si];
        for (int ti = 0; ti < N_TYPES; ti++) {
            hc_type t = ALL_TYPES[ti];
            if (!type_fits(t, sh->cols))
                continue;
            uint64_t wbytes;
            void *wq = make_weights(t, sh->rows, sh->cols, 1000 + si, &wbytes);
            dbuf w = {0};
            int rc = dbuf_new(d, &w, wbytes, wq);
            if (rc == 1)
                hc_test_skip("conf %s matmul %s %lldx%lld: over the device's max_buffer",
                             d->name, type_name(t), (long long)sh->rows, (long long)sh->cols);
            for (const int64_t *n = sh->ns; rc == 0 && *n; n++)
                matmul_case(d, t, &w, wq, sh->rows, sh->cols, *n, 77 * si + (uint64_t)*n);
            if (rc == 0)
                dbuf_input_ok(&w, wq, "matmul", "w");
            dbuf_free(&w);
            free(wq);
        }
    }
}

/* ---- row lists ----------------------------------------------------------- */

typedef enum list_kind {
    LIST_EMPTY,
    LIST_ONE,   /* a middle row */
    LIST_FIRST,
    LIST_LAST,
    LIST_P5,    /* 5% of rows, sorted */
    LIST_P50,   /* 50%, sorted */
    LIST_ALL,
    LIST_UNSORTED, /* 30%, shuffled */
    LIST_COUNT
} list_kind;

static const char *const LIST_NAMES[LIST_COUNT] = {"empty", "one",  "first", "last",
                                                   "5%",    "50%",  "100%",  "unsorted"};

/* Fills idx (room for rows entries) and returns the count. */
static int64_t make_list(list_kind k, int64_t rows, uint64_t seed, int32_t *idx)
{
    conf_rng r = rng_seed(seed);
    int64_t n = 0;
    switch (k) {
    case LIST_EMPTY: return 0;
    case LIST_ONE: idx[0] = (int32_t)(rows / 2); return 1;
    case LIST_FIRST: idx[0] = 0; return 1;
    case LIST_LAST: idx[0] = (int32_t)(rows - 1); return 1;
    case LIST_ALL:
        for (int64_t i = 0; i < rows; i++)
            idx[i] = (int32_t)i;
        return rows;
    case LIST_P5:
    case LIST_P50:
    case LIST_UNSORTED: {
        /* Choose exactly m rows (m >= 1) by a partial Fisher-Yates shuffle. */
        double frac = k == LIST_P5 ? 0.05 : k == LIST_P50 ? 0.5 : 0.3;
        int64_t m = (int64_t)(frac * (double)rows + 0.5);
        if (m < 1)
            m = 1;
        int32_t *all = xmalloc((size_t)rows * sizeof(int32_t));
        for (int64_t i = 0; i < rows; i++)
            all[i] = (int32_t)i;
        for (int64_t i = 0; i < m; i++) {
            int64_t j = i + (int64_t)(rng_next(&r) % (uint64_t)(rows - i));
            int32_t tmp = all[i];
            all[i] = all[j];
            all[j] = tmp;
        }
        if (k != LIST_UNSORTED) { /* sort the chosen m: counting over a mask */
            uint8_t *mask = calloc((size_t)rows, 1);
            ck_assert(mask != NULL);
            for (int64_t i = 0; i < m; i++)
                mask[all[i]] = 1;
            for (int64_t i = 0; i < rows; i++)
                if (mask[i])
                    idx[n++] = (int32_t)i;
            free(mask);
        } else {
            memcpy(idx, all, (size_t)m * sizeof(int32_t));
            n = m;
        }
        free(all);
        return n;
    }
    case LIST_COUNT: break;
    }
    return 0;
}

/* The sparse shapes: rows = FFN width, cols = model width. */
typedef struct sparse_shape {
    int64_t rows, cols;
    int full; /* 1: every list kind and n in {1, 3}; 0: n = 1 and a few lists */
} sparse_shape;

static const sparse_shape SPARSE_SHAPES[] = {
    {7, 33, 1}, {5, 3, 1}, {13, 96, 1}, {172, 64, 1}, {688, 256, 1}, {11008, 4096, 0},
};

static int list_in_big_run(list_kind k)
{
    return k == LIST_P5 || k == LIST_P50 || k == LIST_UNSORTED || k == LIST_LAST;
}

/* matvec_rows: listed rows compared with the reference, the others must
 * keep the random values y was prefilled with, bit for bit. */
static void matvec_rows_case(conf_dev *d, hc_type t, dbuf *w, const void *wq, int64_t rows,
                             int64_t cols, int64_t n, list_kind lk, uint64_t seed)
{
    char what[128];
    dbuf x = {0}, y = {0}, di = {0};
    size_t nx = (size_t)(n * cols), ny = (size_t)(n * rows);
    float *hx = xmalloc(nx * sizeof(float));
    float *pre = xmalloc(ny * sizeof(float));
    float *hy = xmalloc(ny * sizeof(float));
    float *want = xmalloc(ny * sizeof(float));
    int32_t *idx = xmalloc((size_t)rows * sizeof(int32_t));
    uint8_t *listed = calloc((size_t)rows, 1);
    float *g_got = xmalloc(ny * sizeof(float));
    double *g_want = xmalloc(ny * sizeof(double));
    double *g_energy = xmalloc(ny * sizeof(double));
    double *energy = NULL;
    conf_rng r = rng_seed(seed);
    ck_assert(listed != NULL);

    int64_t n_idx = make_list(lk, rows, seed, idx);
    shape_name(what, sizeof what, t, rows, cols, n, LIST_NAMES[lk]);
    fill_uniform(&r, hx, nx, 1.0f);
    fill_uniform(&r, pre, ny, 100.0f);
    if (dbuf_new(d, &x, nx * 4, hx) != 0 || dbuf_new(d, &y, ny * 4, pre) != 0 ||
        dbuf_new(d, &di, (uint64_t)n_idx * 4, idx) != 0)
        goto out;
    double cost = query_cost(d, HC_OP_MATVEC_ROWS, t, rows, cols, n);
    hc_status s = d->ops->matvec_rows(d->st, t, dref(w), rows, cols, dref(&x), n, dref(&di),
                                      n_idx, dref(&y));
    if (!op_accepted(d, s, cost, what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&y, hy, 0, ny * 4) != 0)
        goto out;
    if (!dbuf_guards_ok(&y, what, "y") || !dbuf_input_ok(&x, hx, what, "x") ||
        !dbuf_input_ok(&di, idx, what, "idx") || !dbuf_guards_ok(w, what, "w"))
        goto out;
    memcpy(want, pre, ny * sizeof(float));
    hc_scalar_matvec_rows(t, wq, rows, cols, hx, n, idx, n_idx, want);
    energy = dot_energy(t, wq, rows, cols, hx, n, idx, n_idx);
    for (int64_t k = 0; k < n_idx; k++)
        listed[idx[k]] = 1;
    size_t m = 0;
    for (int64_t tok = 0; tok < n; tok++)
        for (int64_t row = 0; row < rows; row++) {
            size_t i = (size_t)(tok * rows + row);
            if (listed[row]) {
                g_got[m] = hy[i];
                g_energy[m] = energy[i];
                g_want[m++] = want[i];
            } else if (memcmp(&hy[i], &pre[i], sizeof(float)) != 0) {
                conf_fail(d, "matvec_rows %s: unlisted row %lld (token %lld) changed: %g -> %g",
                          what, (long long)row, (long long)tok, pre[i], hy[i]);
                goto out;
            }
        }
    report(d, "matvec_rows", worst_slot(t), what, compare_energy(g_got, g_want, g_energy, m),
           bound_for_type(t));
out:
    free(g_energy);
    free(energy);
    dbuf_free(&x);
    dbuf_free(&y);
    dbuf_free(&di);
    free(hx);
    free(pre);
    free(hy);
    free(want);
    free(idx);
    free(listed);
    free(g_got);
    free(g_want);
}

/* axpy_rows: y (prefilled at random) gains the listed rows of Wt scaled by
 * h; the error is measured on what was added.  Entries of h for unlisted
 * rows are nan: a plugin that reads them (e.g. multiplies by a zero mask)
 * poisons y.  An empty list must leave y bit-identical. */
static void axpy_rows_case(conf_dev *d, hc_type t, dbuf *w, const void *wq, int64_t rows,
                           int64_t cols, int64_t n, list_kind lk, uint64_t seed)
{
    char what[128];
    dbuf h = {0}, y = {0}, di = {0};
    size_t nh = (size_t)(n * rows), ny = (size_t)(n * cols);
    float *hh = xmalloc(nh * sizeof(float));
    float *pre = xmalloc(ny * sizeof(float));
    float *hy = xmalloc(ny * sizeof(float));
    float *want = xmalloc(ny * sizeof(float));
    float *dgot = xmalloc(ny * sizeof(float));
    double *dwant = xmalloc(ny * sizeof(double));
    int32_t *idx = xmalloc((size_t)rows * sizeof(int32_t));
    uint8_t *listed = calloc((size_t)rows, 1);
    double *energy = NULL;
    conf_rng r = rng_seed(seed);
    ck_assert(listed != NULL);

    int64_t n_idx = make_list(lk, rows, seed, idx);
    shape_name(what, sizeof what, t, rows, cols, n, LIST_NAMES[lk]);
    for (int64_t k = 0; k < n_idx; k++)
        listed[idx[k]] = 1;
    fill_uniform(&r, hh, nh, 1.0f);
    for (int64_t tok = 0; tok < n; tok++)
        for (int64_t row = 0; row < rows; row++)
            if (!listed[row])
                hh[tok * rows + row] = NAN;
    fill_uniform(&r, pre, ny, 1.0f);
    if (dbuf_new(d, &h, nh * 4, hh) != 0 || dbuf_new(d, &y, ny * 4, pre) != 0 ||
        dbuf_new(d, &di, (uint64_t)n_idx * 4, idx) != 0)
        goto out;
    double cost = query_cost(d, HC_OP_AXPY_ROWS, t, rows, cols, n);
    hc_status s = d->ops->axpy_rows(d->st, t, dref(w), rows, cols, dref(&h), n, dref(&di),
                                    n_idx, dref(&y));
    /* Q6_K is an output-head type: a plugin may lack its axpy (ours do,
     * and the core refuses a Q6_K down_t), the CPU plugin included, but
     * then op_cost must say so and y must stay as it was. */
    if (t == HC_TYPE_Q6_K && s == HC_E_UNSUPPORTED) {
        CONF_CALL(d, d->ops->stream_sync(d->st));
        if (cost >= 0)
            conf_fail(d, "axpy_rows %s: refused, but op_cost said %g", what, cost);
        else if (dbuf_get(&y, hy, 0, ny * 4) == 0 && dbuf_guards_ok(&y, what, "y") &&
                 memcmp(hy, pre, ny * sizeof(float)) != 0)
            conf_fail(d, "axpy_rows %s: refused, but y changed", what);
        else if (lk == LIST_EMPTY || lk == LIST_P5)
            printf("conf %-28s %-11s %-44s unsupported (op_cost agrees, y untouched)\n",
                   d->name, "axpy_rows", what);
        goto out;
    }
    if (!op_accepted(d, s, cost, what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&y, hy, 0, ny * 4) != 0)
        goto out;
    if (!dbuf_guards_ok(&y, what, "y") || !dbuf_input_ok(&h, hh, what, "h") ||
        !dbuf_input_ok(&di, idx, what, "idx") || !dbuf_guards_ok(w, what, "wt"))
        goto out;
    if (n_idx == 0) {
        if (memcmp(hy, pre, ny * sizeof(float)) != 0)
            conf_fail(d, "axpy_rows %s: an empty list changed y", what);
        else
            printf("conf %-28s %-11s %-44s y bit-identical\n", d->name, "axpy_rows", what);
        goto out;
    }
    memcpy(want, pre, ny * sizeof(float));
    hc_scalar_axpy_rows(t, wq, rows, cols, hh, n, idx, n_idx, want);
    for (size_t i = 0; i < ny; i++) {
        dgot[i] = (float)((double)hy[i] - (double)pre[i]);
        if (!isfinite(hy[i]))
            dgot[i] = hy[i];
        dwant[i] = (double)want[i] - (double)pre[i];
    }
    energy = axpy_energy(t, wq, rows, cols, hh, n, idx, n_idx);
    report(d, "axpy_rows", worst_slot(t), what, compare_energy(dgot, dwant, energy, ny),
           bound_for_type(t));
out:
    free(energy);
    dbuf_free(&h);
    dbuf_free(&y);
    dbuf_free(&di);
    free(hh);
    free(pre);
    free(hy);
    free(want);
    free(dgot);
    free(dwant);
    free(idx);
    free(listed);
}

typedef void (*sparse_case_fn)(conf_dev *, hc_type, dbuf *, const void *, int64_t, int64_t,
                               int64_t, list_kind, uint64_t);

static void run_sparse(conf_dev *d, sparse_case_fn fn, const char *op)
{
    for (size_t si = 0; si < sizeof SPARSE_SHAPES / sizeof SPARSE_SHAPES[0]; si++) {
        const sparse_shape *sh = &SPARSE_SHAPES[si];
        for (int ti = 0; ti < N_TYPES; ti++) {
            hc_type t = ALL_TYPES[ti];
            if (!type_fits(t, sh->cols))
                continue;
            uint64_t wbytes;
            void *wq = make_weights(t, sh->rows, sh->cols, 2000 + si, &wbytes);
            dbuf w = {0};
            int rc = dbuf_new(d, &w, wbytes, wq);
            if (rc == 1)
                hc_test_skip("conf %s %s %s %lldx%lld: over the device's max_buffer", d->name,
                             op, type_name(t), (long long)sh->rows, (long long)sh->cols);
            for (int lk = 0; rc == 0 && lk < LIST_COUNT; lk++) {
                if (!sh->full && !list_in_big_run((list_kind)lk))
                    continue;
                for (int64_t n = 1; n <= (sh->full ? 3 : 1); n += 2)
                    fn(d, t, &w, wq, sh->rows, sh->cols, n, (list_kind)lk,
                       31 * si + 7 * (uint64_t)lk + (uint64_t)n);
            }
            if (rc == 0)
                dbuf_input_ok(&w, wq, op, "w");
            dbuf_free(&w);
            free(wq);
        }
    }
}

static void conf_matvec_rows(conf_dev *d)
{
    run_sparse(d, matvec_rows_case, "matvec_rows");
}

static void conf_axpy_rows(conf_dev *d)
{
    run_sparse(d, axpy_rows_case, "axpy_rows");
}

/* ---- matmul_batch (ABI 1.2) ------------------------------------------- */

#define BATCH_MAX 5

static void expect_refused(conf_dev *d, hc_status s, const char *what);

/* One batch case: np products of one x, product i of type ty[i] with rs[i]
 * rows and row list ls[i] (-1: every row, as matmul).  Each output is
 * compared with the reference (listed rows; the others must keep y's
 * random prefill bit for bit) and with the plugin's own matmul /
 * matvec_rows of the same product, which the ABI says it equals bit for
 * bit. */
static void batch_case(conf_dev *d, const hc_type *ty, const int64_t *rs, const int *ls, int np,
                       int64_t cols, int64_t n, uint64_t seed)
{
    char what[200];
    dbuf x = {0}, w[BATCH_MAX] = {{0}}, di[BATCH_MAX] = {{0}}, y[BATCH_MAX] = {{0}},
         y1[BATCH_MAX] = {{0}};
    void *wq[BATCH_MAX] = {0};
    int32_t *idx[BATCH_MAX] = {0};
    int64_t n_idx[BATCH_MAX] = {0};
    float *pre[BATCH_MAX] = {0}, *got[BATCH_MAX] = {0}, *one[BATCH_MAX] = {0};
    hc_matmul_desc desc[BATCH_MAX];
    const size_t nx = (size_t)(n * cols);
    float *hx = xmalloc(nx * sizeof(float));
    conf_rng r = rng_seed(seed);
    int len = snprintf(what, sizeof what, "n=%lld cols %lld:", (long long)n, (long long)cols);

    fill_uniform(&r, hx, nx, 1.0f);
    if (dbuf_new(d, &x, nx * 4, hx) != 0)
        goto out;
    for (int i = 0; i < np; i++) {
        const size_t ny = (size_t)(n * rs[i]);
        uint64_t wbytes;
        wq[i] = make_weights(ty[i], rs[i], cols, seed + 10u * (uint64_t)i, &wbytes);
        idx[i] = xmalloc((size_t)(rs[i] > 0 ? rs[i] : 1) * sizeof(int32_t));
        n_idx[i] = ls[i] < 0 ? 0 : make_list((list_kind)ls[i], rs[i], seed + (uint64_t)i, idx[i]);
        pre[i] = xmalloc(ny * sizeof(float));
        got[i] = xmalloc(ny * sizeof(float));
        one[i] = xmalloc(ny * sizeof(float));
        fill_uniform(&r, pre[i], ny, 100.0f);
        if (dbuf_new(d, &w[i], wbytes, wq[i]) != 0 ||
            dbuf_new(d, &di[i], (uint64_t)n_idx[i] * 4, idx[i]) != 0 ||
            dbuf_new(d, &y[i], ny * 4, pre[i]) != 0 || dbuf_new(d, &y1[i], ny * 4, pre[i]) != 0)
            goto out;
        desc[i] = (hc_matmul_desc){ty[i], dref(&w[i]), rs[i],
                                   ls[i] < 0 ? (hc_ref){NULL, 0} : dref(&di[i]), n_idx[i],
                                   dref(&y[i])};
        len += snprintf(what + len, sizeof what - (size_t)len, " %s %lldx%s", type_name(ty[i]),
                        (long long)rs[i], ls[i] < 0 ? "all" : LIST_NAMES[ls[i]]);
    }
    /* A plugin may refuse a batch holding a product it does not take (the
     * core then runs the products one by one), but not one whose every
     * product op_cost prices: those it must run. */
    double cost = 0.0;
    for (int i = 0; i < np; i++) {
        double c = query_cost(d, ls[i] < 0 ? HC_OP_MATMUL : HC_OP_MATVEC_ROWS, ty[i], rs[i], cols,
                              n);
        cost = c < cost ? c : cost;
    }
    if (!op_accepted(d, d->ops->matmul_batch(d->st, desc, np, cols, dref(&x), n), cost, what))
        goto out;
    for (int i = 0; i < np; i++)
        CONF_CALL(d, ls[i] < 0 ? d->ops->matmul(d->st, ty[i], dref(&w[i]), rs[i], cols, dref(&x),
                                                n, dref(&y1[i]))
                               : d->ops->matvec_rows(d->st, ty[i], dref(&w[i]), rs[i], cols,
                                                     dref(&x), n, dref(&di[i]), n_idx[i],
                                                     dref(&y1[i])));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (!dbuf_input_ok(&x, hx, what, "x"))
        goto out;
    for (int i = 0; i < np; i++) {
        const size_t ny = (size_t)(n * rs[i]);
        char part[240];
        snprintf(part, sizeof part, "%s [product %d]", what, i);
        if (dbuf_get(&y[i], got[i], 0, ny * 4) != 0 || dbuf_get(&y1[i], one[i], 0, ny * 4) != 0 ||
            !dbuf_guards_ok(&y[i], part, "y") || !dbuf_input_ok(&w[i], wq[i], part, "w") ||
            !dbuf_input_ok(&di[i], idx[i], part, "idx"))
            goto out;
        if (memcmp(got[i], one[i], ny * sizeof(float)) != 0) {
            conf_fail(d, "matmul_batch %s differs from the single op's result", part);
            goto out;
        }
        /* Against the reference: listed (or all) rows; the rest unchanged. */
        float *want = xmalloc(ny * sizeof(float));
        memcpy(want, pre[i], ny * sizeof(float));
        if (ls[i] < 0)
            hc_scalar_matmul(ty[i], wq[i], rs[i], cols, hx, n, want);
        else
            hc_scalar_matvec_rows(ty[i], wq[i], rs[i], cols, hx, n, idx[i], n_idx[i], want);
        double *energy = dot_energy(ty[i], wq[i], rs[i], cols, hx, n, ls[i] < 0 ? NULL : idx[i],
                                    ls[i] < 0 ? 0 : n_idx[i]);
        uint8_t *listed = calloc((size_t)(rs[i] > 0 ? rs[i] : 1), 1);
        float *g_got = xmalloc((ny ? ny : 1) * sizeof(float));
        double *g_want = xmalloc((ny ? ny : 1) * sizeof(double));
        double *g_energy = xmalloc((ny ? ny : 1) * sizeof(double));
        ck_assert(listed != NULL);
        for (int64_t k = 0; k < (ls[i] < 0 ? rs[i] : n_idx[i]); k++)
            listed[ls[i] < 0 ? k : idx[i][k]] = 1;
        size_t m = 0;
        int changed = 0;
        for (size_t e = 0; e < ny; e++) {
            if (listed[e % (size_t)rs[i]]) {
                g_got[m] = got[i][e];
                g_want[m] = want[e];
                g_energy[m++] = energy[e];
            } else if (memcmp(&got[i][e], &pre[i][e], sizeof(float)) != 0) {
                changed = 1;
            }
        }
        if (changed)
            conf_fail(d, "matmul_batch %s: an unlisted row changed", part);
        else if (m > 0)
            report(d, "matmul_batch", worst_slot(ty[i]), part,
                   compare_energy(g_got, g_want, g_energy, m), bound_for_type(ty[i]));
        free(want);
        free(energy);
        free(listed);
        free(g_got);
        free(g_want);
        free(g_energy);
    }
out:
    dbuf_free(&x);
    for (int i = 0; i < BATCH_MAX; i++) {
        dbuf_free(&w[i]);
        dbuf_free(&di[i]);
        dbuf_free(&y[i]);
        dbuf_free(&y1[i]);
        free(wq[i]);
        free(idx[i]);
        free(pre[i]);
        free(got[i]);
        free(one[i]);
    }
    free(hx);
}

static void conf_matmul_batch(conf_dev *d)
{
    /* q/k/v-like (one large, two small, every row), gate/up-like (two
     * lists), an empty list and a one-row product among others, a batch
     * longer than a plugin may take in one piece, and types that quantize
     * x differently in one batch. */
    for (int ti = 0; ti < N_TYPES; ti++) {
        const hc_type t = ALL_TYPES[ti];
        const hc_type t3[3] = {t, t, t}, t5[5] = {t, t, t, t, t};
        const int64_t qkv[3] = {256, 64, 64}, gu[2] = {688, 688}, odd[5] = {13, 7, 1, 96, 5};
        const int all3[3] = {-1, -1, -1}, lists2[2] = {LIST_P5, LIST_P5},
                  mix5[5] = {LIST_UNSORTED, -1, LIST_ONE, LIST_EMPTY, LIST_LAST};
        for (int64_t n = 1; n <= 3; n += 2) {
            batch_case(d, t3, qkv, all3, 3, 256, n, 500 + ti + 10 * (uint64_t)n);
            batch_case(d, t3, gu, lists2, 2, 256, n, 600 + ti + 10 * (uint64_t)n);
            if (type_fits(t, 96))
                batch_case(d, t5, odd, mix5, 5, 96, n, 700 + ti + 10 * (uint64_t)n);
        }
    }
    const hc_type mixed[4] = {HC_TYPE_Q4_0, HC_TYPE_Q8_0, HC_TYPE_F16, HC_TYPE_F32};
    const int64_t mrows[4] = {40, 33, 17, 9};
    const int mlists[4] = {-1, LIST_P50, -1, LIST_FIRST};
    batch_case(d, mixed, mrows, mlists, 4, 128, 1, 800);
    batch_case(d, mixed, mrows, mlists, 4, 128, 3, 801);
    /* Q6_K beside the types whose x it quantizes differently (Q4_0 shares
     * the 8-bit blocks but not the layout). */
    const hc_type mixed6[4] = {HC_TYPE_Q6_K, HC_TYPE_Q4_0, HC_TYPE_Q6_K, HC_TYPE_F32};
    const int mlists6[4] = {-1, LIST_P50, LIST_UNSORTED, -1};
    batch_case(d, mixed6, mrows, mlists6, 4, 256, 1, 802);
    batch_case(d, mixed6, mrows, mlists6, 4, 256, 3, 803);

    /* Two products writing the same y: refused. */
    {
        uint64_t wbytes;
        void *wq = make_weights(HC_TYPE_F32, 8, 32, 900, &wbytes);
        float hx[32] = {0};
        dbuf w = {0}, x = {0}, y = {0};
        if (dbuf_new(d, &w, wbytes, wq) == 0 && dbuf_new(d, &x, sizeof hx, hx) == 0 &&
            dbuf_new(d, &y, 8 * 4, NULL) == 0) {
            const hc_matmul_desc two[2] = {
                {HC_TYPE_F32, dref(&w), 8, {NULL, 0}, 0, dref(&y)},
                {HC_TYPE_F32, dref(&w), 8, {NULL, 0}, 0, dref(&y)}};
            expect_refused(d, d->ops->matmul_batch(d->st, two, 2, 32, dref(&x), 1),
                           "matmul_batch: two ys in one place");
        }
        dbuf_free(&w);
        dbuf_free(&x);
        dbuf_free(&y);
        free(wq);
    }
}

/* ---- layer ops ------------------------------------------------------------ */

/* A layer op's output buffer compared with the reference; guards checked. */
static void check_output(conf_dev *d, const char *op, const char *what, dbuf *y, size_t n,
                         const float *want, conf_bound b)
{
    float *got = xmalloc(n * sizeof(float));
    double *wantd = to_double(want, n);
    if (dbuf_get(y, got, 0, n * 4) == 0 && dbuf_guards_ok(y, what, "output"))
        report(d, op, WORST_LAYER, what, compare(got, wantd, n), b);
    free(got);
    free(wantd);
}

static void rmsnorm_case(conf_dev *d, int64_t n, int64_t dim, float eps, float xscale,
                         uint64_t seed)
{
    char what[128];
    dbuf x = {0}, w = {0}, y = {0};
    size_t nx = (size_t)(n * dim);
    float *hx = xmalloc(nx * sizeof(float)), *hw = xmalloc((size_t)dim * sizeof(float));
    float *hy = xmalloc(nx * sizeof(float)), *want = xmalloc(nx * sizeof(float));
    conf_rng r = rng_seed(seed);

    snprintf(what, sizeof what, "n=%lld dim=%lld eps=%g |x|<%g", (long long)n, (long long)dim,
             eps, xscale);
    fill_uniform(&r, hx, nx, xscale);
    for (int64_t i = 0; i < dim; i++)
        hw[i] = 1.0f + 0.5f * rng_unit(&r);
    fill_nan(hy, nx);
    if (dbuf_new(d, &x, nx * 4, hx) != 0 || dbuf_new(d, &w, (uint64_t)dim * 4, hw) != 0 ||
        dbuf_new(d, &y, nx * 4, hy) != 0)
        goto out;
    hc_status s = d->ops->rmsnorm(d->st, dref(&x), dref(&w), dref(&y), n, dim, eps);
    if (!op_accepted(d, s, layer_cost(), what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (!dbuf_input_ok(&x, hx, what, "x") || !dbuf_input_ok(&w, hw, what, "w"))
        goto out;
    hc_scalar_rmsnorm(hx, hw, want, n, dim, eps);
    check_output(d, "rmsnorm", what, &y, nx, want, BOUND_ELEMENTWISE);
out:
    dbuf_free(&x);
    dbuf_free(&w);
    dbuf_free(&y);
    free(hx);
    free(hw);
    free(hy);
    free(want);
}

static void conf_rmsnorm(conf_dev *d)
{
    rmsnorm_case(d, 1, 64, 1e-5f, 1.0f, 1);
    rmsnorm_case(d, 3, 64, 1e-6f, 3.0f, 2);
    rmsnorm_case(d, 1, 7, 1e-5f, 1.0f, 3);
    rmsnorm_case(d, 5, 4096, 1e-5f, 1.0f, 4);
    rmsnorm_case(d, 2, 11008, 1e-6f, 0.1f, 5);
    /* |x| ~ 1e-3: mean square ~ 3e-7 is below eps, so where eps goes shows. */
    rmsnorm_case(d, 2, 64, 1e-5f, 1e-3f, 6);
}

typedef struct rope_shape {
    int64_t n_tok, n_head, head_dim, n_rot;
    int32_t pos0; /* positions pos0, pos0+1, ...; -1: an unsorted list */
    float base, scale;
} rope_shape;

static const rope_shape ROPE_SHAPES[] = {
    {1, 8, 8, 8, 0, 10000.0f, 1.0f},        /* stories260K's heads */
    {1, 8, 64, 64, 7, 10000.0f, 1.0f},
    /* One token again, one parameter changed each time: a plugin that keeps
     * the last call's angles (the CPU plugin does) must notice. */
    {1, 8, 64, 64, 8, 10000.0f, 1.0f},
    {1, 8, 64, 64, 8, 10000.0f, 0.5f},
    {1, 8, 64, 64, 8, 20000.0f, 0.5f},
    {1, 8, 64, 48, 8, 20000.0f, 0.5f},
    {5, 8, 64, 64, 100, 10000.0f, 1.0f},
    {5, 4, 128, 128, 4090, 10000.0f, 1.0f}, /* near 4096: float angle error */
    {3, 8, 64, 32, 13, 10000.0f, 1.0f},     /* n_rot < head_dim */
    {2, 3, 80, 20, 5, 1000000.0f, 0.25f},   /* partial, big base, scaled */
    {3, 4, 64, 64, -1, 500000.0f, 1.0f},    /* positions out of order */
};

static void rope_case(conf_dev *d, const rope_shape *rs, int mode, uint64_t seed)
{
    char what[128];
    dbuf x = {0}, p = {0};
    size_t nx = (size_t)(rs->n_tok * rs->n_head * rs->head_dim);
    float *hx = xmalloc(nx * sizeof(float)), *hy = xmalloc(nx * sizeof(float));
    float *want = xmalloc(nx * sizeof(float));
    int32_t *pos = xmalloc((size_t)rs->n_tok * sizeof(int32_t));
    conf_rng r = rng_seed(seed);

    for (int64_t t = 0; t < rs->n_tok; t++)
        pos[t] = rs->pos0 >= 0 ? rs->pos0 + (int32_t)t : (int32_t)((t * 37 + 11) % 50);
    snprintf(what, sizeof what, "%s tok=%lld %lldx%lld rot=%lld pos=%d.. base=%g scale=%g",
             mode == HC_ROPE_NEOX ? "neox" : "norm", (long long)rs->n_tok,
             (long long)rs->n_head, (long long)rs->head_dim, (long long)rs->n_rot, pos[0],
             rs->base, rs->scale);
    fill_uniform(&r, hx, nx, 1.0f);
    if (dbuf_new(d, &x, nx * 4, hx) != 0 || dbuf_new(d, &p, (uint64_t)rs->n_tok * 4, pos) != 0)
        goto out;
    hc_status s = d->ops->rope(d->st, dref(&x), rs->n_tok, rs->n_head, rs->head_dim, rs->n_rot,
                               dref(&p), rs->base, rs->scale, mode);
    if (!op_accepted(d, s, layer_cost(), what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (!dbuf_input_ok(&p, pos, what, "pos") || dbuf_get(&x, hy, 0, nx * 4) != 0)
        goto out;
    /* Dims past n_rot are not rotated: they must come back bit-identical. */
    for (size_t i = 0; i < nx; i++)
        if ((int64_t)(i % (size_t)rs->head_dim) >= rs->n_rot &&
            memcmp(&hy[i], &hx[i], sizeof(float)) != 0) {
            conf_fail(d, "rope %s: unrotated element %zu changed", what, i);
            goto out;
        }
    memcpy(want, hx, nx * sizeof(float));
    hc_scalar_rope(want, rs->n_tok, rs->n_head, rs->head_dim, rs->n_rot, pos, rs->base, rs->scale,
                   mode);
    check_output(d, "rope", what, &x, nx, want, BOUND_ROPE);
out:
    dbuf_free(&x);
    dbuf_free(&p);
    free(hx);
    free(hy);
    free(want);
    free(pos);
}

static void conf_rope(conf_dev *d)
{
    for (size_t i = 0; i < sizeof ROPE_SHAPES / sizeof ROPE_SHAPES[0]; i++) {
        rope_case(d, &ROPE_SHAPES[i], HC_ROPE_NORM, 10 + i);
        rope_case(d, &ROPE_SHAPES[i], HC_ROPE_NEOX, 40 + i);
    }
}

typedef struct attn_shape {
    int64_t n_tok, n_head, n_head_kv, head_dim;
    int32_t pos0; /* token t is at pos0 + t */
} attn_shape;

static const attn_shape ATTN_SHAPES[] = {
    {1, 8, 4, 64, 0},  {1, 8, 4, 64, 1},   {1, 8, 4, 64, 16},  {1, 8, 4, 64, 63},
    {1, 8, 4, 64, 199}, {5, 8, 4, 64, 0},  {5, 8, 4, 64, 37},  {5, 8, 4, 64, 195},
    {1, 8, 4, 8, 20},  {5, 8, 8, 16, 30},  {1, 32, 8, 128, 100}, {5, 4, 1, 64, 3},
    {2, 8, 2, 64, 2046}, /* a long context: positions 0..2047 */
};

static void attention_case(conf_dev *d, const attn_shape *as, uint64_t seed)
{
    char what[128];
    dbuf q = {0}, k = {0}, v = {0}, o = {0}, p = {0};
    int64_t q_width = as->n_head * as->head_dim, kv_width = as->n_head_kv * as->head_dim;
    int64_t n_ctx = as->pos0 + as->n_tok; /* positions the tokens may see */
    int64_t n_kv = n_ctx + 3;            /* plus rows past the end, all nan */
    size_t nq = (size_t)(as->n_tok * q_width), nkv = (size_t)(n_kv * kv_width);
    float *hq = xmalloc(nq * sizeof(float)), *ho = xmalloc(nq * sizeof(float));
    float *want = xmalloc(nq * sizeof(float));
    float *hk = xmalloc(nkv * sizeof(float)), *hv = xmalloc(nkv * sizeof(float));
    int32_t *pos = xmalloc((size_t)as->n_tok * sizeof(int32_t));
    float scale = 1.0f / sqrtf((float)as->head_dim);
    conf_rng r = rng_seed(seed);

    for (int64_t t = 0; t < as->n_tok; t++)
        pos[t] = as->pos0 + (int32_t)t;
    snprintf(what, sizeof what, "tok=%lld heads=%lld/%lld hd=%lld pos=%d..%d",
             (long long)as->n_tok, (long long)as->n_head, (long long)as->n_head_kv,
             (long long)as->head_dim, pos[0], pos[as->n_tok - 1]);
    fill_uniform(&r, hq, nq, 3.0f); /* peaky enough softmaxes */
    fill_uniform(&r, hk, nkv, 1.0f);
    fill_uniform(&r, hv, nkv, 1.0f);
    fill_nan(hk + n_ctx * kv_width, (size_t)(3 * kv_width));
    fill_nan(hv + n_ctx * kv_width, (size_t)(3 * kv_width));
    fill_nan(ho, nq);
    if (dbuf_new(d, &q, nq * 4, hq) != 0 || dbuf_new(d, &k, nkv * 4, hk) != 0 ||
        dbuf_new(d, &v, nkv * 4, hv) != 0 || dbuf_new(d, &o, nq * 4, ho) != 0 ||
        dbuf_new(d, &p, (uint64_t)as->n_tok * 4, pos) != 0)
        goto out;
    hc_status s = d->ops->attention(d->st, dref(&q), dref(&k), dref(&v), dref(&o), as->n_tok,
                                    dref(&p), as->n_head, as->n_head_kv, as->head_dim, scale);
    if (!op_accepted(d, s, layer_cost(), what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (!dbuf_input_ok(&q, hq, what, "q") || !dbuf_input_ok(&k, hk, what, "k") ||
        !dbuf_input_ok(&v, hv, what, "v") || !dbuf_input_ok(&p, pos, what, "pos"))
        goto out;
    hc_scalar_attention(hq, hk, hv, want, as->n_tok, pos, as->n_head, as->n_head_kv, as->head_dim,
                        scale);
    check_output(d, "attention", what, &o, nq, want, BOUND_ATTENTION);
out:
    dbuf_free(&q);
    dbuf_free(&k);
    dbuf_free(&v);
    dbuf_free(&o);
    dbuf_free(&p);
    free(hq);
    free(ho);
    free(want);
    free(hk);
    free(hv);
    free(pos);
}

static void conf_attention(conf_dev *d)
{
    for (size_t i = 0; i < sizeof ATTN_SHAPES / sizeof ATTN_SHAPES[0]; i++)
        attention_case(d, &ATTN_SHAPES[i], 100 + i);
}

/* Element-wise ops: kind 0 unary, 1 binary, 2 glu.  In place: the output
 * is the first input (the core adds into x and gates into g that way). */
static void elementwise_case(conf_dev *d, int kind, int op, int64_t n, float param, int inplace,
                             uint64_t seed)
{
    static const char *const UNARY[] = {"relu_shift", "silu", "scale"};
    static const char *const BINARY[] = {"add", "mul"};
    static const char *const GLU[] = {"silu", "relu", "relu_both"};
    char what[128];
    dbuf a = {0}, b = {0}, y = {0};
    float *ha = xmalloc((size_t)n * sizeof(float)), *hb = xmalloc((size_t)n * sizeof(float));
    float *hy = xmalloc((size_t)n * sizeof(float)), *want = xmalloc((size_t)n * sizeof(float));
    conf_rng r = rng_seed(seed);
    const char *opname = kind == 0 ? "unary" : kind == 1 ? "binary" : "glu";
    hc_status s;

    dbuf *out = inplace ? &a : &y;
    snprintf(what, sizeof what, "%s n=%lld p=%g%s",
             kind == 0 ? UNARY[op] : kind == 1 ? BINARY[op] : GLU[op], (long long)n, param,
             inplace ? " in place" : "");
    fill_uniform(&r, ha, (size_t)n, 6.0f); /* silu's curve, relu's kink */
    fill_uniform(&r, hb, (size_t)n, 2.0f);
    fill_nan(hy, (size_t)n);
    if (dbuf_new(d, &a, (uint64_t)n * 4, ha) != 0 || dbuf_new(d, &b, (uint64_t)n * 4, hb) != 0 ||
        (!inplace && dbuf_new(d, &y, (uint64_t)n * 4, hy) != 0))
        goto out;
    if (kind == 0)
        s = d->ops->unary(d->st, op, dref(&a), dref(out), n, param);
    else if (kind == 1)
        s = d->ops->binary(d->st, op, dref(&a), dref(&b), dref(out), n);
    else
        s = d->ops->glu(d->st, op, dref(&a), dref(&b), dref(out), n, param);
    if (!op_accepted(d, s, layer_cost(), what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if ((!inplace && !dbuf_input_ok(&a, ha, what, "a")) || !dbuf_input_ok(&b, hb, what, "b"))
        goto out;
    if (kind == 0)
        hc_scalar_unary(op, ha, want, n, param);
    else if (kind == 1)
        hc_scalar_binary(op, ha, hb, want, n);
    else
        hc_scalar_glu(op, ha, hb, want, n, param);
    check_output(d, opname, what, out, (size_t)n, want, BOUND_ELEMENTWISE);
out:
    dbuf_free(&a);
    dbuf_free(&b);
    dbuf_free(&y);
    free(ha);
    free(hb);
    free(hy);
    free(want);
}

static const int64_t ELEMENTWISE_NS[] = {1, 7, 4096, 11008};

/* Five passes (the last repeats n = 4096 in place); each op's seeds are
 * fixed per pass, whichever other element-wise ops a plugin has. */
static void conf_unary(conf_dev *d)
{
    for (size_t ni = 0; ni < 5; ni++) {
        int64_t n = ni < 4 ? ELEMENTWISE_NS[ni] : 4096;
        int inplace = ni == 4;
        uint64_t seed = 500 + 11 * ni;
        elementwise_case(d, 0, HC_UNARY_RELU_SHIFT, n, 0.0f, inplace, seed);
        elementwise_case(d, 0, HC_UNARY_RELU_SHIFT, n, 0.37f, inplace, seed + 1);
        elementwise_case(d, 0, HC_UNARY_SILU, n, 0.0f, inplace, seed + 2);
        elementwise_case(d, 0, HC_UNARY_SCALE, n, -1.75f, inplace, seed + 3);
    }
}

static void conf_binary(conf_dev *d)
{
    for (size_t ni = 0; ni < 5; ni++) {
        int64_t n = ni < 4 ? ELEMENTWISE_NS[ni] : 4096;
        int inplace = ni == 4;
        uint64_t seed = 500 + 11 * ni + 4;
        elementwise_case(d, 1, HC_BINARY_ADD, n, 0.0f, inplace, seed);
        elementwise_case(d, 1, HC_BINARY_MUL, n, 0.0f, inplace, seed + 1);
    }
}

static void conf_glu(conf_dev *d)
{
    for (size_t ni = 0; ni < 5; ni++) {
        int64_t n = ni < 4 ? ELEMENTWISE_NS[ni] : 4096;
        int inplace = ni == 4;
        uint64_t seed = 500 + 11 * ni + 6;
        elementwise_case(d, 2, HC_GLU_SILU, n, 0.0f, inplace, seed);
        elementwise_case(d, 2, HC_GLU_RELU, n, 0.0f, inplace, seed + 1);
        elementwise_case(d, 2, HC_GLU_RELU, n, 0.25f, inplace, seed + 2);
        elementwise_case(d, 2, HC_GLU_RELU_BOTH, n, 0.0f, inplace, seed + 3);
        elementwise_case(d, 2, HC_GLU_RELU_BOTH, n, -0.3f, inplace, seed + 4);
    }
}

/* ---- stream_flush (ABI 1.1) ------------------------------------------------ */

/* Work submitted early by stream_flush, then more work that depends on it
 * (an upload, a matmul on it, an in-place scale, a download), with a flush
 * after each step and an empty one: the result must be what the same ops
 * give without flushes, and sync must wait for all of it. */
static void conf_stream_flush(conf_dev *d)
{
    const int64_t rows = 96, cols = 64, n = 2;
    dbuf w = {0}, x = {0}, y = {0};
    float hx[2 * 64], hy[2 * 96], want[2 * 96];
    double wantd[2 * 96];
    uint64_t wbytes;
    void *wq = make_weights(HC_TYPE_F32, rows, cols, 21, &wbytes);
    conf_rng r = rng_seed(22);
    int scaled = HC_OPS_HAS(d->ops, unary);
    fill_uniform(&r, hx, sizeof hx / sizeof hx[0], 1.0f);
    fill_nan(hy, sizeof hy / sizeof hy[0]);
    if (dbuf_new(d, &w, wbytes, wq) != 0 || dbuf_new(d, &x, sizeof hx, NULL) != 0 ||
        dbuf_new(d, &y, sizeof hy, hy) != 0)
        goto out;
    CONF_CALL(d, d->ops->stream_flush(d->st)); /* nothing recorded */
    CONF_CALL(d, d->ops->upload(d->st, dref(&x), hx, sizeof hx));
    CONF_CALL(d, d->ops->stream_flush(d->st));
    CONF_CALL(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&x), n, dref(&y)));
    CONF_CALL(d, d->ops->stream_flush(d->st));
    if (scaled)
        CONF_CALL(d, d->ops->unary(d->st, HC_UNARY_SCALE, dref(&y), dref(&y), n * rows, -0.5f));
    CONF_CALL(d, d->ops->stream_flush(d->st));
    CONF_CALL(d, d->ops->stream_flush(d->st));
    CONF_CALL(d, d->ops->download(d->st, hy, dref(&y), sizeof hy));
    CONF_CALL(d, d->ops->stream_flush(d->st));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    hc_scalar_matmul(HC_TYPE_F32, wq, rows, cols, hx, n, want);
    if (scaled)
        hc_scalar_unary(HC_UNARY_SCALE, want, want, n * rows, -0.5f);
    for (int i = 0; i < 2 * 96; i++)
        wantd[i] = want[i];
    report(d, "flush", worst_slot(HC_TYPE_F32),
           scaled ? "F32 96x64 n=2, then scale, flushed between" : "F32 96x64 n=2, flushed",
           compare(hy, wantd, 2 * 96), bound_for_type(HC_TYPE_F32));
    dbuf_input_ok(&x, hx, "stream_flush", "x");
    dbuf_guards_ok(&y, "stream_flush", "y");
out:
    dbuf_free(&w);
    dbuf_free(&x);
    dbuf_free(&y);
    free(wq);
}

/* ---- transfers, copy, host pointers --------------------------------------- */

enum { XFER_N = 1000 };

/* Random bytes, one buffer holding them (0, or -1 recorded). */
static int xfer_setup(conf_dev *d, uint8_t *src, dbuf *a)
{
    conf_rng r = rng_seed(9);
    for (int i = 0; i < XFER_N; i++)
        src[i] = (uint8_t)rng_next(&r);
    return dbuf_new(d, a, XFER_N, NULL) != 0 || dbuf_put(a, 0, src, XFER_N) != 0 ? -1 : 0;
}

/* upload at unaligned offsets and lengths, read back whole. */
static void conf_upload(conf_dev *d)
{
    uint8_t src[XFER_N], got[XFER_N];
    dbuf a = {0};
    if (xfer_setup(d, src, &a) != 0 || dbuf_put(&a, 3, src + 500, 7) != 0 ||
        dbuf_get(&a, got, 0, XFER_N) != 0)
        goto out;
    if (memcmp(got, src, 3) != 0 || memcmp(got + 3, src + 500, 7) != 0 ||
        memcmp(got + 10, src + 10, XFER_N - 10) != 0)
        conf_fail(d, "upload/download round trip differs");
    dbuf_guards_ok(&a, "upload", "a");
    printf("conf %-28s upload: ok\n", d->name);
out:
    dbuf_free(&a);
}

/* download at an odd offset and length. */
static void conf_download(conf_dev *d)
{
    uint8_t src[XFER_N], got[XFER_N];
    dbuf a = {0};
    if (xfer_setup(d, src, &a) != 0 || dbuf_get(&a, got, 5, 11) != 0)
        goto out;
    if (memcmp(got, src + 5, 11) != 0)
        conf_fail(d, "download at an odd offset differs");
    dbuf_guards_ok(&a, "download", "a");
    printf("conf %-28s download: ok\n", d->name);
out:
    dbuf_free(&a);
}

static void conf_copy(conf_dev *d)
{
    uint8_t src[XFER_N], got[XFER_N], want[XFER_N];
    dbuf a = {0}, b = {0};
    if (xfer_setup(d, src, &a) != 0 || dbuf_new(d, &b, XFER_N, NULL) != 0)
        goto out;
    for (int i = 0; i < XFER_N; i++)
        want[i] = (uint8_t)(src[i] ^ 0x5a);
    if (dbuf_put(&b, 0, want, XFER_N) != 0)
        goto out;
    CONF_CALL(d, d->ops->copy(d->st, (hc_ref){b.buf, GUARD + 1}, (hc_ref){a.buf, GUARD + 100},
                              333));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&b, got, 0, XFER_N) != 0)
        goto out;
    memcpy(want + 1, src + 100, 333);
    if (memcmp(got, want, XFER_N) != 0)
        conf_fail(d, "copy moved the wrong bytes");
    dbuf_guards_ok(&b, "copy", "dst");
    dbuf_input_ok(&a, src, "copy", "src");
    printf("conf %-28s copy: ok\n", d->name);
out:
    dbuf_free(&a);
    dbuf_free(&b);
}

static void conf_buffer_host_ptr(conf_dev *d)
{
    uint8_t src[XFER_N];
    dbuf a = {0};
    if (xfer_setup(d, src, &a) != 0)
        goto out;
    uint8_t *hp = d->ops->buffer_host_ptr(a.buf);
    if (!hp && (d->info.caps & HC_CAP_HOST_MAPPED))
        conf_fail(d, "HC_CAP_HOST_MAPPED but buffer_host_ptr returned NULL");
    if (hp && memcmp(hp + GUARD, src, XFER_N) != 0)
        conf_fail(d, "buffer_host_ptr does not show the buffer's bytes");
    printf("conf %-28s buffer_host_ptr: %s\n", d->name, hp ? "ok" : "NULL (not host-visible)");
out:
    dbuf_free(&a);
}

/* buffer_wrap_host: weights in host memory used in place by a matmul. */
static void conf_buffer_wrap_host(conf_dev *d)
{
    const int64_t rows = 40, cols = 256;
    hc_buffer *wb = NULL;
    dbuf x = {0}, y = {0};
    uint8_t *host = NULL;
    uint64_t wbytes;
    void *wq = make_weights(HC_TYPE_Q8_0, rows, cols, 77, &wbytes);
    size_t alloc = (size_t)((wbytes + 4095) / 4096 * 4096);
    host = aligned_alloc(4096, alloc);
    ck_assert(host != NULL);
    memset(host, 0, alloc);
    memcpy(host, wq, (size_t)wbytes);
    float hx[256], hy[40], want[40];
    double wantd[40];
    conf_rng r = rng_seed(3);
    fill_uniform(&r, hx, 256, 1.0f);
    hc_status s = d->ops->buffer_wrap_host(d->dev, host, alloc, &wb);
    if (s == HC_E_UNSUPPORTED && !(d->info.caps & HC_CAP_WRAP_HOST)) {
        hc_test_skip("conf %s buffer_wrap_host: unsupported on this device", d->name);
        goto out;
    }
    if (s != HC_OK) {
        conf_fail(d, "buffer_wrap_host: status %d (%s)", (int)s, plugin_error(d));
        goto out;
    }
    if (dbuf_new(d, &x, sizeof hx, hx) != 0 || dbuf_new(d, &y, sizeof hy, NULL) != 0)
        goto out;
    CONF_CALL(d, d->ops->matmul(d->st, HC_TYPE_Q8_0, (hc_ref){wb, 0}, rows, cols, dref(&x), 1,
                                dref(&y)));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&y, hy, 0, sizeof hy) != 0)
        goto out;
    hc_scalar_matmul(HC_TYPE_Q8_0, wq, rows, cols, hx, 1, want);
    for (int i = 0; i < 40; i++)
        wantd[i] = want[i];
    report(d, "matmul", worst_slot(HC_TYPE_Q8_0), "Q8_0 40x256 n=1 wrapped host weights",
           compare(hy, wantd, 40), bound_for_type(HC_TYPE_Q8_0));
    dbuf_guards_ok(&y, "wrap_host", "y");
out:
    if (wb)
        d->ops->buffer_free(wb);
    dbuf_free(&x);
    dbuf_free(&y);
    free(host);
    free(wq);
}

/* ---- lifecycle, devices, buffers and streams -------------------------------- */

static void conf_probe(conf_dev *d)
{
    int a = d->ops->probe(), b = d->ops->probe();
    if (a <= 0 || a != b)
        conf_fail(d, "probe answered %d, then %d: a loaded plugin's probe is positive and stable",
                  a, b);
    printf("conf %-28s probe: %d\n", d->name, a);
}

static char g_host_log[256];

static void host_log(void *user, int level, const char *msg)
{
    snprintf(g_host_log, sizeof g_host_log, "%s|%d|%s", (const char *)user, level, msg);
}

/* A second context beside the one under test: it must come up with the
 * same devices, say nothing in last_error, and shut down. */
static void conf_init(conf_dev *d)
{
    hc_plugin_host host = {sizeof host, HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR, host_log,
                           (void *)"conformance", HC_TEST_THREADS};
    hc_plugin_ctx *ctx = NULL;
    hc_status st = d->ops->init(&host, &ctx);
    if (st != HC_OK || !ctx) {
        conf_fail(d, "a second init: status %d, ctx %p (%s)", (int)st, (void *)ctx,
                  d->ops->last_error(ctx));
        return;
    }
    int n1 = d->ops->device_count(d->plugin->ctx), n2 = d->ops->device_count(ctx);
    if (n1 != n2)
        conf_fail(d, "a second context lists %d devices, the first %d", n2, n1);
    const char *e = d->ops->last_error(ctx);
    if (!e)
        conf_fail(d, "last_error of a fresh context is NULL");
    d->ops->shutdown(ctx);
    printf("conf %-28s init: a second context with %d device(s)\n", d->name, n2);
}

/* Contexts started and shut down in turn: nothing kept that the next
 * one trips on (ASan sees what a shutdown leaks). */
static void conf_shutdown(conf_dev *d)
{
    hc_plugin_host host = {sizeof host, HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR, NULL, NULL,
                           1};
    for (int round = 0; round < 2; round++) {
        hc_plugin_ctx *ctx = NULL;
        hc_status st = d->ops->init(&host, &ctx);
        if (st != HC_OK) {
            conf_fail(d, "init, round %d: status %d (%s)", round, (int)st,
                      d->ops->last_error(ctx));
            return;
        }
        d->ops->shutdown(ctx);
    }
    printf("conf %-28s shutdown: two init/shutdown rounds\n", d->name);
}

/* A refused call leaves its reason in last_error; last_error(NULL) (the
 * loader asks it after a failed init) is a string too. */
static void conf_last_error(conf_dev *d)
{
    dbuf x = {0};
    float hx[64] = {0};
    if (dbuf_new(d, &x, sizeof hx, hx) != 0)
        return;
    hc_status st = d->ops->matmul(d->st, HC_TYPE_F32, dref(&x), 1, 64, dref(&x), 1,
                                  (hc_ref){NULL, 0});
    const char *e = d->ops->last_error(d->plugin->ctx);
    if (st == HC_OK)
        conf_fail(d, "matmul with a NULL y buffer was accepted");
    else if (!e || !*e)
        conf_fail(d, "a refused call left last_error %s", e ? "empty" : "NULL");
    if (!d->ops->last_error(NULL))
        conf_fail(d, "last_error(NULL) is NULL");
    printf("conf %-28s last_error: \"%s\"\n", d->name, e ? e : "(null)");
    dbuf_free(&x);
}

static void conf_device_count(conf_dev *d)
{
    int n = d->ops->device_count(d->plugin->ctx);
    if (n < 1 || n != d->ops->device_count(d->plugin->ctx))
        conf_fail(d, "device_count answered %d (a device is open), or changed", n);
}

/* What a device reports, and a caller that knows a shorter struct. */
static void conf_device_info(conf_dev *d)
{
    const hc_device_info *in = &d->info;
    int index = d->index;
    if (in->name[0] == 0)
        conf_fail(d, "empty device name");
    if (in->max_buffer == 0)
        conf_fail(d, "max_buffer is 0");
    if (in->kind < HC_DEVICE_CPU || in->kind > HC_DEVICE_SOFT)
        conf_fail(d, "kind %d is not an hc_device_kind", in->kind);
    if ((in->caps & HC_CAP_HOST_MAPPED) && !HC_OPS_HAS(d->ops, buffer_host_ptr))
        conf_fail(d, "HC_CAP_HOST_MAPPED without buffer_host_ptr");
    if ((in->caps & HC_CAP_WRAP_HOST) && !HC_OPS_HAS(d->ops, buffer_wrap_host))
        conf_fail(d, "HC_CAP_WRAP_HOST without buffer_wrap_host");
    _Alignas(hc_device_info) unsigned char raw[sizeof(hc_device_info) + 16];
    memset(raw, 0xab, sizeof raw);
    size_t small = offsetof(hc_device_info, caps);
    memcpy(raw, &small, sizeof small);
    hc_status st = d->ops->device_info(d->plugin->ctx, index, (hc_device_info *)raw);
    if (st != HC_OK)
        conf_fail(d, "device_info for a struct of %zu bytes: status %d (%s)", small, (int)st,
                  plugin_error(d));
    for (size_t i = small; st == HC_OK && i < sizeof raw; i++)
        if (raw[i] != 0xab) {
            conf_fail(d, "device_info for a struct of %zu bytes wrote byte %zu", small, i);
            break;
        }
    hc_device_info none = {.size = sizeof none};
    if (d->ops->device_info(d->plugin->ctx, d->ops->device_count(d->plugin->ctx), &none) ==
        HC_OK)
        conf_fail(d, "device_info of the index past the last device was accepted");
}

/* The same device opened a second time works on its own stream; an index
 * past the last is refused. */
static void conf_device_open(conf_dev *d)
{
    hc_device *dev = NULL;
    hc_stream *st = NULL;
    uint8_t in[64], out[64];
    hc_buffer *b = NULL;
    for (int i = 0; i < 64; i++)
        in[i] = (uint8_t)(i * 7);
    CONF_CALL(d, d->ops->device_open(d->plugin->ctx, d->index, &dev));
    CONF_CALL(d, d->ops->stream_create(dev, &st));
    CONF_CALL(d, d->ops->buffer_alloc(dev, sizeof in, &b));
    CONF_CALL(d, d->ops->upload(st, (hc_ref){b, 0}, in, sizeof in));
    CONF_CALL(d, d->ops->download(st, out, (hc_ref){b, 0}, sizeof out));
    CONF_CALL(d, d->ops->stream_sync(st));
    if (memcmp(in, out, sizeof in) != 0)
        conf_fail(d, "a second opening of the device moved the wrong bytes");
    hc_device *bad = NULL;
    if (d->ops->device_open(d->plugin->ctx, d->ops->device_count(d->plugin->ctx), &bad) ==
        HC_OK) {
        conf_fail(d, "device_open of the index past the last device was accepted");
        d->ops->device_close(bad);
    }
out:
    if (b)
        d->ops->buffer_free(b);
    if (st)
        d->ops->stream_destroy(st);
    if (dev)
        d->ops->device_close(dev);
}

static void conf_device_close(conf_dev *d)
{
    for (int round = 0; round < 2; round++) {
        hc_device *dev = NULL;
        CONF_CALL(d, d->ops->device_open(d->plugin->ctx, d->index, &dev));
        d->ops->device_close(dev);
    }
    printf("conf %-28s device_close: two open/close rounds\n", d->name);
out:
    return;
}

/* Buffers of odd sizes, each holding what was put in it. */
static void conf_buffer_alloc(conf_dev *d)
{
    static const uint64_t sizes[] = {1, 3, 4096, 65537};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        dbuf b = {0};
        uint8_t *data = xmalloc((size_t)sizes[i]), *got = xmalloc((size_t)sizes[i]);
        for (uint64_t k = 0; k < sizes[i]; k++)
            data[k] = (uint8_t)(k * 13 + i);
        if (dbuf_new(d, &b, sizes[i], data) == 0 && dbuf_get(&b, got, 0, sizes[i]) == 0 &&
            memcmp(data, got, (size_t)sizes[i]) != 0)
            conf_fail(d, "a buffer of %llu bytes does not keep its bytes",
                      (unsigned long long)sizes[i]);
        dbuf_free(&b);
        free(data);
        free(got);
    }
}

/* Freed in another order than allocated, with ops between. */
static void conf_buffer_free(conf_dev *d)
{
    dbuf b[4] = {{0}};
    uint8_t v[16] = {1, 2, 3};
    for (int i = 0; i < 4; i++)
        if (dbuf_new(d, &b[i], sizeof v, v) != 0)
            goto out;
    dbuf_free(&b[1]);
    dbuf_input_ok(&b[2], v, "buffer_free", "a buffer beside a freed one");
    dbuf_free(&b[3]);
    dbuf_input_ok(&b[0], v, "buffer_free", "the first buffer");
out:
    for (int i = 0; i < 4; i++)
        dbuf_free(&b[i]);
}

/* Two streams of one device, each in order. */
static void conf_stream_create(conf_dev *d)
{
    hc_stream *s2 = NULL;
    dbuf a = {0};
    uint8_t in[256], got[256];
    for (int i = 0; i < 256; i++)
        in[i] = (uint8_t)(255 - i);
    if (dbuf_new(d, &a, sizeof in, NULL) != 0)
        return;
    CONF_CALL(d, d->ops->stream_create(d->dev, &s2));
    CONF_CALL(d, d->ops->upload(s2, dref(&a), in, sizeof in));
    CONF_CALL(d, d->ops->download(s2, got, dref(&a), sizeof got));
    CONF_CALL(d, d->ops->stream_sync(s2));
    if (memcmp(in, got, sizeof in) != 0)
        conf_fail(d, "a second stream's upload then download differ");
out:
    if (s2)
        d->ops->stream_destroy(s2);
    dbuf_free(&a);
}

/* A stream destroyed with work done on it; the device's other stream
 * goes on. */
static void conf_stream_destroy(conf_dev *d)
{
    uint8_t v[32] = {9, 8, 7};
    dbuf a = {0};
    for (int round = 0; round < 2; round++) {
        hc_stream *s2 = NULL;
        CONF_CALL(d, d->ops->stream_create(d->dev, &s2));
        d->ops->stream_destroy(s2);
    }
    if (dbuf_new(d, &a, sizeof v, v) == 0)
        dbuf_input_ok(&a, v, "stream_destroy", "a buffer on the remaining stream");
out:
    dbuf_free(&a);
}

/* sync with nothing queued, twice; then after an upload, the data is
 * there. */
static void conf_stream_sync(conf_dev *d)
{
    uint8_t v[8] = {4, 5, 6}, got[8];
    dbuf a = {0};
    CONF_CALL(d, d->ops->stream_sync(d->st));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_new(d, &a, sizeof v, NULL) != 0)
        goto out;
    CONF_CALL(d, d->ops->upload(d->st, dref(&a), v, sizeof v));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&a, got, 0, sizeof got) == 0 && memcmp(v, got, sizeof v) != 0)
        conf_fail(d, "after sync the uploaded bytes are not there");
out:
    dbuf_free(&a);
}

/* op_cost answers a number for every op id (plugin.h), and a negative
 * one for a weight type the ops refuse.  That an op priced >= 0 accepts
 * the call is checked by every op case (query_cost). */
static void conf_op_cost(conf_dev *d)
{
    for (int op = HC_OP_MATMUL; op <= HC_OP_SCATTER_ROWS; op++) {
        double c = d->ops->op_cost(d->dev, op, HC_TYPE_F32, 64, 64, 1);
        if (isnan(c))
            conf_fail(d, "op_cost(op %d, F32, 64x64, n 1) is nan", op);
    }
    for (int op = HC_OP_MATMUL; op <= HC_OP_AXPY_ROWS; op++) {
        double c = d->ops->op_cost(d->dev, op, (hc_type)7, 64, 64, 1);
        if (!(c < 0))
            conf_fail(d, "op_cost(op %d) prices weight type 7, which no op takes, at %g", op, c);
    }
    printf("conf %-28s op_cost: matmul 4096x4096 q4_0 n=1 %.3g s\n", d->name,
           d->ops->op_cost(d->dev, HC_OP_MATMUL, HC_TYPE_Q4_0, 4096, 4096, 1));
}

/* One thread, then back; device_info follows for a CPU device. */
static void conf_set_threads(conf_dev *d)
{
    hc_device_info info = {.size = sizeof info};
    CONF_CALL(d, d->ops->set_threads(d->plugin->ctx, 1));
    CONF_CALL(d, d->ops->device_info(d->plugin->ctx, d->index, &info));
    if (d->info.n_threads > 0 && info.n_threads != 1)
        conf_fail(d, "after set_threads(1) device_info says %d threads", info.n_threads);
out:
    d->ops->set_threads(d->plugin->ctx, HC_TEST_THREADS);
}

static void conf_no_device_reason(conf_dev *d)
{
    const char *why = d->ops->no_device_reason(d->plugin->ctx);
    if (!why)
        conf_fail(d, "no_device_reason returned NULL");
    printf("conf %-28s no_device_reason: \"%s\" (it has devices)\n", d->name, why ? why : "");
}

/* ---- bad arguments -------------------------------------------------------- */

/* A call that must be refused: any status but HC_OK (and no crash). */
static void expect_refused(conf_dev *d, hc_status s, const char *what)
{
    if (s == HC_OK) {
        d->ops->stream_sync(d->st);
        conf_fail(d, "%s was accepted; it must return an error", what);
    } else {
        printf("conf %-28s refused %-44s status %d (%s)\n", d->name, what, (int)s,
               plugin_error(d));
    }
}

START_TEST(test_bad_refs)
{
    conf_dev *d = &g_dev[_i];
    const int64_t rows = 8, cols = 64;
    dbuf w = {0}, x = {0}, y = {0}, di = {0};
    float hx[64], hy[8], want[8];
    double wantd[8];
    int32_t idx[2] = {1, 5};
    uint8_t junk[64] = {0};
    uint64_t wbytes;
    void *wq = make_weights(HC_TYPE_F32, rows, cols, 5, &wbytes);
    conf_rng r = rng_seed(4);
    g_fail = 0;
    fill_uniform(&r, hx, 64, 1.0f);
    if (dbuf_new(d, &w, wbytes, wq) != 0 || dbuf_new(d, &x, sizeof hx, hx) != 0 ||
        dbuf_new(d, &y, sizeof hy, NULL) != 0 || dbuf_new(d, &di, sizeof idx, idx) != 0)
        goto out;
    /* Refs that leave their allocation (data + both guards): the guards are
     * part of the buffer, so only running past the whole allocation is an
     * error the plugin can see. */
    hc_ref past = {y.buf, y.bytes + 2 * GUARD + 4096};
    hc_ref tail = {y.buf, y.bytes + 2 * GUARD - 8};   /* 8 bytes left */
    hc_ref w_short = {w.buf, 2 * GUARD + 4};         /* w's last 4 bytes outside */
    hc_ref x_short = {x.buf, 2 * GUARD + 4};         /* x's last 4 bytes outside */
    hc_ref idx_tail = {di.buf, di.bytes + 2 * GUARD - 4}; /* room for 1 entry */

    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&x), 1, past),
                   "matmul, y offset past the end");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&x), 1, tail),
                   "matmul, y running past the end");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_F32, w_short, rows, cols, dref(&x), 1,
                                     dref(&y)),
                   "matmul, w running past the end");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), rows, cols, x_short, 1,
                                     dref(&y)),
                   "matmul, x running past the end");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&x), 4,
                                     dref(&y)),
                   "matmul, n=4 runs x past the end");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&x), 1,
                                     (hc_ref){NULL, 0}),
                   "matmul, NULL y buffer");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), -1, cols, dref(&x), 1,
                                     dref(&y)),
                   "matmul, rows = -1");
    expect_refused(d, d->ops->matmul(d->st, (hc_type)7, dref(&w), rows, cols, dref(&x), 1,
                                     dref(&y)),
                   "matmul, unknown type 7");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_Q8_0, dref(&w), rows, 48, dref(&x), 1,
                                     dref(&y)),
                   "matmul, Q8_0 with cols 48");
    expect_refused(d, d->ops->matmul(d->st, HC_TYPE_Q6_K, dref(&w), 1, 64, dref(&x), 1,
                                     dref(&y)),
                   "matmul, Q6_K with cols 64");
    expect_refused(d, d->ops->matvec_rows(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&x), 1,
                                          idx_tail, 2, dref(&y)),
                   "matvec_rows, idx running past the end");
    expect_refused(d, d->ops->axpy_rows(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&y), 1,
                                        dref(&di), 2, past),
                   "axpy_rows, y offset past the end");
    expect_refused(d, d->ops->upload(d->st, past, junk, 4), "upload past the end");
    expect_refused(d, d->ops->upload(d->st, tail, junk, 64), "upload running past the end");
    expect_refused(d, d->ops->download(d->st, junk, tail, 64), "download running past the end");
    if (HC_OPS_HAS(d->ops, copy))
        expect_refused(d, d->ops->copy(d->st, dref(&y), tail, 64), "copy, source past the end");
    if (HC_OPS_HAS(d->ops, unary))
        expect_refused(d, d->ops->unary(d->st, 77, dref(&x), dref(&x), 8, 0.0f),
                       "unary, unknown op 77");
    if (HC_OPS_HAS(d->ops, binary))
        expect_refused(d, d->ops->binary(d->st, 77, dref(&x), dref(&x), dref(&x), 8),
                       "binary, unknown op 77");
    if (HC_OPS_HAS(d->ops, glu))
        expect_refused(d, d->ops->glu(d->st, 77, dref(&x), dref(&x), dref(&x), 8, 0.0f),
                       "glu, unknown act 77");
    if (HC_OPS_HAS(d->ops, rmsnorm))
        expect_refused(d, d->ops->rmsnorm(d->st, dref(&x), idx_tail, dref(&x), 1, 64, 1e-5f),
                       "rmsnorm, w running past the end");
    if (HC_OPS_HAS(d->ops, rope))
        expect_refused(d, d->ops->rope(d->st, dref(&x), 1, 2, 32, 32, past, 10000.0f, 1.0f,
                                       HC_ROPE_NORM),
                       "rope, pos offset past the end");

    /* Nothing touched, and the stream still works. */
    d->ops->stream_sync(d->st);
    if (!dbuf_input_ok(&w, wq, "bad refs", "w") || !dbuf_input_ok(&x, hx, "bad refs", "x") ||
        !dbuf_guards_ok(&y, "bad refs", "y") || !dbuf_input_ok(&di, idx, "bad refs", "idx"))
        goto out;
    CONF_CALL(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), rows, cols, dref(&x), 1, dref(&y)));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&y, hy, 0, sizeof hy) != 0)
        goto out;
    hc_scalar_matmul(HC_TYPE_F32, wq, rows, cols, hx, 1, want);
    for (int i = 0; i < 8; i++)
        wantd[i] = want[i];
    report(d, "matmul", worst_slot(HC_TYPE_F32), "F32 8x64 n=1 after refused calls",
           compare(hy, wantd, 8), bound_for_type(HC_TYPE_F32));
out:
    dbuf_free(&w);
    dbuf_free(&x);
    dbuf_free(&y);
    dbuf_free(&di);
    free(wq);
    CONF_TEST_END();
}
END_TEST

/* ---- determinism ------------------------------------------------------------ */

/* The ABI requires results independent of the thread count: run the same
 * ops with 1, 2 and 3 threads (if the plugin has set_threads) and twice
 * each, and demand identical bits. */
START_TEST(test_determinism)
{
    conf_dev *d = &g_dev[_i];
    const int64_t rows = 1024, cols = 512, n = 3;
    /* Results compared: Q4_0 matmul (n x rows), Q4_0 axpy (n x cols), Q6_K
     * matmul (n x rows), Q6_K matvec_rows of one token (rows). */
    const size_t n_out = (size_t)(n * rows + n * cols + n * rows + rows);
    dbuf w = {0}, w6 = {0}, x = {0}, y = {0}, h = {0}, ya = {0}, y6 = {0}, y61 = {0}, di = {0};
    uint64_t wbytes, w6bytes;
    void *wq = make_weights(HC_TYPE_Q4_0, rows, cols, 6, &wbytes);
    void *wq6 = make_weights(HC_TYPE_Q6_K, rows, cols, 7, &w6bytes);
    float *hx = xmalloc((size_t)(n * cols) * 4), *hh = xmalloc((size_t)(n * rows) * 4);
    float *first = xmalloc(n_out * 4);
    float *now = xmalloc(n_out * 4);
    int32_t *idx = xmalloc((size_t)rows * 4);
    int64_t n_idx = make_list(LIST_UNSORTED, rows, 8, idx);
    conf_rng r = rng_seed(8);
    const int threads[] = {1, 2, 3, 2};
    int n_runs = HC_OPS_HAS(d->ops, set_threads) ? 4 : 2;
    g_fail = 0;
    fill_uniform(&r, hx, (size_t)(n * cols), 1.0f);
    fill_uniform(&r, hh, (size_t)(n * rows), 1.0f);
    if (dbuf_new(d, &w, wbytes, wq) != 0 || dbuf_new(d, &w6, w6bytes, wq6) != 0 ||
        dbuf_new(d, &x, (uint64_t)(n * cols) * 4, hx) != 0 ||
        dbuf_new(d, &y, (uint64_t)(n * rows) * 4, NULL) != 0 ||
        dbuf_new(d, &h, (uint64_t)(n * rows) * 4, hh) != 0 ||
        dbuf_new(d, &ya, (uint64_t)(n * cols) * 4, NULL) != 0 ||
        dbuf_new(d, &y6, (uint64_t)(n * rows) * 4, NULL) != 0 ||
        dbuf_new(d, &y61, (uint64_t)rows * 4, NULL) != 0 ||
        dbuf_new(d, &di, (uint64_t)n_idx * 4, idx) != 0)
        goto out;
    for (int run = 0; run < n_runs; run++) {
        if (HC_OPS_HAS(d->ops, set_threads))
            CONF_CALL(d, d->ops->set_threads(d->plugin->ctx, threads[run]));
        memset(now, 0, n_out * 4);
        if (dbuf_put(&ya, 0, now, (uint64_t)(n * cols) * 4) != 0 ||
            dbuf_put(&y61, 0, now, (uint64_t)rows * 4) != 0)
            goto out;
        /* A plugin may refuse one of these shapes (then the case is
         * skipped for it, as op_accepted says; the CPU plugin may not). */
        if (!op_accepted(d,
                         d->ops->matmul(d->st, HC_TYPE_Q4_0, dref(&w), rows, cols, dref(&x), n,
                                        dref(&y)),
                         query_cost(d, HC_OP_MATMUL, HC_TYPE_Q4_0, rows, cols, n),
                         "determinism: Q4_0 matmul") ||
            !op_accepted(d,
                         d->ops->axpy_rows(d->st, HC_TYPE_Q4_0, dref(&w), rows, cols, dref(&h), n,
                                           dref(&di), n_idx, dref(&ya)),
                         query_cost(d, HC_OP_AXPY_ROWS, HC_TYPE_Q4_0, rows, cols, n),
                         "determinism: Q4_0 axpy_rows") ||
            !op_accepted(d,
                         d->ops->matmul(d->st, HC_TYPE_Q6_K, dref(&w6), rows, cols, dref(&x), n,
                                        dref(&y6)),
                         query_cost(d, HC_OP_MATMUL, HC_TYPE_Q6_K, rows, cols, n),
                         "determinism: Q6_K matmul") ||
            !op_accepted(d,
                         d->ops->matvec_rows(d->st, HC_TYPE_Q6_K, dref(&w6), rows, cols, dref(&x),
                                             1, dref(&di), n_idx, dref(&y61)),
                         query_cost(d, HC_OP_MATVEC_ROWS, HC_TYPE_Q6_K, rows, cols, 1),
                         "determinism: Q6_K matvec_rows"))
            goto out;
        CONF_CALL(d, d->ops->stream_sync(d->st));
        float *at = now;
        if (dbuf_get(&y, at, 0, (uint64_t)(n * rows) * 4) != 0 ||
            dbuf_get(&ya, at += n * rows, 0, (uint64_t)(n * cols) * 4) != 0 ||
            dbuf_get(&y6, at += n * cols, 0, (uint64_t)(n * rows) * 4) != 0 ||
            dbuf_get(&y61, at += n * rows, 0, (uint64_t)rows * 4) != 0)
            goto out;
        if (run == 0)
            memcpy(first, now, n_out * 4);
        else if (memcmp(first, now, n_out * 4) != 0)
            conf_fail(d, "results differ between runs (run %d, %d threads)", run,
                      HC_OPS_HAS(d->ops, set_threads) ? threads[run] : 0);
    }
    printf("conf %-28s determinism: %d runs%s compared bit for bit (Q4_0, Q6_K)\n", d->name,
           n_runs, n_runs == 4 ? " (1, 2, 3, 2 threads)" : "");
out:
    d->ops->stream_sync(d->st); /* buffers are freed only with nothing queued on them */
    if (HC_OPS_HAS(d->ops, set_threads))
        d->ops->set_threads(d->plugin->ctx, HC_TEST_THREADS);
    dbuf_free(&w);
    dbuf_free(&w6);
    dbuf_free(&x);
    dbuf_free(&y);
    dbuf_free(&h);
    dbuf_free(&ya);
    dbuf_free(&y6);
    dbuf_free(&y61);
    dbuf_free(&di);
    free(wq);
    free(wq6);
    free(hx);
    free(hh);
    free(first);
    free(now);
    free(idx);
    CONF_TEST_END();
}
END_TEST

/* ---- device-side selection (ABI 1.3) ---------------------------------------- */

/* A counted op against its base op on the same device (whose results the
 * matvec_rows and axpy_rows cases hold to the reference): the list's
 * n_idx entries are followed by every other row, which a plugin that
 * ignored the count would compute too, and the count lies in device
 * memory.  The counted op must give the base op's bits for n_idx = the
 * count; a count past max_idx is clamped to it, a negative one lists
 * nothing. */
static void counted_case(conf_dev *d, int axpy, hc_type t, dbuf *w, const void *wq, int64_t rows,
                         int64_t cols, int64_t n, list_kind lk, uint64_t seed)
{
    const char *op = axpy ? "axpy_rows_counted" : "matvec_rows_counted";
    char what[160];
    dbuf a = {0}, yb = {0}, yc = {0}, di = {0}, dc = {0};
    const int64_t in_len = axpy ? rows : cols, out_len = axpy ? cols : rows;
    size_t na = (size_t)(n * in_len), ny = (size_t)(n * out_len);
    float *ha = xmalloc(na * sizeof(float));
    float *pre = xmalloc(ny * sizeof(float));
    float *got_b = xmalloc(ny * sizeof(float));
    float *got_c = xmalloc(ny * sizeof(float));
    int32_t *idx = xmalloc((size_t)rows * sizeof(int32_t));
    uint8_t *listed = calloc((size_t)rows, 1);
    conf_rng r = rng_seed(seed);
    ck_assert(listed != NULL);

    const int64_t n_idx = make_list(lk, rows, seed, idx), max_idx = rows;
    for (int64_t k = 0; k < n_idx; k++)
        listed[idx[k]] = 1;
    for (int64_t row = 0, k = n_idx; row < rows; row++)
        if (!listed[row])
            idx[k++] = (int32_t)row;
    fill_uniform(&r, ha, na, 1.0f);
    fill_uniform(&r, pre, ny, 1.0f);
    if (dbuf_new(d, &a, na * 4, ha) != 0 || dbuf_new(d, &yb, ny * 4, pre) != 0 ||
        dbuf_new(d, &yc, ny * 4, pre) != 0 || dbuf_new(d, &di, (uint64_t)rows * 4, idx) != 0 ||
        dbuf_new(d, &dc, 4, NULL) != 0)
        goto out;
    /* The count as listed, past the end, negative (the last two once per
     * shape and type). */
    const int32_t counts[3] = {(int32_t)n_idx, (int32_t)max_idx + 5, -3};
    const int n_counts = lk == LIST_P5 ? 3 : 1;
    for (int ci = 0; ci < n_counts; ci++) {
        const int32_t cnt = counts[ci];
        const int64_t k = cnt < 0 ? 0 : cnt > max_idx ? max_idx : cnt;
        shape_name(what, sizeof what, t, rows, cols, n, LIST_NAMES[lk]);
        if (ci > 0)
            snprintf(what + strlen(what), sizeof what - strlen(what), " count %d", (int)cnt);
        if (dbuf_put(&yb, 0, pre, ny * 4) != 0 || dbuf_put(&yc, 0, pre, ny * 4) != 0 ||
            dbuf_put(&dc, 0, &cnt, 4) != 0)
            goto out;
        double cost = query_cost(d, axpy ? HC_OP_AXPY_ROWS_COUNTED : HC_OP_MATVEC_ROWS_COUNTED, t,
                                 rows, cols, n);
        hc_status sb = axpy ? d->ops->axpy_rows(d->st, t, dref(w), rows, cols, dref(&a), n,
                                                dref(&di), k, dref(&yb))
                            : d->ops->matvec_rows(d->st, t, dref(w), rows, cols, dref(&a), n,
                                                  dref(&di), k, dref(&yb));
        hc_status sc = axpy ? d->ops->axpy_rows_counted(d->st, t, dref(w), rows, cols, dref(&a),
                                                        n, dref(&di), dref(&dc), max_idx,
                                                        dref(&yc))
                            : d->ops->matvec_rows_counted(d->st, t, dref(w), rows, cols, dref(&a),
                                                          n, dref(&di), dref(&dc), max_idx,
                                                          dref(&yc));
        if (sb != HC_OK) {
            /* The base op refuses this type (Q6_K axpy): so must its counted form. */
            if (sb == HC_E_UNSUPPORTED && sc == HC_E_UNSUPPORTED && !(cost >= 0)) {
                hc_test_skip("conf %s %s %s: the base op refuses it, and so does this one",
                             d->name, op, what);
                goto out;
            }
            conf_fail(d, "%s %s: base op status %d, counted op status %d (%s)", op, what,
                      (int)sb, (int)sc, plugin_error(d));
            goto out;
        }
        if (!op_accepted(d, sc, cost, what))
            goto out;
        CONF_CALL(d, d->ops->stream_sync(d->st));
        if (dbuf_get(&yb, got_b, 0, ny * 4) != 0 || dbuf_get(&yc, got_c, 0, ny * 4) != 0)
            goto out;
        if (!dbuf_guards_ok(&yc, what, "y") || !dbuf_input_ok(&a, ha, what, axpy ? "h" : "x") ||
            !dbuf_input_ok(&di, idx, what, "idx") || !dbuf_input_ok(&dc, &cnt, what, "count"))
            goto out;
        for (size_t i = 0; i < ny; i++)
            if (memcmp(&got_b[i], &got_c[i], sizeof(float)) != 0) {
                conf_fail(d, "%s %s: y[%zu] = %a, but the base op with %lld rows gives %a", op,
                          what, i, got_c[i], (long long)k, got_b[i]);
                goto out;
            }
        if (lk == LIST_P5 || lk == LIST_EMPTY)
            printf("conf %-28s %-11s %-44s the base op's bits for %lld rows\n", d->name, op, what,
                   (long long)k);
    }
out:
    dbuf_free(&a);
    dbuf_free(&yb);
    dbuf_free(&yc);
    dbuf_free(&di);
    dbuf_free(&dc);
    free(ha);
    free(pre);
    free(got_b);
    free(got_c);
    free(idx);
    free(listed);
}

static void counted_matvec_case(conf_dev *d, hc_type t, dbuf *w, const void *wq, int64_t rows,
                                int64_t cols, int64_t n, list_kind lk, uint64_t seed)
{
    counted_case(d, 0, t, w, wq, rows, cols, n, lk, seed);
}

static void counted_axpy_case(conf_dev *d, hc_type t, dbuf *w, const void *wq, int64_t rows,
                              int64_t cols, int64_t n, list_kind lk, uint64_t seed)
{
    counted_case(d, 1, t, w, wq, rows, cols, n, lk, seed);
}

static void conf_matvec_rows_counted(conf_dev *d)
{
    run_sparse(d, counted_matvec_case, "matvec_rows_counted");
}

static void conf_axpy_rows_counted(conf_dev *d)
{
    run_sparse(d, counted_axpy_case, "axpy_rows_counted");
}

#define SELECT_CUT 0.25f

/* Uniform in [0, 1). */
static float rng_u01(conf_rng *r)
{
    return (float)((double)(rng_next(r) >> 11) / 9007199254740992.0);
}

/* Scores for n_tok tokens of n_rows rows of which about `frac` are active:
 * an active row passes the cut in one token (exactly at the cut every 7th:
 * >= counts), every other score is below it, nan (every 11th) or the float
 * just below the cut (every 13th).  on[r] says which rows are active. */
static void select_scores(conf_rng *r, float *sc, uint8_t *on, int64_t n_rows, int64_t n_tok,
                          double frac)
{
    for (int64_t row = 0; row < n_rows; row++) {
        on[row] = frac >= 1.0 || (frac > 0 && rng_u01(r) < frac);
        const int64_t hit = (int64_t)(rng_next(r) % (uint64_t)n_tok);
        for (int64_t t = 0; t < n_tok; t++) {
            float *v = &sc[t * n_rows + row];
            if (on[row] && t == hit)
                *v = row % 7 == 0 ? SELECT_CUT : SELECT_CUT + rng_u01(r);
            else if (row % 11 == 3)
                *v = NAN;
            else if (row % 13 == 5)
                *v = nextafterf(SELECT_CUT, -INFINITY);
            else
                *v = SELECT_CUT - 0.001f - rng_u01(r);
        }
    }
}

/* select_rows at one shape, then (when the plugin has it) the chain it
 * exists for: matvec_rows_counted over the device's own list and count,
 * held to the reference for the expected list.  The list and the count
 * must be exact, idx past the count untouched, the inputs unchanged. */
static void select_case(conf_dev *d, int64_t n_rows, int64_t n_tok, double frac, int use_map,
                        uint64_t seed)
{
    char what[128];
    dbuf sc = {0}, mp = {0}, di = {0}, dc = {0}, w = {0}, x = {0}, y = {0};
    const int64_t cols = 32;
    float *hs = xmalloc((size_t)(n_tok * n_rows) * sizeof(float));
    int32_t *map = xmalloc((size_t)n_rows * sizeof(int32_t));
    int32_t *want = xmalloc((size_t)n_rows * sizeof(int32_t));
    int32_t *got = xmalloc((size_t)n_rows * sizeof(int32_t));
    int32_t *fill = xmalloc((size_t)n_rows * sizeof(int32_t));
    uint8_t *on = xmalloc((size_t)n_rows);
    float *hw = NULL, *hx = NULL, *hy = NULL, *ref = NULL;
    conf_rng r = rng_seed(seed);
    int32_t count = -7, n_want = 0, n_map = 0;

    snprintf(what, sizeof what, "%lld rows x%lld %.0f%%%s", (long long)n_rows, (long long)n_tok,
             100 * frac, use_map ? " mapped" : "");
    select_scores(&r, hs, on, n_rows, n_tok, frac);
    /* A GPU's map: every third row is another device's (-1), the others
     * numbered in order (compact rows). */
    for (int64_t row = 0; row < n_rows; row++) {
        map[row] = row % 3 == 1 ? -1 : n_map++;
        fill[row] = 0x5eed0000 + (int32_t)row;
        const int32_t v = use_map ? map[row] : (int32_t)row;
        if (on[row] && v >= 0)
            want[n_want++] = v;
    }
    if (dbuf_new(d, &sc, (uint64_t)(n_tok * n_rows) * 4, hs) != 0 ||
        dbuf_new(d, &mp, (uint64_t)n_rows * 4, map) != 0 ||
        dbuf_new(d, &di, (uint64_t)n_rows * 4, fill) != 0 || dbuf_new(d, &dc, 4, &count) != 0)
        goto out;
    double cost = query_cost(d, HC_OP_SELECT_ROWS, HC_TYPE_F32, n_rows, 1, n_tok);
    hc_status s = d->ops->select_rows(d->st, dref(&sc), n_tok, n_rows, SELECT_CUT,
                                      use_map ? dref(&mp) : (hc_ref){NULL, 0}, dref(&di),
                                      dref(&dc));
    if (!op_accepted(d, s, cost, what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&dc, &count, 0, 4) != 0 || dbuf_get(&di, got, 0, (uint64_t)n_rows * 4) != 0)
        goto out;
    if (!dbuf_guards_ok(&di, what, "idx") || !dbuf_guards_ok(&dc, what, "count") ||
        !dbuf_input_ok(&sc, hs, what, "scores") || !dbuf_input_ok(&mp, map, what, "map"))
        goto out;
    if (count != n_want) {
        conf_fail(d, "select_rows %s: count %d, want %d", what, (int)count, (int)n_want);
        goto out;
    }
    for (int64_t k = 0; k < n_rows; k++) {
        const int32_t expect = k < n_want ? want[k] : fill[k];
        if (got[k] != expect) {
            conf_fail(d, "select_rows %s: idx[%lld] = %d, want %d%s", what, (long long)k,
                      (int)got[k], (int)expect, k < n_want ? "" : " (past the count: untouched)");
            goto out;
        }
    }
    printf("conf %-28s %-11s %-44s %d rows listed, exact\n", d->name, "select_rows", what,
           (int)count);
    if (!HC_OPS_HAS(d->ops, matvec_rows_counted) || use_map)
        goto out;
    /* The chain: y = W x at the rows the device listed, counted by it. */
    const size_t nw = (size_t)(n_rows * cols), nx = (size_t)(n_tok * cols),
                 ny = (size_t)(n_tok * n_rows);
    hw = xmalloc(nw * sizeof(float));
    hx = xmalloc(nx * sizeof(float));
    hy = xmalloc(ny * sizeof(float));
    ref = xmalloc(ny * sizeof(float));
    fill_uniform(&r, hw, nw, 1.0f);
    fill_uniform(&r, hx, nx, 1.0f);
    memset(ref, 0, ny * sizeof(float));
    if (dbuf_new(d, &w, nw * 4, hw) != 0 || dbuf_new(d, &x, nx * 4, hx) != 0 ||
        dbuf_new(d, &y, ny * 4, ref) != 0)
        goto out;
    s = d->ops->matvec_rows_counted(d->st, HC_TYPE_F32, dref(&w), n_rows, cols, dref(&x), n_tok,
                                    dref(&di), dref(&dc), n_rows, dref(&y));
    if (!op_accepted(d, s, COST_UNKNOWN, what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&y, hy, 0, ny * 4) != 0)
        goto out;
    hc_scalar_matvec_rows(HC_TYPE_F32, hw, n_rows, cols, hx, n_tok, want, n_want, ref);
    double *dref_y = to_double(ref, ny);
    report(d, "select+mv", worst_slot(HC_TYPE_F32), what, compare(hy, dref_y, ny),
           bound_for_type(HC_TYPE_F32));
    free(dref_y);
out:
    dbuf_free(&sc);
    dbuf_free(&mp);
    dbuf_free(&di);
    dbuf_free(&dc);
    dbuf_free(&w);
    dbuf_free(&x);
    dbuf_free(&y);
    free(hs);
    free(map);
    free(want);
    free(got);
    free(fill);
    free(on);
    free(hw);
    free(hx);
    free(hy);
    free(ref);
}

/* 0%, 5%, 50% and 100% active, one and three tokens, with and without a
 * map, from one row to an FFN's width. */
static void conf_select_rows(conf_dev *d)
{
    static const int64_t ROWS[] = {1, 7, 256, 1000, 11008};
    static const double FRACS[] = {0.0, 0.05, 0.5, 1.0};
    for (size_t ri = 0; ri < sizeof ROWS / sizeof ROWS[0]; ri++)
        for (int64_t n_tok = 1; n_tok <= 3; n_tok += 2)
            for (size_t fi = 0; fi < sizeof FRACS / sizeof FRACS[0]; fi++)
                for (int use_map = 0; use_map < 2; use_map++)
                    select_case(d, ROWS[ri], n_tok, FRACS[fi], use_map,
                                900 + 97 * ri + 13 * fi + 5 * (uint64_t)n_tok + (uint64_t)use_map);
}

/* ---- scatter_rows (ABI 1.3) ------------------------------------------------ */

enum { SCAT_ASCENDING, SCAT_DESCENDING, SCAT_NEGATIVE, SCAT_PAST_END, SCAT_SPREAD, SCAT_KINDS };
static const char *const SCAT_NAMES[SCAT_KINDS] = {"ascending", "descending", "one negative",
                                                   "one past the end", "spread"};

/* Positions of kind k for n tokens into dst_rows rows (dst_rows >= 2n + 2
 * for the first four: every other row is named, the rest keep their bytes).
 * SCAT_NEGATIVE and SCAT_PAST_END put one token (the middle one) outside
 * [0, dst_rows); SCAT_PAST_END with several tokens also sends the first to
 * INT32_MAX.  SCAT_SPREAD: distinct rows in a stride that wraps around the
 * whole destination, every 7th token to -2. */
static void scatter_positions(int k, int64_t n, int64_t dst_rows, int32_t *pos)
{
    for (int64_t t = 0; t < n; t++) {
        if (k == SCAT_DESCENDING)
            pos[t] = (int32_t)(dst_rows - 1 - 2 * t);
        else if (k == SCAT_SPREAD)
            pos[t] = t % 7 == 3 ? -2 : (int32_t)((t * 97 + 5) % dst_rows);
        else
            pos[t] = (int32_t)(2 * t + 1);
    }
    if (k == SCAT_NEGATIVE)
        pos[n / 2] = -1;
    if (k == SCAT_PAST_END) {
        pos[n / 2] = (int32_t)dst_rows;
        if (n > 1)
            pos[0] = INT32_MAX;
    }
}

/* One call: n random rows of row_bytes to the positions of kind k in a
 * destination of dst_rows random rows.  The destination must equal the
 * expected bytes computed here (rows not named, or named by an outside
 * position, unchanged), the guards and the inputs unchanged. */
static void scatter_case(conf_dev *d, uint64_t row_bytes, int64_t n, int64_t dst_rows, int k,
                         uint64_t seed)
{
    char what[128];
    dbuf src = {0}, dst = {0}, dp = {0};
    const size_t sb = (size_t)(row_bytes * (uint64_t)n);
    const size_t db = (size_t)(row_bytes * (uint64_t)dst_rows);
    uint8_t *hs = xmalloc(sb), *hd = xmalloc(db), *want = xmalloc(db), *got = xmalloc(db);
    int32_t *pos = xmalloc((size_t)n * sizeof(int32_t));
    conf_rng r = rng_seed(seed);

    snprintf(what, sizeof what, "rows of %llu B, n=%lld into %lld, %s",
             (unsigned long long)row_bytes, (long long)n, (long long)dst_rows, SCAT_NAMES[k]);
    for (size_t i = 0; i < sb; i++)
        hs[i] = (uint8_t)rng_next(&r);
    for (size_t i = 0; i < db; i++)
        hd[i] = (uint8_t)rng_next(&r);
    scatter_positions(k, n, dst_rows, pos);
    memcpy(want, hd, db);
    for (int64_t t = 0; t < n; t++)
        if (pos[t] >= 0 && pos[t] < dst_rows)
            memcpy(want + (size_t)pos[t] * row_bytes, hs + (size_t)t * row_bytes,
                   (size_t)row_bytes);
    int big = dbuf_new(d, &src, sb, hs);
    if (big == 0)
        big = dbuf_new(d, &dst, db, hd);
    if (big == 0)
        big = dbuf_new(d, &dp, (uint64_t)n * 4, pos);
    if (big == 1)
        hc_test_skip("conf %s scatter_rows %s: larger than the device's max_buffer", d->name,
                     what);
    if (big != 0)
        goto out;
    double cost = query_cost(d, HC_OP_SCATTER_ROWS, HC_TYPE_F32, dst_rows,
                             (int64_t)(row_bytes / 4), n);
    hc_status s = d->ops->scatter_rows(d->st, dref(&src), dref(&dst), row_bytes, n, dref(&dp),
                                       dst_rows);
    if (!op_accepted(d, s, cost, what))
        goto out;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (!dbuf_input_ok(&src, hs, what, "src") || !dbuf_input_ok(&dp, pos, what, "pos") ||
        !dbuf_guards_ok(&dst, what, "dst") || dbuf_get(&dst, got, 0, db) != 0)
        goto out;
    for (int64_t row = 0; row < dst_rows; row++) {
        const size_t at = (size_t)row * row_bytes;
        if (memcmp(got + at, want + at, (size_t)row_bytes) != 0) {
            int named = 0;
            for (int64_t t = 0; t < n; t++)
                named |= pos[t] == row;
            conf_fail(d, "scatter_rows %s: dst row %lld differs (%s)", what, (long long)row,
                      named ? "a row that was written" : "a row no position names: must keep "
                                                         "its bytes");
            goto out;
        }
    }
    printf("conf %-28s %-11s %-44s exact\n", d->name, "scatter", what);
out:
    dbuf_free(&src);
    dbuf_free(&dst);
    dbuf_free(&dp);
    free(hs);
    free(hd);
    free(want);
    free(got);
    free(pos);
}

/* Calls that must be refused, with the destination unchanged after them. */
static void scatter_refusals(conf_dev *d)
{
    const uint64_t rb = 16;
    const int64_t n = 2, rows = 6;
    dbuf src = {0}, dst = {0}, dp = {0};
    uint8_t hs[32], hd[96];
    int32_t pos[2] = {0, 3};
    conf_rng r = rng_seed(31);
    for (size_t i = 0; i < sizeof hs; i++)
        hs[i] = (uint8_t)rng_next(&r);
    for (size_t i = 0; i < sizeof hd; i++)
        hd[i] = (uint8_t)rng_next(&r);
    if (dbuf_new(d, &src, sizeof hs, hs) != 0 || dbuf_new(d, &dst, sizeof hd, hd) != 0 ||
        dbuf_new(d, &dp, sizeof pos, pos) != 0)
        goto out;
    hc_ref inside = {dst.buf, GUARD + 16};              /* inside dst's first two rows */
    hc_ref past = {dst.buf, dst.bytes + 2 * GUARD - 8}; /* 8 bytes left: rows run past */
    expect_refused(d, d->ops->scatter_rows(d->st, dref(&src), dref(&dst), 6, n, dref(&dp), rows),
                   "scatter_rows, row_bytes 6 (not a multiple of 4)");
    expect_refused(d, d->ops->scatter_rows(d->st, dref(&src), dref(&dst), rb, -1, dref(&dp),
                                           rows),
                   "scatter_rows, n = -1");
    expect_refused(d, d->ops->scatter_rows(d->st, dref(&src), dref(&dst), rb, n, dref(&dp), -1),
                   "scatter_rows, dst_rows = -1");
    expect_refused(d, d->ops->scatter_rows(d->st, dref(&src), past, rb, n, dref(&dp), rows),
                   "scatter_rows, dst running past the end");
    expect_refused(d, d->ops->scatter_rows(d->st, dref(&src), dref(&dst), rb, n,
                                           (hc_ref){dp.buf, dp.bytes + 2 * GUARD - 4}, rows),
                   "scatter_rows, pos running past the end");
    expect_refused(d, d->ops->scatter_rows(d->st, (hc_ref){src.buf, src.bytes + 2 * GUARD - 16},
                                           dref(&dst), rb, n, dref(&dp), rows),
                   "scatter_rows, src running past the end");
    expect_refused(d, d->ops->scatter_rows(d->st, dref(&src), dref(&dst), rb, n,
                                           (hc_ref){NULL, 0}, rows),
                   "scatter_rows, NULL pos buffer");
    /* src, then pos, starting inside dst's two rows. */
    expect_refused(d, d->ops->scatter_rows(d->st, inside, dref(&dst), rb, n, dref(&dp), 2),
                   "scatter_rows, dst overlapping src");
    expect_refused(d, d->ops->scatter_rows(d->st, dref(&src), dref(&dst), rb, n, inside, 2),
                   "scatter_rows, dst overlapping pos");
    d->ops->stream_sync(d->st);
    dbuf_input_ok(&dst, hd, "scatter_rows refusals", "dst");
    dbuf_input_ok(&src, hs, "scatter_rows refusals", "src");
    dbuf_input_ok(&dp, pos, "scatter_rows refusals", "pos");
out:
    dbuf_free(&src);
    dbuf_free(&dst);
    dbuf_free(&dp);
}

/* Row sizes from one word to a KV row (8 KV heads x 64 x F32) and past a
 * 256 KiB binding (tests/conformance_vulkan.cmake's fallbacks run: there
 * the 300 KiB row is refused and priced -1, the 150 KV rows into 300 are
 * split); one token and five, in order, reversed, one outside at either
 * end. */
static void conf_scatter_rows(conf_dev *d)
{
    static const uint64_t ROW_BYTES[] = {4, 12, 260, 8 * 64 * 4};
    static const int64_t NS[] = {1, 5};
    uint64_t seed = 3000;
    for (size_t ri = 0; ri < sizeof ROW_BYTES / sizeof ROW_BYTES[0]; ri++)
        for (size_t ni = 0; ni < 2; ni++)
            for (int k = SCAT_ASCENDING; k <= SCAT_PAST_END; k++)
                scatter_case(d, ROW_BYTES[ri], NS[ni], 2 * NS[ni] + 2, k, seed++);
    scatter_case(d, 8 * 64 * 4, 150, 300, SCAT_SPREAD, seed++);
    scatter_case(d, 300 * 1024, 1, 2, SCAT_DESCENDING, seed++);
    scatter_case(d, 16, 0, 3, SCAT_ASCENDING, seed++);
    scatter_refusals(d);
}

/* ---- host memory (ABI 1.3) --------------------------------------------------- */

/* Blocks of several sizes: every byte written and read back, an upload
 * from one and a download into another give the bytes back, freed. */
static void conf_host_alloc(conf_dev *d)
{
    static const uint64_t SIZES[] = {1, 4, 4099, 1 << 20};
    enum { N_SIZES = sizeof SIZES / sizeof SIZES[0] };
    uint8_t *in[N_SIZES] = {0}, *back[N_SIZES] = {0};
    void *p = NULL;
    dbuf a = {0};
    if (!HC_OPS_HAS(d->ops, host_free)) {
        conf_fail(d, "host_alloc without host_free (plugin.h: both or neither)");
        return;
    }
    for (int i = 0; i < N_SIZES; i++) {
        CONF_CALL(d, d->ops->host_alloc(d->dev, SIZES[i], &p));
        in[i] = p;
        CONF_CALL(d, d->ops->host_alloc(d->dev, SIZES[i], &p));
        back[i] = p;
        if (!in[i] || !back[i]) {
            conf_fail(d, "host_alloc(%llu) returned HC_OK and NULL", (unsigned long long)SIZES[i]);
            goto out;
        }
    }
    /* Every block's bytes written, then all read: blocks do not overlap. */
    for (int i = 0; i < N_SIZES; i++)
        for (uint64_t j = 0; j < SIZES[i]; j++) {
            in[i][j] = (uint8_t)(j * 131 + (uint64_t)i * 7 + 1);
            back[i][j] = (uint8_t)(in[i][j] + 101u);
        }
    for (int i = 0; i < N_SIZES; i++)
        for (uint64_t j = 0; j < SIZES[i]; j++)
            if (in[i][j] != (uint8_t)(j * 131 + (uint64_t)i * 7 + 1) ||
                back[i][j] != (uint8_t)(in[i][j] + 101u)) {
                conf_fail(d, "host_alloc(%llu): byte %llu does not keep its value",
                          (unsigned long long)SIZES[i], (unsigned long long)j);
                goto out;
            }
    for (int i = 0; i < N_SIZES; i++) {
        if (dbuf_new(d, &a, SIZES[i], NULL) != 0)
            goto out;
        CONF_CALL(d, d->ops->upload(d->st, dref(&a), in[i], SIZES[i]));
        CONF_CALL(d, d->ops->download(d->st, back[i], dref(&a), SIZES[i]));
        CONF_CALL(d, d->ops->stream_sync(d->st));
        if (memcmp(back[i], in[i], (size_t)SIZES[i]) != 0)
            conf_fail(d, "host_alloc(%llu): upload from it, download into another differ",
                      (unsigned long long)SIZES[i]);
        dbuf_guards_ok(&a, "host_alloc", "a");
        dbuf_free(&a);
    }
    printf("conf %-28s host_alloc: 1 B to 1 MiB, written, read, round trip: ok\n", d->name);
out:
    dbuf_free(&a);
    for (int i = 0; i < N_SIZES; i++) {
        if (in[i])
            d->ops->host_free(d->dev, in[i]);
        if (back[i])
            d->ops->host_free(d->dev, back[i]);
    }
}

/* Blocks freed right away, out of order, and after a transfer used them;
 * allocation still works afterwards.  (plugin.h does not say that NULL
 * may be freed: not tested.) */
static void conf_host_free(conf_dev *d)
{
    void *p[8] = {0}, *v = NULL;
    uint8_t *q = NULL;
    dbuf a = {0};
    if (!HC_OPS_HAS(d->ops, host_alloc)) {
        conf_fail(d, "host_free without host_alloc (plugin.h: both or neither)");
        return;
    }
    CONF_CALL(d, d->ops->host_alloc(d->dev, 64, &p[0]));
    d->ops->host_free(d->dev, p[0]);
    p[0] = NULL;
    for (int i = 0; i < 8; i++)
        CONF_CALL(d, d->ops->host_alloc(d->dev, (uint64_t)(i + 1) * 1000, &p[i]));
    for (int i = 0; i < 8; i += 2) { /* every other one, then the rest backwards */
        d->ops->host_free(d->dev, p[i]);
        p[i] = NULL;
    }
    for (int i = 7; i >= 0; i--) {
        if (p[i])
            d->ops->host_free(d->dev, p[i]);
        p[i] = NULL;
    }
    CONF_CALL(d, d->ops->host_alloc(d->dev, XFER_N, &v));
    q = v;
    for (int i = 0; i < XFER_N; i++)
        q[i] = (uint8_t)(i ^ 0x3c);
    if (dbuf_new(d, &a, XFER_N, NULL) != 0)
        goto out;
    CONF_CALL(d, d->ops->upload(d->st, dref(&a), q, XFER_N));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    d->ops->host_free(d->dev, q);
    q = NULL;
    CONF_CALL(d, d->ops->host_alloc(d->dev, XFER_N, &v));
    q = v;
    CONF_CALL(d, d->ops->download(d->st, q, dref(&a), XFER_N));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    for (int i = 0; i < XFER_N; i++)
        if (q[i] != (uint8_t)(i ^ 0x3c)) {
            conf_fail(d, "after host_free, a new block's download differs at byte %d", i);
            break;
        }
    printf("conf %-28s host_free: in order, out of order, after a transfer: ok\n", d->name);
out:
    dbuf_free(&a);
    for (int i = 0; i < 8; i++)
        if (p[i])
            d->ops->host_free(d->dev, p[i]);
    if (q)
        d->ops->host_free(d->dev, q);
}

/* ---- capture (ABI 1.3) ------------------------------------------------------- */

/* What the capture cases need: all four entries (plugin.h: all or none)
 * and host_alloc (host memory named while capturing must come from it).
 * 0: go on; -1: failed (recorded). */
static int capture_entries_ok(conf_dev *d)
{
    if (!HC_OPS_HAS(d->ops, capture_begin) || !HC_OPS_HAS(d->ops, capture_end) ||
        !HC_OPS_HAS(d->ops, graph_launch) || !HC_OPS_HAS(d->ops, graph_free)) {
        conf_fail(d, "capture_begin, capture_end, graph_launch, graph_free: some but not all "
                     "provided (plugin.h: all four or none)");
        return -1;
    }
    if (!HC_OPS_HAS(d->ops, host_alloc) || !HC_OPS_HAS(d->ops, host_free)) {
        conf_fail(d, "capture without host_alloc/host_free: uploads and downloads while "
                     "capturing need host_alloc memory");
        return -1;
    }
    return 0;
}

/* capture_begin; HC_E_UNSUPPORTED (allowed: the core then issues every
 * pass) skips.  1: capturing; 0: skipped; -1: failed (recorded). */
static int capture_start(conf_dev *d, const char *what)
{
    hc_status s = d->ops->capture_begin(d->st);
    if (s == HC_OK)
        return 1;
    if (s == HC_E_UNSUPPORTED) {
        hc_test_skip("conf %s %s: capture_begin refused with HC_E_UNSUPPORTED (%s); the core "
                     "issues every pass",
                     d->name, what, plugin_error(d));
        return 0;
    }
    conf_fail(d, "%s: capture_begin returned %d (%s)", what, (int)s, plugin_error(d));
    return -1;
}

#define CAP_ROWS 48
#define CAP_COLS 64

/* One captured pass: upload x from pinned memory, y = op(x), download y
 * into pinned memory; op 0 is a unary scale (x 64 floats), op 1 a Q4_0
 * matmul 48x64 of one token.  The graph is launched `launches` times with
 * new values in the pinned input each time; each result must be the bits
 * of the same op issued directly, and close to the reference.  Capture
 * itself must run nothing: the pinned output and y keep their bytes until
 * the first launch. */
static void capture_pass(conf_dev *d, int op, int launches, uint64_t seed)
{
    char what[96];
    const int64_t nx = CAP_COLS, ny = op ? CAP_ROWS : CAP_COLS;
    const float scale = -1.5f;
    dbuf w = {0}, x = {0}, y = {0}, x2 = {0}, y2 = {0};
    float *pin_x = NULL, *pin_y = NULL;
    void *pv = NULL;
    float hx[CAP_COLS], direct[CAP_COLS], sentinel[CAP_COLS], want[CAP_COLS], now[CAP_COLS];
    double wantd[CAP_COLS];
    hc_graph *g = NULL;
    uint64_t wbytes = 0;
    void *wq = op ? make_weights(HC_TYPE_Q4_0, CAP_ROWS, CAP_COLS, seed, &wbytes) : NULL;
    conf_rng r = rng_seed(seed);
    int capturing = 0;

    snprintf(what, sizeof what, "capture %s, %d launch%s",
             op ? "upload, Q4_0 matmul 48x64, download" : "upload, scale 64, download", launches,
             launches == 1 ? "" : "es");
    fill_nan(sentinel, CAP_COLS);
    if (capture_entries_ok(d) != 0)
        goto out;
    CONF_CALL(d, d->ops->host_alloc(d->dev, (uint64_t)nx * 4, &pv));
    pin_x = pv;
    CONF_CALL(d, d->ops->host_alloc(d->dev, (uint64_t)ny * 4, &pv));
    pin_y = pv;
    if ((op && dbuf_new(d, &w, wbytes, wq) != 0) || dbuf_new(d, &x, nx * 4, NULL) != 0 ||
        dbuf_new(d, &y, ny * 4, sentinel) != 0 || dbuf_new(d, &x2, nx * 4, NULL) != 0 ||
        dbuf_new(d, &y2, ny * 4, NULL) != 0)
        goto out;
    fill_uniform(&r, pin_x, (size_t)nx, 1.0f);
    memcpy(pin_y, sentinel, (size_t)ny * 4);
    int c = capture_start(d, what);
    if (c <= 0)
        goto out;
    capturing = 1;
    CONF_CALL(d, d->ops->upload(d->st, dref(&x), pin_x, (uint64_t)nx * 4));
    if (op)
        CONF_CALL(d, d->ops->matmul(d->st, HC_TYPE_Q4_0, dref(&w), CAP_ROWS, CAP_COLS, dref(&x),
                                    1, dref(&y)));
    else
        CONF_CALL(d, d->ops->unary(d->st, HC_UNARY_SCALE, dref(&x), dref(&y), nx, scale));
    CONF_CALL(d, d->ops->download(d->st, pin_y, dref(&y), (uint64_t)ny * 4));
    capturing = 0;
    CONF_CALL(d, d->ops->capture_end(d->st, &g));
    if (!g) {
        conf_fail(d, "%s: capture_end returned HC_OK and no graph", what);
        goto out;
    }
    /* After capture_end the stream may be synced: nothing may have run. */
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (memcmp(pin_y, sentinel, (size_t)ny * 4) != 0) {
        conf_fail(d, "%s: the pinned output changed during capture: the work ran", what);
        goto out;
    }
    if (dbuf_get(&y, now, 0, (uint64_t)ny * 4) != 0)
        goto out;
    if (memcmp(now, sentinel, (size_t)ny * 4) != 0) {
        conf_fail(d, "%s: y changed during capture: the op ran", what);
        goto out;
    }
    for (int l = 0; l < launches; l++) {
        /* New input where the graph reads it; the same op issued directly
         * on another pair of buffers for the bits it must give. */
        fill_uniform(&r, hx, (size_t)nx, 1.0f + (float)l);
        memcpy(pin_x, hx, (size_t)nx * 4);
        memcpy(pin_y, sentinel, (size_t)ny * 4);
        CONF_CALL(d, d->ops->graph_launch(d->st, g));
        CONF_CALL(d, d->ops->stream_sync(d->st));
        if (dbuf_put(&x2, 0, hx, (uint64_t)nx * 4) != 0)
            goto out;
        if (op)
            CONF_CALL(d, d->ops->matmul(d->st, HC_TYPE_Q4_0, dref(&w), CAP_ROWS, CAP_COLS,
                                        dref(&x2), 1, dref(&y2)));
        else
            CONF_CALL(d, d->ops->unary(d->st, HC_UNARY_SCALE, dref(&x2), dref(&y2), nx, scale));
        CONF_CALL(d, d->ops->stream_sync(d->st));
        if (dbuf_get(&y2, direct, 0, (uint64_t)ny * 4) != 0)
            goto out;
        if (memcmp(pin_y, direct, (size_t)ny * 4) != 0) {
            conf_fail(d, "%s: launch %d differs from the op issued directly", what, l + 1);
            goto out;
        }
        if (op)
            hc_scalar_matmul(HC_TYPE_Q4_0, wq, CAP_ROWS, CAP_COLS, hx, 1, want);
        else
            hc_scalar_unary(HC_UNARY_SCALE, hx, want, nx, scale);
        for (int64_t i = 0; i < ny; i++)
            wantd[i] = want[i];
        char part[128];
        snprintf(part, sizeof part, "%s: launch %d", op ? "Q4_0 48x64 n=1" : "scale 64", l + 1);
        report(d, "graph", op ? worst_slot(HC_TYPE_Q4_0) : WORST_LAYER, part,
               compare(pin_y, wantd, (size_t)ny),
               op ? bound_for_type(HC_TYPE_Q4_0) : BOUND_ELEMENTWISE);
    }
    if (op)
        dbuf_input_ok(&w, wq, what, "w");
    dbuf_guards_ok(&x, what, "x");
    dbuf_guards_ok(&y, what, "y");
out:
    if (capturing) { /* end a capture a failed call left open: the stream stays usable */
        hc_graph *left = NULL;
        if (d->ops->capture_end(d->st, &left) == HC_OK && left)
            d->ops->graph_free(left);
    }
    if (g)
        d->ops->graph_free(g);
    d->ops->stream_sync(d->st);
    dbuf_free(&w);
    dbuf_free(&x);
    dbuf_free(&y);
    dbuf_free(&x2);
    dbuf_free(&y2);
    if (pin_x)
        d->ops->host_free(d->dev, pin_x);
    if (pin_y)
        d->ops->host_free(d->dev, pin_y);
    free(wq);
}

/* A captured element-wise pass launched twice. */
static void conf_capture_begin(conf_dev *d)
{
    capture_pass(d, 0, 2, 4100);
}

/* An empty capture gives a graph that launches and does nothing; then a
 * capture of a matmul pass, launched twice. */
static void conf_capture_end(conf_dev *d)
{
    hc_graph *g = NULL;
    dbuf a = {0};
    uint8_t src[XFER_N], got[XFER_N];
    if (capture_entries_ok(d) != 0 || xfer_setup(d, src, &a) != 0)
        goto out;
    int c = capture_start(d, "empty capture");
    if (c <= 0)
        goto out;
    CONF_CALL(d, d->ops->capture_end(d->st, &g));
    if (!g) {
        conf_fail(d, "empty capture: capture_end returned HC_OK and no graph");
        goto out;
    }
    CONF_CALL(d, d->ops->graph_launch(d->st, g));
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&a, got, 0, XFER_N) != 0)
        goto out;
    if (memcmp(got, src, XFER_N) != 0)
        conf_fail(d, "an empty graph's launch changed a buffer");
    else
        printf("conf %-28s capture_end: an empty capture launches: ok\n", d->name);
    capture_pass(d, 1, 2, 4200);
out:
    if (g)
        d->ops->graph_free(g);
    dbuf_free(&a);
}

/* One graph launched three times, each with its own input. */
static void conf_graph_launch(conf_dev *d)
{
    capture_pass(d, 1, 3, 4300);
}

/* A graph freed without a launch; then the stream still captures and runs
 * directly. */
static void conf_graph_free(conf_dev *d)
{
    hc_graph *g = NULL;
    dbuf a = {0};
    uint8_t src[XFER_N], got[XFER_N];
    if (capture_entries_ok(d) != 0 || xfer_setup(d, src, &a) != 0)
        goto out;
    int c = capture_start(d, "graph_free");
    if (c <= 0)
        goto out;
    /* Something recorded, never to run (an upload's bytes are read when
     * the graph runs, so host_alloc memory would do too; copy is simpler). */
    hc_status s = HC_OPS_HAS(d->ops, copy) ? d->ops->copy(d->st, (hc_ref){a.buf, GUARD},
                                                          (hc_ref){a.buf, GUARD + 500}, 100)
                                           : HC_OK;
    CONF_CALL(d, d->ops->capture_end(d->st, &g));
    if (s != HC_OK)
        conf_fail(d, "graph_free: copy while capturing returned %d (%s)", (int)s,
                  plugin_error(d));
    if (!g) {
        conf_fail(d, "graph_free: capture_end returned HC_OK and no graph");
        goto out;
    }
    d->ops->graph_free(g);
    g = NULL;
    CONF_CALL(d, d->ops->stream_sync(d->st));
    if (dbuf_get(&a, got, 0, XFER_N) != 0)
        goto out;
    if (memcmp(got, src, XFER_N) != 0)
        conf_fail(d, "a graph freed unlaunched ran its work");
    else
        printf("conf %-28s graph_free: unlaunched: ok\n", d->name);
    capture_pass(d, 0, 1, 4400);
out:
    if (g)
        d->ops->graph_free(g);
    dbuf_free(&a);
}

/* ---- events (ABI 1.4) ---------------------------------------------------------- */

/* The first four entries: all or none (plugin.h).  0: go on; -1: failed. */
static int event_entries_ok(conf_dev *d)
{
    if (!HC_OPS_HAS(d->ops, event_create) || !HC_OPS_HAS(d->ops, event_destroy) ||
        !HC_OPS_HAS(d->ops, event_record) || !HC_OPS_HAS(d->ops, event_sync)) {
        conf_fail(d, "event_create, event_destroy, event_record, event_sync: some but not all "
                     "provided (plugin.h: all four or none)");
        return -1;
    }
    return 0;
}

#define EV_ROWS 48
#define EV_COLS 64

/* a recorded, x uploaded and y = W x queued, y downloaded into host memory,
 * b recorded; then event_sync(b) alone (no stream_sync) must leave the
 * download's bytes in place, and they must be the product.  Returns 0 with
 * a and b recorded and b synced, -1 (recorded) otherwise. */
static int event_matmul(conf_dev *d, hc_event *a, hc_event *b, uint64_t seed, const char *what)
{
    dbuf w = {0}, x = {0}, y = {0};
    float hx[EV_COLS], hy[EV_ROWS], want[EV_ROWS];
    double wantd[EV_ROWS];
    uint64_t wbytes;
    int rc = -1;
    void *wq = make_weights(HC_TYPE_F32, EV_ROWS, EV_COLS, seed, &wbytes);
    conf_rng r = rng_seed(seed + 1);
    fill_uniform(&r, hx, EV_COLS, 1.0f);
    fill_nan(hy, EV_ROWS);
    if (dbuf_new(d, &w, wbytes, wq) != 0 || dbuf_new(d, &x, sizeof hx, NULL) != 0 ||
        dbuf_new(d, &y, sizeof hy, NULL) != 0)
        goto out;
    CONF_CALL(d, d->ops->event_record(d->st, a));
    CONF_CALL(d, d->ops->upload(d->st, dref(&x), hx, sizeof hx));
    CONF_CALL(d, d->ops->matmul(d->st, HC_TYPE_F32, dref(&w), EV_ROWS, EV_COLS, dref(&x), 1,
                                dref(&y)));
    CONF_CALL(d, d->ops->download(d->st, hy, dref(&y), sizeof hy));
    CONF_CALL(d, d->ops->event_record(d->st, b));
    CONF_CALL(d, d->ops->event_sync(b));
    hc_scalar_matmul(HC_TYPE_F32, wq, EV_ROWS, EV_COLS, hx, 1, want);
    for (int i = 0; i < EV_ROWS; i++)
        wantd[i] = want[i];
    report(d, "event", worst_slot(HC_TYPE_F32), what, compare(hy, wantd, EV_ROWS),
           bound_for_type(HC_TYPE_F32));
    rc = 0;
out:
    dbuf_free(&w);
    dbuf_free(&x);
    dbuf_free(&y);
    free(wq);
    return rc;
}

/* Events made, recorded around a matmul, synced and destroyed; NULL out
 * and NULL device refused. */
static void conf_event_create(conf_dev *d)
{
    hc_event *a = NULL, *b = NULL;
    if (event_entries_ok(d) != 0)
        goto out;
    expect_refused(d, d->ops->event_create(d->dev, NULL), "event_create(out NULL)");
    expect_refused(d, d->ops->event_create(NULL, &a), "event_create(dev NULL)");
    CONF_CALL(d, d->ops->event_create(d->dev, &a));
    CONF_CALL(d, d->ops->event_create(d->dev, &b));
    if (!a || !b || a == b) {
        conf_fail(d, "event_create returned HC_OK and %s", !a || !b ? "NULL" : "one event twice");
        goto out;
    }
    if (event_matmul(d, a, b, 5100, "F32 48x64 between two events, synced by the second") == 0)
        printf("conf %-28s event_create: two events, NULL arguments refused: ok\n", d->name);
out:
    if (a && HC_OPS_HAS(d->ops, event_destroy))
        d->ops->event_destroy(a);
    if (b && HC_OPS_HAS(d->ops, event_destroy))
        d->ops->event_destroy(b);
}

/* Destroyed never recorded, after a sync, and NULL (a no-op). */
static void conf_event_destroy(conf_dev *d)
{
    hc_event *a = NULL, *b = NULL;
    if (event_entries_ok(d) != 0)
        return;
    d->ops->event_destroy(NULL);
    CONF_CALL(d, d->ops->event_create(d->dev, &a));
    d->ops->event_destroy(a); /* never recorded */
    a = NULL;
    CONF_CALL(d, d->ops->event_create(d->dev, &a));
    CONF_CALL(d, d->ops->event_create(d->dev, &b));
    if (event_matmul(d, a, b, 5200, "F32 48x64, events destroyed after") != 0)
        goto out;
    printf("conf %-28s event_destroy: unrecorded, synced, NULL: ok\n", d->name);
out:
    if (a)
        d->ops->event_destroy(a);
    if (b)
        d->ops->event_destroy(b);
}

/* Recorded twice (the mark moves), refused for NULL, for an event of
 * another device (a second handle of this one), and, while the stream
 * captures, refused with HC_E_UNSUPPORTED or captured (then the launch
 * records it). */
static void conf_event_record(conf_dev *d)
{
    hc_event *a = NULL, *b = NULL, *other = NULL;
    hc_device *dev2 = NULL;
    hc_graph *g = NULL;
    if (event_entries_ok(d) != 0)
        return;
    CONF_CALL(d, d->ops->event_create(d->dev, &a));
    CONF_CALL(d, d->ops->event_create(d->dev, &b));
    expect_refused(d, d->ops->event_record(NULL, a), "event_record(stream NULL)");
    expect_refused(d, d->ops->event_record(d->st, NULL), "event_record(event NULL)");
    if (event_matmul(d, a, b, 5300, "F32 48x64, first recording") != 0 ||
        event_matmul(d, a, b, 5301, "F32 48x64, both recorded again") != 0)
        goto out;
    CONF_CALL(d, d->ops->device_open(d->plugin->ctx, d->index, &dev2));
    CONF_CALL(d, d->ops->event_create(dev2, &other));
    expect_refused(d, d->ops->event_record(d->st, other),
                   "event_record(an event of another device handle)");
    if (HC_OPS_HAS(d->ops, capture_begin) && capture_entries_ok(d) == 0 &&
        capture_start(d, "event_record while capturing") > 0) {
        hc_status s = d->ops->event_record(d->st, a);
        CONF_CALL(d, d->ops->capture_end(d->st, &g));
        if (s == HC_OK && g) {
            CONF_CALL(d, d->ops->graph_launch(d->st, g));
            CONF_CALL(d, d->ops->event_sync(a));
        } else if (s != HC_E_UNSUPPORTED) {
            conf_fail(d, "event_record while capturing returned %d (%s): HC_OK (captured) or "
                         "HC_E_UNSUPPORTED expected",
                      (int)s, plugin_error(d));
        }
        printf("conf %-28s event_record while capturing: %s\n", d->name,
               s == HC_OK ? "captured, launched, synced" : "refused");
    }
    CONF_CALL(d, d->ops->stream_sync(d->st));
    printf("conf %-28s event_record: recorded twice, bad arguments refused: ok\n", d->name);
out:
    if (g)
        d->ops->graph_free(g);
    if (other)
        d->ops->event_destroy(other);
    if (dev2)
        d->ops->device_close(dev2);
    if (a)
        d->ops->event_destroy(a);
    if (b)
        d->ops->event_destroy(b);
}

/* A sync of an event never recorded, or NULL, is refused; one recorded on
 * an idle stream returns at once; the download before it is in place
 * (event_matmul). */
static void conf_event_sync(conf_dev *d)
{
    hc_event *a = NULL, *b = NULL;
    if (event_entries_ok(d) != 0)
        return;
    CONF_CALL(d, d->ops->event_create(d->dev, &a));
    CONF_CALL(d, d->ops->event_create(d->dev, &b));
    expect_refused(d, d->ops->event_sync(NULL), "event_sync(NULL)");
    expect_refused(d, d->ops->event_sync(a), "event_sync(an event never recorded)");
    CONF_CALL(d, d->ops->stream_sync(d->st));
    CONF_CALL(d, d->ops->event_record(d->st, a));
    CONF_CALL(d, d->ops->event_sync(a));
    CONF_CALL(d, d->ops->event_sync(a)); /* again: reached already */
    if (event_matmul(d, a, b, 5400, "F32 48x64, download valid after event_sync") != 0)
        goto out;
    CONF_CALL(d, d->ops->event_sync(a)); /* before b: reached already */
    printf("conf %-28s event_sync: idle, twice, after a download, bad arguments refused: ok\n",
           d->name);
out:
    if (a)
        d->ops->event_destroy(a);
    if (b)
        d->ops->event_destroy(b);
}

/* a, matmul, b, matmul, c: every interval >= 0 and finite, a to c the sum
 * of the two (to 0.01 ms: the clocks' ticks), a to a 0; NULL out, events
 * of two devices and an unrecorded event refused.  HC_E_UNSUPPORTED (a
 * device without a clock) skips. */
static void conf_event_elapsed(conf_dev *d)
{
    hc_event *a = NULL, *b = NULL, *c = NULL, *fresh = NULL, *other = NULL;
    hc_device *dev2 = NULL;
    double ab = -1, bc = -1, ac = -1, aa = -1;
    if (event_entries_ok(d) != 0)
        return;
    CONF_CALL(d, d->ops->event_create(d->dev, &a));
    CONF_CALL(d, d->ops->event_create(d->dev, &b));
    CONF_CALL(d, d->ops->event_create(d->dev, &c));
    CONF_CALL(d, d->ops->event_create(d->dev, &fresh));
    if (event_matmul(d, a, b, 5500, "F32 48x64, timed") != 0 ||
        event_matmul(d, b, c, 5501, "F32 48x64, timed after") != 0)
        goto out;
    hc_status s = d->ops->event_elapsed(a, b, &ab);
    if (s == HC_E_UNSUPPORTED) {
        hc_test_skip("conf %s event_elapsed: HC_E_UNSUPPORTED (%s): the core times this device "
                     "with the host's clock",
                     d->name, plugin_error(d));
        goto out;
    }
    CONF_CALL(d, s);
    CONF_CALL(d, d->ops->event_elapsed(b, c, &bc));
    CONF_CALL(d, d->ops->event_elapsed(a, c, &ac));
    CONF_CALL(d, d->ops->event_elapsed(a, a, &aa));
    if (!(isfinite(ab) && ab >= 0 && isfinite(bc) && bc >= 0 && isfinite(ac) && ac >= 0))
        conf_fail(d, "event_elapsed: a->b %g, b->c %g, a->c %g ms: each must be finite and >= 0",
                  ab, bc, ac);
    if (!(fabs(ac - (ab + bc)) <= 0.01))
        conf_fail(d, "event_elapsed: a->c %g ms is not a->b %g + b->c %g ms", ac, ab, bc);
    if (aa != 0.0)
        conf_fail(d, "event_elapsed(a, a) is %g ms, not 0", aa);
    expect_refused(d, d->ops->event_elapsed(a, b, NULL), "event_elapsed(ms NULL)");
    expect_refused(d, d->ops->event_elapsed(NULL, b, &ab), "event_elapsed(a NULL)");
    expect_refused(d, d->ops->event_elapsed(a, fresh, &ab), "event_elapsed(b never recorded)");
    CONF_CALL(d, d->ops->device_open(d->plugin->ctx, d->index, &dev2));
    CONF_CALL(d, d->ops->event_create(dev2, &other));
    expect_refused(d, d->ops->event_elapsed(a, other, &ab),
                   "event_elapsed(events of two device handles)");
    printf("conf %-28s event_elapsed: a->b %.4f ms, b->c %.4f ms, a->c %.4f ms: ok\n", d->name,
           ab, bc, ac);
out:;
    hc_event *all[] = {a, b, c, fresh, other};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            d->ops->event_destroy(all[i]);
    if (dev2)
        d->ops->device_close(dev2);
}

/* ---- the cases: one per entry of the table --------------------------------- */

/* Every entry of HC_PLUGIN_ENTRIES has its case conf_<name> above: a new
 * entry without one does not build.  An optional entry a plugin lacks is
 * reported skipped (the core's default runs instead), never passed; with
 * HOTCOLD_CONF_REQUIRE_LAYER=1 a missing layer op or stream_flush fails. */
typedef void (*conf_body)(conf_dev *d);

typedef struct conf_entry {
    const char *name;
    size_t offset; /* offsetof(hc_plugin_ops, name) */
    int required;
    int minor;
    conf_body body;
} conf_entry;

static const conf_entry ENTRIES[] = {
#define CONF_ENTRY(name, op, need, minor) {#name, offsetof(hc_plugin_ops, name), need, minor, \
                                           conf_##name},
    HC_PLUGIN_ENTRIES(CONF_ENTRY)
#undef CONF_ENTRY
};
#define N_ENTRIES ((int)(sizeof ENTRIES / sizeof ENTRIES[0]))

/* HC_OPS_HAS for an entry known by its offset. */
static int entry_present(const hc_plugin_ops *ops, const conf_entry *e)
{
    void (*fn)(void);
    if (ops->size < e->offset + sizeof fn)
        return 0;
    memcpy(&fn, (const char *)ops + e->offset, sizeof fn);
    return fn != NULL;
}

/* Loop index i: entry i / g_n_dev on device i % g_n_dev. */
START_TEST(test_entry)
{
    const conf_entry *e = &ENTRIES[_i / g_n_dev];
    conf_dev *d = &g_dev[_i % g_n_dev];
    g_fail = 0;
    if (entry_present(d->ops, e)) {
        e->body(d);
    } else {
        hc_test_skip("conf %s %s: not provided (an optional entry of ABI 1.%d; the core's "
                     "default runs instead)",
                     d->name, e->name, e->minor);
        if (layer_required() && layer_entry(e->name))
            conf_fail(d, "%s is not provided, but HOTCOLD_CONF_REQUIRE_LAYER=1 requires it",
                      e->name);
    }
    CONF_TEST_END();
}
END_TEST

/* ---- setup ------------------------------------------------------------------ */

/* The plugin file under test alone (argv[1] or $HOTCOLD_CONF_PLUGIN), or
 * NULL: whatever $HOTCOLD_PLUGIN_PATH and $HOTCOLD_PLUGINS load. */
static const char *g_named;
static const hc_plugin_candidate *g_named_cand;

/* ---- setup ------------------------------------------------------------------ */

START_TEST(test_devices_found)
{
    const char *sel = g_named ? "(ignored: one plugin file is named)" : getenv("HOTCOLD_PLUGINS");
    if (g_named)
        printf("conf testing %s alone\n", g_named);
    for (int i = 0; i < g_reg.n_candidates; i++)
        printf("conf candidate %s: state %d probe %d %s\n", g_reg.candidates[i].path,
               g_reg.candidates[i].state, g_reg.candidates[i].probe, g_reg.candidates[i].reason);
    ck_assert_msg(g_setup_error[0] == 0, "%s", g_setup_error);
    ck_assert_msg(g_n_dev > 0, "no plugin or device found (HOTCOLD_PLUGIN_PATH=%s, "
                               "HOTCOLD_PLUGINS=%s): the CPU plugin must always be there",
                  getenv("HOTCOLD_PLUGIN_PATH") ? getenv("HOTCOLD_PLUGIN_PATH") : "(unset)",
                  sel ? sel : "(unset)");
    int have_cpu = 0;
    for (int i = 0; i < g_n_dev; i++) {
        const hc_device_info *in = &g_dev[i].info;
        printf("conf device %-28s \"%s\" kind %d caps 0x%x mem %llu MiB max_buffer %llu MiB\n",
               g_dev[i].name, in->name, in->kind, in->caps,
               (unsigned long long)(in->mem_total >> 20),
               (unsigned long long)(in->max_buffer >> 20));
        ck_assert_msg(in->name[0] != 0, "%s: empty device name", g_dev[i].name);
        ck_assert_msg(in->max_buffer > 0, "%s: max_buffer is 0", g_dev[i].name);
        have_cpu |= g_dev[i].is_cpu;
    }
    /* Unless a selection leaves it out, the CPU plugin is always there. */
    if (!g_named && (!sel || strstr(sel, "cpu")))
        ck_assert_msg(have_cpu, "no CPU device among the %d found", g_n_dev);
}
END_TEST

static void open_devices(void)
{
    hc_loader_options opt = {0};
    opt.plugin_path = g_named ? g_named : getenv("HOTCOLD_PLUGIN_PATH");
    opt.select = g_named ? "" : NULL; /* "": no filter, whatever $HOTCOLD_PLUGINS says */
    opt.use_default_dirs = 0;
    opt.n_threads = HC_TEST_THREADS;
    if (hc_registry_load(&g_reg, &opt) != 0) {
        snprintf(g_setup_error, sizeof g_setup_error, "hc_registry_load failed");
        return;
    }
    if (g_named) {
        /* The path holds that one file: it is the one candidate, and it
         * must load (a rejection fails the suite with its reason). */
        g_named_cand = g_reg.n_candidates == 1 ? &g_reg.candidates[0] : NULL;
        if (!g_named_cand) {
            snprintf(g_setup_error, sizeof g_setup_error, "%s: %s", g_named,
                     g_reg.n_entries > 0 && g_reg.entries[0].missing
                         ? "no such file"
                         : "not one plugin file (a folder? name it libhc-<family>.so)");
            return;
        }
        if (g_named_cand->state != HC_CAND_LOADED) {
            snprintf(g_setup_error, sizeof g_setup_error, "%s was not loaded: %s", g_named,
                     g_named_cand->reason);
            return;
        }
    }
    for (int b = 0; b < g_reg.n_plugins; b++) {
        hc_plugin *pl = &g_reg.plugins[b];
        const hc_plugin_ops *ops = pl->ops;
        int count = ops->device_count(pl->ctx);
        for (int i = 0; i < count && g_n_dev < CONF_MAX_DEVS; i++) {
            conf_dev *d = &g_dev[g_n_dev];
            memset(d, 0, sizeof *d);
            d->plugin = pl;
            d->ops = ops;
            d->index = i;
            d->is_cpu = strcmp(pl->family, "cpu") == 0;
            snprintf(d->name, sizeof d->name, "%s%s%s:%d", pl->family, pl->variant[0] ? "-" : "",
                     pl->variant, i);
            d->info.size = sizeof d->info;
            hc_status s = ops->device_info(pl->ctx, i, &d->info);
            if (s == HC_OK)
                s = ops->device_open(pl->ctx, i, &d->dev);
            if (s == HC_OK)
                s = ops->stream_create(d->dev, &d->st);
            if (s != HC_OK) {
                snprintf(g_setup_error, sizeof g_setup_error, "%s: device setup failed: %d (%s)",
                         d->name, (int)s, ops->last_error(pl->ctx));
                if (d->dev)
                    ops->device_close(d->dev);
                continue;
            }
            g_n_dev++;
        }
    }
}

static void close_devices(void)
{
    for (int i = 0; i < g_n_dev; i++) {
        g_dev[i].ops->stream_destroy(g_dev[i].st);
        g_dev[i].ops->device_close(g_dev[i].dev);
    }
    hc_registry_free(&g_reg);
}

static TCase *device_tcase(Suite *s, const char *name, const TTest *fn, int timeout)
{
    TCase *tc = tcase_create(name);
    tcase_add_loop_test(tc, fn, 0, g_n_dev);
    tcase_set_timeout(tc, timeout);
    suite_add_tcase(s, tc);
    return tc;
}

/* Nothing selected is here: no device, and no candidate was rejected. */
static int nothing_to_test(void)
{
    const char *sel = getenv("HOTCOLD_PLUGINS");
    if (g_named) {
        /* A named plugin that loads but finds no device here (a GPU
         * plugin without its driver) has nothing to test. */
        if (g_n_dev > 0 || g_setup_error[0])
            return 0;
        hc_test_skip("%s loads but has no device here: %s", g_named, g_named_cand->reason);
        return 1;
    }
    if (g_n_dev > 0 || g_setup_error[0] || !sel || !*sel || strstr(sel, "cpu"))
        return 0;
    for (int i = 0; i < g_reg.n_candidates; i++)
        if (g_reg.candidates[i].state == HC_CAND_REJECTED)
            return 0;
    hc_test_skip("HOTCOLD_PLUGINS=%s finds no device here (%d plugin(s) loaded)", sel,
                 g_reg.n_plugins);
    return 1;
}

/* test_conformance [PLUGIN_FILE]: with a file (or $HOTCOLD_CONF_PLUGIN),
 * that plugin alone; without, what the loader finds on
 * $HOTCOLD_PLUGIN_PATH, filtered by $HOTCOLD_PLUGINS.  With
 * $HOTCOLD_CONF_NEED_PLUGIN=1 (the CTest entry test_conformance_plugin)
 * a missing file name is a skip. */
int main(int argc, char **argv)
{
    const char *env = getenv("HOTCOLD_CONF_PLUGIN");
    g_named = argc > 1 && argv[1][0] ? argv[1] : env && *env ? env : NULL;
    if (!g_named && getenv("HOTCOLD_CONF_NEED_PLUGIN")) {
        hc_test_skip("no plugin file named: configure with -DHC_CONFORMANCE_PLUGIN=/path/to/"
                     "libhc-<family>.so, or run with HOTCOLD_CONF_PLUGIN=that path");
        return 77;
    }
    open_devices();
    if (nothing_to_test()) {
        close_devices();
        return 77;
    }
    Suite *s = suite_create("conformance");
    TCase *tc = tcase_create("setup");
    tcase_add_test(tc, test_devices_found);
    suite_add_tcase(s, tc);
    /* One case per entry, named after it (CK_RUN_CASE=axpy_rows runs one). */
    for (int i = 0; i < N_ENTRIES; i++) {
        TCase *entry = tcase_create(ENTRIES[i].name);
        tcase_add_loop_test(entry, test_entry, i * g_n_dev, (i + 1) * g_n_dev);
        suite_add_tcase(s, entry);
    }
    device_tcase(s, "bad_refs", test_bad_refs, 60);
    device_tcase(s, "determinism", test_determinism, 120);

    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* GPU contexts do not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    printf("conf worst NMSE per type:\n");
    for (int i = 0; i < WORST_N; i++)
        if (g_worst_what[i][0])
            printf("conf   %-6s %.3e  (%s)\n", i < N_TYPES ? type_name(ALL_TYPES[i]) : "layer",
                   g_worst[i], g_worst_what[i]);
    close_devices();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * `hotcold bench --ops`: the weight ops of a device plugin (matmul with one
 * token, matvec_rows, axpy_rows) timed one at a time and set against the
 * host's measured read bandwidth.
 *
 * Decode is memory-bound, so the figure that matters is the bytes an op
 * actually reads (the listed rows only, for the sparse ops) per second, as a
 * share of what the memory system delivers.  Two traps make such numbers
 * lie, and the set-up below avoids both:
 *  - caches: a matrix of a few MiB read over and over stays in a large L3
 *    and looks several times faster than DRAM.  The ops cycle through enough
 *    copies of the matrix to fill --mib MiB (default 512, beyond any L3), and
 *    the sparse ops take a different row list on every pass, so a row read
 *    in one pass is not read again until the whole working set has streamed
 *    through;
 *  - tiny timings: each figure is the mean over passes that together last
 *    at least --min-time seconds, the best of --repetitions such figures.
 * Row lists are random, sorted ascending (as the core's predictor emits
 * them), and each pass uses another slice of a per-copy permutation of the
 * rows, so every row is as likely to be listed as any other.
 *
 * Beside each time the plugin's own estimate (op_cost, plugin.h) is
 * printed, so a plugin author sees how far the model is off.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ops.h"
#include "hotcold/diag.h"
#include "hotcold/hotcold.h"
#include "tool_util.h"

#define MAX_LIST 16
#define MAX_PHASES 64

/* matmul64: matmul of a 64-token prompt chunk (compute-bound: its GFLOP/s
 * are printed too); select_rows: the rows of one token's scores that pass
 * the cut (the fraction listed), on the device. */
enum { OP_MATMUL, OP_MATMUL64, OP_MATVEC_ROWS, OP_AXPY_ROWS, OP_SELECT, N_OPS };
static const char *const op_names[N_OPS] = {"matmul", "matmul64", "matvec_rows", "axpy_rows",
                                            "select_rows"};
#define PROMPT_TOK 64
#define MAX_SHAPES 8

/* --shape: a model's FFN matrix (rows n_ff, cols n_embd) and its attention
 * (heads, KV heads, head size), as the table of real shapes. */
typedef struct ops_shape {
    const char *name;
    int64_t rows, cols;
    int n_head, n_head_kv, head_dim;
} ops_shape;
static const ops_shape presets[] = {
    {"tinyllama", 5632, 2048, 32, 4, 64},  {"7b", 11008, 4096, 32, 32, 128},
    {"13b", 13824, 5120, 40, 40, 128},     {"40b", 32768, 8192, 128, 8, 64},
    {"70b", 28672, 8192, 64, 8, 128},
};

typedef struct ops_opts {
    const char *device;
    int threads[MAX_LIST], n_threads;
    hc_type types[MAX_LIST];
    int n_types;
    int64_t rows, cols;
    ops_shape shapes[MAX_SHAPES];
    int n_shapes;
    int ctx;                  /* positions attention reads */
    double fracs[MAX_LIST];
    int n_fracs;
    int want[N_OPS];
    int want_attention;
    int mib, reps;
    double min_s;
    int decode;               /* --decode: a whole token of a model shape */
    int shape[7];             /* n_embd n_ff n_layer n_head n_head_kv n_vocab rank */
} ops_opts;

/* The matrices and vectors one type's measurements run on. */
typedef struct wset {
    hc_diag *d;
    hc_type t;
    int64_t rows, cols;
    uint64_t row_bytes, mat_bytes;
    int copies;
    hc_buffer *w, *x, *h, *y, *idx;
    hc_buffer *sel;           /* select_rows: rows int32 of list, then the count */
    /* The current row lists: phases x copies lists of k rows. */
    int64_t k;
    int phases;
} wset;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold bench --ops [options]\n"
            "\n"
            "Time the ops of a device one at a time -- matmul with one token and with a\n"
            "%d-token prompt chunk, matvec_rows, axpy_rows, select_rows, decode\n"
            "attention -- on a working set larger than the caches, and report the bytes\n"
            "they read per second against the measured host read bandwidth, the\n"
            "plugin's own estimate of each time (op_cost; '-' where it has none), and\n"
            "the fixed cost of a call (tiny shapes).\n"
            "\n"
            "  -t, --threads LIST    CPU thread counts, e.g. 1,2 (default: all cores)\n"
            "      --type LIST       f32,f16,q8_0,q4_0,q6_k or all (default q4_0)\n"
            "      --shape LIST      FFN matrices (n_ff x n_embd) and attention of real\n"
            "                        models: tinyllama (5632x2048), 7b (11008x4096), 13b\n"
            "                        (13824x5120), 40b (Falcon, 32768x8192), 70b\n"
            "                        (28672x8192), all (7b..70b), or ROWSxCOLS\n"
            "                        (default: --rows x --cols)\n"
            "      --rows R          matrix rows (default 5632)\n"
            "      --cols C          matrix columns (default 2048)\n"
            "      --frac LIST       fractions of rows listed for the sparse ops and\n"
            "                        select_rows (default 1,0.5,0.1,0.03)\n"
            "      --op LIST         matmul,matmul64,matvec_rows,axpy_rows,select_rows,\n"
            "                        attention or all (default all)\n"
            "      --ctx N           positions decode attention reads (default 1024)\n"
            "      --mib M           working set in MiB (default 512)\n"
            "  -r, --repetitions N   figures per op; the best is reported (default 3)\n"
            "      --min-time S      seconds each figure averages over (default 0.1)\n"
            "      --device SPEC     device (default cpu)\n"
            "\n"
            "      --decode          instead, the weight ops of whole decode tokens, dense\n"
            "                        and sparse (--frac of the FFN rows, default 0.1), of a\n"
            "                        llama-shaped model (default: TinyLlama 1.1B):\n"
            "      --n-embd N, --n-ff N, --n-layer N, --n-head N, --n-head-kv N,\n"
            "      --n-vocab N, --rank N (predictor rank)\n"
            "  -h, --help            this text\n",
            PROMPT_TOK);
}

/* ---- option parsing --------------------------------------------------------- */

/* Splits a comma list in place; calls one(item) for each.  0 on error. */
static int parse_list(char *s, int (*one)(const char *item, void *user), void *user)
{
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (!one(tok, user))
            return 0;
    return 1;
}

static int add_threads(const char *item, void *user)
{
    ops_opts *o = user;
    int v;
    if (o->n_threads >= MAX_LIST || !hc_tool_parse_int(item, 1, 1024, &v))
        return 0;
    o->threads[o->n_threads++] = v;
    return 1;
}

static int add_type(const char *item, void *user)
{
    static const hc_type all[] = {HC_TYPE_F32, HC_TYPE_F16, HC_TYPE_Q8_0, HC_TYPE_Q4_0,
                                  HC_TYPE_Q6_K};
    ops_opts *o = user;
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++) {
        if ((strcmp(item, "all") && strcmp(item, hc_type_name(all[i]))) || o->n_types >= MAX_LIST)
            continue;
        o->types[o->n_types++] = all[i];
        if (strcmp(item, "all"))
            return 1;
    }
    return !strcmp(item, "all");
}

static int add_frac(const char *item, void *user)
{
    ops_opts *o = user;
    float v;
    if (o->n_fracs >= MAX_LIST || !hc_tool_parse_float(item, 1e-6f, 1.0f, &v))
        return 0;
    o->fracs[o->n_fracs++] = v;
    return 1;
}

static int add_op(const char *item, void *user)
{
    ops_opts *o = user;
    int found = !strcmp(item, "all");
    if (found || !strcmp(item, "attention")) {
        o->want_attention = 1;
        if (!found)
            return 1;
    }
    for (int i = 0; i < N_OPS; i++)
        if (found || !strcmp(item, op_names[i])) {
            o->want[i] = 1;
            if (strcmp(item, "all"))
                return 1;
        }
    return found;
}

/* A preset name, or ROWSxCOLS (the FFN matrix: n_ff x n_embd; attention
 * then has heads of 128 over n_embd, as many KV heads). */
static int add_shape(const char *item, void *user)
{
    ops_opts *o = user;
    if (o->n_shapes >= MAX_SHAPES)
        return 0;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(item, presets[i].name)) {
            o->shapes[o->n_shapes++] = presets[i];
            return 1;
        }
    if (!strcmp(item, "all")) {
        for (size_t i = 1; i < sizeof presets / sizeof presets[0] && o->n_shapes < MAX_SHAPES; i++)
            o->shapes[o->n_shapes++] = presets[i];
        return 1;
    }
    char *end;
    long long r = strtoll(item, &end, 10), c;
    if (end == item || *end != 'x' || r < 1 || r > (1 << 24))
        return 0;
    const char *cs = end + 1;
    c = strtoll(cs, &end, 10);
    if (end == cs || *end || c < 32 || c > (1 << 24))
        return 0;
    const int heads = c % 128 == 0 ? (int)(c / 128) : 1;
    o->shapes[o->n_shapes++] =
        (ops_shape){"custom", r, c, heads, heads, heads == 1 ? (int)c : 128};
    return 1;
}

/* ---- the working set -------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: plenty for filling matrices and shuffling rows. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* A random fp16 of magnitude 2^-6..2^-2: finite, so no NaN slows anything. */
static uint16_t rng_half(uint64_t *s)
{
    uint64_t r = rng_next(s);
    return (uint16_t)(((r >> 63) << 15) | ((9 + (r >> 32) % 5) << 10) | (r & 0x3ff));
}

/* One matrix of valid, random weights of type t. */
static void fill_matrix(hc_type t, uint8_t *m, uint64_t bytes, uint64_t *seed)
{
    uint64_t i = 0;
    switch (t) {
    case HC_TYPE_F32:
        for (; i + 4 <= bytes; i += 4) {
            float v = (float)((int64_t)(rng_next(seed) >> 40) - (1 << 23)) / (float)(1 << 25);
            memcpy(m + i, &v, 4);
        }
        break;
    case HC_TYPE_F16:
        for (; i + 2 <= bytes; i += 2) {
            uint16_t h = rng_half(seed);
            memcpy(m + i, &h, 2);
        }
        break;
    case HC_TYPE_Q4_0:
    case HC_TYPE_Q8_0: {
        const uint64_t blk = t == HC_TYPE_Q4_0 ? HC_Q4_0_BLOCK_BYTES : HC_Q8_0_BLOCK_BYTES;
        for (; i + blk <= bytes; i += blk) {
            uint16_t d = rng_half(seed);
            memcpy(m + i, &d, 2);
            for (uint64_t j = 2; j < blk; j++)
                m[i + j] = (uint8_t)rng_next(seed);
        }
        break;
    }
    case HC_TYPE_Q6_K:
        /* Any bits are valid quants and scales; d (the last 2 bytes) finite. */
        for (; i + HC_Q6_K_BLOCK_BYTES <= bytes; i += HC_Q6_K_BLOCK_BYTES) {
            uint16_t d = rng_half(seed);
            for (uint64_t j = 0; j < HC_Q6_K_BLOCK_BYTES - 2; j++)
                m[i + j] = (uint8_t)rng_next(seed);
            memcpy(m + i + HC_Q6_K_BLOCK_BYTES - 2, &d, 2);
        }
        break;
    }
}

static void wset_free(wset *ws)
{
    hc_buffer **bufs[] = {&ws->w, &ws->x, &ws->h, &ws->y, &ws->idx, &ws->sel};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            hc_diag_free(ws->d, *bufs[i]);
        *bufs[i] = NULL;
    }
}

/* Random vectors of n floats in [-1, 1) into b. */
static int upload_vector(hc_diag *d, hc_buffer *b, int64_t n, uint64_t *seed)
{
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        fprintf(stderr, "hotcold bench: out of memory\n");
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)((int64_t)(rng_next(seed) >> 40) - (1 << 23)) / (float)(1 << 23);
    int rc = hc_diag_upload(d, (hc_ref){b, 0}, v, (uint64_t)n * sizeof *v);
    free(v);
    return rc;
}

/* `copies` copies of a rows x cols matrix filling at least `bytes`, plus
 * x, h and y.  0 or -1 (message printed). */
static int wset_init(wset *ws, hc_diag *d, hc_type t, int64_t rows, int64_t cols, uint64_t bytes)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)t;
    uint8_t *host = NULL;
    int rc = -1;

    memset(ws, 0, sizeof *ws);
    ws->d = d;
    ws->t = t;
    ws->rows = rows;
    ws->cols = cols;
    ws->phases = 1; /* matmul takes no list */
    ws->row_bytes = hc_type_row_size(t, cols);
    ws->mat_bytes = ws->row_bytes * (uint64_t)rows;
    if (ws->row_bytes == 0 || ws->mat_bytes == 0) {
        fprintf(stderr, "hotcold bench: %lld columns do not fit type %s (blocks of %d)\n",
                (long long)cols, hc_type_name(t), t == HC_TYPE_Q6_K ? HC_QK_K : 32);
        return -1;
    }
    /* Whole 64-byte lines per copy, so every copy starts as aligned as the first. */
    uint64_t stride = (ws->mat_bytes + 63) & ~(uint64_t)63;
    ws->mat_bytes = stride;
    ws->copies = (int)((bytes + stride - 1) / stride);
    if (ws->copies < 1)
        ws->copies = 1;
    host = malloc(stride);
    if (!host) {
        fprintf(stderr, "hotcold bench: out of memory\n");
        goto out;
    }
    memset(host, 0, stride);
    fill_matrix(t, host, ws->row_bytes * (uint64_t)rows, &seed);
    /* x and y hold a prompt chunk's tokens (matmul64); h one token's. */
    int64_t vec = rows > cols ? rows : cols;
    if (hc_diag_alloc(d, stride * (uint64_t)ws->copies, &ws->w) ||
        hc_diag_alloc(d, (uint64_t)vec * 4 * PROMPT_TOK, &ws->x) ||
        hc_diag_alloc(d, (uint64_t)vec * 4, &ws->h) ||
        hc_diag_alloc(d, (uint64_t)vec * 4 * PROMPT_TOK, &ws->y) ||
        hc_diag_alloc(d, (uint64_t)rows * 4 + 4, &ws->sel))
        goto fail;
    for (int c = 0; c < ws->copies; c++)
        if (hc_diag_upload(d, (hc_ref){ws->w, stride * (uint64_t)c}, host, stride))
            goto fail;
    if (upload_vector(d, ws->x, vec * PROMPT_TOK, &seed) || upload_vector(d, ws->h, vec, &seed) ||
        upload_vector(d, ws->y, vec * PROMPT_TOK, &seed))
        goto fail;
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
out:
    free(host);
    if (rc)
        wset_free(ws);
    return rc;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Row lists of k rows for every (phase, copy): phase p of copy c is slice p
 * of a random permutation of that copy's rows, sorted.  Consecutive passes
 * therefore read disjoint rows until the permutation is used up. */
static int wset_lists(wset *ws, int64_t k)
{
    int64_t rows = ws->rows;
    int phases = (int)(rows / k < MAX_PHASES ? rows / k : MAX_PHASES);
    if (phases < 1)
        phases = 1;
    size_t n = (size_t)phases * (size_t)ws->copies * (size_t)k;
    int32_t *lists = malloc(n * sizeof *lists), *perm = malloc((size_t)rows * sizeof *perm);
    uint64_t seed = 0x2545f4914f6cdd1dull ^ (uint64_t)k;
    int rc = -1;

    if (!lists || !perm) {
        fprintf(stderr, "hotcold bench: out of memory\n");
        goto out;
    }
    for (int c = 0; c < ws->copies; c++) {
        for (int64_t i = 0; i < rows; i++)
            perm[i] = (int32_t)i;
        for (int64_t i = rows - 1; i > 0; i--) {
            int64_t j = (int64_t)(rng_next(&seed) % (uint64_t)(i + 1));
            int32_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        for (int p = 0; p < phases; p++) {
            int32_t *l = lists + ((size_t)p * (size_t)ws->copies + (size_t)c) * (size_t)k;
            memcpy(l, perm + (size_t)p * (size_t)k, (size_t)k * sizeof *l);
            qsort(l, (size_t)k, sizeof *l, cmp_i32);
        }
    }
    if (ws->idx)
        hc_diag_free(ws->d, ws->idx);
    ws->idx = NULL;
    if (hc_diag_alloc(ws->d, n * sizeof *lists, &ws->idx) ||
        hc_diag_upload(ws->d, (hc_ref){ws->idx, 0}, lists, n * sizeof *lists)) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        goto out;
    }
    ws->k = k;
    ws->phases = phases;
    rc = 0;
out:
    free(perm);
    free(lists);
    return rc;
}

/* ---- timing ----------------------------------------------------------------- */

static int op_failed(const wset *ws, const char *op, hc_status st)
{
    hc_diag *d = ws->d;
    fprintf(stderr, "hotcold bench: %s %s failed (status %d): %s\n", op, hc_type_name(ws->t),
            (int)st, hc_diag_plugin_error(d));
    return -1;
}

/* One op on copy c with the list of phase p: 0, 1 if the device does not
 * support it (on the first copy: nothing printed), -1 if it failed. */
static int run_op(const wset *ws, int op, int c, int p)
{
    const hc_plugin_ops *o = hc_diag_ops(ws->d);
    hc_stream *s = hc_diag_stream(ws->d);
    hc_ref w = {ws->w, ws->mat_bytes * (uint64_t)c};
    hc_ref idx = {ws->idx, ((uint64_t)p * (uint64_t)ws->copies + (uint64_t)c) * (uint64_t)ws->k * 4};
    hc_ref x = {ws->x, 0}, h = {ws->h, 0}, y = {ws->y, 0};
    hc_status st = HC_E_UNSUPPORTED;

    switch (op) {
    case OP_MATMUL: st = o->matmul(s, ws->t, w, ws->rows, ws->cols, x, 1, y); break;
    case OP_MATMUL64: st = o->matmul(s, ws->t, w, ws->rows, ws->cols, x, PROMPT_TOK, y); break;
    case OP_SELECT:
        /* h holds values in [-1, 1): the cut 1 - 2 k / rows passes about k. */
        if (o->size > offsetof(hc_plugin_ops, select_rows) && o->select_rows)
            st = o->select_rows(s, h, 1, ws->rows, 1.0f - 2.0f * (float)ws->k / (float)ws->rows,
                                (hc_ref){NULL, 0}, (hc_ref){ws->sel, 0},
                                (hc_ref){ws->sel, (uint64_t)ws->rows * 4});
        break;
    case OP_MATVEC_ROWS:
        if (o->matvec_rows)
            st = o->matvec_rows(s, ws->t, w, ws->rows, ws->cols, x, 1, idx, ws->k, y);
        break;
    case OP_AXPY_ROWS:
        if (o->axpy_rows)
            st = o->axpy_rows(s, ws->t, w, ws->rows, ws->cols, h, 1, idx, ws->k, y);
        break;
    }
    if (st == HC_E_UNSUPPORTED && c == 0)
        return 1;
    return st == HC_OK ? 0 : op_failed(ws, op_names[op], st);
}

/* Mean seconds per op over the working set: best of `reps` figures, each
 * over whole passes lasting at least min_s.  -1 on failure, -2 when the
 * device does not support the op for this type (nothing printed). */
static double time_op(const wset *ws, int op, int reps, double min_s)
{
    int phase = 0;
    double best = 1e30;

    /* One untimed pass: page faults, pool wake-up, scratch growth. */
    for (int c = 0; c < ws->copies; c++) {
        int rc = run_op(ws, op, c, phase);
        if (rc)
            return rc == 1 ? -2 : -1;
    }
    for (int r = 0; r < reps; r++) {
        long n = 0;
        double t0 = hc_tool_time_s(), dt;
        do {
            phase = (phase + 1) % ws->phases;
            for (int c = 0; c < ws->copies; c++, n++)
                if (run_op(ws, op, c, phase))
                    return -1;
            if (hc_diag_ops(ws->d)->stream_sync && hc_diag_ops(ws->d)->stream_sync(hc_diag_stream(ws->d)) != HC_OK)
                return op_failed(ws, "stream_sync", HC_E_DEVICE);
            dt = hc_tool_time_s() - t0;
        } while (dt < min_s);
        if (dt / (double)n < best)
            best = dt / (double)n;
    }
    return best;
}

/* The plugin's estimate of op on ws with k rows listed, in seconds, or -1
 * when it gives none.  op_cost prices the sparse ops for a list of every
 * row; k of them read k/rows of the weight (plugin.h). */
static double estimate(const wset *ws, int op, int64_t k)
{
    static const int ids[N_OPS] = {HC_OP_MATMUL, HC_OP_MATMUL, HC_OP_MATVEC_ROWS,
                                   HC_OP_AXPY_ROWS, HC_OP_SELECT_ROWS};
    double c = op == OP_SELECT
                   ? hc_diag_op_cost(ws->d, ids[op], HC_TYPE_F32, ws->rows, 1, 1)
                   : hc_diag_op_cost(ws->d, ids[op], ws->t, ws->rows, ws->cols,
                                     op == OP_MATMUL64 ? PROMPT_TOK : 1);
    if (!(c >= 0))
        return -1;
    return op == OP_MATVEC_ROWS || op == OP_AXPY_ROWS ? c * (double)k / (double)ws->rows : c;
}

/* flops > 0: also the arithmetic rate (matmul64, which the weights'
 * bandwidth does not bound). */
static void print_row(const char *op, hc_type t, double frac, int64_t k, uint64_t bytes,
                      double sec, double est, double bw, double flops)
{
    double gbs = (double)bytes / sec / 1e9;
    char est_us[32] = "-";
    if (est >= 0)
        snprintf(est_us, sizeof est_us, "%.1f", est * 1e6);
    printf("%-12s %-5s %6.1f%% %6lld %9.1f %9.1f %9s %8.2f %6.0f%%", op, hc_type_name(t),
           100.0 * frac, (long long)k, (double)bytes / 1024.0, sec * 1e6, est_us, gbs,
           100.0 * gbs * 1e9 / bw);
    if (flops > 0)
        printf("  %.1f GFLOP/s", flops / sec / 1e9);
    printf("\n");
}

/* Time op on ws and print its row; 0, or -1 on failure.  k: rows listed
 * (every row for the dense ops); bytes: what one call reads. */
static int bench_one(const wset *ws, const ops_opts *o, int op, int64_t k, uint64_t bytes,
                     double bw)
{
    double s = time_op(ws, op, o->reps, o->min_s);
    if (s == -2) {
        printf("%-12s %-5s not supported by this device\n", op_names[op], hc_type_name(ws->t));
        return 0;
    }
    if (s < 0)
        return -1;
    const double flops = op == OP_MATMUL64 ? 2.0 * PROMPT_TOK * (double)ws->rows * ws->cols : 0;
    print_row(op_names[op], op == OP_SELECT ? HC_TYPE_F32 : ws->t, (double)k / (double)ws->rows,
              k, bytes, s, estimate(ws, op, k), bw, flops);
    return 0;
}

/* Every wanted op and fraction for one type and shape.  select_rows has no
 * weight: it runs with the first type only. */
static int bench_type(hc_diag *d, const ops_opts *o, const ops_shape *sh, hc_type t, int first,
                      double bw)
{
    wset ws;
    int rc = -1;

    if (wset_init(&ws, d, t, sh->rows, sh->cols, (uint64_t)o->mib << 20))
        return -1;
    const uint64_t mat = ws.row_bytes * (uint64_t)ws.rows;
    if ((o->want[OP_MATMUL] && bench_one(&ws, o, OP_MATMUL, ws.rows, mat, bw)) ||
        (o->want[OP_MATMUL64] && bench_one(&ws, o, OP_MATMUL64, ws.rows, mat, bw)))
        goto out;
    for (int f = 0; f < o->n_fracs; f++) {
        int64_t k = llround(o->fracs[f] * (double)ws.rows);
        k = k < 1 ? 1 : k > ws.rows ? ws.rows : k;
        if (!o->want[OP_MATVEC_ROWS] && !o->want[OP_AXPY_ROWS] && !(first && o->want[OP_SELECT]))
            break;
        if (wset_lists(&ws, k))
            goto out;
        for (int op = OP_MATVEC_ROWS; op <= OP_AXPY_ROWS; op++)
            if (o->want[op] && bench_one(&ws, o, op, k, ws.row_bytes * (uint64_t)k, bw))
                goto out;
        /* The scores read, the list and count written. */
        if (first && o->want[OP_SELECT] &&
            bench_one(&ws, o, OP_SELECT, k, (uint64_t)ws.rows * 4 + (uint64_t)k * 4 + 4, bw))
            goto out;
    }
    rc = 0;
out:
    wset_free(&ws);
    return rc;
}

/* Decode attention of shape sh over ctx positions: a row as the weight
 * ops', rows% being the positions read (all). */
static int bench_attention_row(hc_diag *d, const ops_opts *o, const ops_shape *sh, int ctx,
                               double bw)
{
    const double s = hc_bench_attention(d, sh->n_head, sh->n_head_kv, sh->head_dim, ctx,
                                        (uint64_t)o->mib << 20, o->reps, o->min_s);
    if (s == -2) {
        printf("%-12s %-5s not supported by this device\n", "attention", "f32");
        return 0;
    }
    if (s < 0)
        return -1;
    const uint64_t bytes = 2ull * (uint64_t)ctx * sh->n_head_kv * sh->head_dim * 4;
    const double est = hc_diag_op_cost(d, HC_OP_ATTENTION, HC_TYPE_F32, ctx,
                                       (int64_t)sh->n_head_kv * sh->head_dim, 1);
    print_row("attention", HC_TYPE_F32, 1.0, ctx, bytes, s, est >= 0 ? est : -1, bw, 0);
    return 0;
}

/* The fixed cost of an op: tiny shapes whose data stay in L1, so what is
 * left is validation, dispatch and (when the op is split) waking the pool. */
static int bench_dispatch(hc_diag *d, const ops_opts *o)
{
    const int reps = o->reps;
    static const struct {
        const char *what;
        int op;
        hc_type t;
        int64_t rows, cols, k;
    } cases[] = {
        {"matmul f32 64x512 (split over threads)", OP_MATMUL, HC_TYPE_F32, 64, 512, 64},
        {"matvec_rows q4_0 1 row of 2048", OP_MATVEC_ROWS, HC_TYPE_Q4_0, 64, 2048, 1},
        {"axpy_rows q4_0 1 row of 2048", OP_AXPY_ROWS, HC_TYPE_Q4_0, 64, 2048, 1},
        {"select_rows 1 of 64 scores", OP_SELECT, HC_TYPE_F32, 64, 32, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wset ws;
        if (wset_init(&ws, d, cases[i].t, cases[i].rows, cases[i].cols, 1))
            return -1;
        double s = wset_lists(&ws, cases[i].k) ? -1 : time_op(&ws, cases[i].op, reps, 0.05);
        wset_free(&ws);
        if (s == -2)
            continue; /* the device has no such op */
        if (s < 0)
            return -1;
        printf("fixed cost   %-40s %7.2f us/op\n", cases[i].what, s * 1e6);
    }
    if (o->want_attention) {
        const double s = hc_bench_attention(d, 1, 1, 64, 1, 1, reps, 0.05);
        if (s == -1)
            return -1;
        if (s >= 0)
            printf("fixed cost   %-40s %7.2f us/op\n", "attention 1 head of 64, 1 position",
                   s * 1e6);
    }
    return 0;
}

/* ---- a whole decode token, op by op ------------------------------------------ */

/*
 * --decode: the weight ops one token of a llama-shaped model issues, dense
 * and PowerInfer-sparse, on weights laid out like a real model's (every
 * layer its own matrices, so the working set is the model's).  Only the
 * weight ops are run: the element-wise ops, attention over a short cache and
 * the row selection cost little next to them, and are the core's.  So this
 * is the ceiling the kernels put on `hotcold bench` for such a model.
 *
 * The sparse FFN reads a random --frac of the rows of gate, up and down_t,
 * a fresh list every token (from 8 per layer), so rows come from DRAM as
 * they would for a predictor whose choice varies from token to token.
 */
typedef struct dshape {
    int n_embd, n_ff, n_layer, n_head, n_head_kv, n_vocab, rank;
} dshape;

enum { K_ATTN, K_PRED, K_ROWS, K_DOWN_T, K_FFN, K_OUT, N_KINDS };
static const char *const kind_names[N_KINDS] = {
    "attention wq,wk,wv,wo", "predictor fc1,fc2", "gate,up rows", "down_t rows",
    "gate,up,down dense",    "output"};

typedef struct dmat {
    hc_type t;
    int64_t rows, cols;
    uint64_t off, bytes;
} dmat;

#define DEC_PHASES 8
#define L_WQ 0
#define L_WK 1
#define L_WV 2
#define L_WO 3
#define L_GATE 4
#define L_UP 5
#define L_DOWN 6 /* dense down (n_embd x n_ff) and down_t (n_ff x n_embd): same bytes */
#define L_FC1 7
#define L_FC2 8
#define L_N 9

typedef struct dmodel {
    hc_diag *d;
    dshape sh;
    int64_t k;                /* listed rows per layer */
    dmat *m;                  /* n_layer x L_N, then the output matrix */
    hc_buffer *w, *x, *y, *h, *idx;
    double bytes[2][N_KINDS]; /* per token: [dense, sparse] */
} dmodel;

/* Q4_0/Q8_0 rows must be whole blocks; like mkmodel, fall back to F16. */
static hc_type dec_type(hc_type t, int64_t cols)
{
    return hc_type_row_size(t, cols) ? t : HC_TYPE_F16;
}

static void dmodel_free(dmodel *dm)
{
    hc_buffer **bufs[] = {&dm->w, &dm->x, &dm->y, &dm->h, &dm->idx};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            hc_diag_free(dm->d, *bufs[i]);
        *bufs[i] = NULL;
    }
    free(dm->m);
    dm->m = NULL;
}

static int dmodel_init(dmodel *dm, hc_diag *d, const dshape *sh, hc_type t, double frac)
{
    const int64_t n = sh->n_embd, ff = sh->n_ff, kv = (int64_t)sh->n_embd / sh->n_head * sh->n_head_kv;
    const size_t nm = (size_t)sh->n_layer * L_N + 1;
    uint64_t total = 0, biggest = 0, seed = 0x5851f42d4c957f2dull;
    uint8_t *tmpl = NULL;
    int32_t *lists = NULL, *perm = NULL;
    int rc = -1;

    memset(dm, 0, sizeof *dm);
    dm->d = d;
    dm->sh = *sh;
    dm->k = llround(frac * (double)ff);
    dm->k = dm->k < 1 ? 1 : dm->k > ff ? ff : dm->k;
    dm->m = calloc(nm, sizeof *dm->m);
    if (!dm->m)
        goto oom;
    const int64_t shape[L_N][2] = {{n, n},  {kv, n}, {kv, n},       {n, n},          {ff, n},
                                   {ff, n}, {n, ff}, {sh->rank, n}, {ff, sh->rank}};
    for (size_t i = 0; i < nm; i++) {
        dmat *m = &dm->m[i];
        const int j = (int)(i % L_N);
        m->rows = i + 1 == nm ? sh->n_vocab : shape[j][0];
        m->cols = i + 1 == nm ? n : shape[j][1];
        m->t = dec_type(t, m->cols);
        m->bytes = hc_type_row_size(m->t, m->cols) * (uint64_t)m->rows;
        m->off = total;
        total += (m->bytes + 63) & ~(uint64_t)63;
        biggest = m->bytes > biggest ? m->bytes : biggest;
    }
    /* One random template, uploaded as the prefix each matrix needs (block
     * boundaries line up: every matrix starts at a block of the template). */
    tmpl = malloc(biggest);
    if (!tmpl)
        goto oom;
    if (hc_diag_alloc(d, total, &dm->w))
        goto fail;
    hc_type filled = (hc_type)-1;
    for (size_t i = 0; i < nm; i++) {
        if (dm->m[i].t != filled) {
            fill_matrix(dm->m[i].t, tmpl, biggest, &seed);
            filled = dm->m[i].t;
        }
        if (hc_diag_upload(d, (hc_ref){dm->w, dm->m[i].off}, tmpl, dm->m[i].bytes))
            goto fail;
    }
    int64_t vec = sh->n_vocab > ff ? sh->n_vocab : ff;
    if (hc_diag_alloc(d, (uint64_t)vec * 4, &dm->x) || hc_diag_alloc(d, (uint64_t)vec * 4, &dm->y) ||
        hc_diag_alloc(d, (uint64_t)vec * 4, &dm->h) || upload_vector(d, dm->x, vec, &seed) ||
        upload_vector(d, dm->h, vec, &seed))
        goto fail;
    /* Row lists: DEC_PHASES per layer, each sorted, from a fresh permutation. */
    size_t nl = (size_t)sh->n_layer * DEC_PHASES;
    lists = malloc(nl * (size_t)dm->k * sizeof *lists);
    perm = malloc((size_t)ff * sizeof *perm);
    if (!lists || !perm)
        goto oom;
    for (size_t l = 0; l < nl; l++) {
        for (int64_t i = 0; i < ff; i++)
            perm[i] = (int32_t)i;
        for (int64_t i = 0; i < dm->k; i++) {
            int64_t j = i + (int64_t)(rng_next(&seed) % (uint64_t)(ff - i));
            int32_t tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        qsort(perm, (size_t)dm->k, sizeof *perm, cmp_i32);
        memcpy(lists + l * (size_t)dm->k, perm, (size_t)dm->k * sizeof *perm);
    }
    if (hc_diag_alloc(d, nl * (uint64_t)dm->k * 4, &dm->idx) ||
        hc_diag_upload(d, (hc_ref){dm->idx, 0}, lists, nl * (uint64_t)dm->k * 4))
        goto fail;
    for (int l = 0; l < sh->n_layer; l++) {
        const dmat *m = dm->m + (size_t)l * L_N;
        double rb_rows = (double)hc_type_row_size(m[L_GATE].t, n) * (double)dm->k;
        for (int s = 0; s < 2; s++)
            dm->bytes[s][K_ATTN] += (double)(m[L_WQ].bytes + m[L_WK].bytes + m[L_WV].bytes +
                                             m[L_WO].bytes);
        dm->bytes[0][K_FFN] += (double)(m[L_GATE].bytes + m[L_UP].bytes + m[L_DOWN].bytes);
        dm->bytes[1][K_PRED] += (double)(m[L_FC1].bytes + m[L_FC2].bytes);
        dm->bytes[1][K_ROWS] += 2 * rb_rows;
        dm->bytes[1][K_DOWN_T] += rb_rows;
    }
    dm->bytes[0][K_OUT] = dm->bytes[1][K_OUT] = (double)dm->m[nm - 1].bytes;
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "hotcold bench: out of memory\n");
    goto out;
fail:
    fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
out:
    free(tmpl);
    free(lists);
    free(perm);
    if (rc)
        dmodel_free(dm);
    return rc;
}

static int dec_status(const dmodel *dm, const char *op, hc_status st)
{
    if (st == HC_OK)
        return 0;
    hc_diag *d = dm->d;
    fprintf(stderr, "hotcold bench: %s failed (status %d): %s\n", op, (int)st,
            hc_diag_plugin_error(d));
    return -1;
}

/* y = W x for matrix m (x and y: the shared scratch vectors). */
static int dec_matmul(const dmodel *dm, const dmat *m)
{
    hc_diag *d = dm->d;
    return dec_status(dm, "matmul",
                      hc_diag_ops(d)->matmul(hc_diag_stream(d), m->t, (hc_ref){dm->w, m->off}, m->rows, m->cols,
                                     (hc_ref){dm->x, 0}, 1, (hc_ref){dm->y, 0}));
}

/* One token; adds each kind's seconds to sec[].  sparse: 0 = dense. */
static int dec_token(const dmodel *dm, int sparse, int token, double sec[N_KINDS])
{
    hc_diag *d = dm->d;
    const hc_plugin_ops *o = hc_diag_ops(d);
    double t0 = hc_tool_time_s(), t1;
#define LAP(kind) (t1 = hc_tool_time_s(), sec[kind] += t1 - t0, t0 = t1)
    for (int l = 0; l < dm->sh.n_layer; l++) {
        const dmat *m = dm->m + (size_t)l * L_N;
        if (dec_matmul(dm, &m[L_WQ]) || dec_matmul(dm, &m[L_WK]) || dec_matmul(dm, &m[L_WV]) ||
            dec_matmul(dm, &m[L_WO]))
            return -1;
        LAP(K_ATTN);
        if (!sparse) {
            if (dec_matmul(dm, &m[L_GATE]) || dec_matmul(dm, &m[L_UP]) || dec_matmul(dm, &m[L_DOWN]))
                return -1;
            LAP(K_FFN);
            continue;
        }
        if (dec_matmul(dm, &m[L_FC1]) || dec_matmul(dm, &m[L_FC2]))
            return -1;
        LAP(K_PRED);
        hc_ref idx = {dm->idx, ((uint64_t)l * DEC_PHASES + (uint64_t)(token % DEC_PHASES)) *
                                   (uint64_t)dm->k * 4};
        const dmat *g = &m[L_GATE], *u = &m[L_UP];
        if (dec_status(dm, "matvec_rows",
                       o->matvec_rows(hc_diag_stream(d), g->t, (hc_ref){dm->w, g->off}, g->rows, g->cols,
                                      (hc_ref){dm->x, 0}, 1, idx, dm->k, (hc_ref){dm->y, 0})) ||
            dec_status(dm, "matvec_rows",
                       o->matvec_rows(hc_diag_stream(d), u->t, (hc_ref){dm->w, u->off}, u->rows, u->cols,
                                      (hc_ref){dm->x, 0}, 1, idx, dm->k, (hc_ref){dm->y, 0})))
            return -1;
        LAP(K_ROWS);
        /* down_t: n_ff rows of n_embd, in the bytes of the dense down. */
        if (dec_status(dm, "axpy_rows",
                       o->axpy_rows(hc_diag_stream(d), g->t, (hc_ref){dm->w, m[L_DOWN].off}, g->rows,
                                    g->cols, (hc_ref){dm->h, 0}, 1, idx, dm->k,
                                    (hc_ref){dm->y, 0})))
            return -1;
        LAP(K_DOWN_T);
    }
    if (dec_matmul(dm, &dm->m[(size_t)dm->sh.n_layer * L_N]))
        return -1;
    LAP(K_OUT);
#undef LAP
    return 0;
}

static int bench_decode(hc_diag *d, const ops_opts *o, const dshape *sh, hc_type t, double frac,
                        double bw)
{
    dmodel dm;
    int rc = -1;

    if (dmodel_init(&dm, d, sh, t, frac))
        return -1;
    printf("decode       %d layers, n_embd %d, n_ff %d, heads %d/%d, vocab %d, predictor rank %d, "
           "%s, %.1f%% of FFN rows\n",
           sh->n_layer, sh->n_embd, sh->n_ff, sh->n_head, sh->n_head_kv, sh->n_vocab, sh->rank,
           hc_type_name(t), 100.0 * (double)dm.k / sh->n_ff);
    double tok_s[2] = {0, 0};
    for (int sparse = 0; sparse < 2; sparse++) {
        double best[N_KINDS] = {0}, best_total = 1e30;
        int token = 0;
        for (int w = 0; w < 2; w++) { /* warm-up: pool, scratch, page tables */
            double sec[N_KINDS] = {0};
            if (dec_token(&dm, sparse, token++, sec))
                goto out;
        }
        for (int r = 0; r < o->reps; r++) {
            double sec[N_KINDS] = {0}, total = 0, t0 = hc_tool_time_s();
            int nt = 0;
            do {
                if (dec_token(&dm, sparse, token++, sec))
                    goto out;
                nt++;
            } while (hc_tool_time_s() - t0 < o->min_s * 5);
            for (int k = 0; k < N_KINDS; k++) {
                sec[k] /= nt;
                total += sec[k];
            }
            if (total < best_total) {
                best_total = total;
                memcpy(best, sec, sizeof best);
            }
        }
        double bytes = 0;
        for (int k = 0; k < N_KINDS; k++)
            bytes += dm.bytes[sparse][k];
        tok_s[sparse] = 1.0 / best_total;
        printf("%-6s       %8.1f MiB/token %8.2f ms/token %7.2f tok/s %7.2f GB/s %5.0f%% of bw "
               "(floor %.2f tok/s)\n",
               sparse ? "sparse" : "dense", bytes / (1 << 20), best_total * 1e3, 1.0 / best_total,
               bytes / best_total / 1e9, 100.0 * bytes / best_total / bw, bw / bytes);
        for (int k = 0; k < N_KINDS; k++) {
            if (dm.bytes[sparse][k] == 0)
                continue;
            printf("  %-22s %8.1f MiB %8.2f ms %7.2f GB/s %5.0f%%\n", kind_names[k],
                   dm.bytes[sparse][k] / (1 << 20), best[k] * 1e3,
                   dm.bytes[sparse][k] / best[k] / 1e9, 100.0 * dm.bytes[sparse][k] / best[k] / bw);
        }
    }
    printf("sparse/dense %.2fx\n", tok_s[1] / tok_s[0]);
    rc = 0;
out:
    dmodel_free(&dm);
    return rc;
}

int hc_bench_ops_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--ops"))
            return 1;
    return 0;
}

int hc_bench_ops(int argc, char **argv)
{
    enum { O_OPS = 256, O_TYPE, O_ROWS, O_COLS, O_FRAC, O_OP, O_MIB, O_MINT, O_DEV, O_DECODE,
           O_SHAPES, O_CTX, O_SHAPE /* + index into ops_opts.shape */ };
    static const struct option longopts[] = {
        {"ops", no_argument, 0, O_OPS},          {"threads", required_argument, 0, 't'},
        {"type", required_argument, 0, O_TYPE},  {"rows", required_argument, 0, O_ROWS},
        {"cols", required_argument, 0, O_COLS},  {"frac", required_argument, 0, O_FRAC},
        {"op", required_argument, 0, O_OP},      {"mib", required_argument, 0, O_MIB},
        {"repetitions", required_argument, 0, 'r'}, {"min-time", required_argument, 0, O_MINT},
        {"device", required_argument, 0, O_DEV}, {"help", no_argument, 0, 'h'},
        {"decode", no_argument, 0, O_DECODE},    {"n-embd", required_argument, 0, O_SHAPE + 0},
        {"n-ff", required_argument, 0, O_SHAPE + 1}, {"n-layer", required_argument, 0, O_SHAPE + 2},
        {"n-head", required_argument, 0, O_SHAPE + 3},
        {"n-head-kv", required_argument, 0, O_SHAPE + 4},
        {"n-vocab", required_argument, 0, O_SHAPE + 5}, {"rank", required_argument, 0, O_SHAPE + 6},
        {"shape", required_argument, 0, O_SHAPES}, {"ctx", required_argument, 0, O_CTX},
        {0, 0, 0, 0},
    };
    ops_opts o = {.device = "cpu", .rows = 5632, .cols = 2048, .mib = 512, .reps = 3,
                  .min_s = 0.1, .ctx = 1024, .shape = {2048, 5632, 22, 32, 4, 32000, 256}};
    hc_engine *e = NULL;
    hc_diag *dev = NULL;
    int rc = 1, c, ok, v;
    float fv;

    optind = 1;
    while ((c = getopt_long(argc, argv, "t:r:h", longopts, NULL)) != -1) {
        ok = 1;
        switch (c) {
        case O_OPS: break;
        case 't': ok = parse_list(optarg, add_threads, &o); break;
        case O_TYPE: ok = parse_list(optarg, add_type, &o); break;
        case O_FRAC: ok = parse_list(optarg, add_frac, &o); break;
        case O_OP: ok = parse_list(optarg, add_op, &o); break;
        case O_SHAPES: ok = parse_list(optarg, add_shape, &o); break;
        case O_CTX: ok = hc_tool_parse_int(optarg, 1, 1 << 24, &o.ctx); break;
        case O_ROWS:
            ok = hc_tool_parse_int(optarg, 1, 1 << 24, &v);
            o.rows = v;
            break;
        case O_COLS:
            ok = hc_tool_parse_int(optarg, 32, 1 << 24, &v);
            o.cols = v;
            break;
        case O_MIB: ok = hc_tool_parse_int(optarg, 1, 1 << 20, &o.mib); break;
        case 'r': ok = hc_tool_parse_int(optarg, 1, 1000, &o.reps); break;
        case O_MINT:
            ok = hc_tool_parse_float(optarg, 0.0f, 60.0f, &fv);
            o.min_s = fv;
            break;
        case O_DEV: o.device = optarg; break;
        case O_DECODE: o.decode = 1; break;
        case 'h': usage(stdout); return 0;
        default:
            if (c >= O_SHAPE && c < O_SHAPE + 7) {
                ok = hc_tool_parse_int(optarg, 1, 1 << 24, &o.shape[c - O_SHAPE]);
                break;
            }
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "hotcold bench: bad value '%s' for %s (see --help)\n", optarg,
                    hc_tool_option_name(longopts, c));
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o.n_types == 0)
        o.types[o.n_types++] = HC_TYPE_Q4_0;
    if (o.decode && (o.shape[0] % o.shape[3] || o.shape[3] % o.shape[4])) {
        fprintf(stderr, "hotcold bench: --n-embd must be a multiple of --n-head, and --n-head "
                        "of --n-head-kv\n");
        return 2;
    }
    for (int i = 0; o.decode && i < o.n_types; i++)
        if (o.types[i] == HC_TYPE_Q6_K) {
            fprintf(stderr, "hotcold bench: --decode gives every weight one type, and q6_k has no "
                            "axpy_rows (the sparse down projection): time it without --decode\n");
            return 2;
        }
    if (o.n_fracs == 0 && o.decode)
        o.fracs[o.n_fracs++] = 0.1;
    if (o.n_fracs == 0) {
        static const double def[] = {1.0, 0.5, 0.1, 0.03};
        memcpy(o.fracs, def, sizeof def);
        o.n_fracs = 4;
    }
    int any = o.want_attention;
    for (int i = 0; i < N_OPS; i++)
        any |= o.want[i];
    if (!any) {
        for (int i = 0; i < N_OPS; i++)
            o.want[i] = 1;
        o.want_attention = 1;
    }
    if (o.n_shapes == 0) {
        const int heads = o.cols % 128 == 0 ? (int)(o.cols / 128) : 1;
        o.shapes[o.n_shapes++] =
            (ops_shape){"--rows x --cols", o.rows, o.cols, heads, heads,
                        heads == 1 ? (int)o.cols : 128};
    }

    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = o.n_threads ? o.threads[0] : 0;
    e = hc_engine_open(&ep);
    int di = e ? hc_engine_find_device(e, o.device) : -1;
    if (!e || di < 0 || !(dev = hc_diag_open(e, di))) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        goto out;
    }
    const hc_device_info *info = hc_diag_info(dev);
    if (o.n_threads == 0)
        o.threads[o.n_threads++] = info->n_threads > 0 ? info->n_threads : 1;

    for (int ti = 0; ti < o.n_threads; ti++) {
        int nt = o.threads[ti];
        if (hc_engine_set_threads(e, nt)) {
            fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
            goto out;
        }
        fprintf(stderr, "measuring host memory bandwidth with %d thread%s...\n", nt,
                nt == 1 ? "" : "s");
        double bw = hc_host_read_bandwidth(nt, 0, 3);
        if (bw <= 0) {
            fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
            goto out;
        }
        printf("device       %s (%s, %s), %d thread%s\n", info->name, o.device, hc_diag_label(dev), nt,
               nt == 1 ? "" : "s");
        printf("bandwidth    %.2f GB/s host read (measured, %d thread%s)\n", bw / 1e9, nt,
               nt == 1 ? "" : "s");
        if (o.decode) {
            const dshape sh = {o.shape[0], o.shape[1], o.shape[2], o.shape[3],
                               o.shape[4], o.shape[5], o.shape[6]};
            for (int i = 0; i < o.n_types; i++)
                for (int f = 0; f < o.n_fracs; f++)
                    if (bench_decode(dev, &o, &sh, o.types[i], o.fracs[f], bw))
                        goto out;
            printf("\n");
            continue;
        }
        for (int si = 0; si < o.n_shapes; si++) {
            const ops_shape *sh = &o.shapes[si];
            printf("shape        %s: %lld x %lld, working set >= %d MiB, best of %d\n", sh->name,
                   (long long)sh->rows, (long long)sh->cols, o.mib, o.reps);
            printf("%-12s %-5s %7s %6s %9s %9s %9s %8s %7s\n", "op", "type", "rows%", "rows",
                   "KiB/op", "us/op", "est us", "GB/s", "%bw");
            for (int i = 0; i < o.n_types; i++)
                if (bench_type(dev, &o, sh, o.types[i], i == 0, bw))
                    goto out;
            if (o.want_attention && bench_attention_row(dev, &o, sh, o.ctx, bw))
                goto out;
        }
        if (bench_dispatch(dev, &o))
            goto out;
        printf("\n");
    }
    rc = 0;
out:
    hc_diag_close(dev);
    hc_engine_close(e);
    return rc;
}

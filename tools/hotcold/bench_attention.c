/*
 * `hotcold bench --ops`: decode attention (one query token over an F32 KV
 * cache of `ctx` positions), timed like the weight ops: enough copies of
 * the cache to stream past the caches, the mean over passes lasting the
 * minimum time, the best of the repetitions.  What it reads is the K and V
 * rows of every position.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_ops.h"
#include "hotcold/diag.h"
#include "tool_util.h"

#define MAX_COPIES 256

typedef struct att_set {
    hc_diag *d;
    hc_buffer *q, *out, *pos, *kv;
    uint64_t kv_bytes; /* K then V of one copy */
    int copies;
} att_set;

static void att_free(att_set *a)
{
    hc_buffer *bufs[] = {a->q, a->out, a->pos, a->kv};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            hc_diag_free(a->d, bufs[i]);
}

/* Zeros would do for timing, but finite random-ish values keep the
 * softmax honest; any fixed pattern serves. */
static int fill(hc_diag *d, hc_buffer *b, uint64_t floats, float scale)
{
    float *v = malloc((size_t)floats * sizeof *v);
    if (!v)
        return -1;
    for (uint64_t i = 0; i < floats; i++)
        v[i] = scale * (float)((int)(i * 2654435761u % 2001u) - 1000) / 1000.0f;
    const int rc = hc_diag_upload(d, (hc_ref){b, 0}, v, floats * sizeof *v);
    free(v);
    return rc;
}

static int att_run(const att_set *a, int c, int n_head, int n_head_kv, int head_dim, int ctx)
{
    const hc_plugin_ops *o = hc_diag_ops(a->d);
    const uint64_t half = a->kv_bytes / 2, base = a->kv_bytes * (uint64_t)c;
    hc_status st = o->attention(hc_diag_stream(a->d), (hc_ref){a->q, 0}, (hc_ref){a->kv, base},
                                (hc_ref){a->kv, base + half}, (hc_ref){a->out, 0}, 1,
                                (hc_ref){a->pos, 0}, n_head, n_head_kv, head_dim,
                                1.0f / sqrtf((float)head_dim));
    (void)ctx;
    if (st == HC_OK)
        return 0;
    if (st == HC_E_UNSUPPORTED && c == 0)
        return 1;
    fprintf(stderr, "hotcold bench: attention failed (status %d): %s\n", (int)st,
            hc_diag_plugin_error(a->d));
    return -1;
}

double hc_bench_attention(hc_diag *d, int n_head, int n_head_kv, int head_dim, int ctx,
                          uint64_t set_bytes, int reps, double min_s)
{
    att_set a = {d, NULL, NULL, NULL, NULL, 0, 1};
    const uint64_t row = (uint64_t)n_head_kv * head_dim * 4;
    double best = -1;
    a.kv_bytes = 2 * row * (uint64_t)ctx;
    a.copies = (int)((set_bytes + a.kv_bytes - 1) / a.kv_bytes);
    a.copies = a.copies < 1 ? 1 : a.copies > MAX_COPIES ? MAX_COPIES : a.copies;
    const int32_t last = ctx - 1;
    if (!hc_diag_ops(d)->attention) {
        best = -2;
        goto out;
    }
    if (hc_diag_alloc(d, (uint64_t)n_head * head_dim * 4, &a.q) ||
        hc_diag_alloc(d, (uint64_t)n_head * head_dim * 4, &a.out) ||
        hc_diag_alloc(d, 4, &a.pos) || hc_diag_alloc(d, a.kv_bytes * (uint64_t)a.copies, &a.kv) ||
        fill(d, a.q, (uint64_t)n_head * head_dim, 1.0f) ||
        fill(d, a.kv, a.kv_bytes / 4 * (uint64_t)a.copies, 0.5f) ||
        hc_diag_upload(d, (hc_ref){a.pos, 0}, &last, 4)) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        goto out;
    }
    /* One untimed pass (scratch growth, first touches). */
    for (int c = 0; c < a.copies; c++) {
        const int rc = att_run(&a, c, n_head, n_head_kv, head_dim, ctx);
        if (rc) {
            best = rc == 1 ? -2 : -1;
            goto out;
        }
    }
    best = 1e30;
    for (int r = 0; r < reps; r++) {
        long n = 0;
        double t0 = hc_tool_time_s(), dt;
        do {
            for (int c = 0; c < a.copies; c++, n++)
                if (att_run(&a, c, n_head, n_head_kv, head_dim, ctx)) {
                    best = -1;
                    goto out;
                }
            if (hc_diag_sync(d)) {
                fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
                best = -1;
                goto out;
            }
            dt = hc_tool_time_s() - t0;
        } while (dt < min_s);
        if (dt / (double)n < best)
            best = dt / (double)n;
    }
out:
    att_free(&a);
    return best;
}

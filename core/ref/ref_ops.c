/*
 * Reference ops: the semantics of each hc_plugin_ops compute entry
 * (include/hotcold/plugin.h), as plain loops over host memory.  Sums are
 * kept in double so the reference is more accurate than anything it judges.
 * Nothing here allocates: per-call scratch is a small fixed array on the
 * stack, and long dimensions are walked in chunks of it.
 */
#include "ref.h"

#include <math.h>

/* Elements handled per chunk: a multiple of every block size (32, 256). */
#define REF_CHUNK 256

void hc_scalar_matmul(hc_type t, const void *w, int64_t rows, int64_t cols, const float *x,
                      int64_t n, float *y)
{
    uint64_t row_bytes = hc_type_row_size(t, cols);
    for (int64_t tok = 0; tok < n; tok++)
        for (int64_t r = 0; r < rows; r++) {
            const uint8_t *row = (const uint8_t *)w + (uint64_t)r * row_bytes;
            y[tok * rows + r] = (float)hc_scalar_dot_row(t, row, x + tok * cols, cols);
        }
}

void hc_scalar_matvec_rows(hc_type t, const void *w, int64_t rows, int64_t cols, const float *x,
                           int64_t n, const int32_t *idx, int64_t n_idx, float *y)
{
    uint64_t row_bytes = hc_type_row_size(t, cols);
    for (int64_t k = 0; k < n_idx; k++) {
        int64_t r = idx[k];
        const uint8_t *row = (const uint8_t *)w + (uint64_t)r * row_bytes;
        for (int64_t tok = 0; tok < n; tok++)
            y[tok * rows + r] = (float)hc_scalar_dot_row(t, row, x + tok * cols, cols);
    }
}

void hc_scalar_axpy_rows(hc_type t, const void *wt, int64_t rows, int64_t cols, const float *h,
                         int64_t n, const int32_t *idx, int64_t n_idx, float *y)
{
    uint64_t row_bytes = hc_type_row_size(t, cols);
    float w[REF_CHUNK];
    double acc[REF_CHUNK];
    for (int64_t tok = 0; tok < n; tok++) {
        float *yt = y + tok * cols;
        const float *ht = h + tok * rows;
        /* Walk the output in column chunks so each listed row is read in
         * contiguous pieces while the sums stay in double. */
        for (int64_t c0 = 0; c0 < cols; c0 += REF_CHUNK) {
            int64_t len = cols - c0 < REF_CHUNK ? cols - c0 : REF_CHUNK;
            for (int64_t c = 0; c < len; c++)
                acc[c] = yt[c0 + c];
            for (int64_t k = 0; k < n_idx; k++) {
                int64_t r = idx[k];
                const uint8_t *part = (const uint8_t *)wt + (uint64_t)r * row_bytes +
                                      hc_type_row_size(t, c0);
                hc_scalar_dequantize_row(t, part, w, len);
                for (int64_t c = 0; c < len; c++)
                    acc[c] += (double)ht[r] * (double)w[c];
            }
            for (int64_t c = 0; c < len; c++)
                yt[c0 + c] = (float)acc[c];
        }
    }
}

void hc_scalar_rmsnorm(const float *x, const float *w, float *y, int64_t n, int64_t dim, float eps)
{
    for (int64_t tok = 0; tok < n; tok++) {
        const float *xt = x + tok * dim;
        double ss = 0.0;
        for (int64_t i = 0; i < dim; i++)
            ss += (double)xt[i] * (double)xt[i];
        double inv = 1.0 / sqrt(ss / (double)dim + (double)eps);
        for (int64_t i = 0; i < dim; i++)
            y[tok * dim + i] = (float)((double)xt[i] * inv * (double)w[i]);
    }
}

void hc_scalar_rope(float *x, int64_t n_tok, int64_t n_head, int64_t head_dim, int64_t n_rot,
                    const int32_t *pos, float freq_base, float freq_scale, int mode)
{
    for (int64_t tok = 0; tok < n_tok; tok++)
        for (int64_t hd = 0; hd < n_head; hd++) {
            float *v = x + (tok * n_head + hd) * head_dim;
            for (int64_t i = 0; i < n_rot / 2; i++) {
                double theta = (double)pos[tok] * (double)freq_scale *
                               pow((double)freq_base, -2.0 * (double)i / (double)n_rot);
                /* NORM rotates adjacent pairs; NEOX pairs the two halves. */
                int64_t a = mode == HC_ROPE_NEOX ? i : 2 * i;
                int64_t b = mode == HC_ROPE_NEOX ? i + n_rot / 2 : 2 * i + 1;
                double x0 = v[a], x1 = v[b];
                v[a] = (float)(x0 * cos(theta) - x1 * sin(theta));
                v[b] = (float)(x0 * sin(theta) + x1 * cos(theta));
            }
        }
}

/* scale * (q . k) in double. */
static double attn_score(const float *q, const float *k, int64_t head_dim, float scale)
{
    double s = 0.0;
    for (int64_t d = 0; d < head_dim; d++)
        s += (double)q[d] * (double)k[d];
    return s * (double)scale;
}

#define REF_ATTN_CHUNK 64

void hc_scalar_attention(const float *q, const float *k, const float *v, float *out, int64_t n_tok,
                         const int32_t *pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                         float scale)
{
    int64_t group = n_head / n_head_kv; /* query heads per KV head */
    int64_t kv_stride = n_head_kv * head_dim;
    for (int64_t tok = 0; tok < n_tok; tok++)
        for (int64_t h = 0; h < n_head; h++) {
            const float *qh = q + (tok * n_head + h) * head_dim;
            const float *kh = k + (h / group) * head_dim;
            const float *vh = v + (h / group) * head_dim;
            float *oh = out + (tok * n_head + h) * head_dim;
            int64_t n_ctx = (int64_t)pos[tok] + 1; /* causal: positions 0..pos */

            double max = -INFINITY;
            for (int64_t p = 0; p < n_ctx; p++) {
                double s = attn_score(qh, kh + p * kv_stride, head_dim, scale);
                if (s > max)
                    max = s;
            }
            /* Softmax-weighted sum of v, a chunk of output dims at a time so
             * the accumulators fit on the stack; scores are recomputed per
             * chunk, which is cheap next to clarity. */
            for (int64_t d0 = 0; d0 < head_dim; d0 += REF_ATTN_CHUNK) {
                int64_t len = head_dim - d0 < REF_ATTN_CHUNK ? head_dim - d0 : REF_ATTN_CHUNK;
                double acc[REF_ATTN_CHUNK] = {0};
                double sum = 0.0;
                for (int64_t p = 0; p < n_ctx; p++) {
                    double e = exp(attn_score(qh, kh + p * kv_stride, head_dim, scale) - max);
                    sum += e;
                    for (int64_t d = 0; d < len; d++)
                        acc[d] += e * (double)vh[p * kv_stride + d0 + d];
                }
                for (int64_t d = 0; d < len; d++)
                    oh[d0 + d] = (float)(acc[d] / sum);
            }
        }
}

static double silu(double x)
{
    return x / (1.0 + exp(-x));
}

void hc_scalar_unary(int op, const float *x, float *y, int64_t n, float param)
{
    for (int64_t i = 0; i < n; i++) {
        double xi = x[i], r;
        switch (op) {
        case HC_UNARY_RELU_SHIFT: r = fmax(xi - param, 0.0); break;
        case HC_UNARY_SILU: r = silu(xi); break;
        case HC_UNARY_SCALE: r = xi * param; break;
        default: r = NAN; break; /* unknown op: make misuse visible */
        }
        y[i] = (float)r;
    }
}

void hc_scalar_binary(int op, const float *a, const float *b, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        switch (op) {
        case HC_BINARY_ADD: y[i] = a[i] + b[i]; break;
        case HC_BINARY_MUL: y[i] = a[i] * b[i]; break;
        default: y[i] = NAN; break;
        }
    }
}

void hc_scalar_glu(int act, const float *g, const float *u, float *h, int64_t n, float shift)
{
    for (int64_t i = 0; i < n; i++) {
        double gi = g[i], ui = u[i], r;
        switch (act) {
        case HC_GLU_SILU: r = silu(gi) * ui; break;
        case HC_GLU_RELU: r = fmax(gi - shift, 0.0) * ui; break;
        case HC_GLU_RELU_BOTH: r = fmax(gi - shift, 0.0) * fmax(ui, 0.0); break;
        default: r = NAN; break;
        }
        h[i] = (float)r;
    }
}

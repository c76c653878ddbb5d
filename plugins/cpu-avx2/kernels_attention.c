/*
 * Causal attention over an F32 KV cache, one (token, head) pair per unit of
 * work, units split statically over threads.  Per unit: scores = q.k * scale
 * for positions 0..pos[t], a max-subtracted softmax (stable for any score
 * range), then out = sum_p softmax_p * v_p, summed in position order.
 */
#include "kernels_common.h"

#if defined(HC_CPU_KERNELS_AVX2)
HC_ALWAYS_INLINE float dot(const float *a, const float *b, int64_t n)
{
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    float s = hc_hsum8(acc);
    for (; i < n; i++)
        s = fmaf(a[i], b[i], s);
    return s;
}

/* sc[p] = exp(sc[p] - m); returns the sum (full vectors, then the tail). */
static float exp_and_sum(float *sc, int64_t n, float m)
{
    const __m256 mv = _mm256_set1_ps(m);
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = hc_exp8(_mm256_sub_ps(_mm256_loadu_ps(sc + i), mv));
        _mm256_storeu_ps(sc + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hc_hsum8(acc);
    if (i < n) {
        hc_store_tail(sc + i, hc_exp8(_mm256_sub_ps(hc_load_tail(sc + i, n - i), mv)), n - i);
        for (; i < n; i++)
            sum += sc[i];
    }
    return sum;
}

/* out[d] = inv * sum_p w[p] * v[p][d]: 32 columns of accumulators at a time
 * walk all positions, so out is written once. */
static void weighted_sum(const float *w, const float *v, int64_t stride, int64_t n, int64_t hd,
                         float inv, float *out)
{
    const __m256 iv = _mm256_set1_ps(inv);
    int64_t d = 0;
    for (; d + 32 <= hd; d += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t p = 0; p < n; p++) {
            const float *vp = v + p * stride + d;
            __m256 wv = _mm256_broadcast_ss(&w[p]);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(vp), wv, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(vp + 8), wv, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(vp + 16), wv, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(vp + 24), wv, a3);
        }
        _mm256_storeu_ps(out + d, _mm256_mul_ps(a0, iv));
        _mm256_storeu_ps(out + d + 8, _mm256_mul_ps(a1, iv));
        _mm256_storeu_ps(out + d + 16, _mm256_mul_ps(a2, iv));
        _mm256_storeu_ps(out + d + 24, _mm256_mul_ps(a3, iv));
    }
    for (; d + 8 <= hd; d += 8) {
        __m256 a0 = _mm256_setzero_ps();
        for (int64_t p = 0; p < n; p++)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(v + p * stride + d), _mm256_broadcast_ss(&w[p]), a0);
        _mm256_storeu_ps(out + d, _mm256_mul_ps(a0, iv));
    }
    for (; d < hd; d++) {
        float s = 0;
        for (int64_t p = 0; p < n; p++)
            s = fmaf(v[p * stride + d], w[p], s);
        out[d] = s * inv;
    }
}
#else
static float dot(const float *a, const float *b, int64_t n)
{
    float s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static float exp_and_sum(float *sc, int64_t n, float m)
{
    float sum = 0;
    for (int64_t i = 0; i < n; i++) {
        sc[i] = expf(sc[i] - m);
        sum += sc[i];
    }
    return sum;
}

static void weighted_sum(const float *w, const float *v, int64_t stride, int64_t n, int64_t hd,
                         float inv, float *out)
{
    for (int64_t d = 0; d < hd; d++) {
        float s = 0;
        for (int64_t p = 0; p < n; p++)
            s += v[p * stride + d] * w[p];
        out[d] = s * inv;
    }
}
#endif

void hc_cpu_attention_task(void *args, int ith, int nth)
{
    const hc_cpu_attn_args *a = args;
    const int64_t hd = a->head_dim, qw = a->n_head * hd, kvw = a->n_head_kv * hd;
    const int64_t group = a->n_head / a->n_head_kv;
    float *sc = a->scratch + (size_t)ith * (size_t)a->scratch_stride;
    int64_t u0, u1;

    hc_cpu_split(a->n_tok * a->n_head, ith, nth, 1, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t t = u / a->n_head, h = u % a->n_head, kvh = h / group;
        const int64_t n = (int64_t)a->pos[t] + 1;
        const float *q = a->q + t * qw + h * hd;
        const float *k = a->k + kvh * hd, *v = a->v + kvh * hd;
        float m = -INFINITY;
        for (int64_t p = 0; p < n; p++) {
            sc[p] = dot(q, k + p * kvw, hd) * a->scale;
            m = sc[p] > m ? sc[p] : m;
        }
        float sum = exp_and_sum(sc, n, m);
        weighted_sum(sc, v, kvw, n, hd, 1.0f / sum, a->out + t * qw + h * hd);
    }
}

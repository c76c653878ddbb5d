/*
 * rmsnorm, rope and the element-wise ops.  Element-wise work is split at
 * multiples of 8 and tails go through the same vector code (zero-padded),
 * so an element's result does not depend on the split.
 */
#include "kernels_common.h"

/* ---- rmsnorm: split over rows ---------------------------------------------- */

void hc_cpu_rmsnorm_task(void *args, int ith, int nth)
{
    const hc_cpu_rmsnorm_args *a = args;
    const int64_t dim = a->dim;
    int64_t r0, r1;

    hc_cpu_split(a->n, ith, nth, 1, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = a->x + r * dim;
        float *y = a->y + r * dim;
        float ss;
        int64_t c = 0;
#if defined(HC_CPU_KERNELS_AVX2)
        __m256 acc = _mm256_setzero_ps();
        for (; c + 8 <= dim; c += 8) {
            __m256 v = _mm256_loadu_ps(x + c);
            acc = _mm256_fmadd_ps(v, v, acc);
        }
        ss = hc_hsum8(acc);
#else
        ss = 0;
#endif
        for (; c < dim; c++)
            ss = HC_FMAF(x[c], x[c], ss);
        const float scale = 1.0f / sqrtf(ss / (float)dim + a->eps);
        c = 0;
#if defined(HC_CPU_KERNELS_AVX2)
        const __m256 sv = _mm256_set1_ps(scale);
        for (; c + 8 <= dim; c += 8)
            _mm256_storeu_ps(y + c, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c), sv),
                                                  _mm256_loadu_ps(a->w + c)));
#endif
        for (; c < dim; c++)
            y[c] = (x[c] * scale) * a->w[c];
    }
}

/* ---- rope: split over (token, head) ---------------------------------------- */

/* inv[i] = base^(-2i/n_rot), i < n_rot/2. */
static void rope_inv(int64_t n_rot, float freq_base, double *inv)
{
    for (int64_t i = 0; i < n_rot / 2; i++)
        inv[i] = pow((double)freq_base, -2.0 * (double)i / (double)n_rot);
}

/* cos/sin of pos * freq_scale * inv[i], in double so large positions keep
 * their precision, rounded once to float. */
static void rope_table(int64_t n_rot, float freq_scale, const double *inv, int32_t pos, float *cs)
{
    for (int64_t i = 0; i < n_rot / 2; i++) {
        double th = (double)pos * (double)freq_scale * inv[i];
        cs[2 * i] = (float)cos(th);
        cs[2 * i + 1] = (float)sin(th);
    }
}

void hc_cpu_rope_cs(int64_t n_rot, float freq_base, float freq_scale, int32_t pos, float *cs,
                    double *inv)
{
    rope_inv(n_rot, freq_base, inv);
    rope_table(n_rot, freq_scale, inv, pos, cs);
}

void hc_cpu_rope_task(void *args, int ith, int nth)
{
    const hc_cpu_rope_args *a = args;
    const int64_t half = a->n_rot / 2, width = a->n_head * a->head_dim;
    /* Per thread: n_rot floats of cos/sin, then n_rot/2 doubles of inv. */
    float *cs = a->scratch + (size_t)ith * 2 * (size_t)a->n_rot;
    double *inv = (double *)(cs + a->n_rot);
    const float *tab = cs;
    int64_t u0, u1, have = -1;

    hc_cpu_split(a->n_tok * a->n_head, ith, nth, 1, &u0, &u1);
    if (u0 >= u1)
        return;
    if (a->table) {
        tab = a->table; /* one token, table made by the caller */
        have = 0;
    } else {
        rope_inv(a->n_rot, a->freq_base, inv);
    }
    for (int64_t u = u0; u < u1; u++) {
        const int64_t t = u / a->n_head, hd = u % a->n_head;
        if (t != have) {
            rope_table(a->n_rot, a->freq_scale, inv, a->pos[t], cs);
            tab = cs;
            have = t;
        }
        float *v = a->x + t * width + hd * a->head_dim;
        /* NORM rotates adjacent pairs, NEOX pairs i with i + n_rot/2. */
        const int64_t stride = a->mode == HC_ROPE_NEOX ? half : 1;
        const int64_t step = a->mode == HC_ROPE_NEOX ? 1 : 2;
        for (int64_t i = 0; i < half; i++) {
            float *p0 = v + i * step, *p1 = p0 + stride;
            const float x0 = *p0, x1 = *p1, c = tab[2 * i], s = tab[2 * i + 1];
            *p0 = x0 * c - x1 * s;
            *p1 = x0 * s + x1 * c;
        }
    }
}

/* ---- element-wise ----------------------------------------------------------- */

#if defined(HC_CPU_KERNELS_AVX2)
HC_ALWAYS_INLINE __m256 silu8(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(x, _mm256_add_ps(one, hc_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

HC_ALWAYS_INLINE __m256 unary8(int op, __m256 x, __m256 p)
{
    switch (op) {
    case HC_UNARY_RELU_SHIFT: return _mm256_max_ps(_mm256_sub_ps(x, p), _mm256_setzero_ps());
    case HC_UNARY_SILU: return silu8(x);
    default: return _mm256_mul_ps(x, p);
    }
}

HC_ALWAYS_INLINE __m256 binary8(int op, __m256 a, __m256 b)
{
    return op == HC_BINARY_ADD ? _mm256_add_ps(a, b) : _mm256_mul_ps(a, b);
}

HC_ALWAYS_INLINE __m256 glu8(int act, __m256 g, __m256 u, __m256 p)
{
    const __m256 z = _mm256_setzero_ps();
    switch (act) {
    case HC_GLU_SILU: return _mm256_mul_ps(silu8(g), u);
    case HC_GLU_RELU: return _mm256_mul_ps(_mm256_max_ps(_mm256_sub_ps(g, p), z), u);
    default: return _mm256_mul_ps(_mm256_max_ps(_mm256_sub_ps(g, p), z), _mm256_max_ps(u, z));
    }
}

HC_ALWAYS_INLINE __m256 apply8(const int kind, int op, __m256 va, __m256 vb, __m256 p)
{
    if (kind == 0)
        return unary8(op, va, p);
    if (kind == 1)
        return binary8(op, va, vb);
    return glu8(op, va, vb, p);
}
#else
static float silu1(float x)
{
    return x / (1.0f + expf(-x));
}

HC_ALWAYS_INLINE float apply1(const int kind, int op, float a, float b, float p)
{
    if (kind == 0)
        return op == HC_UNARY_RELU_SHIFT ? fmaxf(a - p, 0.0f) : op == HC_UNARY_SILU ? silu1(a) : a * p;
    if (kind == 1)
        return op == HC_BINARY_ADD ? a + b : a * b;
    if (op == HC_GLU_SILU)
        return silu1(a) * b;
    return fmaxf(a - p, 0.0f) * (op == HC_GLU_RELU ? b : fmaxf(b, 0.0f));
}
#endif

/* kind 0: unary(a), 1: binary(a, b), 2: glu(g = a, u = b). */
HC_ALWAYS_INLINE void eltwise(const hc_cpu_eltwise_args *a, int ith, int nth, const int kind)
{
    int64_t i0, i1;

    hc_cpu_split(a->n, ith, nth, 8, &i0, &i1);
    int64_t i = i0;
#if defined(HC_CPU_KERNELS_AVX2)
    const __m256 p = _mm256_set1_ps(a->param);
    for (; i + 8 <= i1; i += 8) {
        __m256 va = _mm256_loadu_ps(a->a + i);
        __m256 vb = kind ? _mm256_loadu_ps(a->b + i) : va;
        _mm256_storeu_ps(a->y + i, apply8(kind, a->op, va, vb, p));
    }
    if (i < i1) {
        __m256 va = hc_load_tail(a->a + i, i1 - i);
        __m256 vb = kind ? hc_load_tail(a->b + i, i1 - i) : va;
        hc_store_tail(a->y + i, apply8(kind, a->op, va, vb, p), i1 - i);
    }
#else
    for (; i < i1; i++)
        a->y[i] = apply1(kind, a->op, a->a[i], kind ? a->b[i] : 0.0f, a->param);
#endif
}

void hc_cpu_unary_task(void *args, int ith, int nth)
{
    eltwise(args, ith, nth, 0);
}

void hc_cpu_binary_task(void *args, int ith, int nth)
{
    eltwise(args, ith, nth, 1);
}

void hc_cpu_glu_task(void *args, int ith, int nth)
{
    eltwise(args, ith, nth, 2);
}

/*
 * Causal attention over the F32 KV cache (plugin.h): token t, query head h
 * attends positions 0..pos[t] of KV head h / (n_head / n_head_kv); scores
 * q.k * scale, a max-subtracted softmax, out = sum_p softmax_p v_p.
 *
 * Split-K: the positions are cut into slices of `slice` positions (a
 * multiple of ATT_CHUNK_MIN, chosen by the host from the cache's length
 * alone), one block per (head, slice, token).  A block walks its slice in
 * chunks of at most ATT_CHUNK positions with an online softmax: per chunk,
 * scores into shared memory (one warp per position, lanes over head_dim in
 * a fixed order, then a butterfly), the chunk's maximum, the running
 * maximum m, the running sum l and the running weighted sum of V rescaled
 * by exp(m_old - m_new).  With one slice (a short cache) the block divides
 * and writes `out` itself.  With several, each block writes its (m, l,
 * acc[head_dim]) to scratch and a second kernel combines the slices of
 * each (token, head) in slice order: M = max m_s, L = sum l_s e^(m_s - M),
 * out = sum acc_s e^(m_s - M) / L.  Every sum has a fixed order and there
 * are no atomics: the same input gives the same bits on every run.
 *
 * The accumulator of the weighted sum lives in memory the block owns (its
 * out row, or its scratch slot), each element read and written by one
 * thread only, so head_dim has no limit.  A position outside the cache
 * (pos < 0 or pos >= kv_rows, which the host cannot see: pos is device
 * memory) gives nan, so misuse shows; rows past pos[t] are never read.
 */
#include <math.h>

#include "cuda_plugin.h"
#include "kernels_reduce.cuh"

#define ATT_THREADS 256
#define ATT_WARPS (ATT_THREADS / HC_WARP)
/* Positions scored at once (the scores kept in shared memory). */
#define ATT_CHUNK 256

static_assert(ATT_THREADS % HC_WARP == 0, "a block is whole warps");

struct att_args {
    const float *q, *k, *v;
    const int32_t *pos;
    float *out;
    float *part;         /* scratch: (m, l, acc[head_dim]) per (token, head, slice), or NULL */
    int64_t t0;          /* first token of this launch */
    int64_t n_head, group, head_dim;
    int64_t q_width;     /* n_head * head_dim */
    int64_t kv_width;    /* n_head_kv * head_dim: one KV row */
    int64_t kv_rows;     /* rows the cache holds */
    int64_t slice;       /* positions per slice */
    int64_t n_slices;
    float scale;
};

/* Floats of one slice's partial result. */
static __host__ __device__ __forceinline__ int64_t part_stride(int64_t head_dim)
{
    return head_dim + 2;
}

static __device__ __forceinline__ bool pos_ok(int32_t p, int64_t kv_rows)
{
    return p >= 0 && (int64_t)p < kv_rows;
}

__global__ void __launch_bounds__(ATT_THREADS) attention_part_kernel(att_args a)
{
    __shared__ float sc[ATT_CHUNK];
    __shared__ float red[ATT_THREADS];
    __shared__ float wpart[ATT_WARPS];
    hc_wave_setup();
    const int64_t h = blockIdx.x, s = blockIdx.y, tl = blockIdx.z, t = a.t0 + tl;
    const int tid = threadIdx.x, warp = tid / HC_WARP, lane = tid % HC_WARP;
    const int64_t hd = a.head_dim;
    const int32_t pos = a.pos[t];
    float *acc = a.part ? a.part + ((tl * a.n_head + h) * a.n_slices + s) * part_stride(hd) + 2
                        : a.out + t * a.q_width + h * hd;

    /* Whole-block exits (they depend on blockIdx and pos only): no barrier
     * below is left waiting. */
    if (!pos_ok(pos, a.kv_rows)) {
        if (!a.part) /* one slice: this block is the output's only writer */
            for (int64_t d = tid; d < hd; d += ATT_THREADS)
                acc[d] = NAN;
        return;
    }
    const int64_t lo = s * a.slice;
    if (lo > pos)
        return; /* past this token's positions: the combine reads no slot of it */
    const int64_t hi = lo + a.slice < (int64_t)pos + 1 ? lo + a.slice : (int64_t)pos + 1;
    const float *q = a.q + t * a.q_width + h * hd;
    const int64_t kv_off = (h / a.group) * hd;

    /* The weighted sum of V: thread (g, dl) sums positions g, g + pg, ... of
     * a chunk for dim d0 + dl, and the pg groups are added in group order.
     * A head of at most ATT_THREADS dims takes one pass (hdt: head_dim up
     * to whole warps); a longer one takes passes of ATT_THREADS dims. */
    const int64_t hdt = hd <= ATT_THREADS ? (hd + HC_WARP - 1) / HC_WARP * HC_WARP : ATT_THREADS;
    const int pg = (int)(ATT_THREADS / hdt);
    const int g = (int)(tid / hdt), dl = (int)(tid % hdt);

    float m = -INFINITY, l = 0.0f;
    for (int64_t c0 = lo; c0 < hi; c0 += ATT_CHUNK) {
        const int np = (int)(hi - c0 < ATT_CHUNK ? hi - c0 : ATT_CHUNK);
        for (int j = warp; j < np; j += ATT_WARPS) {
            const float *kr = a.k + (c0 + j) * a.kv_width + kv_off;
            float dot = 0.0f;
            for (int64_t d = lane; d < hd; d += HC_WARP)
                dot = fmaf(q[d], kr[d], dot);
            dot = hc_warp_sum(dot);
            if (lane == 0)
                sc[j] = dot * a.scale;
        }
        __syncthreads();
        float cm = -INFINITY;
        for (int j = tid; j < np; j += ATT_THREADS)
            cm = fmaxf(cm, sc[j]);
        cm = hc_block_max<ATT_THREADS>(cm, wpart);
        const float m_new = fmaxf(m, cm);
        /* The first chunk has nothing to rescale (and -inf - -inf is nan). */
        const float corr = m == -INFINITY ? 0.0f : expf(m - m_new);
        float ps = 0.0f;
        for (int j = tid; j < np; j += ATT_THREADS) {
            const float e = expf(sc[j] - m_new);
            sc[j] = e;
            ps += e;
        }
        /* Its barriers also make the exponentials in sc visible to all. */
        ps = hc_block_sum<ATT_THREADS>(ps, wpart);
        l = l * corr + ps;
        for (int64_t d0 = 0; d0 < hd; d0 += hdt) { /* the same passes in every thread */
            const int64_t d = d0 + dl;
            float pa = 0.0f;
            if (g < pg && d < hd) {
                const float *vr = a.v + c0 * a.kv_width + kv_off + d;
                for (int j = g; j < np; j += pg)
                    pa = fmaf(sc[j], vr[(int64_t)j * a.kv_width], pa);
            }
            if (pg > 1) {
                red[tid] = pa;
                __syncthreads();
                if (g == 0) {
                    pa = 0.0f;
                    for (int gg = 0; gg < pg; gg++)
                        pa += red[gg * hdt + dl];
                }
                __syncthreads(); /* red is rewritten by the next pass */
            }
            if (g == 0 && d < hd)
                acc[d] = c0 == lo ? pa : acc[d] * corr + pa;
        }
        m = m_new;
        __syncthreads(); /* sc is rewritten by the next chunk */
    }
    if (!a.part) {
        /* One slice: the result, as the combine would give it for one
         * slice (weight e^0 = 1). */
        for (int64_t d0 = 0; d0 < hd; d0 += hdt) {
            const int64_t d = d0 + dl;
            if (g == 0 && d < hd)
                acc[d] = acc[d] / l;
        }
    } else if (tid == 0) {
        acc[-2] = m;
        acc[-1] = l;
    }
}

/* One block per (head, token): the slices that hold positions of the token,
 * in slice order.  Each thread computes M and the weights the same way (so
 * they agree bit for bit), then owns output dims tid, tid + ATT_THREADS, ... */
__global__ void __launch_bounds__(ATT_THREADS) attention_combine_kernel(att_args a)
{
    const int64_t h = blockIdx.x, tl = blockIdx.y, t = a.t0 + tl;
    const int64_t hd = a.head_dim, ps = part_stride(hd);
    const int32_t pos = a.pos[t];
    float *o = a.out + t * a.q_width + h * hd;
    if (!pos_ok(pos, a.kv_rows)) {
        for (int64_t d = threadIdx.x; d < hd; d += ATT_THREADS)
            o[d] = NAN;
        return;
    }
    const int64_t ns = (int64_t)pos / a.slice + 1;
    const float *p = a.part + (tl * a.n_head + h) * a.n_slices * ps;
    float mx = -INFINITY;
    for (int64_t s = 0; s < ns; s++)
        mx = fmaxf(mx, p[s * ps]);
    float sum = 0.0f;
    for (int64_t s = 0; s < ns; s++)
        sum += p[s * ps + 1] * expf(p[s * ps] - mx);
    for (int64_t d = threadIdx.x; d < hd; d += ATT_THREADS) {
        float acc = 0.0f;
        for (int64_t s = 0; s < ns; s++)
            acc += p[s * ps + 2 + d] * expf(p[s * ps] - mx);
        o[d] = acc / sum;
    }
}

extern "C" int hc_cu_launch_attention(void *stream, const float *q, const float *k,
                                      const float *v, float *out, const int32_t *pos,
                                      int64_t t0, int64_t n_tok, int64_t n_head,
                                      int64_t n_head_kv, int64_t head_dim, float scale,
                                      int64_t kv_rows, int64_t slice, int64_t n_slices,
                                      float *part)
{
    hc_gpu_stream st = static_cast<hc_gpu_stream>(stream);
    att_args a;
    a.q = q;
    a.k = k;
    a.v = v;
    a.pos = pos;
    a.out = out;
    a.part = n_slices > 1 ? part : nullptr;
    a.t0 = t0;
    a.n_head = n_head;
    a.group = n_head / n_head_kv;
    a.head_dim = head_dim;
    a.q_width = n_head * head_dim;
    a.kv_width = n_head_kv * head_dim;
    a.kv_rows = kv_rows;
    a.slice = slice;
    a.n_slices = n_slices;
    a.scale = scale;
    /* Heads on x (up to 2^31 - 1), slices (<= 64) on y, tokens (<= 65535) on z. */
    attention_part_kernel<<<dim3((unsigned)n_head, (unsigned)n_slices, (unsigned)n_tok),
                            ATT_THREADS, 0, st>>>(a);
    hc_gpu_error e = hc_gpu_last_error();
    if (e != 0 || n_slices <= 1)
        return e;
    attention_combine_kernel<<<dim3((unsigned)n_head, (unsigned)n_tok), ATT_THREADS, 0, st>>>(a);
    return hc_gpu_last_error();
}

extern "C" int64_t hc_cu_attention_part_floats(int64_t head_dim)
{
    return part_stride(head_dim);
}

/*
 * The layer kernels but attention: rmsnorm, rope and the element-wise
 * unary, binary and glu.  Semantics: plugin.h; core/ref/ref_ops.c is the
 * reference, plugins/cpu-avx2/kernels_layer.c the same arithmetic on the
 * CPU.
 *
 * In place: an output may be exactly one of the inputs (the core adds and
 * gates in place).  Every kernel reads an element and writes it from the
 * same thread, and no thread reads an element another one writes, so that
 * is safe; ops_layer.c refuses a partial overlap.
 *
 * Determinism: rmsnorm's sum of squares is a block-wide sum in a fixed
 * order (kernels_reduce.cuh); the rest computes every element alone.
 */
#include "cuda_plugin.h"
#include "kernels_reduce.cuh"

#define LAYER_THREADS 256
/* Blocks of a grid-stride loop: enough to fill any GPU, well inside the
 * 2^31 - 1 the grid's x dimension allows. */
#define LAYER_MAX_BLOCKS (1 << 20)

static unsigned blocks_for(int64_t items, int64_t per_block)
{
    int64_t b = (items + per_block - 1) / per_block;
    return (unsigned)(b < LAYER_MAX_BLOCKS ? b : LAYER_MAX_BLOCKS);
}

/* ---- rmsnorm ------------------------------------------------------------ */

/* One block per token: thread i sums the squares of elements i, i +
 * LAYER_THREADS, ... in that order, the block adds the partials in a fixed
 * order, and every thread scales its own elements (the ones it read). */
__global__ void __launch_bounds__(LAYER_THREADS)
    rmsnorm_kernel(const float *x, const float *w, float *y, int64_t n, int64_t dim, float eps)
{
    __shared__ float part[LAYER_THREADS / HC_WARP];
    hc_wave_setup();
    for (int64_t t = blockIdx.x; t < n; t += gridDim.x) {
        const float *xt = x + t * dim;
        float *yt = y + t * dim;
        float ss = 0.0f;
        for (int64_t c = threadIdx.x; c < dim; c += LAYER_THREADS)
            ss = fmaf(xt[c], xt[c], ss);
        ss = hc_block_sum<LAYER_THREADS>(ss, part);
        /* IEEE division and square root (no fast math): as the CPU's. */
        const float scale = 1.0f / sqrtf(ss / (float)dim + eps);
        for (int64_t c = threadIdx.x; c < dim; c += LAYER_THREADS)
            yt[c] = (xt[c] * scale) * w[c];
    }
}

extern "C" int hc_cu_launch_rmsnorm(void *stream, const float *x, const float *w, float *y,
                                    int64_t n, int64_t dim, float eps)
{
    rmsnorm_kernel<<<blocks_for(n, 1), LAYER_THREADS, 0, static_cast<hc_gpu_stream>(stream)>>>(
        x, w, y, n, dim, eps);
    return hc_gpu_last_error();
}

/* ---- rope --------------------------------------------------------------- */

/* One block per token.  First its n_rot/2 angles, as the CPU computes them:
 * theta_i = pos * freq_scale * freq_base^(-2i/n_rot) in double, cos and sin
 * in double rounded once to float, kept in shared memory (cs[2i] = cos,
 * cs[2i+1] = sin); then one thread per rotated pair of every head.  NORM
 * pairs (x[2i], x[2i+1]), NEOX (x[i], x[i + n_rot/2]); dims past n_rot are
 * not touched. */
__global__ void __launch_bounds__(LAYER_THREADS)
    rope_kernel(float *x, int64_t n_tok, int64_t n_head, int64_t head_dim, int n_rot,
                const int32_t *pos, float freq_base, float freq_scale, int neox)
{
    extern __shared__ float cs[];
    const int half = n_rot / 2;
    const int64_t width = n_head * head_dim, pairs = n_head * half;
    for (int64_t t = blockIdx.x; t < n_tok; t += gridDim.x) {
        const double p = (double)pos[t] * (double)freq_scale;
        for (int i = threadIdx.x; i < half; i += LAYER_THREADS) {
            const double th = p * pow((double)freq_base, -2.0 * (double)i / (double)n_rot);
            double s, c;
            sincos(th, &s, &c);
            cs[2 * i] = (float)c;
            cs[2 * i + 1] = (float)s;
        }
        __syncthreads();
        float *xt = x + t * width;
        for (int64_t u = threadIdx.x; u < pairs; u += LAYER_THREADS) {
            const int64_t h = u / half;
            const int i = (int)(u % half);
            float *v = xt + h * head_dim;
            const int ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
            const float x0 = v[ia], x1 = v[ib], c = cs[2 * i], s = cs[2 * i + 1];
            v[ia] = x0 * c - x1 * s;
            v[ib] = x0 * s + x1 * c;
        }
        __syncthreads(); /* cs is rewritten for the next token */
    }
}

extern "C" int hc_cu_launch_rope(void *stream, float *x, int64_t n_tok, int64_t n_head,
                                 int64_t head_dim, int64_t n_rot, const int32_t *pos,
                                 float freq_base, float freq_scale, int mode)
{
    rope_kernel<<<blocks_for(n_tok, 1), LAYER_THREADS, (size_t)n_rot * sizeof(float),
                  static_cast<hc_gpu_stream>(stream)>>>(x, n_tok, n_head, head_dim, (int)n_rot,
                                                        pos, freq_base, freq_scale,
                                                        mode == HC_ROPE_NEOX);
    return hc_gpu_last_error();
}

/* ---- element-wise -------------------------------------------------------- */

static __device__ __forceinline__ float silu(float x)
{
    return x / (1.0f + expf(-x));
}

/* KIND 0: unary(a), 1: binary(a, b), 2: glu(g = a, u = b); op is the
 * call's hc_unary_op, hc_binary_op or hc_glu_act (checked by the caller). */
template <int KIND>
__global__ void __launch_bounds__(LAYER_THREADS)
    eltwise_kernel(int op, const float *a, const float *b, float *y, int64_t n, float p)
{
    const int64_t step = (int64_t)gridDim.x * LAYER_THREADS;
    for (int64_t i = (int64_t)blockIdx.x * LAYER_THREADS + threadIdx.x; i < n; i += step) {
        const float x = a[i];
        float r;
        if (KIND == 0) {
            r = op == HC_UNARY_RELU_SHIFT ? fmaxf(x - p, 0.0f) : op == HC_UNARY_SILU ? silu(x)
                                                                                  : x * p;
        } else if (KIND == 1) {
            const float v = b[i];
            r = op == HC_BINARY_ADD ? x + v : x * v;
        } else {
            const float u = b[i];
            r = op == HC_GLU_SILU  ? silu(x) * u
                : op == HC_GLU_RELU ? fmaxf(x - p, 0.0f) * u
                                    : fmaxf(x - p, 0.0f) * fmaxf(u, 0.0f);
        }
        y[i] = r;
    }
}

extern "C" int hc_cu_launch_eltwise(void *stream, int kind, int op, const float *a,
                                    const float *b, float *y, int64_t n, float param)
{
    hc_gpu_stream st = static_cast<hc_gpu_stream>(stream);
    const unsigned grid = blocks_for(n, LAYER_THREADS);
    switch (kind) {
    case 0: eltwise_kernel<0><<<grid, LAYER_THREADS, 0, st>>>(op, a, b, y, n, param); break;
    case 1: eltwise_kernel<1><<<grid, LAYER_THREADS, 0, st>>>(op, a, b, y, n, param); break;
    case 2: eltwise_kernel<2><<<grid, LAYER_THREADS, 0, st>>>(op, a, b, y, n, param); break;
    default: return 1; /* cudaErrorInvalidValue: the caller checked the kind */
    }
    return hc_gpu_last_error();
}

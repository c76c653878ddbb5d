/*
 * matmul and matvec_rows: y[t][r] = sum_c W[r][c] * x[t][c] for every row
 * r (matmul) or every listed row (matvec_rows; entries outside [0, rows)
 * are skipped, and rows not listed are not written).
 *
 * One block per output row and DOT_TOK tokens at a time: thread i sums the
 * 16-byte groups of elements (F32: 4, F16: 8) or the 32-element blocks
 * (Q8_0, Q4_0) i, i + DOT_THREADS, ... of the row in that order, decoding
 * each weight once for all the tokens; the block's DOT_THREADS partials are then added as
 * kernels_common.cuh says (a butterfly per warp, the warps in order).  The
 * grid's y dimension walks the tokens.
 */
#include "cuda_plugin.h"
#include "kernels_common.cuh"

#define DOT_THREADS 256
#define DOT_TOK 4
#define DOT_WARPS (DOT_THREADS / HC_WARP)
#define DOT_MAX_GRID_Y 65535

static_assert(DOT_THREADS % HC_WARP == 0, "a block is whole warps");
static_assert(DOT_TOK <= DOT_THREADS, "one thread per token writes the sums");

/* Elements of F32 / F16 weights per 16-byte load. */
template <int T> struct dot_group {
    static constexpr int n = T == HC_TYPE_F32 ? 4 : 8;
};

/* G weights of a row from element c on: one 16-byte load where the group
 * is whole and 16-byte aligned, else one element at a time.  Either way
 * the values, and so the sums below, are the same. */
template <int T, int G>
static __device__ __forceinline__ void load_group(const uint8_t *row, int64_t c, int64_t cols,
                                                  float *w)
{
    const int esz = T == HC_TYPE_F32 ? 4 : 2;
    const uint8_t *p = row + c * esz;
    if (c + G <= cols && ((uintptr_t)p & 15) == 0) {
        const uint4 v = *reinterpret_cast<const uint4 *>(p);
        const uint32_t u[4] = {v.x, v.y, v.z, v.w};
        for (int i = 0; i < G; i++)
            w[i] = T == HC_TYPE_F32 ? __uint_as_float(u[i])
                                    : hc_half_bits_to_float((uint16_t)(u[i / 2] >> (16 * (i % 2))));
        return;
    }
    for (int i = 0; i < G; i++)
        w[i] = c + i < cols ? hc_weight_at<T>(row, c + i) : 0.0f;
}

/* acc[t] += this thread's share of row . x[t], t < tn (x: tokens of cols):
 * groups of dot_group<T>::n consecutive elements, the thread's i-th group
 * being i * DOT_THREADS + threadIdx.x, each added element by element in
 * order (past the row's end nothing is added). */
template <int T>
static __device__ __forceinline__ void dot_partial(const uint8_t *row, int64_t cols,
                                                   const float *x, int tn, float *acc)
{
    constexpr int G = dot_group<T>::n;
    for (int64_t c = (int64_t)threadIdx.x * G; c < cols; c += (int64_t)DOT_THREADS * G) {
        float w[G];
        load_group<T, G>(row, c, cols, w);
        for (int i = 0; i < G; i++)
            if (c + i < cols)
                for (int t = 0; t < DOT_TOK; t++)
                    if (t < tn)
                        acc[t] += w[i] * x[t * cols + c + i];
    }
}

/* The quantized types by block: d times the block's integer-weighted sum. */
template <int T, int QK, int BLOCK_BYTES>
static __device__ __forceinline__ void dot_partial_blocks(const uint8_t *row, int64_t cols,
                                                          const float *x, int tn, float *acc)
{
    const int64_t nb = cols / QK;
    for (int64_t b = threadIdx.x; b < nb; b += DOT_THREADS) {
        const uint8_t *blk = row + b * BLOCK_BYTES;
        const float d = hc_load_half(blk);
        float s[DOT_TOK] = {0};
        for (int j = 0; j < QK; j++) {
            float q = T == HC_TYPE_Q8_0 ? (float)(int8_t)blk[2 + j]
                                        : (float)((j < QK / 2 ? (blk[2 + j] & 0x0f)
                                                              : (blk[2 + j - QK / 2] >> 4)) - 8);
            for (int t = 0; t < DOT_TOK; t++)
                if (t < tn)
                    s[t] += q * x[t * cols + b * QK + j];
        }
        for (int t = 0; t < DOT_TOK; t++)
            acc[t] += d * s[t];
    }
}

template <>
__device__ __forceinline__ void dot_partial<HC_TYPE_Q8_0>(const uint8_t *row, int64_t cols,
                                                          const float *x, int tn, float *acc)
{
    dot_partial_blocks<HC_TYPE_Q8_0, HC_QK8_0, HC_Q8_0_BLOCK_BYTES>(row, cols, x, tn, acc);
}

template <>
__device__ __forceinline__ void dot_partial<HC_TYPE_Q4_0>(const uint8_t *row, int64_t cols,
                                                          const float *x, int tn, float *acc)
{
    dot_partial_blocks<HC_TYPE_Q4_0, HC_QK4_0, HC_Q4_0_BLOCK_BYTES>(row, cols, x, tn, acc);
}

template <int T>
__global__ void __launch_bounds__(DOT_THREADS)
    dot_rows_kernel(const uint8_t *w, uint64_t row_bytes, int64_t rows, int64_t cols,
                    const float *x, int64_t n, const int32_t *idx, float *y)
{
    __shared__ float part[DOT_TOK][DOT_WARPS];
    const int64_t r = idx ? (int64_t)idx[blockIdx.x] : (int64_t)blockIdx.x;
    if (r < 0 || r >= rows)
        return; /* the whole block: no barrier is left waiting */
    const uint8_t *row = w + (uint64_t)r * row_bytes;
    const int warp = threadIdx.x / HC_WARP, lane = threadIdx.x % HC_WARP;

    for (int64_t t0 = (int64_t)blockIdx.y * DOT_TOK; t0 < n;
         t0 += (int64_t)gridDim.y * DOT_TOK) {
        const int tn = n - t0 < DOT_TOK ? (int)(n - t0) : DOT_TOK;
        float acc[DOT_TOK] = {0};
        dot_partial<T>(row, cols, x + t0 * cols, tn, acc);
        for (int t = 0; t < DOT_TOK; t++) {
            float s = hc_warp_sum(acc[t]);
            if (lane == 0)
                part[t][warp] = s;
        }
        __syncthreads();
        if ((int)threadIdx.x < tn) {
            float s = 0.0f;
            for (int k = 0; k < DOT_WARPS; k++)
                s += part[threadIdx.x][k];
            y[(t0 + threadIdx.x) * rows + r] = s;
        }
        __syncthreads(); /* part is reused by the next tokens */
    }
}

template <int T>
static hc_gpu_error launch(hc_gpu_stream st, const void *w, uint64_t row_bytes, int64_t rows,
                           int64_t cols, const float *x, int64_t n, const int32_t *idx,
                           int64_t n_out, float *y)
{
    int64_t chunks = (n + DOT_TOK - 1) / DOT_TOK;
    dim3 grid((unsigned)n_out, (unsigned)(chunks < DOT_MAX_GRID_Y ? chunks : DOT_MAX_GRID_Y));
    dot_rows_kernel<T><<<grid, DOT_THREADS, 0, st>>>(static_cast<const uint8_t *>(w), row_bytes,
                                                      rows, cols, x, n, idx, y);
    return hc_gpu_last_error();
}

extern "C" int hc_cu_kernel_has_type(hc_type t)
{
    return t == HC_TYPE_F32 || t == HC_TYPE_F16 || t == HC_TYPE_Q8_0 || t == HC_TYPE_Q4_0;
}

extern "C" int hc_cu_launch_dot_rows(void *stream, hc_type t, const void *w, uint64_t row_bytes,
                                     int64_t rows, int64_t cols, const float *x, int64_t n,
                                     const int32_t *idx, int64_t n_out, float *y)
{
    hc_gpu_stream st = static_cast<hc_gpu_stream>(stream);
    switch (t) {
    case HC_TYPE_F32: return launch<HC_TYPE_F32>(st, w, row_bytes, rows, cols, x, n, idx, n_out, y);
    case HC_TYPE_F16: return launch<HC_TYPE_F16>(st, w, row_bytes, rows, cols, x, n, idx, n_out, y);
    case HC_TYPE_Q8_0:
        return launch<HC_TYPE_Q8_0>(st, w, row_bytes, rows, cols, x, n, idx, n_out, y);
    case HC_TYPE_Q4_0:
        return launch<HC_TYPE_Q4_0>(st, w, row_bytes, rows, cols, x, n, idx, n_out, y);
    default: return 1; /* cudaErrorInvalidValue: the caller refused the type already */
    }
}

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
 * grid's y dimension walks the tokens.  One launch may hold several
 * products of the same x and weight type (matmul_batch, dot_launch).
 * matvec_rows_counted is the same kernel over max_idx blocks, of which
 * those at or past the count in device memory leave at once: the others
 * compute exactly what matvec_rows computes for that many rows.
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

/* The products of one launch: job j owns blocks first[j] .. first[j+1]-1
 * (one per output row).  matmul, matvec_rows and matmul_batch all launch
 * this kernel, so a product computes the same bits whichever call made it
 * and whichever other products share its launch: a block's arithmetic
 * depends on its own row alone. */
struct dot_launch {
    hc_cu_dot_job job[HC_CU_DOT_JOBS];
    int64_t first[HC_CU_DOT_JOBS];
    int n_jobs;
};

template <int T>
__global__ void __launch_bounds__(DOT_THREADS)
    dot_rows_kernel(const dot_launch L, int64_t cols, const float *x, int64_t n)
{
    __shared__ float part[DOT_TOK][DOT_WARPS];
    hc_wave_setup();
    /* This block's job: the last one starting at or before it. */
    int j = 0;
    while (j + 1 < L.n_jobs && (int64_t)blockIdx.x >= L.first[j + 1])
        j++;
    const hc_cu_dot_job &jb = L.job[j];
    const int64_t b = (int64_t)blockIdx.x - L.first[j], rows = jb.rows;
    if (jb.count) {
        /* matvec_rows_counted: blocks past the count (clamped to [0,
         * n_out]) have no list entry; the others compute as matvec_rows. */
        const int32_t k = *jb.count;
        if (k <= 0 || b >= (int64_t)k)
            return; /* the whole block, before any barrier */
    }
    const int64_t r = jb.idx ? (int64_t)jb.idx[b] : b;
    if (r < 0 || r >= rows)
        return; /* the whole block: no barrier is left waiting */
    const uint8_t *row = static_cast<const uint8_t *>(jb.w) + (uint64_t)r * jb.row_bytes;
    float *y = jb.y;
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
static hc_gpu_error launch(hc_gpu_stream st, const dot_launch &L, int64_t blocks, int64_t cols,
                           const float *x, int64_t n)
{
    int64_t chunks = (n + DOT_TOK - 1) / DOT_TOK;
    dim3 grid((unsigned)blocks, (unsigned)(chunks < DOT_MAX_GRID_Y ? chunks : DOT_MAX_GRID_Y));
    dot_rows_kernel<T><<<grid, DOT_THREADS, 0, st>>>(L, cols, x, n);
    return hc_gpu_last_error();
}

static hc_gpu_error launch_type(hc_gpu_stream st, hc_type t, const dot_launch &L, int64_t blocks,
                                int64_t cols, const float *x, int64_t n)
{
    switch (t) {
    case HC_TYPE_F32: return launch<HC_TYPE_F32>(st, L, blocks, cols, x, n);
    case HC_TYPE_F16: return launch<HC_TYPE_F16>(st, L, blocks, cols, x, n);
    case HC_TYPE_Q8_0: return launch<HC_TYPE_Q8_0>(st, L, blocks, cols, x, n);
    case HC_TYPE_Q4_0: return launch<HC_TYPE_Q4_0>(st, L, blocks, cols, x, n);
    default: return static_cast<hc_gpu_error>(1); /* invalid value: the caller refused the type */
    }
}

extern "C" int hc_cu_kernel_has_type(hc_type t)
{
    return t == HC_TYPE_F32 || t == HC_TYPE_F16 || t == HC_TYPE_Q8_0 || t == HC_TYPE_Q4_0;
}

/* Jobs are packed into launches of at most HC_CU_DOT_JOBS jobs and
 * 2^31 - 1 blocks (the grid's x dimension), in order; empty ones are
 * skipped. */
extern "C" int hc_cu_launch_dot_jobs(void *stream, hc_type t, const hc_cu_dot_job *jobs,
                                     int n_jobs, int64_t cols, const float *x, int64_t n)
{
    hc_gpu_stream st = static_cast<hc_gpu_stream>(stream);
    dot_launch L = {};
    int64_t blocks = 0;
    if (n <= 0)
        return 0;
    for (int i = 0; i < n_jobs; i++) {
        const int64_t rows = jobs[i].n_out;
        if (rows <= 0)
            continue;
        if (rows > INT32_MAX)
            return 1; /* invalid value: the caller refused such a shape */
        if (L.n_jobs == HC_CU_DOT_JOBS || blocks + rows > INT32_MAX) {
            hc_gpu_error e = launch_type(st, t, L, blocks, cols, x, n);
            if (e != 0)
                return e;
            L.n_jobs = 0;
            blocks = 0;
        }
        L.job[L.n_jobs] = jobs[i];
        L.first[L.n_jobs++] = blocks;
        blocks += rows;
    }
    return L.n_jobs ? launch_type(st, t, L, blocks, cols, x, n) : 0;
}

extern "C" int hc_cu_launch_dot_rows(void *stream, hc_type t, const void *w, uint64_t row_bytes,
                                     int64_t rows, int64_t cols, const float *x, int64_t n,
                                     const int32_t *idx, int64_t n_out, float *y)
{
    const hc_cu_dot_job job = {w, row_bytes, rows, idx, n_out, y, NULL};
    return hc_cu_launch_dot_jobs(stream, t, &job, 1, cols, x, n);
}

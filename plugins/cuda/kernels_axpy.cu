/*
 * axpy_rows: y[t][c] += sum_k h[t][idx[k]] * Wt[idx[k]][c].
 *
 * One thread per output element (t, c): it starts from y[t][c] and adds the
 * listed rows' terms in list order, one at a time -- plugin.h's first
 * allowed order, the one core/ref uses -- so the result depends on the list
 * alone.  Entries outside [0, rows) are skipped.  Consecutive threads read
 * consecutive elements of each listed row.  The grid's y dimension walks
 * the tokens.
 *
 * axpy_rows_counted launches the same kernel with `count`: the list's
 * length is then the int32 there, clamped to [0, n_idx] (n_idx = max_idx),
 * read by each thread before it adds anything.  Each element's sum is the
 * same sequence of additions as the plain call's for that length (no
 * slicing here: the order depends on the length alone), so the bits are
 * the same.
 */
#include "cuda_plugin.h"
#include "kernels_common.cuh"

#define AXPY_THREADS 256
#define AXPY_MAX_GRID_Y 65535

template <int T>
__global__ void __launch_bounds__(AXPY_THREADS)
    axpy_rows_kernel(const uint8_t *wt, uint64_t row_bytes, int64_t rows, int64_t cols,
                     const float *h, int64_t n, const int32_t *idx, int64_t n_idx,
                     const int32_t *count, float *y)
{
    const int64_t c = (int64_t)blockIdx.x * AXPY_THREADS + threadIdx.x;
    if (c >= cols)
        return;
    if (count) {
        const int32_t k = *count;
        n_idx = k < 0 ? 0 : k > n_idx ? n_idx : k;
        if (n_idx == 0)
            return; /* nothing to add: y is left as the plain call leaves it */
    }
    for (int64_t t = blockIdx.y; t < n; t += gridDim.y) {
        const float *ht = h + t * rows;
        float acc = y[t * cols + c];
        for (int64_t k = 0; k < n_idx; k++) {
            const int32_t r = idx[k];
            if (r < 0 || r >= rows)
                continue;
            acc += ht[r] * hc_weight_at<T>(wt + (uint64_t)r * row_bytes, c);
        }
        y[t * cols + c] = acc;
    }
}

template <int T>
static hc_gpu_error launch(hc_gpu_stream st, const void *wt, uint64_t row_bytes, int64_t rows,
                           int64_t cols, const float *h, int64_t n, const int32_t *idx,
                           int64_t n_idx, const int32_t *count, float *y)
{
    dim3 grid((unsigned)((cols + AXPY_THREADS - 1) / AXPY_THREADS),
              (unsigned)(n < AXPY_MAX_GRID_Y ? n : AXPY_MAX_GRID_Y));
    axpy_rows_kernel<T><<<grid, AXPY_THREADS, 0, st>>>(static_cast<const uint8_t *>(wt),
                                                        row_bytes, rows, cols, h, n, idx, n_idx,
                                                        count, y);
    return hc_gpu_last_error();
}

extern "C" int hc_cu_launch_axpy_rows(void *stream, hc_type t, const void *wt, uint64_t row_bytes,
                                      int64_t rows, int64_t cols, const float *h, int64_t n,
                                      const int32_t *idx, int64_t n_idx,
                                      const int32_t *count, float *y)
{
    hc_gpu_stream st = static_cast<hc_gpu_stream>(stream);
    switch (t) {
    case HC_TYPE_F32:
        return launch<HC_TYPE_F32>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y);
    case HC_TYPE_F16:
        return launch<HC_TYPE_F16>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y);
    case HC_TYPE_Q8_0:
        return launch<HC_TYPE_Q8_0>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y);
    case HC_TYPE_Q4_0:
        return launch<HC_TYPE_Q4_0>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y);
    default: return 1; /* cudaErrorInvalidValue: the caller refused the type already */
    }
}

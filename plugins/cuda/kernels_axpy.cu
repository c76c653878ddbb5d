/*
 * axpy_rows: y[t][c] += sum_k h[t][idx[k]] * Wt[idx[k]][c].
 *
 * One thread per output column and list slice; consecutive threads read
 * consecutive elements of each listed row; entries outside [0, rows) are
 * skipped.  Two summation orders, both plugin.h's (for a given call shape
 * the order depends on the list's length alone):
 *  - list order (axpy_rows_kernel): the thread starts from y[t][c] and adds
 *    the listed rows' terms one at a time, as core/ref does.  For lists
 *    shorter than 2 * AXPY_SLICE_MIN and calls with n * cols above
 *    AXPY_SLICED_ELEMS.
 *  - slices (axpy_slices_kernel, then axpy_combine_kernel): axpy_plan()
 *    cuts the list into at most AXPY_SLICES runs of equal size (the last
 *    may be shorter); each run is summed from 0 in list order into a
 *    partial, and the combine adds y + p0 + p1 + ... in slice order.  A
 *    decode down projection of 4096 columns is 16 blocks of 256 threads in
 *    list order, too few for a GPU of 100+ SMs; sliced it is up to 256.
 *
 * axpy_rows_counted launches the same kernels with `count`: the list's
 * length is then the int32 there, clamped to [0, n_idx] (n_idx = max_idx),
 * read by every thread, and the slices are axpy_plan()'s for that length.
 * Whether a call is sliced depends on its shape (n * cols, and n_idx of at
 * least 2 * AXPY_SLICE_MIN) and not on the count, and a plan of one slice
 * adds in list order from y, so a counted call gives the bits of the plain
 * call of that length.
 */
#include "cuda_plugin.h"
#include "kernels_common.cuh"

#define AXPY_THREADS 256
#define AXPY_MAX_GRID_Y 65535
#define AXPY_SLICES 16              /* slices of one list, at most */
#define AXPY_SLICE_MIN 16           /* entries of one slice, at least */
#define AXPY_SLICED_ELEMS (1 << 18) /* n * cols up to which lists are sliced
                                     * (partials of 16 MiB at most) */

/* The slices of a list of len entries: *n_slices runs of *items entries,
 * the last possibly shorter; one slice below 2 * AXPY_SLICE_MIN. */
static __device__ __forceinline__ void axpy_plan(int64_t len, int64_t *n_slices, int64_t *items)
{
    if (len < 2 * AXPY_SLICE_MIN) {
        *n_slices = 1;
        *items = len;
        return;
    }
    int64_t s = len / AXPY_SLICE_MIN;
    if (s > AXPY_SLICES)
        s = AXPY_SLICES;
    *items = (len + s - 1) / s;
    *n_slices = (len + *items - 1) / *items;
}

/* The list's length: n_idx, or the count in device memory clamped to it. */
static __device__ __forceinline__ int64_t axpy_len(const int32_t *count, int64_t n_idx)
{
    if (!count)
        return n_idx;
    const int32_t k = *count;
    return k < 0 ? 0 : k > n_idx ? n_idx : k;
}

template <int T>
__global__ void __launch_bounds__(AXPY_THREADS)
    axpy_rows_kernel(const uint8_t *wt, uint64_t row_bytes, int64_t rows, int64_t cols,
                     const float *h, int64_t n, const int32_t *idx, int64_t n_idx,
                     const int32_t *count, float *y)
{
    const int64_t c = (int64_t)blockIdx.x * AXPY_THREADS + threadIdx.x;
    if (c >= cols)
        return;
    n_idx = axpy_len(count, n_idx);
    if (n_idx == 0)
        return; /* nothing to add: y is left as the plain call leaves it */
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

/* Slice blockIdx.y of the list for every token, into part[slice][t][c]; a
 * plan of one slice adds straight into y, in list order from y. */
template <int T>
__global__ void __launch_bounds__(AXPY_THREADS)
    axpy_slices_kernel(const uint8_t *wt, uint64_t row_bytes, int64_t rows, int64_t cols,
                       const float *h, int64_t n, const int32_t *idx, int64_t n_idx,
                       const int32_t *count, float *y, float *part)
{
    const int64_t c = (int64_t)blockIdx.x * AXPY_THREADS + threadIdx.x;
    if (c >= cols)
        return;
    const int64_t len = axpy_len(count, n_idx), slice = blockIdx.y;
    int64_t n_slices, items;
    axpy_plan(len, &n_slices, &items);
    if (len == 0 || slice >= n_slices)
        return;
    const int64_t k0 = slice * items, k1 = k0 + items < len ? k0 + items : len;
    for (int64_t t = 0; t < n; t++) {
        const float *ht = h + t * rows;
        float acc = n_slices == 1 ? y[t * cols + c] : 0.0f;
        for (int64_t k = k0; k < k1; k++) {
            const int32_t r = idx[k];
            if (r < 0 || r >= rows)
                continue;
            acc += ht[r] * hc_weight_at<T>(wt + (uint64_t)r * row_bytes, c);
        }
        if (n_slices == 1)
            y[t * cols + c] = acc;
        else
            part[(slice * n + t) * cols + c] = acc;
    }
}

/* y[e] = y[e] + p0[e] + p1[e] + ... for e < elems (= n * cols), when the
 * plan for the list's length has more than one slice. */
__global__ void __launch_bounds__(AXPY_THREADS)
    axpy_combine_kernel(int64_t elems, int64_t n_idx, const int32_t *count, const float *part,
                        float *y)
{
    const int64_t e = (int64_t)blockIdx.x * AXPY_THREADS + threadIdx.x;
    if (e >= elems)
        return;
    int64_t n_slices, items;
    axpy_plan(axpy_len(count, n_idx), &n_slices, &items);
    if (n_slices == 1)
        return;
    float acc = y[e];
    for (int64_t s = 0; s < n_slices; s++)
        acc += part[s * elems + e];
    y[e] = acc;
}

extern "C" int64_t hc_cu_axpy_slices(int64_t n, int64_t cols, int64_t n_idx)
{
    /* The most slices a plan for any length up to n_idx has (axpy_plan's
     * first cut), for a call whose shape is sliced at all. */
    if (n <= 0 || cols <= 0 || n > AXPY_SLICED_ELEMS / cols || n_idx < 2 * AXPY_SLICE_MIN)
        return 1;
    const int64_t s = n_idx / AXPY_SLICE_MIN;
    return s < AXPY_SLICES ? s : AXPY_SLICES;
}

template <int T>
static hc_gpu_error launch(hc_gpu_stream st, const void *wt, uint64_t row_bytes, int64_t rows,
                           int64_t cols, const float *h, int64_t n, const int32_t *idx,
                           int64_t n_idx, const int32_t *count, float *y, float *part)
{
    const uint8_t *w = static_cast<const uint8_t *>(wt);
    const unsigned col_blocks = (unsigned)((cols + AXPY_THREADS - 1) / AXPY_THREADS);
    const int64_t n_slices = hc_cu_axpy_slices(n, cols, n_idx);
    if (n_slices > 1) {
        const int64_t elems = n * cols;
        axpy_slices_kernel<T><<<dim3(col_blocks, (unsigned)n_slices), AXPY_THREADS, 0, st>>>(
            w, row_bytes, rows, cols, h, n, idx, n_idx, count, y, part);
        axpy_combine_kernel<<<(unsigned)((elems + AXPY_THREADS - 1) / AXPY_THREADS),
                              AXPY_THREADS, 0, st>>>(elems, n_idx, count, part, y);
        return hc_gpu_last_error();
    }
    dim3 grid(col_blocks, (unsigned)(n < AXPY_MAX_GRID_Y ? n : AXPY_MAX_GRID_Y));
    axpy_rows_kernel<T><<<grid, AXPY_THREADS, 0, st>>>(w, row_bytes, rows, cols, h, n, idx, n_idx,
                                                        count, y);
    return hc_gpu_last_error();
}

extern "C" int hc_cu_launch_axpy_rows(void *stream, hc_type t, const void *wt, uint64_t row_bytes,
                                      int64_t rows, int64_t cols, const float *h, int64_t n,
                                      const int32_t *idx, int64_t n_idx,
                                      const int32_t *count, float *y, float *part)
{
    hc_gpu_stream st = static_cast<hc_gpu_stream>(stream);
    switch (t) {
    case HC_TYPE_F32:
        return launch<HC_TYPE_F32>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y,
                                   part);
    case HC_TYPE_F16:
        return launch<HC_TYPE_F16>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y,
                                   part);
    case HC_TYPE_Q8_0:
        return launch<HC_TYPE_Q8_0>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y,
                                    part);
    case HC_TYPE_Q4_0:
        return launch<HC_TYPE_Q4_0>(st, wt, row_bytes, rows, cols, h, n, idx, n_idx, count, y,
                                    part);
    default: return 1; /* cudaErrorInvalidValue: the caller refused the type already */
    }
}

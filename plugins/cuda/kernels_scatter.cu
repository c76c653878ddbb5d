/*
 * scatter_rows: dst row pos[t] = src row t, rows of `words` 32-bit words.
 * One thread per word of a row, the grid's y dimension walks the rows;
 * each destination word is written by one thread.  A position outside
 * [0, dst_rows) copies nothing.
 */
#include "cuda_plugin.h"
#include "kernels_common.cuh"

#define SCATTER_THREADS 256
#define SCATTER_MAX_GRID_Y 65535

__global__ void __launch_bounds__(SCATTER_THREADS)
    scatter_rows_kernel(const uint32_t *src, uint32_t *dst, int64_t words, int64_t n,
                        const int32_t *pos, int64_t dst_rows)
{
    const int64_t w = (int64_t)blockIdx.x * SCATTER_THREADS + threadIdx.x;
    if (w >= words)
        return;
    for (int64_t t = blockIdx.y; t < n; t += gridDim.y) {
        const int32_t p = pos[t];
        if (p < 0 || p >= dst_rows)
            continue;
        dst[(int64_t)p * words + w] = src[t * words + w];
    }
}

extern "C" int hc_cu_launch_scatter_rows(void *stream, const void *src, void *dst,
                                         int64_t words, int64_t n, const int32_t *pos,
                                         int64_t dst_rows)
{
    const int64_t bx = (words + SCATTER_THREADS - 1) / SCATTER_THREADS;
    const int64_t by = n < SCATTER_MAX_GRID_Y ? n : SCATTER_MAX_GRID_Y;
    scatter_rows_kernel<<<dim3((unsigned)bx, (unsigned)by), SCATTER_THREADS, 0,
                          static_cast<hc_gpu_stream>(stream)>>>((const uint32_t *)src,
                                                                (uint32_t *)dst, words, n, pos,
                                                                dst_rows);
    return hc_gpu_last_error();
}

/*
 * select_rows (plugin.h): the rows r < n_rows whose score passes the cut
 * for some token (scores[t][r] >= cut; a nan never does), in ascending
 * order, written as r or map[r] (map[r] < 0: left out), and their count.
 *
 * One block of SEL_THREADS threads walks the rows in spans of
 * SEL_THREADS * HC_WARP rows.  In a span, thread i owns the rows
 * base + k * SEL_THREADS + i for k < HC_WARP (consecutive threads read
 * consecutive scores; SEL_BATCH of a thread's loads are in flight at once)
 * and keeps their verdicts as bits k of one mask.  Ascending rows are then
 * (k, warp, lane) in that order: warp w's ballot for k gives the count of
 * cell (k, w) and each lane's rank in it, and the SEL_THREADS cells
 * (HC_WARP values of k times SEL_WARPS warps, one per thread) get their
 * exclusive prefix sums by a block-wide integer scan: a shuffle scan inside
 * each warp, then the totals of the warps before, added in warp order.  A
 * listed row goes to (rows of earlier spans) + (its cell's prefix) + (its
 * rank).  Integers only, no atomics: the list and the count are fixed by
 * the scores alone.  A decode layer's rows (11008 for a 7B model) are one
 * span, a few microseconds on one SM; a grid-wide scan would cost a second
 * launch.  No warp width is assumed: a mask holds up to 64 verdicts.
 */
#include "cuda_plugin.h"
#include "kernels_common.cuh"

#define SEL_THREADS 1024
#define SEL_WARPS (SEL_THREADS / HC_WARP)
#define SEL_SPAN ((int64_t)SEL_THREADS * HC_WARP)
#define SEL_BATCH 8

static_assert(SEL_THREADS % HC_WARP == 0, "a block is whole warps");
static_assert(HC_WARP <= 64, "a thread's verdicts in a span fit 64 bits");

__global__ void __launch_bounds__(SEL_THREADS)
    select_rows_kernel(const float *sc, int64_t n_tok, int64_t n_rows, float cut,
                       const int32_t *map, int32_t *idx, int32_t *count)
{
    /* Cell (k, w) at k * SEL_WARPS + w: its count, then its prefix sum. */
    __shared__ int32_t cell[SEL_THREADS];
    __shared__ int32_t warp_total[SEL_WARPS];
    hc_wave_setup();
    const int tid = threadIdx.x, warp = tid / HC_WARP, lane = tid % HC_WARP;
    const uint64_t lower = ((uint64_t)1 << lane) - 1; /* the lanes below this one */
    int64_t done = 0;                                 /* rows listed by earlier spans */

    for (int64_t base = 0; base < n_rows; base += SEL_SPAN) {
        /* The k that have rows in this span: the same for every thread. */
        const int64_t left = n_rows - base;
        const int kn = left >= SEL_SPAN ? HC_WARP : (int)((left + SEL_THREADS - 1) / SEL_THREADS);
        uint64_t mine = 0;
        for (int k0 = 0; k0 < kn; k0 += SEL_BATCH) {
            bool on[SEL_BATCH];
            int64_t r[SEL_BATCH];
#pragma unroll
            for (int j = 0; j < SEL_BATCH; j++) {
                r[j] = base + (int64_t)(k0 + j) * SEL_THREADS + tid;
                on[j] = k0 + j < kn && r[j] < n_rows && n_tok > 0 && sc[r[j]] >= cut;
            }
#pragma unroll
            for (int j = 0; j < SEL_BATCH; j++)
                if (k0 + j < kn && r[j] < n_rows)
                    for (int64_t t = 1; t < n_tok && !on[j]; t++)
                        on[j] = sc[t * n_rows + r[j]] >= cut;
#pragma unroll
            for (int j = 0; j < SEL_BATCH; j++) {
                if (on[j] && map)
                    on[j] = map[r[j]] >= 0; /* another device's row */
                if (on[j])                  /* only for k0 + j < kn <= HC_WARP */
                    mine |= (uint64_t)1 << (k0 + j);
            }
        }
        for (int k = 0; k < HC_WARP; k++) {
            const uint64_t votes = hc_ballot(((mine >> k) & 1) != 0);
            if (lane == 0)
                cell[k * SEL_WARPS + warp] = __popcll(votes);
        }
        __syncthreads();
        /* Exclusive prefix sum of the cells, cell tid in thread tid. */
        const int32_t c = cell[tid];
        int32_t incl = c;
        for (int d = 1; d < HC_WARP; d *= 2) {
            const int32_t u = hc_shfl_up_int(incl, (unsigned)d);
            if (lane >= d)
                incl += u;
        }
        if (lane == HC_WARP - 1)
            warp_total[warp] = incl;
        __syncthreads();
        int32_t before = 0, span_total = 0;
        for (int w = 0; w < SEL_WARPS; w++) {
            const int32_t v = warp_total[w];
            before += w < warp ? v : 0;
            span_total += v;
        }
        cell[tid] = before + incl - c;
        __syncthreads();
        for (int k = 0; k < kn; k++) {
            const bool mine_k = ((mine >> k) & 1) != 0;
            const uint64_t votes = hc_ballot(mine_k);
            if (mine_k) {
                const int64_t r = base + (int64_t)k * SEL_THREADS + tid;
                const int64_t at = done + cell[k * SEL_WARPS + warp] + __popcll(votes & lower);
                idx[at] = map ? map[r] : (int32_t)r;
            }
        }
        done += span_total;
        __syncthreads(); /* cell and warp_total are rewritten by the next span */
    }
    if (tid == 0)
        *count = (int32_t)done;
}

extern "C" int hc_cu_launch_select_rows(void *stream, const float *scores, int64_t n_tok,
                                        int64_t n_rows, float cut, const int32_t *map,
                                        int32_t *idx, int32_t *count)
{
    hc_gpu_stream st = static_cast<hc_gpu_stream>(stream);
    select_rows_kernel<<<1, SEL_THREADS, 0, st>>>(scores, n_tok, n_rows, cut, map, idx, count);
    return hc_gpu_last_error();
}

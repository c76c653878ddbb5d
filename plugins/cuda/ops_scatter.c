/*
 * scatter_rows (ABI 1.3): the KV cache's new rows to the positions the
 * device holds.  Arguments are checked here; the copy is
 * kernels_scatter.cu.  Positions are in device memory and are not read
 * back: one outside [0, dst_rows) copies nothing.
 */
#include "cuda_plugin.h"

typedef long long ll;

hc_status hc_cu_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                             hc_ref pos, int64_t dst_rows)
{
    static const char op[] = "scatter_rows";
    hc_device *dev;
    uint64_t sb, db, pb;
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK)
        return st;
    if (n < 0 || dst_rows < 0 || row_bytes % 4 != 0 || row_bytes > INT64_MAX / 4)
        return hc_cu_fail(dev->ctx, HC_E_INVALID,
                          "%s: %lld rows of %llu bytes into %lld (rows are whole words)", op,
                          (ll)n, (unsigned long long)row_bytes, (ll)dst_rows);
    if ((st = hc_cu_check_ref_n(dev, op, "src", src, n, (int64_t)row_bytes, 1, &sb)) != HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "dst", dst, dst_rows, (int64_t)row_bytes, 1, &db)) !=
            HC_OK ||
        (st = hc_cu_check_ref_n(dev, op, "pos", pos, n, 1, 4, &pb)) != HC_OK ||
        (st = hc_cu_check_ref(dev, op, "src", src, sb, 4)) != HC_OK ||
        (st = hc_cu_check_ref(dev, op, "dst", dst, db, 4)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "dst", dst, db, "src", src, sb)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "dst", dst, db, "pos", pos, pb)) != HC_OK)
        return st;
    if (n == 0 || row_bytes == 0)
        return HC_OK;
    return hc_cu_check_queued(s,
                              (cudaError_t)hc_cu_launch_scatter_rows(
                                  s->s, hc_cu_addr(src), hc_cu_addr(dst),
                                  (int64_t)(row_bytes / 4), n, hc_cu_addr(pos), dst_rows),
                              "scatter_rows: launch");
}

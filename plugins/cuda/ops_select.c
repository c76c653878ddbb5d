/*
 * Device-side selection (ABI 1.3): select_rows checks its arguments (the
 * CPU plugin's checks and messages) and queues kernels_select.cu; the
 * counted sparse products are in ops_weight.c.  Nothing here reads device
 * memory: the list and its count stay on the GPU for the counted ops, so a
 * decode step needs no host wait between layers.
 */
#include "cuda_plugin.h"

typedef long long ll;

hc_status hc_cu_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows, float cut,
                            hc_ref map, hc_ref idx, hc_ref count)
{
    static const char op[] = "select_rows";
    hc_device *dev;
    uint64_t sb, mb = 0, lb;
    hc_status st = hc_cu_stream_dev(s, op, &dev);

    if (st != HC_OK)
        return st;
    if (n_tok < 0 || n_rows < 0 || n_rows > INT32_MAX)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "%s: %lld tokens of %lld rows is no selection",
                          op, (ll)n_tok, (ll)n_rows);
    if ((st = hc_cu_check_ref_n(dev, op, "scores", scores, n_tok, n_rows, 4, &sb)) != HC_OK ||
        (map.buf && (st = hc_cu_check_ref_n(dev, op, "map", map, n_rows, 1, 4, &mb)) != HC_OK) ||
        (st = hc_cu_check_ref_n(dev, op, "idx", idx, n_rows, 1, 4, &lb)) != HC_OK ||
        (st = hc_cu_check_ref(dev, op, "count", count, 4, 4)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "idx", idx, lb, "scores", scores, sb)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "count", count, 4, "scores", scores, sb)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, op, "count", count, 4, "idx", idx, lb)) != HC_OK ||
        (map.buf &&
         ((st = hc_cu_check_disjoint(dev, op, "idx", idx, lb, "map", map, mb)) != HC_OK ||
          (st = hc_cu_check_disjoint(dev, op, "count", count, 4, "map", map, mb)) != HC_OK)))
        return st;
    /* Always queued, even for no rows: the count must be written. */
    int e = hc_cu_launch_select_rows(s->s, hc_cu_addr(scores), n_tok, n_rows, cut,
                                     map.buf ? hc_cu_addr(map) : NULL, hc_cu_addr(idx),
                                     hc_cu_addr(count));
    return hc_cu_check_queued(s, (cudaError_t)e, op);
}

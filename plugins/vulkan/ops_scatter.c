/*
 * scatter_rows (ABI 1.3): dst row pos[t] = src row t.  The positions are
 * in device memory (the pass must not depend on the host's position
 * counter), so this cannot be a vkCmdCopyBuffer with host-known regions: it
 * records shaders/scatter_rows.comp, one invocation per word.
 *
 * Splits: one binding holds at most `usable` bytes, so the tokens run in
 * chunks whose rows fit one binding, and each chunk once per window of
 * destination rows (the shader skips positions outside its window).  A
 * single row larger than a binding is refused (HC_E_UNSUPPORTED; op_cost
 * answers -1 for it) and the core moves such rows itself.
 */
#include "vk_plugin.h"

typedef long long ll;
typedef unsigned long long ull;

int hc_vk_scatter_fits(const hc_device *dev, uint64_t row_bytes)
{
    return row_bytes <= hc_vk_usable_window(dev);
}

uint64_t hc_vk_scatter_dispatches(const hc_device *dev, uint64_t row_bytes, int64_t n,
                                  int64_t dst_rows)
{
    if (row_bytes == 0 || n <= 0 || dst_rows <= 0 || !hc_vk_scatter_fits(dev, row_bytes))
        return 0;
    const uint64_t per = hc_vk_usable_window(dev) / row_bytes;
    /* Positions are int32: rows past INT32_MAX are never written. */
    const uint64_t rows = (uint64_t)dst_rows < (1ull << 31) ? (uint64_t)dst_rows : 1ull << 31;
    return ((uint64_t)n + per - 1) / per * ((rows + per - 1) / per);
}

hc_status hc_vk_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                             hc_ref pos, int64_t dst_rows)
{
    static const char op[] = "scatter_rows";
    hc_device *dev;
    uint64_t sb, db, pb;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK)
        return st;
    if (row_bytes % 4 != 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: row_bytes %llu is not a multiple of 4", op,
                          (ull)row_bytes);
    if (n < 0 || dst_rows < 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: negative n %lld or dst_rows %lld", op,
                          (ll)n, (ll)dst_rows);
    const int64_t words = (int64_t)(row_bytes / 4); /* < 2^62 */
    if ((st = hc_vk_check_ref_n(dev, op, "src", src, n, words, 4, &sb)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "dst", dst, dst_rows, words, 4, &db)) != HC_OK ||
        (st = hc_vk_check_ref_n(dev, op, "pos", pos, n, 1, 4, &pb)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "dst", dst, db, "src", src, sb)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "dst", dst, db, "pos", pos, pb)) != HC_OK)
        return st;
    if (!hc_vk_scatter_fits(dev, row_bytes))
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "%s: a row of %llu bytes exceeds one binding (%llu bytes)", op,
                          (ull)row_bytes, (ull)hc_vk_usable_window(dev));
    if (hc_vk_scatter_dispatches(dev, row_bytes, n, dst_rows) == 0)
        return HC_OK; /* no token, no row or empty rows: nothing moves */
    const uint64_t per = hc_vk_usable_window(dev) / row_bytes; /* rows a binding holds */
    const uint64_t wg = hc_vk_kernel_wg(dev, HC_VK_OP_SCATTER_ROWS);
    const uint64_t rows = (uint64_t)dst_rows < (1ull << 31) ? (uint64_t)dst_rows : 1ull << 31;
    const uint64_t per_row = ((uint64_t)words + wg - 1) / wg;
    for (uint64_t t0 = 0; t0 < (uint64_t)n; t0 += per) {
        const uint64_t tn = (uint64_t)n - t0 < per ? (uint64_t)n - t0 : per;
        for (uint64_t r0 = 0; r0 < rows; r0 += per) {
            const uint64_t rn = rows - r0 < per ? rows - r0 : per;
            hc_vk_dispatch d = {0};
            hc_vk_layer_params p = {0};
            if ((st = hc_vk_range_of(dev, op, "src", (hc_ref){src.buf, src.off + t0 * row_bytes},
                                     tn * row_bytes, 4, &d.a, &p.a_off)) != HC_OK ||
                (st = hc_vk_range_of(dev, op, "pos", (hc_ref){pos.buf, pos.off + t0 * 4}, tn * 4,
                                     4, &d.b, &p.b_off)) != HC_OK ||
                (st = hc_vk_range_of(dev, op, "dst", (hc_ref){dst.buf, dst.off + r0 * row_bytes},
                                     rn * row_bytes, 4, &d.c, &p.c_off)) != HC_OK)
                return st;
            p.n = (uint32_t)tn;
            p.dim = (uint32_t)words;
            p.n_head = (uint32_t)per_row;
            p.kv_lo = (uint32_t)r0;
            p.kv_hi = (uint32_t)(r0 + rn);
            if ((st = hc_vk_record_layer(s, op, HC_VK_OP_SCATTER_ROWS, &d, &p, tn * per_row)) !=
                HC_OK)
                return st;
        }
    }
    return HC_OK;
}

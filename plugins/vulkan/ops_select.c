/*
 * Device-side selection (ABI 1.3): select_rows records shaders/
 * select_rows.comp; the counted sparse products are in ops_weight.c.
 * Every argument is checked here; the scores must fit one binding (a
 * decode layer's n_ff floats are far below it), larger ones are refused
 * and the core selects on the host.
 */
#include <stdio.h>

#include "vk_plugin.h"

typedef long long ll;

int hc_vk_select_fits(const hc_device *dev, int64_t n_tok, int64_t n_rows)
{
    const uint64_t win = hc_vk_usable_window(dev);
    return n_tok >= 0 && n_rows >= 0 && n_rows <= INT32_MAX &&
           (n_rows == 0 || (uint64_t)n_tok <= win / 4 / (uint64_t)n_rows) &&
           (uint64_t)n_rows <= win / 4;
}

hc_status hc_vk_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows,
                            float cut, hc_ref map, hc_ref idx, hc_ref count)
{
    static const char op[] = "select_rows";
    hc_device *dev;
    uint64_t sb, mb = 0, lb;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK)
        return st;
    if (n_tok < 0 || n_rows < 0 || n_rows > INT32_MAX)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "%s: %lld tokens of %lld rows is no selection",
                          op, (ll)n_tok, (ll)n_rows);
    if ((st = hc_vk_check_ref_n(dev, op, "scores", scores, n_tok, n_rows, 4, &sb)) != HC_OK ||
        (map.buf && (st = hc_vk_check_ref_n(dev, op, "map", map, n_rows, 1, 4, &mb)) != HC_OK) ||
        (st = hc_vk_check_ref_n(dev, op, "idx", idx, n_rows, 1, 4, &lb)) != HC_OK ||
        (st = hc_vk_check_ref(dev, op, "count", count, 4, 4)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "idx", idx, lb, "scores", scores, sb)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "count", count, 4, "scores", scores, sb)) != HC_OK ||
        (st = hc_vk_check_disjoint(dev, op, "count", count, 4, "idx", idx, lb)) != HC_OK ||
        (map.buf &&
         ((st = hc_vk_check_disjoint(dev, op, "idx", idx, lb, "map", map, mb)) != HC_OK ||
          (st = hc_vk_check_disjoint(dev, op, "count", count, 4, "map", map, mb)) != HC_OK)))
        return st;
    if (!hc_vk_select_fits(dev, n_tok, n_rows))
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "%s: %lld x %lld scores exceed one binding (%llu bytes)", op, (ll)n_tok,
                          (ll)n_rows, (unsigned long long)dev->window);
    hc_vk_dispatch d = {0};
    hc_vk_layer_params p = {0};
    /* Empty operands bind the count instead (a range is never empty); the
     * shader reads none of them then. */
    const int empty = sb == 0;
    if ((st = hc_vk_range_of(dev, op, "count", count, 4, 4, &d.d, &p.d_off)) != HC_OK ||
        (st = empty ? hc_vk_range_of(dev, op, "count", count, 4, 4, &d.a, &p.a_off)
                    : hc_vk_range_of(dev, op, "scores", scores, sb, 4, &d.a, &p.a_off)) != HC_OK ||
        (map.buf && mb &&
         (st = hc_vk_range_of(dev, op, "map", map, mb, 4, &d.b, &p.b_off)) != HC_OK) ||
        (lb && (st = hc_vk_range_of(dev, op, "idx", idx, lb, 4, &d.c, &p.c_off)) != HC_OK))
        return st;
    if (!d.c.buf)
        d.c = d.d; /* no rows: idx is never written */
    p.n = empty ? 0u : (uint32_t)n_rows;
    p.dim = (uint32_t)n_tok;
    p.flags = map.buf ? 1u : 0u;
    p.f0 = cut;
    return hc_vk_record_layer(s, op, HC_VK_OP_SELECT_ROWS, &d, &p, 1);
}

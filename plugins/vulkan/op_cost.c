/*
 * op_cost: a rough time estimate, printed by `hotcold bench --ops` beside
 * the time it measures.  Decode ops are memory-bound: the larger of bytes
 * / bandwidth and multiply-adds / rate, plus a fixed cost per dispatch
 * (recording, submission amortized over a frame).  The rates are per device kind, not
 * measured: orders of magnitude are what counts.  Lavapipe's were
 * measured on this project's 2-core CI machine; the GPU ones are modest
 * figures for a mid-range card.
 *
 * Cases the ops refuse (HC_E_UNSUPPORTED) answer -1, as the ABI requires.
 * The shape arguments are plugin.h's (at op_cost): for the weight ops the
 * weight's rows (which the window limits depend on) and cols and n tokens,
 * the sparse ops priced for a list of every row; for the layer ops rows x
 * cols elements per token (attention: positions x KV width).
 */
#include "vk_plugin.h"

typedef struct kind_rates {
    double bw;       /* bytes/s of weight streaming */
    double macs;     /* multiply-adds/s */
    double dispatch; /* seconds per dispatch */
} kind_rates;

static kind_rates rates_for(const hc_device *dev)
{
    switch (dev->pd->props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return (kind_rates){8e9, 4e9, 40e-6};
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return (kind_rates){50e9, 300e9, 15e-6};
    default: return (kind_rates){300e9, 3e12, 10e-6};
    }
}

static int weight_op(int op)
{
    switch (op) {
    case HC_OP_MATMUL: return HC_VK_OP_MATMUL;
    case HC_OP_MATVEC_ROWS: return HC_VK_OP_MATVEC_ROWS;
    case HC_OP_AXPY_ROWS: return HC_VK_OP_AXPY_ROWS;
    /* The counted ops are their base ops with the list length read on the
     * device. */
    case HC_OP_MATVEC_ROWS_COUNTED: return HC_VK_OP_MATVEC_ROWS;
    case HC_OP_AXPY_ROWS_COUNTED: return HC_VK_OP_AXPY_ROWS;
    default: return -1;
    }
}

double hc_vk_op_cost(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols, int64_t n)
{
    char why[160];

    if (!dev || dev->magic != HC_VK_MAGIC_DEVICE || rows < 0 || cols < 0 || n < 0)
        return -1.0;
    kind_rates k = rates_for(dev);
    double tok = n > 0 ? (double)n : 1.0;
    double elems = (double)rows * (double)cols;
    int kop = weight_op(op);
    if (kop >= 0) {
        if (hc_vk_weight_shape_ok(dev, kop, wtype, rows, cols, n, why, sizeof why) != HC_OK)
            return -1.0;
        double rb = (double)hc_type_row_size(wtype, cols);
        double bytes = (double)rows * rb + tok * ((double)rows + (double)cols) * 4;
        double t_mem = bytes / k.bw, t_mac = elems * tok / k.macs;
        return k.dispatch + (t_mem > t_mac ? t_mem : t_mac);
    }
    switch (op) {
    case HC_OP_COPY: return k.dispatch + 2 * elems * 4 * tok / k.bw;
    case HC_OP_ATTENTION:
        /* K and V streamed once per token; a multiply-add per element for
         * the scores and another for the weighted sum. */
        return k.dispatch + 2 * elems * 4 * tok / k.bw + 2 * elems * tok / k.macs;
    case HC_OP_RMSNORM:
    case HC_OP_ROPE:
    case HC_OP_UNARY:
    case HC_OP_BINARY:
    case HC_OP_GLU: return k.dispatch + 3 * elems * 4 * tok / k.bw;
    case HC_OP_SELECT_ROWS:
        /* One workgroup reads the scores: a fraction of the device. */
        return hc_vk_select_fits(dev, n, rows) ? k.dispatch + elems * 4 * tok / (k.bw / 16)
                                               : -1.0;
    case HC_OP_SCATTER_ROWS: {
        /* rows = dst_rows, cols = words per row: n rows read and written,
         * one dispatch per token chunk and destination window. */
        /* A row of 2^32 words never fits a binding; the test first keeps
         * cols * 4 from wrapping. */
        const uint64_t rb = (uint64_t)cols * 4;
        if ((uint64_t)cols > UINT32_MAX || !hc_vk_scatter_fits(dev, rb))
            return -1.0;
        uint64_t nd = hc_vk_scatter_dispatches(dev, rb, n, rows);
        return k.dispatch * (double)(nd > 0 ? nd : 1) + 2 * (double)cols * 4 * (double)n / k.bw;
    }
    default: return -1.0;
    }
}

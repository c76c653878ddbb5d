/*
 * op_cost: a memory-bound estimate, seconds = bytes the op moves / the
 * device's peak bandwidth (memory clock x bus width, device.c) + one
 * kernel launch.  The shape arguments mean what plugin.h says per op; the
 * sparse ops are priced for a list of every row, their counted forms as
 * the base ops (plugin.h).  Types without a kernel and shapes the ops
 * refuse (ops_weight.c, ops_layer.c, ops_select.c) answer -1, so an op
 * priced >= 0 is one the plugin runs.  matmul_batch is not asked about
 * (plugin.h): -1.
 */
#include "cuda_plugin.h"

/* Where the runtime does not tell the memory clock. */
#define FALLBACK_BANDWIDTH 1e11 /* bytes/s */
/* One kernel launch on the host, roughly. */
#define LAUNCH_SECONDS 5e-6

double hc_cu_op_cost(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols, int64_t n)
{
    char why[160];
    double bytes;

    if (!dev || dev->magic != HC_CU_MAGIC_DEVICE || rows < 0 || cols < 0 || n < 0)
        return -1.0;
    double bw = dev->info->bandwidth > 0 ? dev->info->bandwidth : FALLBACK_BANDWIDTH;
    /* The counted forms are priced as their base ops (plugin.h). */
    if (op == HC_OP_MATVEC_ROWS_COUNTED)
        op = HC_OP_MATVEC_ROWS;
    else if (op == HC_OP_AXPY_ROWS_COUNTED)
        op = HC_OP_AXPY_ROWS;
    switch (op) {
    case HC_OP_MATMUL:
    case HC_OP_MATVEC_ROWS:
    case HC_OP_AXPY_ROWS: {
        uint64_t rb = hc_type_row_size(wtype, cols);
        if ((rb == 0 && cols > 0) ||
            hc_cu_weight_shape_ok(wtype, rows, cols, n, why, sizeof why) != HC_OK)
            return -1.0;
        bytes = (double)rb * (double)rows;
        /* matmul, matvec_rows: x read (n x cols), y written (n x rows);
         * axpy_rows: h read (n x rows), y read and written (n x cols);
         * matvec_rows and axpy_rows also read the list (rows int32). */
        if (op == HC_OP_AXPY_ROWS)
            bytes += 4.0 * (double)n * ((double)rows + 2.0 * (double)cols) + 4.0 * (double)rows;
        else
            bytes += 4.0 * (double)n * ((double)cols + (double)rows) +
                     (op == HC_OP_MATVEC_ROWS ? 4.0 * (double)rows : 0.0);
        break;
    }
    /* rows = n_rows, cols = 1, n = n_tok: the scores read once, the map
     * (when there is one) and the list written. */
    case HC_OP_SELECT_ROWS:
        if (rows > INT32_MAX)
            return -1.0;
        bytes = 4.0 * (double)n * (double)rows + 2.0 * 4.0 * (double)rows;
        break;
    case HC_OP_COPY: bytes = 2.0 * 4.0 * (double)cols; break; /* read + write */
    /* rows = 1, cols = dim, n tokens: x read, w read, y written. */
    case HC_OP_RMSNORM: bytes = 4.0 * (2.0 * (double)n * (double)cols + (double)cols); break;
    /* rows = n_head, cols = head_dim, n = n_tok: each head read and written
     * (the rotated part; priced whole). */
    case HC_OP_ROPE:
        if (cols > HC_CU_ROPE_MAX_ROT) /* n_rot may be up to head_dim */
            return -1.0;
        bytes = 2.0 * 4.0 * (double)n * (double)rows * (double)cols + 4.0 * (double)n;
        break;
    /* rows = positions, cols = one KV row, n = n_tok: K and V once (the
     * heads of a group share them through the cache), q and out of each
     * token (about one KV row each), and the second, combining kernel. */
    case HC_OP_ATTENTION:
        bytes = 2.0 * 4.0 * (double)rows * (double)cols + 2.0 * 4.0 * (double)n * (double)cols;
        return bytes / bw + 2.0 * LAUNCH_SECONDS;
    /* rows = 1, cols = n elements: one or two read, one written. */
    case HC_OP_UNARY: bytes = 2.0 * 4.0 * (double)cols; break;
    case HC_OP_BINARY:
    case HC_OP_GLU: bytes = 3.0 * 4.0 * (double)cols; break;
    /* rows = the destination's, cols = words per row, n rows moved: each
     * read and written once. */
    case HC_OP_SCATTER_ROWS: bytes = 2.0 * 4.0 * (double)n * (double)cols; break;
    default: return -1.0;
    }
    return bytes / bw + LAUNCH_SECONDS;
}

/*
 * hotcold plugin ABI.
 *
 * A device plugin is a shared library named libhc-<family>[-<variant>].so that
 * exports exactly one symbol, HC_PLUGIN_ENTRY_SYMBOL ("hc_plugin_entry"):
 *
 *     const hc_plugin_ops *hc_plugin_entry(uint32_t abi_major, uint32_t abi_minor);
 *
 * It returns a pointer to a static, immutable table of function pointers, or
 * NULL if it cannot serve the requested major version.  The table begins with
 * a fixed header {size, abi_major, abi_minor, family, ...}.  Rules:
 *
 *  - abi_major must equal HC_PLUGIN_ABI_MAJOR or the core rejects the plugin.
 *  - Minor versions only ever append fields at the END of hc_plugin_ops.  A
 *    plugin built against an older minor has a smaller table; the core tests
 *    every optional entry with HC_OPS_HAS(), i.e. "inside `size` and non-NULL"
 *    (the same scheme as SQLite's sqlite3_vfs.iVersion).
 *  - A NULL entry means "unsupported".  The default behaviour for every
 *    optional op lives once, in the core (it runs the op on the CPU plugin and
 *    moves the vectors), never in a plugin.
 *  - Any op, required or optional, may refuse one call with
 *    HC_E_UNSUPPORTED (a type or shape it does not take): the core then
 *    runs that call on the CPU plugin, the same way, and counts it in the
 *    run's fallback statistics.  A refusing call must have queued nothing
 *    and changed nothing.  The CPU plugin is the exception: it is where
 *    fallbacks run, so a refusal there is an error.
 *  - Every call returns hc_status.  Plugins never abort, exit or print; detail
 *    goes to last_error() and to the host's log callback.
 *  - Plugins include only this header (and hotcold/plugin_kit.h, the
 *    header-only checks they share) and link nothing from the core.
 *
 * Data conventions (all ops):
 *  - Tensors are addressed as hc_ref = {buffer, byte offset}.
 *  - Activations are F32, row-major, rows contiguous.  Weights are stored in
 *    GGUF's layouts: a weight with `rows` rows of `cols` elements is `rows`
 *    consecutive rows of hc_type_row_size(type, cols) bytes each (ggml's ne0
 *    = cols is the contiguous dimension).  For quantized types cols is a
 *    multiple of the block size (32; 256 for Q6_K).
 *  - Row lists are int32 arrays in a device buffer, each entry in [0, rows).
 *  - Ops on one stream execute in order.  Host memory passed to upload must
 *    stay valid, and host memory passed to download is only valid, after
 *    stream_sync() returns (or event_sync() of an event recorded after
 *    them, ABI 1.4).
 *  - Results must not depend on the number of threads a plugin uses: every
 *    reduction is done in a fixed order.
 */
#ifndef HOTCOLD_PLUGIN_H
#define HOTCOLD_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HC_PLUGIN_ABI_MAJOR 1
#define HC_PLUGIN_ABI_MINOR 4
#define HC_PLUGIN_ENTRY_SYMBOL "hc_plugin_entry"

#if defined(_WIN32)
#define HC_PLUGIN_EXPORT __declspec(dllexport)
#else
#define HC_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- status codes -------------------------------------------------------- */
typedef enum hc_status {
    HC_OK = 0,
    HC_E_UNSUPPORTED = 1, /* op, type or shape not taken: the core runs this call on the CPU */
    HC_E_INVALID = 2,     /* bad argument (out of range, misaligned, NULL) */
    HC_E_NOMEM = 3,       /* device or host memory exhausted */
    HC_E_DEVICE = 4,      /* driver or device failure */
    HC_E_NODEV = 5,       /* no such device, or its driver is absent */
    HC_E_INTERNAL = 6     /* a bug: the plugin's own invariant failed */
} hc_status;

/* ---- weight types: the numeric values are GGUF's ggml_type ids ---------- */
typedef enum hc_type {
    HC_TYPE_F32 = 0,
    HC_TYPE_F16 = 1,
    HC_TYPE_Q4_0 = 2, /* blocks of 32: fp16 d, 16 bytes of nibbles; x = d*(q-8) */
    HC_TYPE_Q8_0 = 8, /* blocks of 32: fp16 d, 32 int8;               x = d*q     */
    HC_TYPE_Q6_K = 14 /* blocks of 256 (below); x = d*scale[i/16]*(q-32)           */
} hc_type;

#define HC_QK4_0 32
#define HC_QK8_0 32
#define HC_QK_K 256
#define HC_Q4_0_BLOCK_BYTES 18  /* 2 + 32/2 */
#define HC_Q8_0_BLOCK_BYTES 34  /* 2 + 32   */
#define HC_Q6_K_BLOCK_BYTES 210 /* 128 + 64 + 16 + 2 */

/* Q4_0 nibble order (GGUF): byte j of a block holds element j in its low
 * nibble and element j+16 in its high nibble.
 *
 * Q6_K (ggml's k-quant "super-block" of 256 elements, 210 bytes, in this
 * order): ql[128] the low 4 bits of each q, qh[64] the high 2 bits,
 * scales[16] int8, one per 16 consecutive elements, d fp16 (last, at byte
 * 208).  q is 6 bits (0..63); element i has x = d * scales[i/16] * (q - 32).
 * The bits of element i = 128*h + 32*g + l (h < 2, g < 4, l < 32) are in
 *   ql[64*h + 32*(g & 1) + l]: the low nibble for g < 2, the high for g >= 2;
 *   qh[32*h + l] >> (2*g) & 3: the high 2 bits. */

/* Bytes of one row of `cols` elements; 0 if the type is unknown or cols is
 * not a multiple of the block size. */
static inline uint64_t hc_type_row_size(hc_type t, int64_t cols)
{
    if (cols < 0)
        return 0;
    switch (t) {
    case HC_TYPE_F32: return (uint64_t)cols * 4u;
    case HC_TYPE_F16: return (uint64_t)cols * 2u;
    case HC_TYPE_Q4_0: return cols % HC_QK4_0 ? 0 : (uint64_t)(cols / HC_QK4_0) * HC_Q4_0_BLOCK_BYTES;
    case HC_TYPE_Q8_0: return cols % HC_QK8_0 ? 0 : (uint64_t)(cols / HC_QK8_0) * HC_Q8_0_BLOCK_BYTES;
    case HC_TYPE_Q6_K: return cols % HC_QK_K ? 0 : (uint64_t)(cols / HC_QK_K) * HC_Q6_K_BLOCK_BYTES;
    }
    return 0;
}

/* "f32", "f16", "q4_0", "q8_0", "q6_k", or "?" for a type outside this ABI. */
static inline const char *hc_type_name(hc_type t)
{
    switch (t) {
    case HC_TYPE_F32: return "f32";
    case HC_TYPE_F16: return "f16";
    case HC_TYPE_Q4_0: return "q4_0";
    case HC_TYPE_Q8_0: return "q8_0";
    case HC_TYPE_Q6_K: return "q6_k";
    }
    return "?";
}

/* ---- logging ------------------------------------------------------------ */
typedef enum hc_log_level {
    HC_LOG_DEBUG = 0,
    HC_LOG_INFO = 1,
    HC_LOG_WARN = 2,
    HC_LOG_ERROR = 3
} hc_log_level;

/* What the host gives a plugin at init.  Grows at the end; check `size`. */
typedef struct hc_plugin_host {
    size_t size;                 /* sizeof(hc_plugin_host) of the host */
    uint32_t abi_major, abi_minor;
    void (*log)(void *user, int level, const char *msg); /* may be NULL */
    void *log_user;
    int n_threads;               /* CPU worker threads; 0 = plugin's choice */
} hc_plugin_host;

/* ---- devices ------------------------------------------------------------ */
typedef enum hc_device_kind {
    HC_DEVICE_CPU = 0,
    HC_DEVICE_GPU = 1,  /* discrete */
    HC_DEVICE_IGPU = 2, /* integrated / shares host memory */
    HC_DEVICE_SOFT = 3  /* a software rasteriser such as Mesa lavapipe */
} hc_device_kind;

enum {
    HC_CAP_HOST_MAPPED = 1u << 0, /* buffer_host_ptr() returns host pointers */
    HC_CAP_WRAP_HOST = 1u << 1,   /* buffer_wrap_host() works (zero-copy weights) */
    HC_CAP_F16 = 1u << 2,         /* native fp16 arithmetic */
    HC_CAP_SUBGROUP = 1u << 3,    /* subgroup / warp reductions */
    HC_CAP_ASYNC = 1u << 4        /* streams run concurrently with the host */
};

typedef struct hc_device_info {
    size_t size;          /* sizeof(hc_device_info) as the caller knows it */
    char name[128];
    int kind;             /* hc_device_kind */
    uint32_t caps;        /* HC_CAP_* */
    uint64_t mem_total;   /* bytes */
    uint64_t mem_free;    /* bytes, best estimate now */
    uint64_t max_buffer;  /* largest single buffer_alloc, bytes */
    int n_threads;        /* CPU plugins: worker threads in use; else 0 */
} hc_device_info;

/* Opaque objects, defined by each plugin. */
typedef struct hc_plugin_ctx hc_plugin_ctx;
typedef struct hc_device hc_device;
typedef struct hc_buffer hc_buffer;
typedef struct hc_stream hc_stream;
typedef struct hc_graph hc_graph; /* a captured sequence of work (ABI 1.3) */
typedef struct hc_event hc_event; /* a point reached by a stream (ABI 1.4) */

/* A place in a buffer. */
typedef struct hc_ref {
    hc_buffer *buf;
    uint64_t off; /* bytes */
} hc_ref;

/* ---- op parameters ---------------------------------------------------- */
typedef enum hc_rope_mode {
    HC_ROPE_NORM = 0, /* rotate adjacent pairs (x[2i], x[2i+1]) — llama GGUF */
    HC_ROPE_NEOX = 2  /* rotate (x[i], x[i + n_rot/2])                        */
} hc_rope_mode;

typedef enum hc_unary_op {
    HC_UNARY_RELU_SHIFT = 0, /* y = max(x - p, 0)  (p = 0: plain relu) */
    HC_UNARY_SILU = 1,       /* y = x * sigmoid(x)                    */
    HC_UNARY_SCALE = 2       /* y = x * p                             */
} hc_unary_op;

typedef enum hc_binary_op {
    HC_BINARY_ADD = 0, /* y = a + b */
    HC_BINARY_MUL = 1  /* y = a * b */
} hc_binary_op;

typedef enum hc_glu_act {
    HC_GLU_SILU = 0,     /* h = silu(g) * u              (SwiGLU)  */
    HC_GLU_RELU = 1,     /* h = max(g - p, 0) * u        (ReGLU)   */
    HC_GLU_RELU_BOTH = 2 /* h = max(g - p, 0) * max(u,0) (dReLU)   */
} hc_glu_act;

/* Op ids: what op_cost() is asked about, and how the core names an op in
 * HOTCOLD_DISABLE_OPS and its fallback statistics (HC_PLUGIN_ENTRIES below
 * ties each id to its entry).  The values are fixed; new ids are appended. */
typedef enum hc_op_id {
    HC_OP_NONE = -1, /* an entry that is not an op (lifecycle, buffers, ...) */
    HC_OP_MATMUL = 0,
    HC_OP_MATVEC_ROWS = 1,
    HC_OP_AXPY_ROWS = 2,
    HC_OP_RMSNORM = 3,
    HC_OP_ROPE = 4,
    HC_OP_ATTENTION = 5,
    HC_OP_UNARY = 6,
    HC_OP_BINARY = 7,
    HC_OP_GLU = 8,
    HC_OP_COPY = 9,
    HC_OP_MATMUL_BATCH = 10, /* the ABI 1.2 entry; op_cost is never asked about it */
    HC_OP_SELECT_ROWS = 11,  /* the ABI 1.3 device-side selection ops ... */
    HC_OP_MATVEC_ROWS_COUNTED = 12,
    HC_OP_AXPY_ROWS_COUNTED = 13, /* ... priced like the ops they extend (op_cost) */
    HC_OP_SCATTER_ROWS = 14       /* ABI 1.3: rows to places read from device memory */
} hc_op_id;

/* One product of a matmul_batch (ABI 1.2): W (rows x cols of wtype) times
 * the batch's x into y (n x rows F32), for every row when idx.buf is NULL
 * (as matmul), else for the n_idx listed rows (as matvec_rows).  Fixed for
 * ABI 1.x: a later need gets a new op, not a longer struct. */
typedef struct hc_matmul_desc {
    hc_type wtype;
    hc_ref w;
    int64_t rows;
    hc_ref idx;
    int64_t n_idx;
    hc_ref y;
} hc_matmul_desc;

/* ---- the table ---------------------------------------------------------- */
typedef struct hc_plugin_ops {
    /* --- header: fixed forever ---------------------------------------- */
    size_t size;          /* sizeof(hc_plugin_ops) the plugin was built with */
    uint32_t abi_major;   /* HC_PLUGIN_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;   /* HC_PLUGIN_ABI_MINOR the plugin was built with */
    const char *family;   /* "cpu", "vulkan", "cuda", "rocm", ...           */
    const char *variant;  /* "avx2", "generic", ... or "" for none          */
    const char *version;  /* plugin's own version string                   */

    /* --- ABI 1.0: lifecycle (required) -------------------------------- */
    /* How well this plugin can run here: 0 = not at all (e.g. missing CPU
     * features); per family the highest non-zero probe is chosen.  Must be
     * cheap and must not need the ISA the plugin is built for. */
    int (*probe)(void);
    hc_status (*init)(const hc_plugin_host *host, hc_plugin_ctx **out);
    void (*shutdown)(hc_plugin_ctx *ctx);
    /* Detail of the last failure on this context (never NULL; "" if none). */
    const char *(*last_error)(hc_plugin_ctx *ctx);

    /* --- devices (required) ------------------------------------------- */
    /* A missing driver is not an error: report 0 devices (and say why in
     * no_device_reason, ABI 1.3). */
    int (*device_count)(hc_plugin_ctx *ctx);
    hc_status (*device_info)(hc_plugin_ctx *ctx, int index, hc_device_info *out);
    hc_status (*device_open)(hc_plugin_ctx *ctx, int index, hc_device **out);
    void (*device_close)(hc_device *dev);

    /* --- buffers (alloc/free required) --------------------------------- */
    hc_status (*buffer_alloc)(hc_device *dev, uint64_t size, hc_buffer **out);
    /* The core frees a buffer only after stream_sync on its device's
     * stream: no op queued or running uses it any more. */
    void (*buffer_free)(hc_buffer *buf);
    /* optional: a device buffer over existing host memory (zero-copy). */
    hc_status (*buffer_wrap_host)(hc_device *dev, void *ptr, uint64_t size, hc_buffer **out);
    /* optional: host address of a host-visible buffer, else NULL. */
    void *(*buffer_host_ptr)(hc_buffer *buf);

    /* --- streams and transfers (required) ------------------------------ */
    hc_status (*stream_create)(hc_device *dev, hc_stream **out);
    void (*stream_destroy)(hc_stream *s);
    hc_status (*stream_sync)(hc_stream *s);
    hc_status (*upload)(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes);
    hc_status (*download)(hc_stream *s, void *dst, hc_ref src, uint64_t bytes);
    /* optional: device-to-device copy within one device. */
    hc_status (*copy)(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes);

    /* --- dense compute (required) -------------------------------------- */
    /* y[t][r] = sum_c W[r][c] * x[t][c] for t < n, r < rows.
     * x: n x cols F32, y: n x rows F32. */
    hc_status (*matmul)(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                        hc_ref x, int64_t n, hc_ref y);

    /* --- sparse compute (required from ABI 1.0; slots reserved) --------- */
    /* For each listed row r: y[t][r] = sum_c W[r][c] * x[t][c], t < n.
     * Rows not listed are left bit-identical.  idx: int32[n_idx]. */
    hc_status (*matvec_rows)(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                             hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
    /* y[t][c] += sum_k h[t][idx[k]] * Wt[idx[k]][c] for c < cols, t < n.
     * Wt is `rows` x `cols` (down projection stored transposed),
     * h: n x rows F32, y: n x cols F32.  Summation over k in an order
     * fixed by the list alone: list order, or list-order slices added in
     * slice order (docs/PLUGINS.md). */
    hc_status (*axpy_rows)(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                           hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);

    /* --- layer ops (optional: NULL = the core runs them on the CPU) ----- */
    /* y[t] = x[t] / sqrt(mean(x[t]^2) + eps) * w, t < n; w F32[dim]. */
    hc_status (*rmsnorm)(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                         float eps);
    /* In place on x: n_tok x (n_head * head_dim).  The first n_rot dims of
     * each head are rotated by pos[t] * freq_scale * freq_base^(-2i/n_rot).
     * pos: int32[n_tok]. */
    hc_status (*rope)(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                      int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode);
    /* Causal attention of n_tok queries over an F32 KV cache.
     * q, out: n_tok x (n_head * head_dim); k, v: rows of (n_head_kv * head_dim)
     * indexed by position; token t attends positions 0..pos[t] inclusive.
     * Query head h uses KV head h / (n_head / n_head_kv).  scale multiplies
     * q.k before the softmax (usually 1/sqrt(head_dim)). */
    hc_status (*attention)(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                           hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                           float scale);
    hc_status (*unary)(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param);
    hc_status (*binary)(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n);
    /* h[i] = act(g[i], u[i]) for i < n; see hc_glu_act.  shift: p. */
    hc_status (*glu)(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift);

    /* --- tuning (optional) --------------------------------------------- */
    /* Estimated seconds for op `op` (an hc_op_id) of this shape on this
     * device, or a negative number when the device would refuse it with
     * HC_E_UNSUPPORTED (said without a failed call; the conformance suite
     * holds a plugin to it: an op priced >= 0 must not refuse).  The shape,
     * per op, in the terms of that op's entry below:
     *   MATMUL, MATVEC_ROWS, AXPY_ROWS  wtype, rows and cols of the weight
     *       exactly as the call passes them (for axpy_rows the rows of Wt),
     *       n = tokens.  For the two sparse ops the answer is for a list of
     *       every row; a list of k rows reads k/rows of the weight.
     *   RMSNORM    rows = 1, cols = dim, n = the call's n
     *   ROPE       rows = n_head, cols = head_dim, n = n_tok
     *   ATTENTION  rows = positions attended (the largest pos + 1),
     *              cols = n_head_kv * head_dim (one KV row), n = n_tok
     *   UNARY, BINARY, GLU  rows = 1, cols = the call's n, n = 1
     *   COPY       rows = 1, cols = bytes / 4, n = 1
     *   SELECT_ROWS  rows = n_rows, cols = 1, n = n_tok
     *   MATVEC_ROWS_COUNTED, AXPY_ROWS_COUNTED  as their base ops, for a
     *              count of every row
     *   SCATTER_ROWS  rows = the destination's rows, cols = row_bytes / 4,
     *              n = the call's n
     * wtype is HC_TYPE_F32 for every op without a weight.  Other ids
     * (HC_OP_MATMUL_BATCH, ids of later minors) may answer -1.
     * `hotcold bench --ops` prints the answer beside the time it measures;
     * the core does not schedule by it yet. */
    double (*op_cost)(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols, int64_t n);
    /* Change the worker-thread count (CPU plugins). */
    hc_status (*set_threads)(hc_plugin_ctx *ctx, int n_threads);

    /* --- ABI 1.1 ------------------------------------------------------ */
    /* optional: start the work recorded on the stream so far without
     * waiting for it, so that the device computes while the host goes on
     * (the hybrid scheduler issues the GPU's hot rows, flushes, computes the
     * cold rows on the CPU, then syncs).  NULL: the plugin starts work as it
     * is issued, or only at sync; results are the same either way. */
    hc_status (*stream_flush)(hc_stream *s);

    /* --- ABI 1.2 ------------------------------------------------------ */
    /* optional: the n_desc products of one x (n x cols F32) in one call:
     * each desc as matmul or matvec_rows would compute it, with the same
     * results bit for bit; no y may overlap x, a weight, an index list or
     * another y.  Lets a device run a layer's q, k and v projections, or the
     * FFN's gate and up rows, as one piece of work instead of several
     * small ones.  NULL: the core calls matmul / matvec_rows per desc. */
    hc_status (*matmul_batch)(hc_stream *s, const hc_matmul_desc *desc, int n_desc, int64_t cols,
                              hc_ref x, int64_t n);

    /* --- ABI 1.3 ------------------------------------------------------ */
    /* optional: why device_count() is 0, as one line for the user (never
     * NULL; "" when the plugin cannot tell), e.g. "no Vulkan driver (ICD)
     * found: vkCreateInstance returned VK_ERROR_INCOMPATIBLE_DRIVER".
     * Zero devices is not a failure, so last_error() (the detail of a
     * failed call) is not the place for it.  The core calls it after an
     * init() that left 0 devices and shows the text in `hotcold devices`
     * and in its "no device" errors.  NULL: the core says the plugin gives
     * no reason. */
    const char *(*no_device_reason)(hc_plugin_ctx *ctx);

    /* optional, with the two below: device-side selection, so that a GPU
     * runs a sparse FFN without the host reading anything (no host
     * synchronisation between layers).  For r < n_rows, row r is active
     * when scores[t][r] >= cut for some token t < n_tok (scores: n_tok x
     * n_rows F32; a NaN is never >= cut).  The active rows, in ascending
     * r, are written to idx as r (map.buf NULL) or as map[r] (map:
     * int32[n_rows]; rows with map[r] < 0 are left out: another device
     * computes them), and how many were written to count (one int32).
     * idx must hold n_rows entries; those past the count are left as they
     * were.  The order is fixed by the scores alone, so the list (and every
     * sum over it) is the same on every device and every run. */
    hc_status (*select_rows)(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows,
                             float cut, hc_ref map, hc_ref idx, hc_ref count);
    /* optional: matvec_rows and axpy_rows whose list length is the int32 at
     * `count` in device memory as the op runs (written by select_rows, say),
     * clamped to [0, max_idx]; idx holds max_idx entries.  Each gives the
     * bits its base op gives for n_idx = that count. */
    hc_status (*matvec_rows_counted)(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                     int64_t cols, hc_ref x, int64_t n, hc_ref idx, hc_ref count,
                                     int64_t max_idx, hc_ref y);
    hc_status (*axpy_rows_counted)(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                   int64_t cols, hc_ref h, int64_t n, hc_ref idx, hc_ref count,
                                   int64_t max_idx, hc_ref y);

    /* optional: dst row pos[t] = src row t for t < n, rows of row_bytes
     * (a multiple of 4) each, src rows contiguous, dst holding dst_rows
     * rows; pos: int32[n] in device memory, distinct (the core's are
     * n_past + t; with a repeat, which row lands is unspecified), and a
     * position outside [0, dst_rows) copies nothing.  The KV cache's new rows go to the
     * positions the device holds, so a pass's work does not depend on the
     * host's position counter (and can be captured once, below). */
    hc_status (*scatter_rows)(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes,
                              int64_t n, hc_ref pos, int64_t dst_rows);

    /* optional, both or neither: host memory this device copies to and
     * from without staging (page-locked), for the vectors that cross every
     * layer or token, so that upload and download are truly asynchronous.
     * Any host memory still works with upload/download; this is faster,
     * and required while capturing (below).  NULL: the core uses malloc. */
    hc_status (*host_alloc)(hc_device *dev, uint64_t size, void **out);
    void (*host_free)(hc_device *dev, void *ptr);

    /* optional, all four or none: capture.  Between capture_begin and
     * capture_end the ops issued on s are recorded, not run; capture_end
     * gives a graph that graph_launch runs on s, in order, as often as
     * wanted (a CUDA graph).  While capturing: no stream_sync on s, and
     * host memory named by upload and download must come from host_alloc
     * (it is read and written when the graph runs).  Arguments are fixed at
     * capture: what changes between launches lives in memory (positions,
     * counts, the input vectors).  capture_begin may refuse with
     * HC_E_UNSUPPORTED (e.g. HOTCOLD_CUDA_GRAPHS=0): the core then issues
     * every pass.  A failed capture_end leaves s usable and no graph. */
    hc_status (*capture_begin)(hc_stream *s);
    hc_status (*capture_end)(hc_stream *s, hc_graph **out);
    hc_status (*graph_launch)(hc_stream *s, hc_graph *g);
    void (*graph_free)(hc_graph *g);

    /* --- ABI 1.4 ------------------------------------------------------ */
    /* optional, the first four all or none: events, so that a copy between
     * devices waits for the side that produced it only, and the device's
     * own clock can time its work.
     *  - event_create: an event of dev, not yet recorded.  event_destroy
     *    frees it (the core destroys an event only when no recording of it
     *    is still pending: after its sync, or a stream_sync of its stream).
     *  - event_record: marks the point stream s has reached: the event is
     *    reached once every op issued on s before it has completed.
     *    Recording again moves the mark.  s must belong to the event's
     *    device (else HC_E_INVALID).  While s captures it may refuse with
     *    HC_E_UNSUPPORTED, or be captured (each launch records it); the
     *    core records none inside a capture.
     *  - event_sync: the host waits for the recorded point only (not for
     *    work issued after it), and then, as after stream_sync, host
     *    memory named by downloads issued before it holds their bytes and
     *    host memory named by uploads before it may be reused.  An event
     *    never recorded: HC_E_INVALID.
     *  - event_elapsed (optional even with the others): the device time
     *    in milliseconds (>= 0) from a's point to b's, a and b recorded on
     *    one stream, a first, and b reached since (a sync of b, of an
     *    event recorded after it, or of the stream has returned); else
     *    HC_E_INVALID.  HC_E_UNSUPPORTED where the device has no
     *    clock for it.
     * NULL: the core's default (device_fallback.c): record remembers the
     * stream, sync is stream_sync, and elapsed is the host's clock between
     * the record of a and the sync of b (host time, so it counts the host's
     * waits; the run's statistics say which clock timed them). */
    hc_status (*event_create)(hc_device *dev, hc_event **out);
    void (*event_destroy)(hc_event *ev);
    hc_status (*event_record)(hc_stream *s, hc_event *ev);
    hc_status (*event_sync)(hc_event *ev);
    hc_status (*event_elapsed)(const hc_event *a, const hc_event *b, double *ms);

    /* --- append new entries for ABI 1.5 and later below this line ------- */
} hc_plugin_ops;

typedef const hc_plugin_ops *(*hc_plugin_entry_fn)(uint32_t abi_major, uint32_t abi_minor);

/* ---- every entry, as one list --------------------------------------------
 * HC_PLUGIN_ENTRIES(X) calls X(name, op, need, minor) once per entry of
 * hc_plugin_ops after the header, in table order:
 *   name   the field;
 *   op     its hc_op_id when it is an op, else HC_OP_NONE;
 *   need   HC_ENTRY_REQUIRED: the loader rejects a table in which it is
 *          NULL or past `size`; HC_ENTRY_OPTIONAL: NULL or past `size`
 *          means unsupported, and the core has the one default for it;
 *   minor  the ABI minor that appended it (0: the 1.0 table).
 * The core's list of required entries, the op names HOTCOLD_DISABLE_OPS
 * accepts, the core's table of op wrappers and the conformance suite's
 * cases are all made from this list; the core's build checks that it
 * names every field of the struct, in order.  A new entry is a field at
 * the end of hc_plugin_ops and a line at the end of this list. */
#define HC_ENTRY_OPTIONAL 0
#define HC_ENTRY_REQUIRED 1
#define HC_PLUGIN_ENTRIES(X)                                              \
    X(probe, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                            \
    X(init, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                             \
    X(shutdown, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                         \
    X(last_error, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                       \
    X(device_count, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                     \
    X(device_info, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                      \
    X(device_open, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                      \
    X(device_close, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                     \
    X(buffer_alloc, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                     \
    X(buffer_free, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                      \
    X(buffer_wrap_host, HC_OP_NONE, HC_ENTRY_OPTIONAL, 0)                 \
    X(buffer_host_ptr, HC_OP_NONE, HC_ENTRY_OPTIONAL, 0)                  \
    X(stream_create, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                    \
    X(stream_destroy, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                   \
    X(stream_sync, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                      \
    X(upload, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                           \
    X(download, HC_OP_NONE, HC_ENTRY_REQUIRED, 0)                         \
    X(copy, HC_OP_COPY, HC_ENTRY_OPTIONAL, 0)                             \
    X(matmul, HC_OP_MATMUL, HC_ENTRY_REQUIRED, 0)                         \
    X(matvec_rows, HC_OP_MATVEC_ROWS, HC_ENTRY_REQUIRED, 0)               \
    X(axpy_rows, HC_OP_AXPY_ROWS, HC_ENTRY_REQUIRED, 0)                   \
    X(rmsnorm, HC_OP_RMSNORM, HC_ENTRY_OPTIONAL, 0)                       \
    X(rope, HC_OP_ROPE, HC_ENTRY_OPTIONAL, 0)                             \
    X(attention, HC_OP_ATTENTION, HC_ENTRY_OPTIONAL, 0)                   \
    X(unary, HC_OP_UNARY, HC_ENTRY_OPTIONAL, 0)                           \
    X(binary, HC_OP_BINARY, HC_ENTRY_OPTIONAL, 0)                         \
    X(glu, HC_OP_GLU, HC_ENTRY_OPTIONAL, 0)                               \
    X(op_cost, HC_OP_NONE, HC_ENTRY_OPTIONAL, 0)                          \
    X(set_threads, HC_OP_NONE, HC_ENTRY_OPTIONAL, 0)                      \
    X(stream_flush, HC_OP_NONE, HC_ENTRY_OPTIONAL, 1)                     \
    X(matmul_batch, HC_OP_MATMUL_BATCH, HC_ENTRY_OPTIONAL, 2)             \
    X(no_device_reason, HC_OP_NONE, HC_ENTRY_OPTIONAL, 3)                 \
    X(select_rows, HC_OP_SELECT_ROWS, HC_ENTRY_OPTIONAL, 3)               \
    X(matvec_rows_counted, HC_OP_MATVEC_ROWS_COUNTED, HC_ENTRY_OPTIONAL, 3)\
    X(axpy_rows_counted, HC_OP_AXPY_ROWS_COUNTED, HC_ENTRY_OPTIONAL, 3)   \
    X(scatter_rows, HC_OP_SCATTER_ROWS, HC_ENTRY_OPTIONAL, 3)             \
    X(host_alloc, HC_OP_NONE, HC_ENTRY_OPTIONAL, 3)                       \
    X(host_free, HC_OP_NONE, HC_ENTRY_OPTIONAL, 3)                        \
    X(capture_begin, HC_OP_NONE, HC_ENTRY_OPTIONAL, 3)                    \
    X(capture_end, HC_OP_NONE, HC_ENTRY_OPTIONAL, 3)                      \
    X(graph_launch, HC_OP_NONE, HC_ENTRY_OPTIONAL, 3)                     \
    X(graph_free, HC_OP_NONE, HC_ENTRY_OPTIONAL, 3)                       \
    X(event_create, HC_OP_NONE, HC_ENTRY_OPTIONAL, 4)                     \
    X(event_destroy, HC_OP_NONE, HC_ENTRY_OPTIONAL, 4)                    \
    X(event_record, HC_OP_NONE, HC_ENTRY_OPTIONAL, 4)                     \
    X(event_sync, HC_OP_NONE, HC_ENTRY_OPTIONAL, 4)                       \
    X(event_elapsed, HC_OP_NONE, HC_ENTRY_OPTIONAL, 4)

/* Is `field` present in a table of `ops->size` bytes and non-NULL? */
#define HC_OPS_HAS(ops, field)                                                              \
    ((ops) != NULL && (ops)->size >= offsetof(hc_plugin_ops, field) + sizeof((ops)->field) && \
     (ops)->field != NULL)

#ifdef __cplusplus
}
#endif
#endif /* HOTCOLD_PLUGIN_H */

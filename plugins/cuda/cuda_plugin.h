/*
 * Internal contract of the CUDA plugin: the objects behind the opaque ABI
 * handles and the functions its files share.  Everything here has hidden
 * visibility (and exports.map keeps hc_plugin_entry the one exported
 * symbol, static cudart included).
 *
 * Host code is C over the runtime API (cuda_runtime_api.h); the kernels are
 * in kernels_*.cu, reached through the hc_cu_launch_* functions below.
 * A device is a runtime device index: every call that touches one sets it
 * current on the calling thread first (cudaSetDevice is per thread).
 *
 * Environment:
 *   HOTCOLD_CUDA_MEMORY_LIMIT  bytes of device buffers allowed per device:
 *                              simulates a small GPU (memory.c)
 *   (HOTCOLD_ROCM_... in the HIP build: gpu_runtime.h's HC_GPU_ENV)
 */
#ifndef HC_CUDA_PLUGIN_H
#define HC_CUDA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "hotcold/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel launchers (kernels_*.cu): they queue one kernel on `stream`
 * (a cudaStream_t) and return its cudaError_t as an int, so that this
 * header needs no CUDA header.  Pointers are device addresses; shapes are
 * checked by the caller (ops_weight.c). */
int hc_cu_launch_dot_rows(void *stream, hc_type t, const void *w, uint64_t row_bytes,
                          int64_t rows, int64_t cols, const float *x, int64_t n,
                          const int32_t *idx, int64_t n_out, float *y);
/* count NULL: n_idx entries; else the int32 at count, clamped to [0,
 * n_idx], read on the device (axpy_rows_counted). */
/* part: hc_cu_axpy_slices(n, cols, n_idx) x n x cols floats of scratch when
 * that is above 1 (the sliced order, kernels_axpy.cu), else unused. */
int hc_cu_launch_axpy_rows(void *stream, hc_type t, const void *wt, uint64_t row_bytes,
                           int64_t rows, int64_t cols, const float *h, int64_t n,
                           const int32_t *idx, int64_t n_idx, const int32_t *count, float *y,
                           float *part);
int64_t hc_cu_axpy_slices(int64_t n, int64_t cols, int64_t n_idx);
int hc_cu_launch_scatter_rows(void *stream, const void *src, void *dst, int64_t words,
                              int64_t n, const int32_t *pos, int64_t dst_rows);
/* Does a kernel take weights of type t? */
int hc_cu_kernel_has_type(hc_type t);

/* matmul_batch (kernels_dot.cu): the products of one x, each exactly as
 * hc_cu_launch_dot_rows computes it (the same kernel, one block per row);
 * all of type t, at most HC_CU_DOT_JOBS per launch. */
#define HC_CU_DOT_JOBS 8
typedef struct hc_cu_dot_job {
    const void *w;
    uint64_t row_bytes;
    int64_t rows;
    const int32_t *idx; /* NULL: every row */
    int64_t n_out;      /* rows, or the list's length (counted: max_idx) */
    float *y;
    const int32_t *count; /* NULL, or matvec_rows_counted's count (device memory) */
} hc_cu_dot_job;
int hc_cu_launch_dot_jobs(void *stream, hc_type t, const hc_cu_dot_job *jobs, int n_jobs,
                          int64_t cols, const float *x, int64_t n);

/* select_rows (kernels_select.cu): one block; checked by ops_select.c. */
int hc_cu_launch_select_rows(void *stream, const float *scores, int64_t n_tok, int64_t n_rows,
                             float cut, const int32_t *map, int32_t *idx, int32_t *count);

/* The layer kernels (kernels_layer.cu, kernels_attention.cu); shapes are
 * checked by ops_layer.c. */
int hc_cu_launch_rmsnorm(void *stream, const float *x, const float *w, float *y, int64_t n,
                         int64_t dim, float eps);
int hc_cu_launch_rope(void *stream, float *x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                      int64_t n_rot, const int32_t *pos, float freq_base, float freq_scale,
                      int mode);
/* kind 0: unary, 1: binary, 2: glu (b unused for unary). */
int hc_cu_launch_eltwise(void *stream, int kind, int op, const float *a, const float *b, float *y,
                         int64_t n, float param);
/* Tokens t0 .. t0 + n_tok - 1, positions in slices of `slice`; with
 * n_slices > 1 `part` holds hc_cu_attention_part_floats(head_dim) floats
 * per (token of this launch, head, slice). */
int hc_cu_launch_attention(void *stream, const float *q, const float *k, const float *v,
                           float *out, const int32_t *pos, int64_t t0, int64_t n_tok,
                           int64_t n_head, int64_t n_head_kv, int64_t head_dim, float scale,
                           int64_t kv_rows, int64_t slice, int64_t n_slices, float *part);
int64_t hc_cu_attention_part_floats(int64_t head_dim);

#ifdef __cplusplus
}
#endif

#if !defined(__CUDACC__) && !defined(__HIPCC__) /* not in nvcc or hipcc: the kernels */
#include <pthread.h>
#include <stdatomic.h>

#include "gpu_runtime.h" /* the CUDA runtime API, or HIP's under its names */

#include "hotcold/plugin_kit.h"

#if defined(__GNUC__)
#define HC_CU_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HC_CU_PRINTF(a, b)
#endif

/* Tags at the start of every handle: a foreign or freed handle is refused. */
#define HC_CU_MAGIC_DEVICE 0x44554348u /* "HCUD" */
#define HC_CU_MAGIC_BUFFER 0x42554348u /* "HCUB" */
#define HC_CU_MAGIC_STREAM 0x53554348u /* "HCUS" */
#define HC_CU_MAGIC_EVENT 0x45554348u  /* "HCUE" */

#define HC_CU_ERR_LEN 320

/* What device.c learned about one runtime device at init. */
typedef struct hc_cu_devinfo {
    char name[128];
    int major, minor;          /* compute capability */
    int integrated;
    uint64_t mem_total;
    double bandwidth;          /* bytes/s from the memory clock and bus width; 0 = unknown */
    /* HOTCOLD_CUDA_MEMORY_LIMIT as of the last device_open (UINT64_MAX:
     * none), and the bytes of buffers counted against it. */
    uint64_t mem_limit;
    atomic_uint_least64_t limited;
} hc_cu_devinfo;

struct hc_plugin_ctx {
    hc_plugin_host host;       /* the host's table, zero-filled past its size */
    hc_cu_devinfo *devs;
    int n_devs;
    pthread_mutex_t err_lock;
    char err[HC_CU_ERR_LEN];
    char no_devices[HC_CU_ERR_LEN]; /* why n_devs is 0 (no_device_reason) */
};

struct hc_device {
    uint32_t magic;
    hc_plugin_ctx *ctx;
    int index;                 /* the runtime's device number */
    hc_cu_devinfo *info;
};

struct hc_buffer {
    uint32_t magic;
    hc_device *dev;
    void *ptr;                 /* device address (cudaMalloc) */
    uint64_t size;
};

struct hc_stream {
    uint32_t magic;
    hc_device *dev;
    cudaStream_t s;
    int failed;                /* a launch or copy failed: every later call refuses */
    hc_buffer *scratch;        /* attention's and axpy_rows' partials (stream.c), or NULL */
    int capturing;             /* between capture_begin and capture_end (capture.c) */
    int scratch_captured;      /* a capture was given `scratch`: a graph may use it */
    /* Scratch buffers a graph may use, outgrown since: kept until the stream goes. */
#define HC_CU_RETIRED_MAX 8
    hc_buffer *retired[HC_CU_RETIRED_MAX];
    int n_retired;
};

/* ---- validate.c: errors, logging, the argument checks over the kit ----- */
const char *hc_cu_init_error(void);
hc_status hc_cu_fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...) HC_CU_PRINTF(3, 4);
/* A runtime error: HC_E_NOMEM for cudaErrorMemoryAllocation, else
 * HC_E_DEVICE, with "<what>: <cudaGetErrorString> (<code>)". */
hc_status hc_cu_fail_cuda(hc_plugin_ctx *ctx, cudaError_t e, const char *what);
void hc_cu_log(hc_plugin_ctx *ctx, int level, const char *fmt, ...) HC_CU_PRINTF(3, 4);
hc_status hc_cu_kit_fail(void *ctx, hc_status st, const char *msg);
/* The stream's device, current on this thread; refuses a failed stream. */
hc_status hc_cu_stream_dev(hc_stream *s, const char *op, hc_device **dev);
/* After queuing on s: a launch error marks the stream failed. */
hc_status hc_cu_check_queued(hc_stream *s, cudaError_t e, const char *what);
/* r is one of our buffers on dev, with `bytes` at r.off, aligned to align. */
hc_status hc_cu_check_ref(hc_device *dev, const char *op, const char *name, hc_ref r,
                          uint64_t bytes, uint64_t align);
/* count1 x count2 elements of elem bytes at r: *bytes. */
hc_status hc_cu_check_ref_n(hc_device *dev, const char *op, const char *name, hc_ref r,
                            int64_t count1, int64_t count2, uint64_t elem, uint64_t *bytes);
hc_status hc_cu_check_disjoint(hc_device *dev, const char *op, const char *a_name, hc_ref a,
                               uint64_t na, const char *b_name, hc_ref b, uint64_t nb);
/* Device address of r (checked before). */
static inline void *hc_cu_addr(hc_ref r)
{
    return (uint8_t *)r.buf->ptr + r.off;
}

/* ---- device.c ------------------------------------------------------------ */
hc_status hc_cu_devices_probe(hc_plugin_ctx *ctx);
hc_status hc_cu_set_device(hc_plugin_ctx *ctx, int index);
hc_status hc_cu_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out);
hc_status hc_cu_device_open(hc_plugin_ctx *ctx, int index, hc_device **out);
void hc_cu_device_close(hc_device *dev);

/* ---- memory.c ------------------------------------------------------------ */
uint64_t hc_cu_memory_limit(hc_plugin_ctx *ctx);
hc_status hc_cu_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out);
void hc_cu_buffer_free(hc_buffer *buf);

/* ---- stream.c ------------------------------------------------------------ */
hc_status hc_cu_stream_create(hc_device *dev, hc_stream **out);
void hc_cu_stream_destroy(hc_stream *s);
hc_status hc_cu_stream_sync(hc_stream *s);
hc_status hc_cu_stream_flush(hc_stream *s);
/* At least `bytes` of device memory for this stream's ops alone, in order
 * with them; growing it waits for the work queued so far. */
hc_status hc_cu_stream_scratch(hc_stream *s, uint64_t bytes, void **out);

/* ---- transfer.c ---------------------------------------------------------- */
hc_status hc_cu_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes);
hc_status hc_cu_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes);
hc_status hc_cu_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes);

/* ---- ops_weight.c -------------------------------------------------------- */
hc_status hc_cu_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                       hc_ref x, int64_t n, hc_ref y);
hc_status hc_cu_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                            hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
hc_status hc_cu_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                          hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
hc_status hc_cu_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                    int64_t cols, hc_ref x, int64_t n, hc_ref idx, hc_ref count,
                                    int64_t max_idx, hc_ref y);
hc_status hc_cu_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                  int64_t cols, hc_ref h, int64_t n, hc_ref idx, hc_ref count,
                                  int64_t max_idx, hc_ref y);
hc_status hc_cu_matmul_batch(hc_stream *s, const hc_matmul_desc *desc, int n_desc, int64_t cols,
                             hc_ref x, int64_t n);
/* Would a weight op of this shape run (HC_OK), or be refused (why)? */
hc_status hc_cu_weight_shape_ok(hc_type wtype, int64_t rows, int64_t cols, int64_t n, char *why,
                                size_t why_len);

/* ---- ops_select.c -------------------------------------------------------- */
hc_status hc_cu_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows, float cut,
                            hc_ref map, hc_ref idx, hc_ref count);

/* ---- ops_layer.c --------------------------------------------------------- */
hc_status hc_cu_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                        float eps);
hc_status hc_cu_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                     int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode);
hc_status hc_cu_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                          hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                          float scale);
hc_status hc_cu_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param);
hc_status hc_cu_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n);
hc_status hc_cu_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift);
/* The largest n_rot (so head_dim) rope takes: its angles are in shared memory. */
#define HC_CU_ROPE_MAX_ROT 8192

/* ---- ops_scatter.c, capture.c (ABI 1.3) ---------------------------------- */
hc_status hc_cu_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                             hc_ref pos, int64_t dst_rows);
hc_status hc_cu_capture_begin(hc_stream *s);
hc_status hc_cu_capture_end(hc_stream *s, hc_graph **out);
hc_status hc_cu_graph_launch(hc_stream *s, hc_graph *g);
void hc_cu_graph_free(hc_graph *g);
hc_status hc_cu_host_alloc(hc_device *dev, uint64_t size, void **out);
void hc_cu_host_free(hc_device *dev, void *ptr);

/* ---- events.c (ABI 1.4): cudaEvent_t with timing ------------------------ */
hc_status hc_cu_event_create(hc_device *dev, hc_event **out);
void hc_cu_event_destroy(hc_event *ev);
hc_status hc_cu_event_record(hc_stream *s, hc_event *ev);
hc_status hc_cu_event_sync(hc_event *ev);
hc_status hc_cu_event_elapsed(const hc_event *a, const hc_event *b, double *ms);

/* ---- op_cost.c ----------------------------------------------------------- */
double hc_cu_op_cost(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols, int64_t n);
#endif /* neither nvcc nor hipcc */

#endif /* HC_CUDA_PLUGIN_H */

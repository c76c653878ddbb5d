/*
 * Internal contract of the CPU plugin: the objects behind the opaque ABI
 * handles and the functions its files share.  Nothing here is exported: the
 * plugin is built with hidden visibility and only hc_plugin_entry is public.
 *
 * This header is included by files built WITHOUT ISA flags, so it must not
 * pull in <immintrin.h> or anything that needs AVX.
 */
#ifndef HC_CPU_PLUGIN_H
#define HC_CPU_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hotcold/plugin.h"
#include "hotcold/plugin_kit.h"

#if defined(__GNUC__)
#define HC_CPU_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HC_CPU_PRINTF(a, b)
#endif

/* Tags at the start of every handle: a handle of another kind or another
 * plugin is caught instead of being used as ours. */
#define HC_CPU_MAGIC_DEVICE 0x44435048u /* "HPCD" */
#define HC_CPU_MAGIC_BUFFER 0x42435048u /* "HPCB" */
#define HC_CPU_MAGIC_STREAM 0x53435048u /* "HPCS" */
#define HC_CPU_MAGIC_EVENT 0x45435048u  /* "HPCE" */

#define HC_CPU_MAX_THREADS 256
#define HC_CPU_ERR_LEN 320

typedef struct hc_cpu_pool hc_cpu_pool;

struct hc_plugin_ctx {
    hc_plugin_host host;     /* the host's table, zero-filled past its size */
    pthread_mutex_t lock;    /* one op at a time: guards pool and scratch */
    hc_cpu_pool *pool;
    atomic_int n_threads;    /* read by op_cost and device_info without the lock */
    void *scratch;           /* per-call work memory (quantized x, ...) */
    size_t scratch_size;
    char cpu_name[128];
    char err[HC_CPU_ERR_LEN];
    void (*mm_task)(void *, int, int); /* hc_cpu_mm_task or its AVX-VNNI build */
    void (*mm_batch_task)(void *, int, int); /* likewise */
    int avx512;              /* hc_cpu_use_avx512(), read once at init */
    /* rope's cos/sin table of the last single-token call: every layer's q
     * and k of a decoded token rotate by the same angles (ops_layer.c). */
    struct {
        float *cs;           /* n_rot floats, then n_rot/2 doubles of work space */
        int64_t n_rot;
        float freq_base, freq_scale;
        int32_t pos;
    } rope;
};

struct hc_device {
    uint32_t magic;
    hc_plugin_ctx *ctx;
};

struct hc_buffer {
    uint32_t magic;
    int owned;               /* 0: wrapped host memory, not ours to free */
    hc_plugin_ctx *ctx;
    uint8_t *ptr;
    uint64_t size;
};

struct hc_stream {
    uint32_t magic;
    hc_plugin_ctx *ctx;
    hc_device *dev;          /* the device it was made on (events check it) */
};

/* ---- probe.c ---------------------------------------------------------- */
int hc_cpu_probe(void);
/* "avx2" or "generic": which build of the sources this is. */
const char *hc_cpu_variant(void);
/* 1 when the 8-bit dot products may use AVX-VNNI: built with it, the CPU has
 * it, and $HOTCOLD_CPU_VNNI is not 0 (which forces plain AVX2: the results
 * are bit-identical, so this is for timing and for testing both paths). */
int hc_cpu_use_vnni(void);
/* 1 when the one-token Q4_0 axpy may use AVX-512 F+BW+VL: built with it,
 * the CPU and OS have it, and $HOTCOLD_CPU_AVX512 is not 0 (bit-identical
 * results again, so the switch is for timing and testing). */
int hc_cpu_use_avx512(void);

/* ---- sysinfo.c -------------------------------------------------------- */
/* /proc/cpuinfo "model name", or "CPU" when unknown. */
void hc_cpu_model_name(char *dst, size_t cap);
/* MemTotal / MemAvailable in bytes; 0 when they cannot be read. */
int hc_cpu_meminfo(uint64_t *total, uint64_t *avail);
/* CPUs this process may run on (at least 1). */
int hc_cpu_online_count(void);

/* ---- threadpool.c ----------------------------------------------------- */
/* A job: fn(arg, ith, nth) is called once for every ith < nth, ith 0 on the
 * calling thread.  Work is split statically by the job itself. */
typedef void (*hc_cpu_task_fn)(void *arg, int ith, int nth);
/* n_threads counts the caller: n_threads - 1 workers are started. */
hc_status hc_cpu_pool_create(int n_threads, hc_cpu_pool **out);
void hc_cpu_pool_destroy(hc_cpu_pool *pool);
int hc_cpu_pool_size(const hc_cpu_pool *pool);
/* Runs fn on min(nth, pool size) threads and returns when all are done. */
void hc_cpu_pool_run(hc_cpu_pool *pool, hc_cpu_task_fn fn, void *arg, int nth);
/* Runs fn(arg, part, nth) for every part < nth, the threads claiming parts
 * until none is left: with more parts than threads, a thread that is
 * slowed down (the other tenant of a core, an interrupt) holds the job up
 * by one part at most.  Only for tasks whose results do not depend on
 * which thread runs a part. */
void hc_cpu_pool_run_parts(hc_cpu_pool *pool, hc_cpu_task_fn fn, void *arg, int nth);

/* ---- validate.c: errors and argument checks (over plugin_kit.h) -------- */
/* Records a one-line message on ctx (may be NULL) and returns st. */
hc_status hc_cpu_fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...) HC_CPU_PRINTF(3, 4);
/* hc_cpu_fail as the kit's hc_kit_fail_fn (user = the context). */
hc_status hc_cpu_kit_fail(void *ctx, hc_status st, const char *msg);
/* The context of a stream or a device, or HC_E_INVALID for NULL or
 * foreign handles. */
hc_status hc_cpu_stream_ctx(hc_stream *s, const char *op, hc_plugin_ctx **ctx);
hc_status hc_cpu_device_ctx(hc_device *dev, const char *op, hc_plugin_ctx **ctx);
/* Checks that `bytes` at r lie inside r.buf and that r.off is a multiple of
 * align; on success *ptr is the host address.  op/name go into the message. */
hc_status hc_cpu_ref(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r, uint64_t bytes,
                     uint64_t align, void **ptr);
/* count1 * count2 elements of elem bytes at r (overflow-checked). */
hc_status hc_cpu_ref_n(hc_plugin_ctx *ctx, const char *op, const char *name, hc_ref r,
                       int64_t count1, int64_t count2, uint64_t elem, void **ptr);
/* Outputs must not overlap inputs: [pa, pa+na) vs [pb, pb+nb). */
hc_status hc_cpu_disjoint(hc_plugin_ctx *ctx, const char *op, const char *a_name, const void *pa,
                          uint64_t na, const char *b_name, const void *pb, uint64_t nb);
/* Element-wise ops may run in place: exactly the same range, or disjoint. */
hc_status hc_cpu_same_or_disjoint(hc_plugin_ctx *ctx, const char *op, const char *a_name,
                                  const void *pa, uint64_t na, const char *b_name, const void *pb,
                                  uint64_t nb);
/* Every idx[i] in [0, rows). */
hc_status hc_cpu_check_rows(hc_plugin_ctx *ctx, const char *op, const int32_t *idx, int64_t n_idx,
                            int64_t rows);
/* Grows ctx->scratch to at least `bytes` (64-byte aligned).  Lock held. */
hc_status hc_cpu_scratch(hc_plugin_ctx *ctx, const char *op, size_t bytes, void **out);
void hc_cpu_log(hc_plugin_ctx *ctx, int level, const char *fmt, ...) HC_CPU_PRINTF(3, 4);

/* ---- device.c: the one device ------------------------------------------ */
int hc_cpu_device_count(hc_plugin_ctx *ctx);
hc_status hc_cpu_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out);
hc_status hc_cpu_device_open(hc_plugin_ctx *ctx, int index, hc_device **out);
void hc_cpu_device_close(hc_device *dev);

/* ---- memory.c: buffers ------------------------------------------------- */
hc_status hc_cpu_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out);
void hc_cpu_buffer_free(hc_buffer *buf);
hc_status hc_cpu_buffer_wrap_host(hc_device *dev, void *ptr, uint64_t size, hc_buffer **out);
void *hc_cpu_buffer_host_ptr(hc_buffer *buf);
/* ABI 1.3: 64-byte-aligned host memory (ordinary memory: nothing to pin). */
hc_status hc_cpu_host_alloc(hc_device *dev, uint64_t size, void **out);
void hc_cpu_host_free(hc_device *dev, void *ptr);

/* ---- stream.c ---------------------------------------------------------- */
hc_status hc_cpu_stream_create(hc_device *dev, hc_stream **out);
void hc_cpu_stream_destroy(hc_stream *s);
hc_status hc_cpu_stream_sync(hc_stream *s);

/* ---- events.c: ABI 1.4 events (host clock: the streams are synchronous) -- */
hc_status hc_cpu_event_create(hc_device *dev, hc_event **out);
void hc_cpu_event_destroy(hc_event *ev);
hc_status hc_cpu_event_record(hc_stream *s, hc_event *ev);
hc_status hc_cpu_event_sync(hc_event *ev);
hc_status hc_cpu_event_elapsed(const hc_event *a, const hc_event *b, double *ms);

/* ---- transfer.c -------------------------------------------------------- */
hc_status hc_cpu_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes);
hc_status hc_cpu_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes);
hc_status hc_cpu_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes);
/* ABI 1.3: dst row pos[t] = src row t, positions outside [0, dst_rows) skipped. */
hc_status hc_cpu_scatter_rows(hc_stream *s, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                              hc_ref pos, int64_t dst_rows);

/* ---- ops_weight.c: the weight products ---------------------------------- */
hc_status hc_cpu_matmul(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                        hc_ref x, int64_t n, hc_ref y);
hc_status hc_cpu_matvec_rows(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows, int64_t cols,
                             hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
hc_status hc_cpu_axpy_rows(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows, int64_t cols,
                           hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
hc_status hc_cpu_matmul_batch(hc_stream *s, const hc_matmul_desc *desc, int n_desc, int64_t cols,
                              hc_ref x, int64_t n);

/* ---- ops_select.c: device-side selection (ABI 1.3) ---------------------- */
hc_status hc_cpu_select_rows(hc_stream *s, hc_ref scores, int64_t n_tok, int64_t n_rows,
                             float cut, hc_ref map, hc_ref idx, hc_ref count);
hc_status hc_cpu_matvec_rows_counted(hc_stream *s, hc_type wtype, hc_ref w, int64_t rows,
                                     int64_t cols, hc_ref x, int64_t n, hc_ref idx, hc_ref count,
                                     int64_t max_idx, hc_ref y);
hc_status hc_cpu_axpy_rows_counted(hc_stream *s, hc_type wtype, hc_ref wt, int64_t rows,
                                   int64_t cols, hc_ref h, int64_t n, hc_ref idx, hc_ref count,
                                   int64_t max_idx, hc_ref y);

/* ---- ops_layer.c ------------------------------------------------------ */
hc_status hc_cpu_rmsnorm(hc_stream *s, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                         float eps);
hc_status hc_cpu_rope(hc_stream *s, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                      int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode);
hc_status hc_cpu_attention(hc_stream *s, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                           hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                           float scale);
hc_status hc_cpu_unary(hc_stream *s, int op, hc_ref x, hc_ref y, int64_t n, float param);
hc_status hc_cpu_binary(hc_stream *s, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n);
hc_status hc_cpu_glu(hc_stream *s, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift);

/* ---- op_cost.c -------------------------------------------------------- */
double hc_cpu_op_cost(hc_device *dev, int op, hc_type wtype, int64_t rows, int64_t cols, int64_t n);

#endif /* HC_CPU_PLUGIN_H */

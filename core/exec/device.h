/*
 * A device as the core uses it: one plugin device, one in-order stream, and
 * thin wrappers over the plugin's ops that turn a failing hc_status into a
 * one-line hc_last_error() naming the plugin, the op and the plugin's own
 * last_error.
 *
 * An op runs on the host device (the CPU plugin), its vectors moved there
 * and back (device_fallback.c), when the plugin
 *   - lacks it (a NULL optional entry),
 *   - answers HC_E_UNSUPPORTED for this call (any op, required or not: a
 *     type or shape it does not take; plugin.h), or
 *   - has it disabled by HOTCOLD_DISABLE_OPS.
 * Each such call counts in fallback_calls.  The host device itself has no
 * host: there, a refusal is an error.
 *
 * HOTCOLD_DISABLE_OPS=rmsnorm,rope,... (any op of HC_PLUGIN_ENTRIES) makes
 * the core treat those ops as missing on every non-CPU device: it tests the
 * fallback on real plugins and lets a user route around a suspect kernel.
 */
#ifndef HC_CORE_DEVICE_H
#define HC_CORE_DEVICE_H

#include "hotcold/plugin.h"
#include "runtime/engine.h"

/* Staging buffers of a fallback: one per operand it moves. */
#define HC_DEV_FB_SLOTS 6

/* An event (ABI 1.4): the plugin's, or, where the plugin has none, the
 * core's default (device_fallback.c: record remembers the point in host
 * time, sync waits for the whole stream). */
typedef struct hc_dev_event {
    hc_event *ev;   /* the plugin's, or NULL: the default */
    double host_s;  /* the host's clock at its record, and again when its sync returned */
} hc_dev_event;

/* How a device's busy time is measured (the run's overlap report). */
enum {
    HC_DEV_TIME_NONE = 0,
    HC_DEV_TIME_OPS = 1,  /* host time inside its op calls and waits (the CPU: synchronous) */
    HC_DEV_TIME_SPANS = 2 /* device time of its work between waits, from events (a GPU) */
};
/* Spans of work timed between two waits: a flush ends one (the device may
 * idle until more is issued); past the last, it grows. */
#define HC_DEV_SPANS 8

typedef struct hc_dev {
    hc_plugin *plugin;
    const hc_plugin_ops *ops;
    hc_device *dev;
    hc_stream *stream;
    hc_device_info info;
    char label[64]; /* "cpu:0" */
    /* Where ops this plugin lacks run (the CPU device); NULL = nowhere. */
    struct hc_dev *host;
    uint32_t usable;         /* 1u << hc_op_id: ops it provides, less HOTCOLD_DISABLE_OPS */
    /* Host-device scratch for fallbacks, one per operand moved. */
    hc_buffer *fb_buf[HC_DEV_FB_SLOTS];
    uint64_t fb_bytes[HC_DEV_FB_SLOTS];
    uint64_t fallback_calls; /* op calls that ran on the host instead */
    uint64_t syncs;          /* waits of the host for this stream (hc_dev_sync) */
    int capturing;           /* between hc_dev_capture_begin and _end: no sync */
    hc_status last_status;   /* of the last failed call (HC_E_NOMEM: shrink and retry) */
    int borrowed;            /* dev is another hc_dev's (hc_dev_open_stream): not closed here */
    int has_events;          /* its events are made (hc_dev_events_open) */

    /* Busy time (hc_dev_events_open sets `timing`).  TIME_SPANS: the first
     * op after a wait or a flush records span[i][0], a flush or wait span[i][1],
     * and once the wait has returned each span's event_elapsed is added (the
     * host's clock from the first op to the wait's return, where the plugin
     * cannot time them: busy_host_clock). */
    int timing;
    uint64_t busy_ns;
    int busy_host_clock;
    int op_depth;            /* TIME_OPS: calls under way (a batch calls matmul) */
    double op_t0;
    hc_dev_event span[HC_DEV_SPANS][2];
    int n_spans;             /* ended spans since the last wait */
    int span_open;           /* span[n_spans] has begun */
    hc_dev_event here;       /* what a wait for everything issued so far syncs */

    /* A GPU's uploads from the CPU device's memory not yet waited for
     * (hc_cross: reads_done is recorded after the last one), and, on the
     * CPU device, the stream whose reads it waits for before its next op
     * (see exec/moves.h for the rule). */
    hc_dev_event reads_done;
    int reads_pending;
    struct hc_dev *reader;
    int reader_deferred;     /* 1: the ops being issued write nothing it reads */
} hc_dev;

/* Open engine device i (see hc_engine_device_report) with one stream. */
int hc_dev_open(hc_dev *d, hc_engine *e, int engine_device);
/* Another stream on an open device: d gets owner's device (closed only with
 * owner), op switches and a stream, fallback scratch and counters of its own,
 * and no host (set it).  Each context drives its streams from its thread. */
int hc_dev_open_stream(hc_dev *d, const hc_dev *owner);
/* Wait for d's stream and destroy it: d keeps its device and buffers (and
 * may free them), but runs nothing more.  A loaded model's devices end so:
 * contexts run on streams of their own, and the loading stream's staging
 * memory goes back.  0 or -1. */
int hc_dev_end_stream(hc_dev *d);
void hc_dev_close(hc_dev *d);

/* Is this an entry the plugin implements? */
#define HC_DEV_HAS(d, field) HC_OPS_HAS((d)->ops, field)
/* ... an op (hc_op_id) it implements that the core may call (not disabled
 * by HOTCOLD_DISABLE_OPS). */
static inline int hc_dev_uses(const struct hc_dev *d, int op)
{
    return op >= 0 && op < 32 && (d->usable >> op & 1u);
}

/* Start queued work without waiting (ABI 1.1 stream_flush; no-op without). */
int hc_dev_flush(hc_dev *d);

/* Allocate a buffer; returns 0 or -1 (error set). */
int hc_dev_alloc(hc_dev *d, uint64_t bytes, hc_buffer **out);
void hc_dev_free(hc_dev *d, hc_buffer *b);
/* A device buffer over host memory: zero-copy when the plugin can wrap,
 * otherwise a device allocation filled by upload. */
int hc_dev_buffer_from_host(hc_dev *d, const void *ptr, uint64_t bytes, hc_buffer **out);

int hc_dev_upload(hc_dev *d, hc_ref dst, const void *src, uint64_t bytes);
/* Device-to-device (the optional `copy`: the caller checks HC_DEV_HAS). */
int hc_dev_copy(hc_dev *d, hc_ref dst, hc_ref src, uint64_t bytes);
int hc_dev_download(hc_dev *d, void *dst, hc_ref src, uint64_t bytes);
int hc_dev_sync(hc_dev *d);

/* Events (ABI 1.4, or the core's default).  open: make d's events (the
 * busy-time spans, `here`, `reads_done`) and time it as `timing`; close
 * destroys them (after a wait: none is pending).  A wait, by event or
 * stream, counts in d->syncs. */
int hc_dev_has_events(const hc_dev *d);
int hc_dev_events_open(hc_dev *d, int timing);
void hc_dev_events_close(hc_dev *d);
int hc_dev_event_record(hc_dev *d, hc_dev_event *e);
int hc_dev_event_sync(hc_dev *d, hc_dev_event *e);
/* The host waits for everything issued on d so far: an event recorded now
 * and synced (a plugin without events: stream_sync).  0 or -1. */
int hc_dev_wait_here(hc_dev *d);
/* After an upload from the CPU device's memory: mark the point (0 or -1).
 * The CPU device waits for it before its next op (hc_dev_wait_reads). */
int hc_dev_note_host_reads(hc_dev *d);
/* Wait for d's pending reads of host memory, if any (0 or -1). */
int hc_dev_wait_reads(hc_dev *d);
/* Milliseconds from a to b (b reached): the plugin's event_elapsed, or
 * the host's clock (*host_clock = 1) without it or when it refuses. */
double hc_dev_event_ms(hc_dev *d, const hc_dev_event *a, const hc_dev_event *b, int *host_clock);

/* The ops, with the semantics documented in plugin.h.  0 or -1. */
int hc_dev_matmul(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols, hc_ref x,
                  int64_t n, hc_ref y);
int hc_dev_matvec_rows(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols, hc_ref x,
                       int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
/* The products of one x (ABI 1.2 matmul_batch; without it, one matmul or
 * matvec_rows per desc). */
int hc_dev_matmul_batch(hc_dev *d, const hc_matmul_desc *desc, int n_desc, int64_t cols, hc_ref x,
                        int64_t n);
int hc_dev_axpy_rows(hc_dev *d, hc_type t, hc_ref wt, int64_t rows, int64_t cols, hc_ref h,
                     int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
int hc_dev_rmsnorm(hc_dev *d, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim, float eps);
int hc_dev_rope(hc_dev *d, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode);
int hc_dev_attention(hc_dev *d, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                     hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                     float scale);
int hc_dev_unary(hc_dev *d, int op, hc_ref x, hc_ref y, int64_t n, float param);
int hc_dev_binary(hc_dev *d, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n);
int hc_dev_glu(hc_dev *d, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift);
/* Device-side selection (ABI 1.3).  Without select_rows the core selects
 * on the host (staged); without a _counted op it reads the count back
 * (one sync) and calls the base op. */
int hc_dev_select_rows(hc_dev *d, hc_ref scores, int64_t n_tok, int64_t n_rows, float cut,
                       hc_ref map, hc_ref idx, hc_ref count);
int hc_dev_matvec_rows_counted(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols,
                               hc_ref x, int64_t n, hc_ref idx, hc_ref count, int64_t max_idx,
                               hc_ref y);
int hc_dev_axpy_rows_counted(hc_dev *d, hc_type t, hc_ref wt, int64_t rows, int64_t cols,
                             hc_ref h, int64_t n, hc_ref idx, hc_ref count, int64_t max_idx,
                             hc_ref y);
/* Does d select and run the counted ops itself (none staged through the
 * host)? */
int hc_dev_selects_on_device(const hc_dev *d);
/* dst row pos[t] = src row t (ABI 1.3; refused: through the host). */
int hc_dev_scatter_rows(hc_dev *d, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                        hc_ref pos, int64_t dst_rows);

/* Host memory d copies without staging (ABI 1.3 host_alloc; without it
 * malloc), zeroed; free it with hc_dev_host_free on the same d. */
void *hc_dev_host_alloc(hc_dev *d, uint64_t bytes);
void hc_dev_host_free(hc_dev *d, void *ptr);

/* Capture (ABI 1.3): does d capture at all; begin (1 = refused: issue
 * passes as usual, nothing set), end (the graph, or NULL with the error
 * set), launch, free. */
int hc_dev_can_capture(const hc_dev *d);
int hc_dev_capture_begin(hc_dev *d);
hc_graph *hc_dev_capture_end(hc_dev *d);
int hc_dev_graph_launch(hc_dev *d, hc_graph *g);
void hc_dev_graph_free(hc_dev *d, hc_graph *g);

/* The fallbacks (device_fallback.c): run on d->host, moving the operands.
 * The weight ops move the whole weight down (matmul) or the listed rows
 * only (matvec_rows, axpy_rows), and give the same bits as the host
 * device computing on the full operands. */
int hc_dev_fallback_matmul(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols, hc_ref x,
                           int64_t n, hc_ref y);
int hc_dev_fallback_matvec_rows(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols,
                                hc_ref x, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
int hc_dev_fallback_axpy_rows(hc_dev *d, hc_type t, hc_ref wt, int64_t rows, int64_t cols,
                              hc_ref h, int64_t n, hc_ref idx, int64_t n_idx, hc_ref y);
int hc_dev_fallback_rmsnorm(hc_dev *d, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim,
                            float eps);
int hc_dev_fallback_rope(hc_dev *d, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                         int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode);
int hc_dev_fallback_attention(hc_dev *d, hc_ref q, hc_ref k, hc_ref v, hc_ref out,
                              int64_t n_tok, hc_ref pos, int64_t n_head, int64_t n_head_kv,
                              int64_t head_dim, float scale);
int hc_dev_fallback_unary(hc_dev *d, int op, hc_ref x, hc_ref y, int64_t n, float param);
int hc_dev_fallback_binary(hc_dev *d, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n);
int hc_dev_fallback_glu(hc_dev *d, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n,
                        float shift);
int hc_dev_fallback_scatter_rows(hc_dev *d, hc_ref src, hc_ref dst, uint64_t row_bytes,
                                 int64_t n, hc_ref pos, int64_t dst_rows);
int hc_dev_fallback_select_rows(hc_dev *d, hc_ref scores, int64_t n_tok, int64_t n_rows,
                                float cut, hc_ref map, hc_ref idx, hc_ref count);
/* The count a _counted op would read, clamped to [0, max_idx]: downloaded
 * (one sync). */
int hc_dev_read_count(hc_dev *d, hc_ref count, int64_t max_idx, int64_t *out);
/* The default events (no plugin events): record notes the host's clock,
 * sync is stream_sync. */
int hc_dev_fallback_event_record(hc_dev *d, hc_dev_event *e);
int hc_dev_fallback_event_sync(hc_dev *d, hc_dev_event *e);
void hc_dev_fallback_free(hc_dev *d);

/* hc_ref arithmetic: r advanced by `bytes`. */
static inline hc_ref hc_ref_at(hc_ref r, uint64_t bytes)
{
    r.off += bytes;
    return r;
}

#endif /* HC_CORE_DEVICE_H */

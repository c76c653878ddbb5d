#include "exec/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/plugin_kit.h"
#include "runtime/plugin_entries.h"
#include "util/clock.h"
#include "util/log.h"

/* Turn a plugin status into 0/-1 and a message that says who failed where. */
static int check(hc_dev *d, hc_status st, const char *what)
{
    if (st == HC_OK)
        return 0;
    d->last_status = st;
    const char *detail =
        d->plugin && d->plugin->ctx ? d->plugin->ops->last_error(d->plugin->ctx) : "";
    hc_set_error("%s: %s failed: %s%s%s", d->label, what, hc_kit_status_name(st),
                 detail && *detail ? ": " : "", detail ? detail : "");
    return -1;
}

/* HOTCOLD_DISABLE_OPS: a comma-separated list of ops (the entries of
 * HC_PLUGIN_ENTRIES that have an op id).  The CPU plugin is exempt: it is
 * where the fallbacks run. */
static uint32_t disabled_ops(const hc_dev *d)
{
    const char *env = getenv("HOTCOLD_DISABLE_OPS");
    uint32_t mask = 0;
    if (!env || !*env || strcmp(d->plugin->family, "cpu") == 0)
        return 0;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ",");
        const hc_entry_info *e = hc_entry_named(p, len);
        if (e && e->op != HC_OP_NONE)
            mask |= 1u << e->op;
        else if (len > 0)
            hc_log(HC_LOG_WARN, "HOTCOLD_DISABLE_OPS: '%.*s' is not an op the core calls "
                   "(ignored)",
                   (int)len, p);
        p += len + (p[len] == ',');
    }
    return mask;
}

/* The ops d's plugin provides (its table, by HC_PLUGIN_ENTRIES), less the
 * disabled ones. */
static uint32_t usable_ops(const hc_dev *d)
{
    uint32_t mask = 0;
    for (int i = 0; i < hc_n_entries; i++)
        if (hc_entries[i].op != HC_OP_NONE && hc_entry_present(d->ops, &hc_entries[i]))
            mask |= 1u << hc_entries[i].op;
    return mask & ~disabled_ops(d);
}

/* HC_E_UNSUPPORTED from an op is a refusal of this one call (plugin.h):
 * where a host device exists the call runs there instead. */
static int refused(hc_dev *d, hc_status st, const char *op)
{
    if (st != HC_E_UNSUPPORTED || !d->host || d->host == d)
        return 0;
    HC_DEBUG("%s: %s refused this call (%s); running it on %s", d->label, op,
             d->ops->last_error(d->plugin->ctx), d->host->label);
    return 1;
}

/* ---- busy time and pending reads (device.h) ------------------------------ */

static int plugin_events(const hc_dev *d)
{
    return HC_DEV_HAS(d, event_create) && HC_DEV_HAS(d, event_destroy) &&
           HC_DEV_HAS(d, event_record) && HC_DEV_HAS(d, event_sync);
}

/* The first op after a wait or a flush starts a span; past the last slot
 * the last span grows (its end is recorded again). */
static int span_begin(hc_dev *d)
{
    if (d->n_spans == HC_DEV_SPANS) {
        d->n_spans--;
        d->span_open = 1;
        return 0;
    }
    if (hc_dev_event_record(d, &d->span[d->n_spans][0]))
        return -1;
    d->span_open = 1;
    return 0;
}

static int span_end(hc_dev *d)
{
    if (!d->span_open)
        return 0;
    d->span_open = 0;
    return hc_dev_event_record(d, &d->span[d->n_spans++][1]);
}

/* A wait for everything issued on d has returned: nothing reads host
 * memory any more, and the spans' times are added. */
static void after_wait(hc_dev *d)
{
    d->reads_pending = 0;
    if (d->timing != HC_DEV_TIME_SPANS || d->n_spans == 0)
        return;
    double ms = 0.0;
    int host = !HC_DEV_HAS(d, event_elapsed) || !d->span[0][0].ev;
    for (int i = 0; i < d->n_spans && !host; i++)
        ms += hc_dev_event_ms(d, &d->span[i][0], &d->span[i][1], &host);
    if (host) {
        /* The host's clock: from the first op's record to now. */
        ms = (hc_time_s() - d->span[0][0].host_s) * 1e3;
        d->busy_host_clock = 1;
    }
    d->busy_ns += (uint64_t)(ms > 0.0 ? ms * 1e6 : 0.0);
    d->n_spans = 0;
}

/* Before an op (work = 1) or a wait on d: wait for the GPU's reads of this
 * device's memory (moves.h), start the clock (TIME_OPS) or a span. */
static int op_enter(hc_dev *d, int work)
{
    if (d->reader && d->reader->reads_pending && !d->reader_deferred &&
        hc_dev_wait_reads(d->reader))
        return -1;
    if (d->timing == HC_DEV_TIME_OPS && d->op_depth++ == 0)
        d->op_t0 = hc_time_s();
    if (work && d->timing == HC_DEV_TIME_SPANS && !d->span_open && !d->capturing)
        return span_begin(d);
    return 0;
}

static int op_leave(hc_dev *d, int rc)
{
    if (d->timing == HC_DEV_TIME_OPS && --d->op_depth == 0)
        d->busy_ns += (uint64_t)((hc_time_s() - d->op_t0) * 1e9);
    return rc;
}

int hc_dev_has_events(const hc_dev *d)
{
    return d->has_events;
}

/* Every event the device's waits and spans use, into all[]; their count. */
#define ALL_EVENTS (2 * HC_DEV_SPANS + 2)
static int list_events(hc_dev *d, hc_dev_event *all[ALL_EVENTS])
{
    int n = 0;
    for (int i = 0; i < HC_DEV_SPANS; i++) {
        all[n++] = &d->span[i][0];
        all[n++] = &d->span[i][1];
    }
    all[n++] = &d->here;
    all[n++] = &d->reads_done;
    return n;
}

int hc_dev_events_open(hc_dev *d, int timing)
{
    d->timing = timing;
    d->has_events = 1;
    if (timing != HC_DEV_TIME_SPANS || !plugin_events(d))
        return 0; /* the default: nothing to make */
    hc_dev_event *all[ALL_EVENTS];
    const int n = list_events(d, all);
    for (int i = 0; i < n; i++)
        if (check(d, d->ops->event_create(d->dev, &all[i]->ev), "event_create")) {
            hc_dev_events_close(d);
            return -1;
        }
    return 0;
}

void hc_dev_events_close(hc_dev *d)
{
    hc_dev_event *all[ALL_EVENTS];
    const int n = list_events(d, all);
    for (int i = 0; i < n; i++)
        if (all[i]->ev) {
            d->ops->event_destroy(all[i]->ev);
            all[i]->ev = NULL;
        }
    d->has_events = 0;
}

int hc_dev_event_record(hc_dev *d, hc_dev_event *e)
{
    e->host_s = hc_time_s();
    if (!e->ev)
        return hc_dev_fallback_event_record(d, e);
    return check(d, d->ops->event_record(d->stream, e->ev), "event_record");
}

int hc_dev_event_sync(hc_dev *d, hc_dev_event *e)
{
    if (d->capturing) {
        hc_set_error("%s: a wait for the device while capturing a pass", d->label);
        return -1;
    }
    d->syncs++;
    if (!e->ev)
        return hc_dev_fallback_event_sync(d, e);
    if (check(d, d->ops->event_sync(e->ev), "event_sync"))
        return -1;
    e->host_s = hc_time_s();
    return 0;
}

double hc_dev_event_ms(hc_dev *d, const hc_dev_event *a, const hc_dev_event *b, int *host_clock)
{
    double ms = 0.0;
    if (a->ev && b->ev && HC_DEV_HAS(d, event_elapsed)) {
        hc_status st = d->ops->event_elapsed(a->ev, b->ev, &ms);
        if (st == HC_OK)
            return ms;
        HC_DEBUG("%s: event_elapsed refused (%s): the host's clock times the GPU", d->label,
                 d->ops->last_error(d->plugin->ctx));
    }
    *host_clock = 1;
    return (b->host_s - a->host_s) * 1e3;
}

int hc_dev_wait_here(hc_dev *d)
{
    if (!d->has_events || !plugin_events(d))
        return hc_dev_sync(d);
    if (d->capturing) {
        hc_set_error("%s: a wait for the device while capturing a pass", d->label);
        return -1;
    }
    if (op_enter(d, 0))
        return -1;
    hc_dev_event *e = &d->here;
    int rc;
    if (d->span_open) {
        /* The span's end is the point waited for. */
        if ((rc = span_end(d)) != 0)
            return op_leave(d, rc);
        e = &d->span[d->n_spans - 1][1];
    } else if ((rc = hc_dev_event_record(d, e)) != 0) {
        return op_leave(d, rc);
    }
    rc = hc_dev_event_sync(d, e);
    if (rc == 0)
        after_wait(d);
    return op_leave(d, rc);
}

int hc_dev_note_host_reads(hc_dev *d)
{
    if (!d->has_events)
        return hc_dev_sync(d); /* no event to wait on later: wait now */
    if (hc_dev_event_record(d, &d->reads_done))
        return -1;
    d->reads_pending = 1;
    return 0;
}

int hc_dev_wait_reads(hc_dev *d)
{
    if (!d->reads_pending)
        return 0;
    d->reads_pending = 0;
    return hc_dev_event_sync(d, &d->reads_done);
}

int hc_dev_open(hc_dev *d, hc_engine *e, int engine_device)
{
    memset(d, 0, sizeof *d);
    if (engine_device < 0 || engine_device >= e->n_devices) {
        hc_set_error("no device #%d (%d found)", engine_device, e->n_devices);
        return -1;
    }
    hc_engine_device *ed = &e->devices[engine_device];
    d->plugin = ed->plugin;
    d->ops = ed->plugin->ops;
    d->info = ed->info;
    snprintf(d->label, sizeof d->label, "%s:%d", ed->plugin->family, ed->index);
    if (check(d, d->ops->device_open(d->plugin->ctx, ed->index, &d->dev), "device_open"))
        goto fail;
    if (check(d, d->ops->stream_create(d->dev, &d->stream), "stream_create"))
        goto fail;
    d->usable = usable_ops(d);
    return 0;
fail:
    hc_dev_close(d);
    return -1;
}

int hc_dev_open_stream(hc_dev *d, const hc_dev *owner)
{
    memset(d, 0, sizeof *d);
    d->plugin = owner->plugin;
    d->ops = owner->ops;
    d->dev = owner->dev;
    d->info = owner->info;
    memcpy(d->label, owner->label, sizeof d->label);
    d->usable = owner->usable;
    d->borrowed = 1;
    if (check(d, d->ops->stream_create(d->dev, &d->stream), "stream_create")) {
        hc_dev_close(d);
        return -1;
    }
    return 0;
}

int hc_dev_end_stream(hc_dev *d)
{
    if (!d->stream)
        return 0;
    int rc = hc_dev_sync(d);
    d->ops->stream_destroy(d->stream);
    d->stream = NULL;
    hc_dev_events_close(d);
    return rc;
}

void hc_dev_close(hc_dev *d)
{
    if (!d->ops)
        return;
    hc_dev_fallback_free(d);
    if (d->stream)
        d->ops->stream_destroy(d->stream);
    /* After the stream: its destroy waited for every recording. */
    hc_dev_events_close(d);
    if (d->dev && !d->borrowed)
        d->ops->device_close(d->dev);
    d->stream = NULL;
    d->dev = NULL;
}

int hc_dev_alloc(hc_dev *d, uint64_t bytes, hc_buffer **out)
{
    *out = NULL;
    return check(d, d->ops->buffer_alloc(d->dev, bytes ? bytes : 1, out), "buffer_alloc");
}

void hc_dev_free(hc_dev *d, hc_buffer *b)
{
    if (!b)
        return;
    /* Ops queued or running on the device's stream may still read or write
     * the buffer (uploads of a placement that ran out of memory half-way,
     * say): let them finish first, as the ABI promises plugins.  Its result
     * does not matter here, and a stream with nothing queued returns at
     * once. */
    if (d->stream && d->ops->stream_sync(d->stream) != HC_OK)
        HC_DEBUG("%s: stream_sync before buffer_free failed: %s", d->label,
                 d->ops->last_error(d->plugin->ctx));
    /* So may an upload of the GPU from it (exec/moves.h), after a pass that
     * failed before its end waited for the GPU. */
    if (d->reader && hc_dev_wait_reads(d->reader))
        HC_DEBUG("%s: the wait for the GPU's reads before buffer_free failed: %s", d->label,
                 hc_last_error());
    d->ops->buffer_free(b);
}

int hc_dev_buffer_from_host(hc_dev *d, const void *ptr, uint64_t bytes, hc_buffer **out)
{
    *out = NULL;
    if (HC_DEV_HAS(d, buffer_wrap_host) && (d->info.caps & HC_CAP_WRAP_HOST)) {
        /* The plugin promises not to write through a wrapped weight buffer;
         * the cast only satisfies the one-signature-for-all ABI. */
        if (d->ops->buffer_wrap_host(d->dev, (void *)(uintptr_t)ptr, bytes, out) == HC_OK)
            return 0;
        HC_DEBUG("%s: wrap_host refused (%s); copying instead", d->label,
                 d->ops->last_error(d->plugin->ctx));
    }
    if (hc_dev_alloc(d, bytes, out))
        return -1;
    hc_ref r = {*out, 0};
    if (hc_dev_upload(d, r, ptr, bytes) || hc_dev_sync(d)) {
        hc_dev_free(d, *out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int hc_dev_upload(hc_dev *d, hc_ref dst, const void *src, uint64_t bytes)
{
    if (op_enter(d, 1))
        return -1;
    return op_leave(d, check(d, d->ops->upload(d->stream, dst, src, bytes), "upload"));
}

int hc_dev_copy(hc_dev *d, hc_ref dst, hc_ref src, uint64_t bytes)
{
    if (op_enter(d, 1))
        return -1;
    return op_leave(d, check(d, d->ops->copy(d->stream, dst, src, bytes), "copy"));
}

int hc_dev_download(hc_dev *d, void *dst, hc_ref src, uint64_t bytes)
{
    if (op_enter(d, 1))
        return -1;
    return op_leave(d, check(d, d->ops->download(d->stream, dst, src, bytes), "download"));
}

int hc_dev_sync(hc_dev *d)
{
    if (d->capturing) {
        /* A capture records work without running it: a wait would be for
         * nothing (and ends a CUDA capture).  The pass is issued again. */
        hc_set_error("%s: a wait for the device while capturing a pass", d->label);
        return -1;
    }
    if (op_enter(d, 0))
        return -1;
    if (span_end(d))
        return op_leave(d, -1);
    d->syncs++;
    const int rc = check(d, d->ops->stream_sync(d->stream), "stream_sync");
    if (rc == 0)
        after_wait(d);
    return op_leave(d, rc);
}

int hc_dev_flush(hc_dev *d)
{
    /* The device may idle from here until more is issued: a span ends. */
    if (span_end(d))
        return -1;
    if (!HC_DEV_HAS(d, stream_flush))
        return 0;
    return check(d, d->ops->stream_flush(d->stream), "stream_flush");
}

int hc_dev_matmul(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols, hc_ref x,
                  int64_t n, hc_ref y)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_MATMUL)) {
        hc_status st = d->ops->matmul(d->stream, t, w, rows, cols, x, n, y);
        if (!refused(d, st, "matmul"))
            return op_leave(d, check(d, st, "matmul"));
    }
    return op_leave(d, hc_dev_fallback_matmul(d, t, w, rows, cols, x, n, y));
}

int hc_dev_matvec_rows(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols, hc_ref x,
                       int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_MATVEC_ROWS)) {
        hc_status st = d->ops->matvec_rows(d->stream, t, w, rows, cols, x, n, idx, n_idx, y);
        if (!refused(d, st, "matvec_rows"))
            return op_leave(d, check(d, st, "matvec_rows"));
    }
    return op_leave(d, hc_dev_fallback_matvec_rows(d, t, w, rows, cols, x, n, idx, n_idx, y));
}

/* Without matmul_batch, or when it refuses the batch: one matmul or
 * matvec_rows per desc (each of which may still fall back on its own). */
int hc_dev_matmul_batch(hc_dev *d, const hc_matmul_desc *desc, int n_desc, int64_t cols, hc_ref x,
                        int64_t n)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_MATMUL_BATCH)) {
        hc_status st = d->ops->matmul_batch(d->stream, desc, n_desc, cols, x, n);
        if (st != HC_E_UNSUPPORTED)
            return op_leave(d, check(d, st, "matmul_batch"));
        HC_DEBUG("%s: matmul_batch refused this batch (%s); one product at a time", d->label,
                 d->ops->last_error(d->plugin->ctx));
    }
    for (int i = 0; i < n_desc; i++) {
        const hc_matmul_desc *m = &desc[i];
        if (m->idx.buf ? hc_dev_matvec_rows(d, m->wtype, m->w, m->rows, cols, x, n, m->idx,
                                            m->n_idx, m->y)
                       : hc_dev_matmul(d, m->wtype, m->w, m->rows, cols, x, n, m->y))
            return op_leave(d, -1);
    }
    return op_leave(d, 0);
}

int hc_dev_axpy_rows(hc_dev *d, hc_type t, hc_ref wt, int64_t rows, int64_t cols, hc_ref h,
                     int64_t n, hc_ref idx, int64_t n_idx, hc_ref y)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_AXPY_ROWS)) {
        hc_status st = d->ops->axpy_rows(d->stream, t, wt, rows, cols, h, n, idx, n_idx, y);
        if (!refused(d, st, "axpy_rows"))
            return op_leave(d, check(d, st, "axpy_rows"));
    }
    return op_leave(d, hc_dev_fallback_axpy_rows(d, t, wt, rows, cols, h, n, idx, n_idx, y));
}

int hc_dev_rmsnorm(hc_dev *d, hc_ref x, hc_ref w, hc_ref y, int64_t n, int64_t dim, float eps)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_RMSNORM)) {
        hc_status st = d->ops->rmsnorm(d->stream, x, w, y, n, dim, eps);
        if (!refused(d, st, "rmsnorm"))
            return op_leave(d, check(d, st, "rmsnorm"));
    }
    return op_leave(d, hc_dev_fallback_rmsnorm(d, x, w, y, n, dim, eps));
}

int hc_dev_rope(hc_dev *d, hc_ref x, int64_t n_tok, int64_t n_head, int64_t head_dim,
                int64_t n_rot, hc_ref pos, float freq_base, float freq_scale, int mode)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_ROPE)) {
        hc_status st = d->ops->rope(d->stream, x, n_tok, n_head, head_dim, n_rot, pos, freq_base,
                                    freq_scale, mode);
        if (!refused(d, st, "rope"))
            return op_leave(d, check(d, st, "rope"));
    }
    return op_leave(d, hc_dev_fallback_rope(d, x, n_tok, n_head, head_dim, n_rot, pos,
                                            freq_base, freq_scale, mode));
}

int hc_dev_attention(hc_dev *d, hc_ref q, hc_ref k, hc_ref v, hc_ref out, int64_t n_tok,
                     hc_ref pos, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                     float scale)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_ATTENTION)) {
        hc_status st = d->ops->attention(d->stream, q, k, v, out, n_tok, pos, n_head, n_head_kv,
                                         head_dim, scale);
        if (!refused(d, st, "attention"))
            return op_leave(d, check(d, st, "attention"));
    }
    return op_leave(d, hc_dev_fallback_attention(d, q, k, v, out, n_tok, pos, n_head,
                                                 n_head_kv, head_dim, scale));
}

int hc_dev_unary(hc_dev *d, int op, hc_ref x, hc_ref y, int64_t n, float param)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_UNARY)) {
        hc_status st = d->ops->unary(d->stream, op, x, y, n, param);
        if (!refused(d, st, "unary"))
            return op_leave(d, check(d, st, "unary"));
    }
    return op_leave(d, hc_dev_fallback_unary(d, op, x, y, n, param));
}

int hc_dev_binary(hc_dev *d, int op, hc_ref a, hc_ref b, hc_ref y, int64_t n)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_BINARY)) {
        hc_status st = d->ops->binary(d->stream, op, a, b, y, n);
        if (!refused(d, st, "binary"))
            return op_leave(d, check(d, st, "binary"));
    }
    return op_leave(d, hc_dev_fallback_binary(d, op, a, b, y, n));
}

int hc_dev_glu(hc_dev *d, int act, hc_ref g, hc_ref u, hc_ref h, int64_t n, float shift)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_GLU)) {
        hc_status st = d->ops->glu(d->stream, act, g, u, h, n, shift);
        if (!refused(d, st, "glu"))
            return op_leave(d, check(d, st, "glu"));
    }
    return op_leave(d, hc_dev_fallback_glu(d, act, g, u, h, n, shift));
}

int hc_dev_select_rows(hc_dev *d, hc_ref scores, int64_t n_tok, int64_t n_rows, float cut,
                       hc_ref map, hc_ref idx, hc_ref count)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_SELECT_ROWS)) {
        hc_status st =
            d->ops->select_rows(d->stream, scores, n_tok, n_rows, cut, map, idx, count);
        if (!refused(d, st, "select_rows"))
            return op_leave(d, check(d, st, "select_rows"));
    }
    return op_leave(d, hc_dev_fallback_select_rows(d, scores, n_tok, n_rows, cut, map, idx, count));
}

int hc_dev_matvec_rows_counted(hc_dev *d, hc_type t, hc_ref w, int64_t rows, int64_t cols,
                               hc_ref x, int64_t n, hc_ref idx, hc_ref count, int64_t max_idx,
                               hc_ref y)
{
    if (op_enter(d, 1))
        return -1;
    int64_t k;
    if (hc_dev_uses(d, HC_OP_MATVEC_ROWS_COUNTED)) {
        hc_status st = d->ops->matvec_rows_counted(d->stream, t, w, rows, cols, x, n, idx, count,
                                                   max_idx, y);
        if (!refused(d, st, "matvec_rows_counted"))
            return op_leave(d, check(d, st, "matvec_rows_counted"));
    }
    const int rc = hc_dev_read_count(d, count, max_idx, &k) ||
                   hc_dev_matvec_rows(d, t, w, rows, cols, x, n, idx, k, y);
    return op_leave(d, rc ? -1 : 0);
}

int hc_dev_axpy_rows_counted(hc_dev *d, hc_type t, hc_ref wt, int64_t rows, int64_t cols,
                             hc_ref h, int64_t n, hc_ref idx, hc_ref count, int64_t max_idx,
                             hc_ref y)
{
    if (op_enter(d, 1))
        return -1;
    int64_t k;
    if (hc_dev_uses(d, HC_OP_AXPY_ROWS_COUNTED)) {
        hc_status st = d->ops->axpy_rows_counted(d->stream, t, wt, rows, cols, h, n, idx, count,
                                                 max_idx, y);
        if (!refused(d, st, "axpy_rows_counted"))
            return op_leave(d, check(d, st, "axpy_rows_counted"));
    }
    const int rc = hc_dev_read_count(d, count, max_idx, &k) ||
                   hc_dev_axpy_rows(d, t, wt, rows, cols, h, n, idx, k, y);
    return op_leave(d, rc ? -1 : 0);
}

int hc_dev_selects_on_device(const hc_dev *d)
{
    return hc_dev_uses(d, HC_OP_SELECT_ROWS) && hc_dev_uses(d, HC_OP_MATVEC_ROWS_COUNTED) &&
           hc_dev_uses(d, HC_OP_AXPY_ROWS_COUNTED);
}

int hc_dev_scatter_rows(hc_dev *d, hc_ref src, hc_ref dst, uint64_t row_bytes, int64_t n,
                        hc_ref pos, int64_t dst_rows)
{
    if (op_enter(d, 1))
        return -1;
    if (hc_dev_uses(d, HC_OP_SCATTER_ROWS)) {
        hc_status st = d->ops->scatter_rows(d->stream, src, dst, row_bytes, n, pos, dst_rows);
        if (!refused(d, st, "scatter_rows"))
            return op_leave(d, check(d, st, "scatter_rows"));
    }
    return op_leave(d, hc_dev_fallback_scatter_rows(d, src, dst, row_bytes, n, pos, dst_rows));
}

void *hc_dev_host_alloc(hc_dev *d, uint64_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 1;
    if (HC_DEV_HAS(d, host_alloc) && HC_DEV_HAS(d, host_free)) {
        hc_status st = d->ops->host_alloc(d->dev, bytes, &p);
        if (st != HC_OK) {
            check(d, st, "host_alloc");
            return NULL;
        }
        memset(p, 0, (size_t)bytes);
        return p;
    }
    p = calloc(1, (size_t)bytes);
    if (!p)
        hc_set_error("out of memory (%llu bytes of host memory)", (unsigned long long)bytes);
    return p;
}

void hc_dev_host_free(hc_dev *d, void *ptr)
{
    if (!ptr)
        return;
    if (HC_DEV_HAS(d, host_alloc) && HC_DEV_HAS(d, host_free))
        d->ops->host_free(d->dev, ptr);
    else
        free(ptr);
}

int hc_dev_can_capture(const hc_dev *d)
{
    return HC_DEV_HAS(d, capture_begin) && HC_DEV_HAS(d, capture_end) &&
           HC_DEV_HAS(d, graph_launch) && HC_DEV_HAS(d, graph_free) &&
           HC_DEV_HAS(d, host_alloc) && HC_DEV_HAS(d, host_free);
}

int hc_dev_capture_begin(hc_dev *d)
{
    /* Nothing is recorded while capturing (the plugin may refuse events
     * then): a span under way ends first. */
    if (span_end(d))
        return -1;
    hc_status st = d->ops->capture_begin(d->stream);
    if (st == HC_E_UNSUPPORTED) {
        HC_DEBUG("%s: capture refused (%s); every pass is issued", d->label,
                 d->ops->last_error(d->plugin->ctx));
        return 1;
    }
    if (check(d, st, "capture_begin"))
        return -1;
    d->capturing = 1;
    return 0;
}

hc_graph *hc_dev_capture_end(hc_dev *d)
{
    hc_graph *g = NULL;
    d->capturing = 0;
    if (check(d, d->ops->capture_end(d->stream, &g), "capture_end"))
        return NULL;
    return g;
}

int hc_dev_graph_launch(hc_dev *d, hc_graph *g)
{
    if (op_enter(d, 1))
        return -1;
    return op_leave(d, check(d, d->ops->graph_launch(d->stream, g), "graph_launch"));
}

void hc_dev_graph_free(hc_dev *d, hc_graph *g)
{
    if (g)
        d->ops->graph_free(g);
}

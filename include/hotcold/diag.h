/*
 * Diagnostics: one device's plugin used directly, without a model, for
 * benchmarks and plugin checks (`hotcold bench --ops`).
 *
 * A handle owns one stream on an engine device.  Buffers, uploads and the
 * plugin's own ops (called through hc_diag_ops() on hc_diag_stream(), with
 * the semantics plugin.h documents) are the caller's; nothing here places,
 * falls back or checks beyond what the plugin does.  Functions returning int
 * give 0, or -1 with a one-line message in hc_last_error().
 */
#ifndef HOTCOLD_DIAG_H
#define HOTCOLD_DIAG_H

#include <stdint.h>

#include "hotcold/hotcold.h"
#include "hotcold/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_diag hc_diag;

/* Engine device `device` (hc_engine_device_report's numbering); NULL on failure. */
HC_API hc_diag *hc_diag_open(hc_engine *e, int device);
HC_API void hc_diag_close(hc_diag *d);

HC_API const hc_plugin_ops *hc_diag_ops(const hc_diag *d);
HC_API hc_stream *hc_diag_stream(const hc_diag *d);
HC_API const hc_device_info *hc_diag_info(const hc_diag *d);
/* "cpu:0", "vulkan:1" */
HC_API const char *hc_diag_label(const hc_diag *d);
/* The plugin's last_error text ("" when it says nothing): what a failed
 * direct op call left. */
HC_API const char *hc_diag_plugin_error(const hc_diag *d);

/* The plugin's op_cost for op (an hc_op_id) with plugin.h's shape
 * arguments, in seconds; negative when the plugin has no op_cost or gives
 * no estimate for the case. */
HC_API double hc_diag_op_cost(const hc_diag *d, int op, hc_type type, int64_t rows, int64_t cols,
                              int64_t n);

HC_API int hc_diag_alloc(hc_diag *d, uint64_t bytes, hc_buffer **out);
/* Waits for the stream first: no queued op may still use b. */
HC_API void hc_diag_free(hc_diag *d, hc_buffer *b);
HC_API int hc_diag_upload(hc_diag *d, hc_ref dst, const void *src, uint64_t bytes);
HC_API int hc_diag_download(hc_diag *d, void *dst, hc_ref src, uint64_t bytes);
HC_API int hc_diag_sync(hc_diag *d);

#ifdef __cplusplus
}
#endif

#endif /* HOTCOLD_DIAG_H */

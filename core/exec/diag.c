/* The public diagnostic handle (hotcold/diag.h): an hc_dev without a model. */
#include "hotcold/diag.h"

#include <stdlib.h>

#include "exec/device.h"
#include "util/log.h"

struct hc_diag {
    hc_dev dev;
};

hc_diag *hc_diag_open(hc_engine *e, int device)
{
    hc_diag *d = calloc(1, sizeof *d);
    if (!d) {
        hc_set_error("out of memory");
        return NULL;
    }
    if (hc_dev_open(&d->dev, e, device) != 0) {
        free(d);
        return NULL;
    }
    return d;
}

void hc_diag_close(hc_diag *d)
{
    if (!d)
        return;
    hc_dev_close(&d->dev);
    free(d);
}

const hc_plugin_ops *hc_diag_ops(const hc_diag *d)
{
    return d->dev.ops;
}

hc_stream *hc_diag_stream(const hc_diag *d)
{
    return d->dev.stream;
}

const hc_device_info *hc_diag_info(const hc_diag *d)
{
    return &d->dev.info;
}

const char *hc_diag_label(const hc_diag *d)
{
    return d->dev.label;
}

const char *hc_diag_plugin_error(const hc_diag *d)
{
    const char *e = d->dev.ops->last_error ? d->dev.ops->last_error(d->dev.plugin->ctx) : NULL;
    return e ? e : "";
}

double hc_diag_op_cost(const hc_diag *d, int op, hc_type type, int64_t rows, int64_t cols,
                       int64_t n)
{
    if (!HC_DEV_HAS(&d->dev, op_cost))
        return -1;
    return d->dev.ops->op_cost(d->dev.dev, op, type, rows, cols, n);
}

int hc_diag_alloc(hc_diag *d, uint64_t bytes, hc_buffer **out)
{
    return hc_dev_alloc(&d->dev, bytes, out);
}

void hc_diag_free(hc_diag *d, hc_buffer *b)
{
    hc_dev_free(&d->dev, b);
}

int hc_diag_upload(hc_diag *d, hc_ref dst, const void *src, uint64_t bytes)
{
    return hc_dev_upload(&d->dev, dst, src, bytes);
}

int hc_diag_download(hc_diag *d, void *dst, hc_ref src, uint64_t bytes)
{
    return hc_dev_download(&d->dev, dst, src, bytes);
}

int hc_diag_sync(hc_diag *d)
{
    return hc_dev_sync(&d->dev);
}

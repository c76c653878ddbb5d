/*
 * The GPU's memory bandwidth, measured the way the host's is (membw.c), so
 * a decode wholly on the GPU is reported against the floor of the memory
 * its weights sit in: device-to-device copies of one buffer into another,
 * best of a few, as bytes read plus bytes written per second.  The copy is
 * the driver's own (the plugin's `copy` entry: cudaMemcpyAsync, Vulkan's
 * vkCmdCopyBuffer), not a kernel of ours, so it is an independent floor.
 * And the host <-> GPU transfers a hybrid layer's crossings ride on.
 */
#include "hotcold/hotcold.h"

#include "runtime/model.h"
#include "util/clock.h"
#include "util/log.h"

#define DEFAULT_BYTES (256u << 20)
#define MIN_BYTES (16u << 20)

int hc_model_gpu_bandwidth(hc_model *m, uint64_t bytes, int reps, double *out)
{
    hc_dev d;
    hc_buffer *src = NULL, *dst = NULL;
    int rc = -1;

    *out = 0;
    if (!m->has_gpu) {
        hc_set_error("the model has no GPU");
        return -1;
    }
    if (hc_dev_open_stream(&d, &m->gpu))
        return -1;
    if (!HC_DEV_HAS(&d, copy)) {
        hc_set_error("%s: the plugin has no copy, so its bandwidth cannot be measured", d.label);
        goto out;
    }
    if (bytes == 0)
        bytes = DEFAULT_BYTES;
    if (reps < 1)
        reps = 1;
    /* A smaller pair where the device has not the room (what the model left). */
    while (hc_dev_alloc(&d, bytes, &src) || hc_dev_alloc(&d, bytes, &dst)) {
        hc_dev_free(&d, src);
        src = NULL;
        if (bytes / 2 < MIN_BYTES)
            goto out;
        bytes /= 2;
    }
    const hc_ref a = {src, 0}, b = {dst, 0};
    double best = 0;
    /* One copy first: the pages are touched and the path warm. */
    for (int i = 0; i <= reps; i++) {
        const double t0 = hc_time_s();
        if (hc_dev_copy(&d, b, a, bytes) || hc_dev_sync(&d))
            goto out;
        const double s = hc_time_s() - t0;
        if (i > 0 && s > 0 && (best == 0 || s < best))
            best = s;
    }
    *out = best > 0 ? 2.0 * (double)bytes / best : 0;
    rc = 0;
out:
    hc_dev_free(&d, src);
    hc_dev_free(&d, dst);
    hc_dev_close(&d);
    return rc;
}

#define XFER_BYTES (64u << 20)
#define XFER_MIN (1u << 20)
#define LATENCY_REPS 20

/* Best seconds of reps transfers of bytes (one untimed first). */
static int time_transfer(hc_dev *d, int up, hc_ref r, void *host, uint64_t bytes, int reps,
                         double *best)
{
    *best = 0;
    for (int i = 0; i <= reps; i++) {
        const double t0 = hc_time_s();
        if ((up ? hc_dev_upload(d, r, host, bytes) : hc_dev_download(d, host, r, bytes)) ||
            hc_dev_sync(d))
            return -1;
        const double s = hc_time_s() - t0;
        if (i > 0 && s > 0 && (*best == 0 || s < *best))
            *best = s;
    }
    return 0;
}

int hc_model_gpu_transfer(hc_model *m, uint64_t bytes, int reps, hc_gpu_transfer *out)
{
    hc_dev d;
    hc_buffer *buf = NULL;
    void *host = NULL;
    int rc = -1;

    *out = (hc_gpu_transfer){0};
    if (!m->has_gpu) {
        hc_set_error("the model has no GPU");
        return -1;
    }
    if (hc_dev_open_stream(&d, &m->gpu))
        return -1;
    if (bytes == 0)
        bytes = XFER_BYTES;
    if (reps < 1)
        reps = 1;
    while (hc_dev_alloc(&d, bytes, &buf) || !(host = hc_dev_host_alloc(&d, bytes))) {
        hc_dev_free(&d, buf);
        buf = NULL;
        if (bytes / 2 < XFER_MIN)
            goto out;
        bytes /= 2;
    }
    out->pinned = HC_DEV_HAS(&d, host_alloc);
    const hc_ref r = {buf, 0};
    double up, down, lat = 0;
    if (time_transfer(&d, 1, r, host, bytes, reps, &up) ||
        time_transfer(&d, 0, r, host, bytes, reps, &down) ||
        time_transfer(&d, 0, r, host, 4, LATENCY_REPS, &lat))
        goto out;
    out->upload = up > 0 ? (double)bytes / up : 0;
    out->download = down > 0 ? (double)bytes / down : 0;
    out->latency_s = lat;
    rc = 0;
out:
    hc_dev_host_free(&d, host);
    hc_dev_free(&d, buf);
    hc_dev_close(&d);
    return rc;
}

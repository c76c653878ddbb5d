/*
 * The GPU's memory bandwidth, measured the way the host's is (membw.c), so
 * a decode wholly on the GPU is reported against the floor of the memory
 * its weights sit in: device-to-device copies of one buffer into another,
 * best of a few, as bytes read plus bytes written per second.  The copy is
 * the driver's own (the plugin's `copy` entry: cudaMemcpyAsync, Vulkan's
 * vkCmdCopyBuffer), not a kernel of ours, so it is an independent floor.
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

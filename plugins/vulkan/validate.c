/*
 * Error messages and the argument checks every op shares: the checks are
 * include/hotcold/plugin_kit.h's; what is the plugin's own here is its
 * handles (one of our buffers, of this device?), where a message goes (the
 * context under its lock, or the init error before a context exists) and
 * Vulkan's result codes.  Each failure names the op, the argument and the
 * offending range, so the core's log says exactly which call was wrong.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vk_plugin.h"

/* last_error(NULL): why init failed (before any context exists). */
static char g_init_err[HC_VK_ERR_LEN];

const char *hc_vk_init_error(void)
{
    return g_init_err;
}

hc_status hc_vk_fail(hc_plugin_ctx *ctx, hc_status st, const char *fmt, ...)
{
    char msg[HC_VK_ERR_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!ctx) {
        snprintf(g_init_err, sizeof g_init_err, "%s", msg);
        return st;
    }
    /* Devices may be driven from several threads: one writer at a time. */
    pthread_mutex_lock(&ctx->err_lock);
    memcpy(ctx->err, msg, sizeof msg);
    pthread_mutex_unlock(&ctx->err_lock);
    hc_kit_host_log(&ctx->host, HC_LOG_DEBUG, msg);
    return st;
}

const char *hc_vk_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult";
    }
}

hc_status hc_vk_fail_vk(hc_plugin_ctx *ctx, VkResult r, const char *what)
{
    hc_status st = HC_E_DEVICE;
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
        r == VK_ERROR_TOO_MANY_OBJECTS || r == VK_ERROR_OUT_OF_POOL_MEMORY)
        st = HC_E_NOMEM;
    return hc_vk_fail(ctx, st, "%s failed: %s (%d)", what, hc_vk_result_name(r), (int)r);
}

void hc_vk_no_devices(hc_plugin_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->no_devices, sizeof ctx->no_devices, fmt, ap);
    va_end(ap);
    hc_vk_log(ctx, HC_LOG_INFO, "vulkan: no devices: %s", ctx->no_devices);
}

void hc_vk_log(hc_plugin_ctx *ctx, int level, const char *fmt, ...)
{
    char msg[HC_VK_ERR_LEN + 64];
    va_list ap;

    if (!ctx || !hc_kit_host_has_log(&ctx->host))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hc_kit_host_log(&ctx->host, level, msg);
}

hc_status hc_vk_stream_dev(hc_stream *s, hc_device **dev)
{
    *dev = NULL;
    if (!s || s->magic != HC_VK_MAGIC_STREAM || !s->dev)
        return HC_E_INVALID; /* no context to record a message on */
    *dev = s->dev;
    if (s->lost)
        return hc_vk_fail(s->dev->ctx, HC_E_DEVICE,
                          "vulkan: the stream failed earlier (device lost?); destroy it");
    return HC_OK;
}

hc_status hc_vk_kit_fail(void *ctx, hc_status st, const char *msg)
{
    return hc_vk_fail(ctx, st, "%s", msg);
}

hc_status hc_vk_check_ref(hc_device *dev, const char *op, const char *name, hc_ref r,
                          uint64_t bytes, uint64_t align)
{
    const hc_buffer *b = r.buf;
    hc_plugin_ctx *ctx = dev->ctx;

    if (!b)
        return hc_vk_fail(ctx, HC_E_INVALID, "%s: %s: buffer is NULL", op, name);
    if (b->magic != HC_VK_MAGIC_BUFFER)
        return hc_vk_fail(ctx, HC_E_INVALID, "%s: %s: not a buffer of the vulkan plugin", op,
                          name);
    if (b->dev != dev)
        return hc_vk_fail(ctx, HC_E_INVALID, "%s: %s: the buffer belongs to another device", op,
                          name);
    /* Shaders address elements from the binding's offset: the offset must
     * be aligned. */
    return hc_kit_check_range(hc_vk_kit_fail, ctx, op, name, r.off, bytes, b->size, align, 0);
}

hc_status hc_vk_check_ref_n(hc_device *dev, const char *op, const char *name, hc_ref r,
                            int64_t count1, int64_t count2, uint64_t elem, uint64_t *bytes)
{
    hc_status st =
        hc_kit_check_count(hc_vk_kit_fail, dev->ctx, op, name, count1, count2, elem, bytes);
    return st != HC_OK ? st : hc_vk_check_ref(dev, op, name, r, *bytes, elem);
}

hc_status hc_vk_check_disjoint(hc_device *dev, const char *op, const char *a_name, hc_ref a,
                               uint64_t na, const char *b_name, hc_ref b, uint64_t nb)
{
    /* Both ranges were checked to lie inside their buffers: no wrap-around. */
    if (a.buf != b.buf)
        return HC_OK;
    return hc_kit_check_disjoint(hc_vk_kit_fail, dev->ctx, op, a_name, a.off, na, b_name, b.off,
                                 nb);
}

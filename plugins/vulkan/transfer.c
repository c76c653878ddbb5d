/*
 * upload, download and copy.
 *
 * A transfer is queued like any op: the bytes go through a staging buffer
 * of the current frame (host-visible, coherent) and a vkCmdCopyBuffer.
 * Uploads copy the host data into staging at call time; downloads are
 * copied out of staging when their frame completes (at sync at the
 * latest), which is when the ABI says the data is valid.
 *
 * Shortcut: when the buffer is mapped (UMA devices) and the stream has
 * nothing queued or running, nothing can come between the call and the
 * memory, so the transfer is a plain memcpy.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_plugin.h"

typedef unsigned long long ull;

#define STAGING_MIN (1ull << 20)
/* Per frame; a larger transfer runs in pieces, submitting between them. */
#define STAGING_MAX (64ull << 20)

void hc_vk_staging_free(hc_device *dev, hc_vk_frame *f)
{
    hc_vk_raw_buffer_free(dev, f->stage, f->stage_mem, f->stage_cap);
    f->stage = VK_NULL_HANDLE;
    f->stage_mem = VK_NULL_HANDLE;
    f->stage_map = NULL;
    f->stage_cap = f->stage_used = 0;
    free(f->pend);
    f->pend = NULL;
    f->n_pend = f->cap_pend = 0;
}

/* Room for `bytes` (<= STAGING_MAX) in the staging buffer of the frame
 * being recorded: *off inside it.  A frame whose staging is full is
 * submitted and the other frame used; an empty one grows. */
static hc_status staging_reserve(hc_stream *s, const char *op, uint64_t bytes, uint64_t *off)
{
    hc_device *dev = s->dev;
    hc_vk_frame *f;
    hc_status st;

    for (;;) {
        if ((st = hc_vk_stream_frame(s, &f)) != HC_OK)
            return st;
        uint64_t at = (f->stage_used + 15) & ~(uint64_t)15;
        if (at + bytes <= f->stage_cap) {
            f->stage_used = at + bytes;
            *off = at;
            return HC_OK;
        }
        if (f->stage_used > 0) {
            /* Copies already recorded read this staging: submit them. */
            if ((st = hc_vk_stream_flush(s, op)) != HC_OK)
                return st;
            continue;
        }
        uint64_t cap = f->stage_cap * 2;
        if (cap < STAGING_MIN)
            cap = STAGING_MIN;
        if (cap < bytes)
            cap = bytes;
        if (cap > STAGING_MAX)
            cap = STAGING_MAX;
        hc_vk_raw_buffer_free(dev, f->stage, f->stage_mem, f->stage_cap);
        f->stage = VK_NULL_HANDLE;
        f->stage_mem = VK_NULL_HANDLE;
        f->stage_map = NULL;
        f->stage_cap = 0;
        st = hc_vk_raw_buffer(dev, op, cap, dev->staging_type, &f->stage, &f->stage_mem,
                              &f->stage_map);
        if (st != HC_OK)
            return st;
        f->stage_cap = cap;
    }
}

static hc_status add_pending(hc_stream *s, hc_vk_frame *f, void *dst, uint64_t off,
                             uint64_t bytes)
{
    if (f->n_pend == f->cap_pend) {
        size_t cap = f->cap_pend ? f->cap_pend * 2 : 16;
        hc_vk_pending *p = realloc(f->pend, cap * sizeof *p);
        if (!p)
            return hc_vk_fail(s->dev->ctx, HC_E_NOMEM, "download: out of host memory");
        f->pend = p;
        f->cap_pend = cap;
    }
    f->pend[f->n_pend++] = (hc_vk_pending){dst, off, bytes};
    return HC_OK;
}

hc_status hc_vk_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK || (st = hc_vk_check_ref(dev, "upload", "dst", dst, bytes, 1)) != HC_OK)
        return st;
    if (!src && bytes > 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "upload: src is NULL");
    if (bytes == 0)
        return HC_OK;
    if (dst.buf->map && hc_vk_stream_idle(s)) {
        memcpy(dst.buf->map + dst.off, src, (size_t)bytes);
        return HC_OK;
    }
    for (uint64_t done = 0; done < bytes;) {
        uint64_t piece = bytes - done < STAGING_MAX ? bytes - done : STAGING_MAX;
        uint64_t off;
        hc_vk_frame *f;
        if ((st = staging_reserve(s, "upload", piece, &off)) != HC_OK ||
            (st = hc_vk_stream_cmd(s, "upload", &f)) != HC_OK)
            return st;
        memcpy(f->stage_map + off, (const uint8_t *)src + done, (size_t)piece);
        VkBufferCopy region = {.srcOffset = off, .dstOffset = dst.off + done, .size = piece};
        dev->f.vkCmdCopyBuffer(f->cmd, f->stage, dst.buf->buf, 1, &region);
        if ((st = hc_vk_stream_cmd_done(s, "upload")) != HC_OK)
            return st;
        done += piece;
    }
    return HC_OK;
}

hc_status hc_vk_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK || (st = hc_vk_check_ref(dev, "download", "src", src, bytes, 1)) != HC_OK)
        return st;
    if (!dst && bytes > 0)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "download: dst is NULL");
    if (bytes == 0)
        return HC_OK;
    if (src.buf->map && hc_vk_stream_idle(s)) {
        memcpy(dst, src.buf->map + src.off, (size_t)bytes);
        return HC_OK;
    }
    for (uint64_t done = 0; done < bytes;) {
        uint64_t piece = bytes - done < STAGING_MAX ? bytes - done : STAGING_MAX;
        uint64_t off;
        hc_vk_frame *f;
        if ((st = staging_reserve(s, "download", piece, &off)) != HC_OK ||
            (st = hc_vk_stream_cmd(s, "download", &f)) != HC_OK)
            return st;
        VkBufferCopy region = {.srcOffset = src.off + done, .dstOffset = off, .size = piece};
        dev->f.vkCmdCopyBuffer(f->cmd, src.buf->buf, f->stage, 1, &region);
        if ((st = add_pending(s, f, (uint8_t *)dst + done, off, piece)) != HC_OK ||
            (st = hc_vk_stream_cmd_done(s, "download")) != HC_OK)
            return st;
        done += piece;
    }
    return HC_OK;
}

hc_status hc_vk_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes)
{
    hc_device *dev;
    hc_vk_frame *f;
    hc_status st = hc_vk_stream_dev(s, &dev);

    if (st != HC_OK || (st = hc_vk_check_ref(dev, "copy", "dst", dst, bytes, 1)) != HC_OK ||
        (st = hc_vk_check_ref(dev, "copy", "src", src, bytes, 1)) != HC_OK)
        return st;
    if (bytes == 0)
        return HC_OK;
    /* vkCmdCopyBuffer forbids overlapping regions; memmove semantics would
     * need a bounce buffer, and the core has no use for it. */
    if (dst.buf == src.buf && dst.off < src.off + bytes && src.off < dst.off + bytes)
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "copy: overlapping ranges [%llu, +%llu) and [%llu, +%llu)",
                          (ull)dst.off, (ull)bytes, (ull)src.off, (ull)bytes);
    if ((st = hc_vk_stream_cmd(s, "copy", &f)) != HC_OK)
        return st;
    VkBufferCopy region = {.srcOffset = src.off, .dstOffset = dst.off, .size = bytes};
    dev->f.vkCmdCopyBuffer(f->cmd, src.buf->buf, dst.buf->buf, 1, &region);
    return hc_vk_stream_cmd_done(s, "copy");
}

/*
 * upload, download, copy: cudaMemcpyAsync on the stream, in order with its
 * kernels.  plugin.h's rule is what makes them safe without staging: host
 * memory given to upload stays valid, and host memory given to download is
 * only read by the caller, after stream_sync.  (From pageable memory the
 * runtime may copy through its own staging and return early or late; the
 * result is the same.)
 */
#include "cuda_plugin.h"

hc_status hc_cu_upload(hc_stream *s, hc_ref dst, const void *src, uint64_t bytes)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, "upload", &dev);

    if (st != HC_OK || (st = hc_cu_check_ref(dev, "upload", "dst", dst, bytes, 1)) != HC_OK)
        return st;
    if (bytes == 0)
        return HC_OK;
    if (!src)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "upload: src is NULL");
    return hc_cu_check_queued(
        s, cudaMemcpyAsync(hc_cu_addr(dst), src, (size_t)bytes, cudaMemcpyHostToDevice, s->s),
        "upload: cudaMemcpyAsync");
}

hc_status hc_cu_download(hc_stream *s, void *dst, hc_ref src, uint64_t bytes)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, "download", &dev);

    if (st != HC_OK || (st = hc_cu_check_ref(dev, "download", "src", src, bytes, 1)) != HC_OK)
        return st;
    if (bytes == 0)
        return HC_OK;
    if (!dst)
        return hc_cu_fail(dev->ctx, HC_E_INVALID, "download: dst is NULL");
    return hc_cu_check_queued(
        s, cudaMemcpyAsync(dst, hc_cu_addr(src), (size_t)bytes, cudaMemcpyDeviceToHost, s->s),
        "download: cudaMemcpyAsync");
}

hc_status hc_cu_copy(hc_stream *s, hc_ref dst, hc_ref src, uint64_t bytes)
{
    hc_device *dev;
    hc_status st = hc_cu_stream_dev(s, "copy", &dev);

    if (st != HC_OK || (st = hc_cu_check_ref(dev, "copy", "dst", dst, bytes, 1)) != HC_OK ||
        (st = hc_cu_check_ref(dev, "copy", "src", src, bytes, 1)) != HC_OK ||
        (st = hc_cu_check_disjoint(dev, "copy", "dst", dst, bytes, "src", src, bytes)) != HC_OK)
        return st;
    if (bytes == 0)
        return HC_OK;
    return hc_cu_check_queued(s,
                              cudaMemcpyAsync(hc_cu_addr(dst), hc_cu_addr(src), (size_t)bytes,
                                              cudaMemcpyDeviceToDevice, s->s),
                              "copy: cudaMemcpyAsync");
}

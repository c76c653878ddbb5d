/*
 * Streams: in-order queues of device work.
 *
 * A stream records its ops into a command buffer and submits it on sync, or
 * when HC_VK_FRAME_CMDS commands have piled up (then it goes on recording
 * into its second command buffer while the device runs the first: two
 * frames, so the host never waits for more than the batch before last).
 *
 * Ordering: every command is preceded by a global memory barrier (compute
 * and transfer, writes before reads and writes), so ops on a stream see
 * each other's results in issue order; the barrier at the head of a frame
 * also orders it after the frames submitted before it on the same queue.
 * Each frame ends with a barrier to the host, and a frame's downloads are
 * copied out of staging only after its fence has signalled.
 *
 * stream_flush (ABI 1.1) submits the frame being recorded at once, so the
 * device starts on it while the host goes on; the next ops record into the
 * other frame (waiting first, if that one is still running, for the batch
 * before last).  Nothing else changes: the barrier at the head of every
 * frame orders it after everything submitted before it, and sync still
 * submits what is left and waits for both frames, oldest first.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_plugin.h"

/* Commands per frame before it is submitted: bounds the descriptor pool and
 * keeps the device busy while the host records more. */
#define HC_VK_FRAME_CMDS 256

static const VkPipelineStageFlags WORK_STAGES =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;

static hc_status stream_lost(hc_stream *s, VkResult r, const char *what)
{
    s->lost = 1;
    return hc_vk_fail_vk(s->dev->ctx, r, what);
}

static hc_status frame_init(hc_stream *s, hc_vk_frame *f)
{
    hc_device *dev = s->dev;
    VkResult r;

    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                  .queueFamilyIndex = dev->pd->queue_family};
    r = dev->f.vkCreateCommandPool(dev->dev, &pi, NULL, &f->cmd_pool);
    if (r != VK_SUCCESS) {
        f->cmd_pool = VK_NULL_HANDLE;
        return hc_vk_fail_vk(dev->ctx, r, "stream_create: vkCreateCommandPool");
    }
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = f->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    r = dev->f.vkAllocateCommandBuffers(dev->dev, &ai, &f->cmd);
    if (r != VK_SUCCESS)
        return hc_vk_fail_vk(dev->ctx, r, "stream_create: vkAllocateCommandBuffers");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = dev->f.vkCreateFence(dev->dev, &fi, NULL, &f->fence);
    if (r != VK_SUCCESS) {
        f->fence = VK_NULL_HANDLE;
        return hc_vk_fail_vk(dev->ctx, r, "stream_create: vkCreateFence");
    }
    if (!(dev->feats & HC_VK_FEAT_PUSH_DESCRIPTORS)) {
        /* One set per command at most: a frame never outgrows its pool. */
        VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                   .descriptorCount = HC_VK_FRAME_CMDS * HC_VK_N_DESCRIPTORS};
        VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                         .maxSets = HC_VK_FRAME_CMDS,
                                         .poolSizeCount = 1,
                                         .pPoolSizes = &ps};
        r = dev->f.vkCreateDescriptorPool(dev->dev, &dpi, NULL, &f->pool);
        if (r != VK_SUCCESS) {
            f->pool = VK_NULL_HANDLE;
            return hc_vk_fail_vk(dev->ctx, r, "stream_create: vkCreateDescriptorPool");
        }
    }
    f->state = HC_VK_FRAME_IDLE;
    return HC_OK;
}

/* Waits for a submitted frame, then hands its downloads to the host and
 * makes it reusable. */
static hc_status frame_complete(hc_stream *s, hc_vk_frame *f)
{
    hc_device *dev = s->dev;
    VkResult r;

    if (f->state != HC_VK_FRAME_SUBMITTED)
        return HC_OK;
    r = dev->f.vkWaitForFences(dev->dev, 1, &f->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS)
        return stream_lost(s, r, "stream: vkWaitForFences");
    r = dev->f.vkResetFences(dev->dev, 1, &f->fence);
    if (r != VK_SUCCESS)
        return stream_lost(s, r, "stream: vkResetFences");
    for (size_t i = 0; i < f->n_pend; i++)
        memcpy(f->pend[i].dst, f->stage_map + f->pend[i].off, (size_t)f->pend[i].bytes);
    f->n_pend = 0;
    f->stage_used = 0;
    f->n_cmds = 0;
    if (f->pool)
        dev->f.vkResetDescriptorPool(dev->dev, f->pool, 0);
    f->state = HC_VK_FRAME_IDLE;
    return HC_OK;
}

static hc_status frame_begin(hc_stream *s, hc_vk_frame *f)
{
    hc_status st;
    if (f->state == HC_VK_FRAME_RECORDING)
        return HC_OK;
    if ((st = frame_complete(s, f)) != HC_OK)
        return st;
    /* The frame's pool holds only its command buffer: reset it whole. */
    VkResult r = s->dev->f.vkResetCommandPool(s->dev->dev, f->cmd_pool, 0);
    if (r != VK_SUCCESS)
        return stream_lost(s, r, "stream: vkResetCommandPool");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    r = s->dev->f.vkBeginCommandBuffer(f->cmd, &bi);
    if (r != VK_SUCCESS)
        return stream_lost(s, r, "stream: vkBeginCommandBuffer");
    f->state = HC_VK_FRAME_RECORDING;
    f->n_cmds = 0;
    return HC_OK;
}

hc_status hc_vk_stream_frame(hc_stream *s, hc_vk_frame **out)
{
    hc_vk_frame *f = &s->fr[s->cur];
    hc_status st = frame_begin(s, f);
    *out = st == HC_OK ? f : NULL;
    return st;
}

hc_status hc_vk_stream_cmd(hc_stream *s, const char *op, hc_vk_frame **out)
{
    hc_vk_frame *f = &s->fr[s->cur];
    hc_status st = frame_begin(s, f);

    (void)op;
    *out = NULL;
    if (st != HC_OK)
        return st;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT};
    s->dev->f.vkCmdPipelineBarrier(f->cmd, WORK_STAGES, WORK_STAGES, 0, 1, &mb, 0, NULL, 0, NULL);
    f->n_cmds++;
    *out = f;
    return HC_OK;
}

hc_status hc_vk_stream_flush(hc_stream *s, const char *op)
{
    hc_device *dev = s->dev;
    hc_vk_frame *f = &s->fr[s->cur];
    VkResult r;

    (void)op;
    if (f->state != HC_VK_FRAME_RECORDING || f->n_cmds == 0)
        return HC_OK;
    /* Device writes (downloads into staging, mapped buffers) become
     * visible to the host once the fence has signalled. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT};
    dev->f.vkCmdPipelineBarrier(f->cmd, WORK_STAGES, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                                NULL, 0, NULL);
    r = dev->f.vkEndCommandBuffer(f->cmd);
    if (r != VK_SUCCESS)
        return stream_lost(s, r, "stream: vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &f->cmd};
    pthread_mutex_lock(&dev->queue_lock);
    r = dev->f.vkQueueSubmit(dev->queue, 1, &si, f->fence);
    pthread_mutex_unlock(&dev->queue_lock);
    if (r != VK_SUCCESS)
        return stream_lost(s, r, "stream: vkQueueSubmit");
    f->state = HC_VK_FRAME_SUBMITTED;
    f->seq = s->next_seq++;
    s->cur ^= 1;
    return HC_OK;
}

hc_status hc_vk_stream_submit(hc_stream *s)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);
    if (st != HC_OK)
        return st;
    return hc_vk_stream_flush(s, "stream_flush");
}

hc_status hc_vk_stream_cmd_done(hc_stream *s, const char *op)
{
    if (s->fr[s->cur].n_cmds >= HC_VK_FRAME_CMDS)
        return hc_vk_stream_flush(s, op);
    return HC_OK;
}

int hc_vk_stream_idle(hc_stream *s)
{
    return s->fr[0].state != HC_VK_FRAME_SUBMITTED && s->fr[1].state != HC_VK_FRAME_SUBMITTED &&
           s->fr[s->cur].n_cmds == 0;
}

/* Completes the submitted frames, oldest first (their downloads may target
 * the same host memory: the later one must land last). */
static hc_status complete_all(hc_stream *s)
{
    hc_vk_frame *a = &s->fr[0], *b = &s->fr[1];
    if (a->state == HC_VK_FRAME_SUBMITTED && b->state == HC_VK_FRAME_SUBMITTED && b->seq < a->seq) {
        hc_vk_frame *t = a;
        a = b;
        b = t;
    }
    hc_status st = frame_complete(s, a);
    if (st == HC_OK)
        st = frame_complete(s, b);
    return st;
}

hc_status hc_vk_stream_sync(hc_stream *s)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);
    if (st != HC_OK)
        return st;
    if ((st = hc_vk_stream_flush(s, "stream_sync")) != HC_OK)
        return st;
    return complete_all(s);
}

hc_status hc_vk_stream_sync_to(hc_stream *s, uint64_t seq)
{
    hc_device *dev;
    hc_status st = hc_vk_stream_dev(s, &dev);
    if (st != HC_OK)
        return st;
    /* The frame being recorded gets number next_seq when it is submitted. */
    if (seq >= s->next_seq && (st = hc_vk_stream_flush(s, "event_sync")) != HC_OK)
        return st;
    hc_vk_frame *a = &s->fr[0], *b = &s->fr[1];
    if (b->state == HC_VK_FRAME_SUBMITTED &&
        (a->state != HC_VK_FRAME_SUBMITTED || b->seq < a->seq)) {
        hc_vk_frame *t = a;
        a = b;
        b = t;
    }
    /* Oldest first, as complete_all. */
    if (a->state == HC_VK_FRAME_SUBMITTED && a->seq <= seq && (st = frame_complete(s, a)) != HC_OK)
        return st;
    if (b->state == HC_VK_FRAME_SUBMITTED && b->seq <= seq)
        st = frame_complete(s, b);
    return st;
}

int hc_vk_stream_reached(const hc_stream *s, uint64_t seq)
{
    if (seq >= s->next_seq)
        return 0; /* still recording */
    for (int i = 0; i < 2; i++)
        if (s->fr[i].state == HC_VK_FRAME_SUBMITTED && s->fr[i].seq <= seq)
            return 0;
    return 1;
}

hc_status hc_vk_stream_scratch(hc_stream *s, const char *op, uint64_t bytes, hc_buffer **out)
{
    hc_status st;

    *out = NULL;
    if (s->scratch && s->scratch->size >= bytes) {
        *out = s->scratch;
        return HC_OK;
    }
    /* Recorded or running commands may still use the old buffer. */
    if (s->scratch) {
        if ((st = hc_vk_stream_sync(s)) != HC_OK)
            return st;
        hc_vk_buffer_free(s->scratch);
        s->scratch = NULL;
    }
    /* At least a page: small calls of different sizes share one buffer. */
    uint64_t want = bytes < 4096 ? 4096 : bytes;
    (void)op;
    if ((st = hc_vk_buffer_alloc(s->dev, want, &s->scratch)) != HC_OK) {
        s->scratch = NULL; /* the allocation recorded why */
        return st;
    }
    *out = s->scratch;
    return HC_OK;
}

hc_status hc_vk_stream_create(hc_device *dev, hc_stream **out)
{
    hc_stream *s = NULL;
    hc_status st = HC_OK;

    if (!dev || dev->magic != HC_VK_MAGIC_DEVICE)
        return HC_E_INVALID;
    if (!out)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "stream_create: out is NULL");
    *out = NULL;
    s = calloc(1, sizeof *s);
    if (!s)
        return hc_vk_fail(dev->ctx, HC_E_NOMEM, "stream_create: out of memory");
    s->dev = dev;
    for (int i = 0; i < 2 && st == HC_OK; i++)
        st = frame_init(s, &s->fr[i]);
    s->magic = HC_VK_MAGIC_STREAM;
    if (st != HC_OK) {
        hc_vk_stream_destroy(s);
        return st;
    }
    *out = s;
    return HC_OK;
}

void hc_vk_stream_destroy(hc_stream *s)
{
    if (!s || s->magic != HC_VK_MAGIC_STREAM)
        return;
    hc_device *dev = s->dev;
    /* Work still queued is submitted and must finish before its memory
     * goes. */
    if (!s->lost && hc_vk_stream_flush(s, "stream_destroy") == HC_OK)
        complete_all(s);
    if (s->lost)
        dev->f.vkDeviceWaitIdle(dev->dev);
    if (s->scratch)
        hc_vk_buffer_free(s->scratch);
    hc_vk_graph_free(s->capture); /* a capture never ended */
    for (int i = 0; i < 2; i++) {
        hc_vk_frame *f = &s->fr[i];
        if (f->fence)
            dev->f.vkDestroyFence(dev->dev, f->fence, NULL);
        if (f->pool)
            dev->f.vkDestroyDescriptorPool(dev->dev, f->pool, NULL);
        hc_vk_staging_free(dev, f);
        if (f->cmd_pool) /* frees the command buffer */
            dev->f.vkDestroyCommandPool(dev->dev, f->cmd_pool, NULL);
    }
    s->magic = 0;
    free(s);
}

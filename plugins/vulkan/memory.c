/*
 * Device memory and buffers.  Every hc buffer is one VkBuffer with its own
 * allocation: weights are few and large, activations few, so a
 * sub-allocator would buy nothing yet.
 *
 * Memory types: on a UMA device (integrated GPU, lavapipe) device memory
 * is host memory, so buffers live in a device-local, host-visible, coherent
 * type and stay mapped: buffer_host_ptr works and idle-stream transfers are
 * plain memcpy.  On a discrete GPU buffers live in plain VRAM and every
 * transfer goes through a staging buffer (transfer.c).
 *
 * HOTCOLD_VULKAN_MEMORY_LIMIT=<bytes> simulates a small GPU: the device
 * buffers (hc buffers, each counted at its VkBuffer size) of one physical
 * device may hold at most that many bytes together; an allocation past it
 * fails with HC_E_NOMEM exactly as a real out-of-memory does, and
 * device_info reports mem_total capped by the limit and mem_free as the
 * limit minus what the buffers hold.  Staging memory is not counted: on a
 * discrete GPU it is host memory.  device_open reads the variable (so it
 * takes effect for the next device opened: a model loaded after setenv;
 * the last open sets it for every open device of that physical device),
 * and device_info reads it again.  Unset or empty: no limit; not a number:
 * ignored, with a warning.  0 is a valid limit: no device buffer fits.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_plugin.h"

typedef unsigned long long ull;

#define HOST_VC (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)

static int is_uma(const hc_vk_physdev *d)
{
    return d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
           d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

static uint64_t heap_size(const hc_vk_physdev *d, uint32_t type)
{
    return d->mem.memoryHeaps[d->mem.memoryTypes[type].heapIndex].size;
}

int hc_vk_pick_device_memory(const hc_vk_physdev *d, uint32_t type_bits, int *mapped)
{
    int best = -1, best_score = -1;
    int uma = is_uma(d), map_ok = (d->feats & HC_VK_FEAT_HOST_MAP) != 0;

    for (uint32_t t = 0; t < d->mem.memoryTypeCount; t++) {
        if (!(type_bits & (1u << t)))
            continue;
        VkMemoryPropertyFlags f = d->mem.memoryTypes[t].propertyFlags;
        int dl = (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
        int vc = (f & HOST_VC) == HOST_VC;
        int score = dl ? 4 : 0;
        if (uma && vc && map_ok)
            score += 2; /* same memory either way: take the mappable one */
        if (!uma && !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
            score += 2; /* plain VRAM, not the small BAR window */
        if (score > best_score ||
            (score == best_score && heap_size(d, t) > heap_size(d, (uint32_t)best))) {
            best = (int)t;
            best_score = score;
        }
    }
    *mapped = 0;
    if (best >= 0) {
        VkMemoryPropertyFlags f = d->mem.memoryTypes[best].propertyFlags;
        int dl = (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
        *mapped = map_ok && (f & HOST_VC) == HOST_VC && (uma || !dl);
    }
    return best;
}

int hc_vk_pick_staging_memory(const hc_vk_physdev *d, uint32_t type_bits)
{
    int best = -1, best_score = -1;
    for (uint32_t t = 0; t < d->mem.memoryTypeCount; t++) {
        VkMemoryPropertyFlags f = d->mem.memoryTypes[t].propertyFlags;
        if (!(type_bits & (1u << t)) || (f & HOST_VC) != HOST_VC)
            continue;
        /* Cached: downloads read it back.  Not device-local on a discrete
         * GPU: the BAR window is small and slow to read. */
        int score = (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 2 : 0;
        if (is_uma(d) || !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            score += 1;
        if (score > best_score) {
            best = (int)t;
            best_score = score;
        }
    }
    return best;
}

uint64_t hc_vk_memory_limit(hc_plugin_ctx *ctx)
{
    static const char var[] = "HOTCOLD_VULKAN_MEMORY_LIMIT";
    uint64_t limit;
    if (hc_kit_env_bytes(var, &limit) < 0)
        hc_vk_log(ctx, HC_LOG_WARN, "vulkan: %s=%s is not a number of bytes (ignored)", var,
                  getenv(var));
    return limit;
}

/* Counts `bytes` against the device's limit; 0 if they do not fit. */
static int limit_reserve(hc_vk_physdev *d, uint64_t bytes)
{
    uint64_t cur = atomic_load(&d->limited);
    do {
        if (d->mem_limit != UINT64_MAX && (bytes > d->mem_limit || cur > d->mem_limit - bytes))
            return 0;
    } while (!atomic_compare_exchange_weak(&d->limited, &cur, cur + bytes));
    return 1;
}

hc_status hc_vk_raw_buffer(hc_device *dev, const char *op, uint64_t size, uint32_t type,
                           VkBuffer *buf, VkDeviceMemory *mem, uint8_t **map)
{
    hc_plugin_ctx *ctx = dev->ctx;
    VkMemoryRequirements req;
    VkResult r;
    hc_status st = HC_OK;

    *buf = VK_NULL_HANDLE;
    *mem = VK_NULL_HANDLE;
    if (map)
        *map = NULL;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    r = dev->f.vkCreateBuffer(dev->dev, &bi, NULL, buf);
    if (r != VK_SUCCESS) {
        *buf = VK_NULL_HANDLE;
        st = hc_vk_fail_vk(ctx, r, op);
        goto out;
    }
    dev->f.vkGetBufferMemoryRequirements(dev->dev, *buf, &req);
    if (!(req.memoryTypeBits & (1u << type))) {
        st = hc_vk_fail(ctx, HC_E_INTERNAL, "%s: memory type %u does not fit a storage buffer",
                        op, type);
        goto out;
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    r = dev->f.vkAllocateMemory(dev->dev, &ai, NULL, mem);
    if (r != VK_SUCCESS) {
        *mem = VK_NULL_HANDLE;
        st = hc_vk_fail(ctx, HC_E_NOMEM, "%s: cannot allocate %llu bytes of device memory (%d)",
                        op, (ull)size, (int)r);
        goto out;
    }
    r = dev->f.vkBindBufferMemory(dev->dev, *buf, *mem, 0);
    if (r != VK_SUCCESS) {
        st = hc_vk_fail_vk(ctx, r, op);
        goto out;
    }
    if (map) {
        void *p = NULL;
        r = dev->f.vkMapMemory(dev->dev, *mem, 0, VK_WHOLE_SIZE, 0, &p);
        if (r != VK_SUCCESS) {
            st = hc_vk_fail_vk(ctx, r, op);
            goto out;
        }
        *map = p;
    }
    atomic_fetch_add(&dev->pd->allocated, size);
out:
    if (st != HC_OK) {
        if (*buf)
            dev->f.vkDestroyBuffer(dev->dev, *buf, NULL);
        if (*mem)
            dev->f.vkFreeMemory(dev->dev, *mem, NULL);
        *buf = VK_NULL_HANDLE;
        *mem = VK_NULL_HANDLE;
    }
    return st;
}

void hc_vk_raw_buffer_free(hc_device *dev, VkBuffer buf, VkDeviceMemory mem, uint64_t size)
{
    if (buf)
        dev->f.vkDestroyBuffer(dev->dev, buf, NULL);
    if (mem) {
        dev->f.vkFreeMemory(dev->dev, mem, NULL); /* unmaps implicitly */
        atomic_fetch_sub(&dev->pd->allocated, size);
    }
}

hc_status hc_vk_buffer_alloc(hc_device *dev, uint64_t size, hc_buffer **out)
{
    hc_buffer *b = NULL;
    hc_status st;

    if (!dev || dev->magic != HC_VK_MAGIC_DEVICE)
        return HC_E_INVALID;
    if (!out)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "buffer_alloc: out is NULL");
    *out = NULL;
    /* Padding: descriptor ranges are rounded up to 4 bytes and may start
     * at the very end (an empty operand), so keep 16 bytes past the data. */
    uint64_t vk_size = ((size + 15) & ~(uint64_t)15) + 16;
    if (size > UINT64_MAX - 64 || vk_size > dev->pd->max_alloc)
        return hc_vk_fail(dev->ctx, HC_E_NOMEM,
                          "buffer_alloc: %llu bytes exceed the device's largest allocation (%llu)",
                          (ull)size, (ull)dev->pd->max_alloc);
    if (!limit_reserve(dev->pd, vk_size))
        return hc_vk_fail(dev->ctx, HC_E_NOMEM,
                          "buffer_alloc: cannot allocate %llu bytes of device memory "
                          "(HOTCOLD_VULKAN_MEMORY_LIMIT=%llu, %llu in use)",
                          (ull)size, (ull)dev->pd->mem_limit,
                          (ull)atomic_load(&dev->pd->limited));
    b = calloc(1, sizeof *b);
    if (!b) {
        atomic_fetch_sub(&dev->pd->limited, vk_size);
        return hc_vk_fail(dev->ctx, HC_E_NOMEM, "buffer_alloc: out of host memory");
    }
    st = hc_vk_raw_buffer(dev, "buffer_alloc", vk_size, dev->mem_type, &b->buf, &b->mem,
                          dev->mem_mapped ? &b->map : NULL);
    if (st != HC_OK) {
        atomic_fetch_sub(&dev->pd->limited, vk_size);
        free(b);
        return st;
    }
    b->magic = HC_VK_MAGIC_BUFFER;
    b->dev = dev;
    b->size = size;
    b->vk_size = vk_size;
    *out = b;
    return HC_OK;
}

void hc_vk_buffer_free(hc_buffer *buf)
{
    if (!buf || buf->magic != HC_VK_MAGIC_BUFFER)
        return;
    hc_vk_raw_buffer_free(buf->dev, buf->buf, buf->mem, buf->vk_size);
    atomic_fetch_sub(&buf->dev->pd->limited, buf->vk_size);
    buf->magic = 0;
    free(buf);
}

void *hc_vk_buffer_host_ptr(hc_buffer *buf)
{
    if (!buf || buf->magic != HC_VK_MAGIC_BUFFER)
        return NULL;
    return buf->map;
}

/* Host memory for the core's crossing vectors.  Uploads and downloads
 * stage through the plugin's own host-visible buffers, so any host memory
 * is as fast: this is ordinary aligned memory, there because capture's
 * contract names host memory from host_alloc (plugin.h). */
hc_status hc_vk_host_alloc(hc_device *dev, uint64_t size, void **out)
{
    if (!dev || dev->magic != HC_VK_MAGIC_DEVICE || !out)
        return HC_E_INVALID;
    *out = NULL;
    if (size == 0 || size > SIZE_MAX - 63)
        return hc_vk_fail(dev->ctx, HC_E_INVALID, "host_alloc: %llu bytes",
                          (unsigned long long)size);
    void *p = aligned_alloc(64, (size_t)((size + 63) & ~(uint64_t)63));
    if (!p)
        return hc_vk_fail(dev->ctx, HC_E_NOMEM, "host_alloc: out of memory (%llu bytes)",
                          (unsigned long long)size);
    *out = p;
    return HC_OK;
}

void hc_vk_host_free(hc_device *dev, void *ptr)
{
    (void)dev;
    free(ptr);
}

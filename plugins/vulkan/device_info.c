/*
 * device_info: name, kind, capabilities and memory of one device, from the
 * properties instance.c cached and, for free memory, VK_EXT_memory_budget
 * when the device has it (else total minus what our buffers hold).  Under
 * HOTCOLD_VULKAN_MEMORY_LIMIT (memory.c) both are capped: total by the
 * limit, free by the limit minus what our device buffers hold.
 */
#include <stdio.h>
#include <string.h>

#include "vk_plugin.h"

static int kind_of(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return HC_DEVICE_IGPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return HC_DEVICE_SOFT; /* lavapipe, SwiftShader */
    default: return HC_DEVICE_GPU;
    }
}

/* Total and free bytes of the device-local heaps. */
static void memory_of(hc_plugin_ctx *ctx, const hc_vk_physdev *d, uint64_t *total,
                      uint64_t *free_now)
{
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
        .pNext = d->has_budget ? &budget : NULL};
    ctx->i.vkGetPhysicalDeviceMemoryProperties2(d->pd, &mp);
    *total = *free_now = 0;
    for (uint32_t h = 0; h < mp.memoryProperties.memoryHeapCount; h++) {
        const VkMemoryHeap *heap = &mp.memoryProperties.memoryHeaps[h];
        if (!(heap->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT))
            continue;
        *total += heap->size;
        if (d->has_budget)
            *free_now += budget.heapBudget[h] > budget.heapUsage[h]
                             ? budget.heapBudget[h] - budget.heapUsage[h]
                             : 0;
    }
    if (!d->has_budget) {
        uint64_t used = atomic_load(&((hc_vk_physdev *)d)->allocated);
        *free_now = *total > used ? *total - used : 0;
    }
    uint64_t limit = hc_vk_memory_limit(ctx);
    if (limit != UINT64_MAX) {
        uint64_t used = atomic_load(&((hc_vk_physdev *)d)->limited);
        uint64_t room = limit > used ? limit - used : 0;
        if (*total > limit)
            *total = limit;
        if (*free_now > room)
            *free_now = room;
    }
}

hc_status hc_vk_device_info(hc_plugin_ctx *ctx, int index, hc_device_info *out)
{
    hc_device_info info;

    if (!ctx)
        return HC_E_INVALID;
    if (index < 0 || index >= ctx->n_devs)
        return hc_vk_fail(ctx, HC_E_NODEV, "device_info: no device %d (the vulkan plugin has %d)",
                          index, ctx->n_devs);
    if (!out || out->size < sizeof out->size)
        return hc_vk_fail(ctx, HC_E_INVALID, "device_info: out is NULL or its size is not set");
    const hc_vk_physdev *d = &ctx->devs[index];
    memset(&info, 0, sizeof info);
    /* deviceName may hold 256 bytes: the ABI keeps 127 of them. */
    snprintf(info.name, sizeof info.name, "%.*s", (int)sizeof info.name - 1, d->props.deviceName);
    info.kind = kind_of(d->props.deviceType);
    info.caps = HC_CAP_ASYNC; /* streams are queued command buffers */
    if (d->feats & HC_VK_FEAT_SUBGROUP)
        info.caps |= HC_CAP_SUBGROUP;
    if (d->float16)
        info.caps |= HC_CAP_F16;
    /* The memory type device_open will choose decides whether buffers
     * are mapped (UMA devices such as lavapipe: yes). */
    int mapped = 0;
    if (hc_vk_pick_device_memory(d, UINT32_MAX, &mapped) >= 0 && mapped)
        info.caps |= HC_CAP_HOST_MAPPED;
    memory_of(ctx, d, &info.mem_total, &info.mem_free);
    info.max_buffer = d->max_alloc;
    if (info.mem_total && info.max_buffer > info.mem_total)
        info.max_buffer = info.mem_total;
    info.n_threads = 0;
    hc_kit_device_info_copy(out, &info);
    return HC_OK;
}

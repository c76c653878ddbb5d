/*
 * device_open / device_close: the logical device, its queue, the memory
 * types, the limits the ops work within, and the one descriptor-set and
 * pipeline layout every kernel shares.  Every number here comes from the
 * device's own limits; nothing assumes a particular GPU.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_plugin.h"

typedef unsigned long long ull;

/* Largest power of two <= v (v >= 1). */
static uint32_t floor_pow2(uint32_t v)
{
    uint32_t p = 1;
    while (p <= v / 2)
        p *= 2;
    return p;
}

/* Workgroup size: `want`, within the device's limits, a power of two
 * (the shared-memory reduction halves it). */
static uint32_t pick_wg(const VkPhysicalDeviceLimits *lim, uint32_t want, uint32_t shared_per_inv)
{
    uint32_t wg = want;
    if (wg > lim->maxComputeWorkGroupSize[0])
        wg = lim->maxComputeWorkGroupSize[0];
    if (wg > lim->maxComputeWorkGroupInvocations)
        wg = lim->maxComputeWorkGroupInvocations;
    if (shared_per_inv && wg > lim->maxComputeSharedMemorySize / shared_per_inv)
        wg = lim->maxComputeSharedMemorySize / shared_per_inv;
    return floor_pow2(wg ? wg : 1);
}

static hc_status create_layouts(hc_device *dev)
{
    VkDescriptorSetLayoutBinding b[HC_VK_N_BINDINGS];
    VkResult r;

    for (uint32_t i = 0; i < HC_VK_N_BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = i == HC_VK_BIND_W ? HC_VK_WINDOWS : 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo sl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = (dev->feats & HC_VK_FEAT_PUSH_DESCRIPTORS)
                     ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR
                     : 0,
        .bindingCount = HC_VK_N_BINDINGS,
        .pBindings = b};
    r = dev->f.vkCreateDescriptorSetLayout(dev->dev, &sl, NULL, &dev->set_layout);
    if (r != VK_SUCCESS) {
        dev->set_layout = VK_NULL_HANDLE;
        return hc_vk_fail_vk(dev->ctx, r, "device_open: vkCreateDescriptorSetLayout");
    }
    VkPushConstantRange pc = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                              .offset = 0,
                              .size = HC_VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1,
                                     .pSetLayouts = &dev->set_layout,
                                     .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pc};
    r = dev->f.vkCreatePipelineLayout(dev->dev, &pl, NULL, &dev->layout);
    if (r != VK_SUCCESS) {
        dev->layout = VK_NULL_HANDLE;
        return hc_vk_fail_vk(dev->ctx, r, "device_open: vkCreatePipelineLayout");
    }
    return HC_OK;
}

/* Memory types for buffers and staging, from a probe buffer's requirements
 * (the same for every buffer of the same usage). */
static hc_status pick_memory(hc_device *dev)
{
    VkBuffer probe;
    VkMemoryRequirements req;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = 256,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = dev->f.vkCreateBuffer(dev->dev, &bi, NULL, &probe);
    if (r != VK_SUCCESS)
        return hc_vk_fail_vk(dev->ctx, r, "device_open: vkCreateBuffer");
    dev->f.vkGetBufferMemoryRequirements(dev->dev, probe, &req);
    dev->f.vkDestroyBuffer(dev->dev, probe, NULL);
    int mapped = 0;
    int t = hc_vk_pick_device_memory(dev->pd, req.memoryTypeBits, &mapped);
    int s = hc_vk_pick_staging_memory(dev->pd, req.memoryTypeBits);
    if (t < 0 || s < 0)
        return hc_vk_fail(dev->ctx, HC_E_DEVICE,
                          "device_open: no usable memory type for storage buffers%s",
                          s < 0 ? " (none host-visible and coherent)" : "");
    dev->mem_type = (uint32_t)t;
    dev->mem_mapped = mapped;
    dev->staging_type = (uint32_t)s;
    return HC_OK;
}

/* Limits the ops work within. */
static hc_status pick_limits(hc_device *dev)
{
    const VkPhysicalDeviceLimits *lim = &dev->pd->props.limits;
    uint64_t align = lim->minStorageBufferOffsetAlignment;

    /* Offsets of descriptor ranges: the device's alignment, and at least 16
     * so every element offset inside a range stays a whole element. */
    dev->bind_align = align > 16 ? align : 16;
    /* Shaders index bytes in 32-bit uints: a window stays below 2 GiB. */
    uint64_t window = lim->maxStorageBufferRange;
    if (window > (1ull << 31))
        window = 1ull << 31;
    /* Test knob: a smaller binding limit makes ordinary shapes take the
     * split paths (weight windows, row ranges, token chunks). */
    const char *env = getenv("HOTCOLD_VULKAN_WINDOW");
    if (env && strtoull(env, NULL, 10) >= 4096 && strtoull(env, NULL, 10) < window)
        window = strtoull(env, NULL, 10);
    dev->window = window & ~(uint64_t)3;
    if (dev->window < 4 * dev->bind_align || lim->maxPushConstantsSize < HC_VK_PUSH_BYTES)
        return hc_vk_fail(dev->ctx, HC_E_DEVICE,
                          "device_open: maxStorageBufferRange %u or maxPushConstantsSize %u too small",
                          lim->maxStorageBufferRange, lim->maxPushConstantsSize);
    dev->max_groups[0] = lim->maxComputeWorkGroupCount[0];
    dev->max_groups[1] = lim->maxComputeWorkGroupCount[1];
    /* A CPU device (lavapipe) runs a workgroup as a loop over one SIMD
     * subgroup: a single subgroup per workgroup needs no barriers there.
     * GPUs get 64 invocations (two NVIDIA warps, one AMD wave64). */
    uint32_t sg = dev->pd->subgroup_size ? dev->pd->subgroup_size : 1;
    int cpu = dev->pd->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    uint32_t want_dot = cpu ? sg : 64;
    /* Test knob: a wider reduction workgroup on a CPU device (several
     * subgroups, as on a GPU) runs the cross-subgroup reduction paths. */
    const char *wg_env = getenv("HOTCOLD_VULKAN_WG");
    if (wg_env && strtoul(wg_env, NULL, 10) >= 1 && strtoul(wg_env, NULL, 10) <= 1024)
        want_dot = (uint32_t)strtoul(wg_env, NULL, 10);
    dev->wg_dot = pick_wg(lim, want_dot, 8 * 4 /* TILE <= 8 floats */);
    dev->wg_axpy = pick_wg(lim, 64, 0);
    dev->single_subgroup = (dev->feats & HC_VK_FEAT_SUBGROUP) && dev->pd->min_subgroup &&
                           dev->wg_dot <= dev->pd->min_subgroup;
    return HC_OK;
}

hc_status hc_vk_device_open(hc_plugin_ctx *ctx, int index, hc_device **out)
{
    hc_device *dev = NULL;
    hc_status st = HC_OK;
    VkResult r;

    if (!ctx)
        return HC_E_INVALID;
    if (!out)
        return hc_vk_fail(ctx, HC_E_INVALID, "device_open: out is NULL");
    *out = NULL;
    if (index < 0 || index >= ctx->n_devs)
        return hc_vk_fail(ctx, HC_E_NODEV, "device_open: no device %d (the vulkan plugin has %d)",
                          index, ctx->n_devs);
    dev = calloc(1, sizeof *dev);
    if (!dev)
        return hc_vk_fail(ctx, HC_E_NOMEM, "device_open: out of memory");
    dev->ctx = ctx;
    dev->pd = &ctx->devs[index];
    dev->feats = dev->pd->feats;
    /* Read at every open: a test sets it before loading a model. */
    dev->pd->mem_limit = hc_vk_memory_limit(ctx);
    pthread_mutex_init(&dev->queue_lock, NULL);
    pthread_mutex_init(&dev->pipe_lock, NULL);

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = dev->pd->queue_family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &prio};
    int small = (dev->feats & HC_VK_FEAT_STORAGE16_8) != 0;
    VkPhysicalDevice8BitStorageFeatures s8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
        .storageBuffer8BitAccess = VK_TRUE};
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .pNext = &s8,
        .storageBuffer16BitAccess = VK_TRUE};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = small ? &s16 : NULL};
    f2.features.shaderStorageBufferArrayDynamicIndexing = VK_TRUE;
    const char *exts[2];
    uint32_t n_ext = 0;
    if (dev->feats & HC_VK_FEAT_PUSH_DESCRIPTORS)
        exts[n_ext++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    if (small && dev->pd->need_8bit_ext)
        exts[n_ext++] = VK_KHR_8BIT_STORAGE_EXTENSION_NAME;
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &f2,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi,
                             .enabledExtensionCount = n_ext,
                             .ppEnabledExtensionNames = exts};
    r = ctx->i.vkCreateDevice(dev->pd->pd, &di, NULL, &dev->dev);
    if (r != VK_SUCCESS) {
        dev->dev = VK_NULL_HANDLE;
        st = hc_vk_fail_vk(ctx, r, "device_open: vkCreateDevice");
        goto out;
    }
    if (!hc_vk_load_device(dev)) {
        st = HC_E_DEVICE;
        goto out;
    }
    if (!dev->f.vkCmdPushDescriptorSetKHR)
        dev->feats &= ~HC_VK_FEAT_PUSH_DESCRIPTORS;
    dev->f.vkGetDeviceQueue(dev->dev, dev->pd->queue_family, 0, &dev->queue);
    if ((st = pick_memory(dev)) != HC_OK || (st = pick_limits(dev)) != HC_OK ||
        (st = create_layouts(dev)) != HC_OK)
        goto out;
    dev->pipes = calloc((size_t)hc_vk_kernel_count() * HC_VK_TILES, sizeof *dev->pipes);
    if (!dev->pipes) {
        st = hc_vk_fail(ctx, HC_E_NOMEM, "device_open: out of memory");
        goto out;
    }
    dev->magic = HC_VK_MAGIC_DEVICE;
    hc_vk_log(ctx, HC_LOG_DEBUG,
              "vulkan: opened %s: features 0x%x, memory type %u%s, window %llu, workgroups %u%s/%u",
              dev->pd->props.deviceName, dev->feats, dev->mem_type,
              dev->mem_mapped ? " (mapped)" : "", (ull)dev->window, dev->wg_dot,
              dev->single_subgroup ? " (one subgroup)" : "", dev->wg_axpy);
    *out = dev;
    dev = NULL;
out:
    if (dev) {
        dev->magic = HC_VK_MAGIC_DEVICE; /* let close tear down what exists */
        hc_vk_device_close(dev);
    }
    return st;
}

void hc_vk_device_close(hc_device *dev)
{
    if (!dev || dev->magic != HC_VK_MAGIC_DEVICE)
        return;
    if (dev->dev) {
        if (dev->f.vkDeviceWaitIdle)
            dev->f.vkDeviceWaitIdle(dev->dev);
        if (dev->pipes)
            hc_vk_pipelines_destroy(dev);
        if (dev->layout)
            dev->f.vkDestroyPipelineLayout(dev->dev, dev->layout, NULL);
        if (dev->set_layout)
            dev->f.vkDestroyDescriptorSetLayout(dev->dev, dev->set_layout, NULL);
        if (dev->f.vkDestroyDevice)
            dev->f.vkDestroyDevice(dev->dev, NULL);
        else if (dev->ctx->i.vkGetDeviceProcAddr) {
            /* The device table failed to load: find the destructor alone. */
            PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice)(void (*)(void))
                dev->ctx->i.vkGetDeviceProcAddr(dev->dev, "vkDestroyDevice");
            if (destroy)
                destroy(dev->dev, NULL);
        }
    }
    free(dev->pipes);
    pthread_mutex_destroy(&dev->queue_lock);
    pthread_mutex_destroy(&dev->pipe_lock);
    dev->magic = 0;
    free(dev);
}

hc_status hc_vk_grid(hc_device *dev, const char *op, uint64_t count, uint32_t *gx, uint32_t *gy)
{
    uint64_t x = count < dev->max_groups[0] ? count : dev->max_groups[0];
    uint64_t y = x ? (count + x - 1) / x : 0;
    if (y > dev->max_groups[1])
        return hc_vk_fail(dev->ctx, HC_E_UNSUPPORTED,
                          "%s: %llu workgroups exceed the device's grid", op, (ull)count);
    *gx = (uint32_t)x;
    *gy = (uint32_t)y;
    return HC_OK;
}

/*
 * The kernel variants and their pipelines.
 *
 * vk_kernels.inc is generated from shaders/variants.txt: one entry per op x
 * weight type x subset of the op's optional features, each with its SPIR-V.
 * For a device the plugin takes, per op and type, the variant whose
 * features are exactly those of the op's features the device has (so a
 * device without subgroups gets the shared-memory reduction, one without
 * 8/16-bit storage the 32-bit-word loads).  Pipelines are compiled the
 * first time a variant runs on a device and kept until device_close.
 */
#include <stddef.h>
#include <string.h>

#include "vk_plugin.h"

/* SPIR-V arrays (static, this file only) and HC_VK_KERNEL_LIST. */
#include "vk_kernels.inc"

typedef struct hc_vk_kernel {
    int op;           /* hc_vk_op */
    int wtype;        /* hc_type or HC_VK_NO_WTYPE */
    uint32_t feats;   /* HC_VK_FEAT_* the variant uses */
    const uint32_t *code;
    size_t code_bytes;
    const char *name;
} hc_vk_kernel;

static const hc_vk_kernel KERNELS[] = {
#define HC_VK_KERNEL_ENTRY(op, type, feats, spv, name) {op, type, feats, spv, sizeof spv, name},
    HC_VK_KERNEL_LIST(HC_VK_KERNEL_ENTRY)
#undef HC_VK_KERNEL_ENTRY
};

#define N_KERNELS ((int)(sizeof KERNELS / sizeof KERNELS[0]))

int hc_vk_kernel_count(void)
{
    return N_KERNELS;
}

const char *hc_vk_kernel_name(int kernel)
{
    return kernel >= 0 && kernel < N_KERNELS ? KERNELS[kernel].name : "?";
}

uint32_t hc_vk_kernel_wg(const hc_device *dev, int op)
{
    switch (op) {
    case HC_VK_OP_MATMUL:
    case HC_VK_OP_MATVEC_ROWS:
    case HC_VK_OP_RMSNORM:
    case HC_VK_OP_ATTENTION: return dev->wg_dot; /* the reductions */
    default: return dev->wg_axpy;                /* an invocation per element */
    }
}

int hc_vk_kernel_find(const hc_device *dev, int op, int wtype)
{
    uint32_t optional = 0;
    for (int k = 0; k < N_KERNELS; k++)
        if (KERNELS[k].op == op)
            optional |= KERNELS[k].feats;
    uint32_t want = dev->feats & optional;
    for (int k = 0; k < N_KERNELS; k++)
        if (KERNELS[k].op == op && KERNELS[k].wtype == wtype && KERNELS[k].feats == want)
            return k;
    return -1;
}

uint32_t hc_vk_tile_for(int64_t n)
{
    return n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1;
}

static int tile_index(uint32_t tile)
{
    return tile >= 8 ? 3 : tile >= 4 ? 2 : tile >= 2 ? 1 : 0;
}

static hc_status create_pipeline(hc_device *dev, int kernel, uint32_t tile, VkPipeline *out)
{
    const hc_vk_kernel *k = &KERNELS[kernel];
    VkShaderModule mod = VK_NULL_HANDLE;
    VkResult r;

    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = k->code_bytes,
                                   .pCode = k->code};
    r = dev->f.vkCreateShaderModule(dev->dev, &mi, NULL, &mod);
    if (r != VK_SUCCESS)
        return hc_vk_fail_vk(dev->ctx, r, k->name);
    /* The specialization constants of common.glsl. */
    uint32_t wg = hc_vk_kernel_wg(dev, k->op);
    struct {
        uint32_t wg, tile;
        VkBool32 single_subgroup;
    } data = {wg, tile, dev->single_subgroup && wg == dev->wg_dot};
    VkSpecializationMapEntry me[3] = {
        {.constantID = 0, .offset = offsetof(__typeof__(data), wg), .size = sizeof(uint32_t)},
        {.constantID = 1, .offset = offsetof(__typeof__(data), tile), .size = sizeof(uint32_t)},
        {.constantID = 2,
         .offset = offsetof(__typeof__(data), single_subgroup),
         .size = sizeof(VkBool32)}};
    VkSpecializationInfo spec = {.mapEntryCount = 3,
                                 .pMapEntries = me,
                                 .dataSize = sizeof data,
                                 .pData = &data};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = dev->layout};
    r = dev->f.vkCreateComputePipelines(dev->dev, VK_NULL_HANDLE, 1, &ci, NULL, out);
    dev->f.vkDestroyShaderModule(dev->dev, mod, NULL);
    if (r != VK_SUCCESS) {
        *out = VK_NULL_HANDLE;
        return hc_vk_fail_vk(dev->ctx, r, k->name);
    }
    hc_vk_log(dev->ctx, HC_LOG_DEBUG, "vulkan: pipeline %s (workgroup %u, tile %u) created",
              k->name, data.wg, tile);
    return HC_OK;
}

hc_status hc_vk_pipeline(hc_device *dev, int kernel, uint32_t tile, VkPipeline *out)
{
    hc_status st = HC_OK;

    if (kernel < 0 || kernel >= N_KERNELS)
        return hc_vk_fail(dev->ctx, HC_E_INTERNAL, "vulkan: no kernel %d", kernel);
    VkPipeline *slot = &dev->pipes[kernel * HC_VK_TILES + tile_index(tile)];
    pthread_mutex_lock(&dev->pipe_lock);
    if (!*slot)
        st = create_pipeline(dev, kernel, 1u << tile_index(tile), slot);
    *out = *slot;
    pthread_mutex_unlock(&dev->pipe_lock);
    return st;
}

void hc_vk_pipelines_destroy(hc_device *dev)
{
    for (int k = 0; k < N_KERNELS * HC_VK_TILES; k++)
        if (dev->pipes[k])
            dev->f.vkDestroyPipeline(dev->dev, dev->pipes[k], NULL);
    memset(dev->pipes, 0, (size_t)N_KERNELS * HC_VK_TILES * sizeof *dev->pipes);
}

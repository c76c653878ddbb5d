/*
 * The Vulkan instance and the list of devices the plugin offers.
 *
 * Every physical device that can run the kernels becomes one hc device, in
 * the driver's enumeration order (the order vulkaninfo prints).
 * HOTCOLD_VULKAN_DEVICE restricts the list: a number keeps that device, any
 * other text keeps the devices whose name contains it (case-insensitive).
 * No loader, no driver (VK_ERROR_INCOMPATIBLE_DRIVER) or no device is not
 * an error: the plugin then has 0 devices, and says why in the log and in
 * no_device_reason (ABI 1.3), decoded for the user.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_plugin.h"

/* What the plugin asks of the API; device features above it stay unused. */
#define HC_VK_API_WANTED VK_API_VERSION_1_2

static int has_ext(const VkExtensionProperties *e, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(e[i].extensionName, name) == 0)
            return 1;
    return 0;
}

/* HOTCOLD_VULKAN_DISABLE: a comma list of the optional features to leave
 * unused, for testing the fallbacks. */
static uint32_t parse_disabled(hc_plugin_ctx *ctx)
{
    static const struct {
        const char *name;
        uint32_t bit;
    } names[] = {{"subgroup", HC_VK_FEAT_SUBGROUP},
                 {"storage16_8", HC_VK_FEAT_STORAGE16_8},
                 {"push_descriptors", HC_VK_FEAT_PUSH_DESCRIPTORS},
                 {"host_map", HC_VK_FEAT_HOST_MAP}};
    const char *env = getenv("HOTCOLD_VULKAN_DISABLE");
    uint32_t bits = 0;

    if (!env)
        return 0;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ",");
        int known = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (len == strlen(names[i].name) && strncmp(p, names[i].name, len) == 0) {
                bits |= names[i].bit;
                known = 1;
            }
        if (!known && len > 0)
            hc_vk_log(ctx, HC_LOG_WARN, "vulkan: HOTCOLD_VULKAN_DISABLE: unknown feature '%.*s'",
                      (int)len, p);
        p += len;
        if (*p == ',')
            p++;
    }
    return bits;
}

/* Does HOTCOLD_VULKAN_DEVICE keep physical device `index` named `name`? */
static int device_selected(const char *sel, uint32_t index, const char *name)
{
    if (!sel || !*sel)
        return 1;
    int numeric = 1;
    for (const char *p = sel; *p; p++)
        numeric &= isdigit((unsigned char)*p) != 0;
    if (numeric)
        return strtoul(sel, NULL, 10) == index;
    return strcasestr(name, sel) != NULL;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* Why a device is skipped: logged, and the first one kept for the user. */
static void skip(hc_plugin_ctx *ctx, char *why, size_t len, const char *name, const char *what)
{
    hc_vk_log(ctx, HC_LOG_INFO, "vulkan: %s: %s, skipped", name, what);
    if (!why[0])
        snprintf(why, len, "%s: %s", name, what);
}

/* Fills d for pd; 0 (with the reason logged and, if it is the first, in
 * why) if the plugin cannot use it. */
static int describe(hc_plugin_ctx *ctx, VkPhysicalDevice pd, uint32_t instance_api,
                    hc_vk_physdev *d, char *why, size_t why_len)
{
    VkExtensionProperties *ext = NULL;
    uint32_t n_ext = 0, n_fam = 0;
    VkQueueFamilyProperties *fam = NULL;
    int ok = 0;

    memset(d, 0, sizeof *d);
    d->pd = pd;
    ctx->i.vkGetPhysicalDeviceProperties(pd, &d->props);
    const char *name = d->props.deviceName;
    /* What we may use is the lower of what we asked for and the device has. */
    uint32_t api = min_u32(d->props.apiVersion, instance_api);
    if (api < VK_API_VERSION_1_1) {
        skip(ctx, why, why_len, name, "Vulkan 1.1 needed (subgroups)");
        goto out;
    }
    if (ctx->i.vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, NULL) != VK_SUCCESS)
        n_ext = 0;
    ext = calloc(n_ext ? n_ext : 1, sizeof *ext);
    if (!ext || ctx->i.vkEnumerateDeviceExtensionProperties(pd, NULL, &n_ext, ext) != VK_SUCCESS)
        n_ext = 0;
    int ext_8bit = has_ext(ext, n_ext, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    int ext_f16 = has_ext(ext, n_ext, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    int is_12 = api >= VK_API_VERSION_1_2;

    /* Properties: subgroups (1.1 core) and the largest allocation. */
    int ext_sg_size = has_ext(ext, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sgc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
        .pNext = ext_sg_size ? &sgc : NULL};
    VkPhysicalDeviceSubgroupProperties sg = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, .pNext = &m3};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &sg};
    ctx->i.vkGetPhysicalDeviceProperties2(pd, &p2);

    /* Features, chaining only the structs this device knows. */
    VkPhysicalDeviceShaderFloat16Int8Features f16i8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDevice8BitStorageFeatures s8 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
    VkPhysicalDevice16BitStorageFeatures s16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &s16};
    void **tail = &s16.pNext;
    if (is_12 || ext_8bit) {
        *tail = &s8;
        tail = &s8.pNext;
    }
    if (is_12 || ext_f16) {
        *tail = &f16i8;
        tail = &f16i8.pNext;
    }
    ctx->i.vkGetPhysicalDeviceFeatures2(pd, &f2);

    /* Weight windows are an array of storage buffers indexed by a
     * (workgroup-uniform) variable: every desktop driver allows it. */
    if (!f2.features.shaderStorageBufferArrayDynamicIndexing) {
        skip(ctx, why, why_len, name, "no shaderStorageBufferArrayDynamicIndexing");
        goto out;
    }
    ctx->i.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_fam, NULL);
    fam = calloc(n_fam ? n_fam : 1, sizeof *fam);
    if (!fam)
        goto out;
    ctx->i.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_fam, fam);
    d->queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < n_fam && d->queue_family == UINT32_MAX; i++)
        if ((fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && fam[i].queueCount > 0)
            d->queue_family = i;
    if (d->queue_family == UINT32_MAX) {
        skip(ctx, why, why_len, name, "no compute queue");
        goto out;
    }
    /* Events time work with timestamps where the queue writes them. */
    d->timestamp_bits =
        d->props.limits.timestampComputeAndGraphics ? fam[d->queue_family].timestampValidBits : 0;

    d->subgroup_size = sg.subgroupSize;
    /* Without the size-control limits a compute shader's subgroup size is
     * not pinned down (Intel picks 8, 16 or 32): then it stays unknown. */
    d->min_subgroup = ext_sg_size ? sgc.minSubgroupSize : 0;
    const VkSubgroupFeatureFlags sg_need =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    if ((sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        (sg.supportedOperations & sg_need) == sg_need && sg.subgroupSize > 0)
        d->feats |= HC_VK_FEAT_SUBGROUP;
    if (s16.storageBuffer16BitAccess && (is_12 || ext_8bit) && s8.storageBuffer8BitAccess)
        d->feats |= HC_VK_FEAT_STORAGE16_8;
    if (has_ext(ext, n_ext, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME))
        d->feats |= HC_VK_FEAT_PUSH_DESCRIPTORS;
    d->feats |= HC_VK_FEAT_HOST_MAP; /* if a memory type allows it: decided at open */
    d->feats &= ~ctx->disabled;
    d->need_8bit_ext = !is_12 && (d->feats & HC_VK_FEAT_STORAGE16_8);
    d->float16 = (is_12 || ext_f16) && f16i8.shaderFloat16;
    d->has_budget = has_ext(ext, n_ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    d->max_alloc = m3.maxMemoryAllocationSize;
    ctx->i.vkGetPhysicalDeviceMemoryProperties(pd, &d->mem);
    atomic_init(&d->allocated, 0);
    atomic_init(&d->limited, 0);
    d->mem_limit = UINT64_MAX; /* device_open reads HOTCOLD_VULKAN_MEMORY_LIMIT */
    ok = 1;
out:
    free(ext);
    free(fam);
    return ok;
}

/* What a failed vkCreateInstance means, for the user. */
static void instance_failed(hc_plugin_ctx *ctx, VkResult r)
{
    /* The loader's own overrides of where drivers are: name them if set,
     * they are the usual cause of "no driver" on a machine that has one. */
    static const char *const vars[] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES",
                                       "VK_ADD_DRIVER_FILES"};
    char env[192] = "";
    for (size_t i = 0; i < sizeof vars / sizeof vars[0] && !env[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            snprintf(env, sizeof env, " (%s=%.120s is set)", vars[i], v);
    }
    const char *what;
    switch (r) {
    case VK_ERROR_INCOMPATIBLE_DRIVER:
        what = "no Vulkan driver (ICD) was found, or none for Vulkan 1.1 or later";
        break;
    case VK_ERROR_INITIALIZATION_FAILED:
        what = "a Vulkan driver failed to initialise (is the GPU's device node, /dev/dri/* or "
               "/dev/nvidia*, readable?)";
        break;
    case VK_ERROR_LAYER_NOT_PRESENT:
        what = "a Vulkan layer that was asked for (VK_INSTANCE_LAYERS?) is not installed";
        break;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
        what = "an instance extension that was asked for is missing";
        break;
    default: what = "the Vulkan instance could not be created"; break;
    }
    hc_vk_no_devices(ctx, "%s%s: vkCreateInstance returned %s (%d)", what, env,
                     hc_vk_result_name(r), (int)r);
}

hc_status hc_vk_instance_create(hc_plugin_ctx *ctx)
{
    VkPhysicalDevice *pds = NULL;
    VkExtensionProperties *ext = NULL;
    uint32_t n_pd = 0, n_ext = 0, api = VK_API_VERSION_1_0;
    hc_status st = HC_OK;
    VkResult r;
    hc_vk_objects before = {0};

    ctx->disabled = parse_disabled(ctx);
    if (!hc_vk_load_library(ctx))
        return HC_OK;
    /* Before the first call that may load a driver (pin.c): the loader
     * maps the ICDs as early as vkEnumerateInstanceExtensionProperties. */
    int have_before = hc_vk_objects_snapshot(&before);
    if (ctx->g.vkEnumerateInstanceVersion)
        ctx->g.vkEnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_1) {
        hc_vk_no_devices(ctx, "the Vulkan loader (libvulkan.so.1) is Vulkan 1.0; 1.1 is needed");
        goto out;
    }
    api = api < HC_VK_API_WANTED ? api : HC_VK_API_WANTED;

    /* Portability drivers (MoltenVK) are listed only when asked for. */
    if (ctx->g.vkEnumerateInstanceExtensionProperties(NULL, &n_ext, NULL) == VK_SUCCESS &&
        n_ext > 0 && (ext = calloc(n_ext, sizeof *ext)) != NULL &&
        ctx->g.vkEnumerateInstanceExtensionProperties(NULL, &n_ext, ext) != VK_SUCCESS)
        n_ext = 0;
    const char *inst_ext[1];
    uint32_t n_inst_ext = 0;
    VkInstanceCreateFlags flags = 0;
    if (ext && has_ext(ext, n_ext, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        inst_ext[n_inst_ext++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "hotcold",
                             .applicationVersion = 1,
                             .pEngineName = "hotcold",
                             .engineVersion = 1,
                             .apiVersion = api};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .flags = flags,
                               .pApplicationInfo = &app,
                               .enabledExtensionCount = n_inst_ext,
                               .ppEnabledExtensionNames = inst_ext};
    r = ctx->g.vkCreateInstance(&ci, NULL, &ctx->instance);
    if (r != VK_SUCCESS) {
        ctx->instance = VK_NULL_HANDLE;
        if (r == VK_ERROR_OUT_OF_HOST_MEMORY) {
            st = hc_vk_fail(NULL, HC_E_NOMEM, "vulkan: vkCreateInstance: out of host memory");
            goto out;
        }
        /* No ICD (VK_ERROR_INCOMPATIBLE_DRIVER) and the like: no devices. */
        instance_failed(ctx, r);
        goto out;
    }
    if (!hc_vk_load_instance(ctx)) {
        hc_vk_instance_destroy(ctx);
        hc_vk_no_devices(ctx, "the Vulkan loader lacks instance functions (see the log)");
        goto out;
    }
    r = ctx->i.vkEnumeratePhysicalDevices(ctx->instance, &n_pd, NULL);
    if (r != VK_SUCCESS || !n_pd) {
        if (r != VK_SUCCESS)
            hc_vk_no_devices(ctx, "vkEnumeratePhysicalDevices returned %s (%d)",
                             hc_vk_result_name(r), (int)r);
        else
            hc_vk_no_devices(ctx, "the Vulkan drivers found list no devices");
        goto out;
    }
    pds = calloc(n_pd, sizeof *pds);
    ctx->devs = calloc(n_pd, sizeof *ctx->devs);
    if (!pds || !ctx->devs) {
        st = hc_vk_fail(NULL, HC_E_NOMEM, "vulkan: out of memory listing devices");
        goto out;
    }
    r = ctx->i.vkEnumeratePhysicalDevices(ctx->instance, &n_pd, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        hc_vk_no_devices(ctx, "vkEnumeratePhysicalDevices returned %s (%d)", hc_vk_result_name(r),
                         (int)r);
        goto out;
    }
    const char *sel = getenv("HOTCOLD_VULKAN_DEVICE");
    char why[HC_VK_ERR_LEN] = "";
    uint32_t n_selected = 0;
    for (uint32_t i = 0; i < n_pd; i++) {
        hc_vk_physdev *d = &ctx->devs[ctx->n_devs];
        VkPhysicalDeviceProperties props;
        ctx->i.vkGetPhysicalDeviceProperties(pds[i], &props);
        if (!device_selected(sel, i, props.deviceName)) {
            hc_vk_log(ctx, HC_LOG_INFO, "vulkan: device %u (%s) left out by HOTCOLD_VULKAN_DEVICE=%s",
                      i, props.deviceName, sel);
            continue;
        }
        n_selected++;
        if (describe(ctx, pds[i], api, d, why, sizeof why)) {
            hc_vk_log(ctx, HC_LOG_DEBUG, "vulkan: device %u: %s (features 0x%x, subgroup %u)", i,
                      d->props.deviceName, d->feats, d->subgroup_size);
            ctx->n_devs++;
        }
    }
    if (ctx->n_devs == 0 && n_selected == 0)
        hc_vk_no_devices(ctx, "HOTCOLD_VULKAN_DEVICE=%s matches none of the %u Vulkan device%s",
                         sel, n_pd, n_pd == 1 ? "" : "s");
    else if (ctx->n_devs == 0)
        hc_vk_no_devices(ctx, "no Vulkan device can run the kernels (%s)", why);
out:
    /* Whatever the instance brought in stays (pin.c), on every path: a
     * driver that failed may have left state behind too. */
    if (have_before) {
        int n = hc_vk_pin_new_objects(ctx, &before);
        if (n > 0)
            hc_vk_log(ctx, HC_LOG_DEBUG, "vulkan: %d driver librar%s kept mapped", n,
                      n == 1 ? "y" : "ies");
    }
    hc_vk_objects_free(&before);
    free(pds);
    free(ext);
    return st;
}

void hc_vk_instance_destroy(hc_plugin_ctx *ctx)
{
    if (ctx->instance && ctx->i.vkDestroyInstance)
        ctx->i.vkDestroyInstance(ctx->instance, NULL);
    ctx->instance = VK_NULL_HANDLE;
    free(ctx->devs);
    ctx->devs = NULL;
    ctx->n_devs = 0;
}

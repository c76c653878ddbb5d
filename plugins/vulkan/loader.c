/*
 * libvulkan, loaded at run time.  The plugin is not linked against
 * libvulkan: linking would make the plugin itself fail to dlopen on a
 * machine without the Vulkan loader, and the ABI wants "0 devices" there.
 * So init dlopens libvulkan.so.1, takes vkGetInstanceProcAddr and resolves
 * everything else through it (and vkGetDeviceProcAddr per device, which
 * also skips the loader's dispatch trampoline).
 *
 * The library is never dlclosed: drivers (Mesa's included) keep threads
 * and atexit handlers that must not outlive their code, and the core never
 * unloads plugins either.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "vk_plugin.h"

int hc_vk_load_library(hc_plugin_ctx *ctx)
{
    static const char *const names[] = {"libvulkan.so.1", "libvulkan.so"};
    void *lib = NULL;

    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        hc_vk_no_devices(ctx, "no Vulkan loader: libvulkan.so.1 cannot be loaded (%s); install "
                              "it (Debian: libvulkan1) and a driver",
                         e ? e : "not found");
        return 0;
    }
    /* dlsym returns void *; the cast to a function pointer is what POSIX
     * guarantees to work (done through a union to stay pedantic-clean). */
    union {
        void *obj;
        PFN_vkGetInstanceProcAddr fn;
    } sym = {dlsym(lib, "vkGetInstanceProcAddr")};
    if (!sym.fn) {
        hc_vk_no_devices(ctx, "libvulkan.so.1 has no vkGetInstanceProcAddr: not a Vulkan loader");
        return 0;
    }
    ctx->lib = lib;
    ctx->get_instance_proc = sym.fn;
#define LOAD_GLOBAL(f) ctx->g.f = (PFN_##f)(void (*)(void))sym.fn(VK_NULL_HANDLE, #f);
    HC_VK_GLOBAL_FUNCTIONS(LOAD_GLOBAL)
#undef LOAD_GLOBAL
    if (!ctx->g.vkCreateInstance || !ctx->g.vkEnumerateInstanceExtensionProperties) {
        hc_vk_no_devices(ctx, "the Vulkan loader lacks vkCreateInstance");
        ctx->lib = NULL;
        return 0;
    }
    return 1;
}

int hc_vk_load_instance(hc_plugin_ctx *ctx)
{
    int ok = 1;
#define LOAD_INSTANCE(f)                                                                   \
    ctx->i.f = (PFN_##f)(void (*)(void))ctx->get_instance_proc(ctx->instance, #f);         \
    if (!ctx->i.f) {                                                                       \
        hc_vk_log(ctx, HC_LOG_INFO, "vulkan: instance function %s is missing", #f);        \
        ok = 0;                                                                            \
    }
    HC_VK_INSTANCE_FUNCTIONS(LOAD_INSTANCE)
#undef LOAD_INSTANCE
    return ok;
}

int hc_vk_load_device(hc_device *dev)
{
    PFN_vkGetDeviceProcAddr gdpa = dev->ctx->i.vkGetDeviceProcAddr;
    int ok = 1;
#define LOAD_DEVICE(fn)                                                                    \
    dev->f.fn = (PFN_##fn)(void (*)(void))gdpa(dev->dev, #fn);                             \
    if (!dev->f.fn) {                                                                      \
        hc_vk_fail(dev->ctx, HC_E_DEVICE, "vulkan: device function %s is missing", #fn);   \
        ok = 0;                                                                            \
    }
    HC_VK_DEVICE_FUNCTIONS(LOAD_DEVICE)
#undef LOAD_DEVICE
#define LOAD_DEVICE_EXT(fn) dev->f.fn = (PFN_##fn)(void (*)(void))gdpa(dev->dev, #fn);
    HC_VK_DEVICE_EXT_FUNCTIONS(LOAD_DEVICE_EXT)
#undef LOAD_DEVICE_EXT
    return ok;
}

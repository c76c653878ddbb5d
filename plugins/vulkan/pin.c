/*
 * The Vulkan driver (ICD) stays mapped for the life of the process.
 *
 * The Vulkan loader dlopens the ICD (and what the ICD needs: Mesa's
 * lavapipe brings libLLVM) during the first instance-level calls and
 * dlcloses it at vkDestroyInstance.  What a driver leaves behind outlives
 * that: Mesa's lavapipe keeps 128 bytes allocated in a pthread_once, and
 * LeakSanitizer, which reports at exit, then finds them reachable from no
 * mapped global, so it reports a leak it can neither symbolize nor let be
 * suppressed by module (seen on an AMD EPYC VM: every Vulkan suite of the
 * sanitizer pass aborted after passing).  With the driver mapped the bytes
 * stay reachable from its globals and nothing is reported.  Drivers also
 * keep threads and atexit handlers
 * (the reason loader.c never dlcloses libvulkan).  So every shared object
 * that appeared while the instance was made is pinned with
 * dlopen(RTLD_NOLOAD | RTLD_NODELETE): glibc then never unloads it, and
 * the loader's dlclose only drops its reference.
 *
 * Done in every build, not only under sanitizers: unloading a driver gains
 * nothing worth a second behaviour (a later instance maps it again), and
 * the tests then check what users run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NOLOAD, RTLD_NODELETE */
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "vk_plugin.h"

static int add_name(struct dl_phdr_info *info, size_t size, void *user)
{
    (void)size;
    hc_vk_objects *o = user;
    if (!info->dlpi_name || !info->dlpi_name[0]) /* the executable itself */
        return 0;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        char **v = realloc(o->names, cap * sizeof *v);
        if (!v)
            return 1; /* stop: the snapshot is incomplete, see below */
        o->names = v;
        o->cap = cap;
    }
    if (!(o->names[o->n] = strdup(info->dlpi_name)))
        return 1;
    o->n++;
    return 0;
}

int hc_vk_objects_snapshot(hc_vk_objects *o)
{
    memset(o, 0, sizeof *o);
    if (dl_iterate_phdr(add_name, o) != 0) {
        hc_vk_objects_free(o);
        return 0;
    }
    return 1;
}

void hc_vk_objects_free(hc_vk_objects *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->names[i]);
    free(o->names);
    memset(o, 0, sizeof *o);
}

static int was_there(const hc_vk_objects *before, const char *name)
{
    for (size_t i = 0; i < before->n; i++)
        if (strcmp(before->names[i], name) == 0)
            return 1;
    return 0;
}

int hc_vk_pin_new_objects(hc_plugin_ctx *ctx, const hc_vk_objects *before)
{
    hc_vk_objects now;
    int pinned = 0;
    if (!hc_vk_objects_snapshot(&now)) {
        hc_vk_log(ctx, HC_LOG_DEBUG, "vulkan: out of memory listing the driver's libraries");
        return 0;
    }
    for (size_t i = 0; i < now.n; i++) {
        if (was_there(before, now.names[i]))
            continue;
        /* NOLOAD: only what is mapped already; the handle's extra reference
         * goes again at once, NODELETE stays. */
        void *h = dlopen(now.names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        if (!h) {
            hc_vk_log(ctx, HC_LOG_DEBUG, "vulkan: cannot pin %s: %s", now.names[i], dlerror());
            continue;
        }
        dlclose(h);
        hc_vk_log(ctx, HC_LOG_DEBUG, "vulkan: %s stays mapped (RTLD_NODELETE)", now.names[i]);
        pinned++;
    }
    hc_vk_objects_free(&now);
    return pinned;
}

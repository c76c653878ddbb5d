/*
 * The engine object behind hc_engine_* (internal): the plugin registry and a
 * flat list of every device of every loaded plugin.
 *
 * Plugins are initialised lazily: hc_engine_open() finds, checks and probes
 * them (the registry's defer_init), and a family's init() runs the first
 * time one of its devices is asked for: hc_engine_find_device("cpu") inits
 * only the cpu plugin; hc_engine_device_count(), a device report past the
 * devices known so far, and the plugin reports init every family (a list
 * of everything must show everything).  So a tool that only ever uses the
 * CPU never creates a Vulkan instance, and `hotcold devices` and
 * `run --device vulkan` see the same plugins as before.  Devices are
 * appended per family as it is initialised: an engine device index, once
 * returned, stays valid.  Like the rest of an engine's set-up, these calls
 * are made from one thread at a time (devices are then driven from many).
 */
#ifndef HC_CORE_ENGINE_H
#define HC_CORE_ENGINE_H

#include "hotcold/hotcold.h"
#include "runtime/loader.h"

typedef struct hc_engine_device {
    hc_plugin *plugin;  /* the loaded plugin that owns it */
    int index;          /* index within that plugin */
    hc_device_info info;
} hc_engine_device;

struct hc_engine {
    hc_registry reg;
    int n_threads;      /* what CPU plugins were told */
    hc_engine_device *devices;
    int n_devices, cap_devices;
};

/* The registry with every family initialised (for `hotcold devices`). */
const hc_registry *hc_engine_registry(hc_engine *e);

#endif /* HC_CORE_ENGINE_H */

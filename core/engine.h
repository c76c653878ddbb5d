/*
 * The engine object behind hc_engine_* (internal): the plugin registry and a
 * flat list of every device of every loaded plugin.
 */
#ifndef HC_CORE_ENGINE_H
#define HC_CORE_ENGINE_H

#include "hotcold/hotcold.h"
#include "loader.h"

typedef struct hc_engine_device {
    hc_backend *be;     /* plugin that owns it */
    int index;          /* index within that plugin */
    hc_device_info info;
} hc_engine_device;

struct hc_engine {
    hc_registry reg;
    int n_threads;      /* what CPU plugins were told */
    hc_engine_device *devices;
    int n_devices;
};

#endif /* HC_CORE_ENGINE_H */

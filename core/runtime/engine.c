/*
 * hc_engine: the loaded plugins (core/runtime/loader.c) and one flat list of the
 * devices of all of them, numbered in plugin order.
 */
#include "runtime/engine.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

hc_engine_params hc_engine_default_params(void)
{
    hc_engine_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    return p;
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static hc_status query_info(const hc_plugin *pl, int index, hc_device_info *out)
{
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    hc_status st = pl->ops->device_info(pl->ctx, index, out);
    out->name[sizeof out->name - 1] = 0; /* a plugin may fill all 128 bytes */
    return st;
}

/* Append the devices of the plugins loaded since the first `from`. */
static int collect_devices(hc_engine *e, int from)
{
    for (int b = from; b < e->reg.n_plugins; b++) {
        hc_plugin *pl = &e->reg.plugins[b];
        int n = pl->ops->device_count(pl->ctx);
        if (n < 0) {
            HC_WARN("%s: device_count failed (%d): %s", pl->path, n, pl->ops->last_error(pl->ctx));
            n = 0;
        }
        for (int i = 0; i < n; i++) {
            hc_device_info info;
            hc_status st = query_info(pl, i, &info);
            if (st != HC_OK) {
                /* One unreadable device should not hide the others. */
                HC_WARN("%s: device %d skipped, device_info failed (status %d): %s", pl->family, i,
                        (int)st, pl->ops->last_error(pl->ctx));
                continue;
            }
            if (e->n_devices == e->cap_devices) {
                int ncap = e->cap_devices ? e->cap_devices * 2 : 8;
                hc_engine_device *v = realloc(e->devices, (size_t)ncap * sizeof *v);
                if (!v) {
                    hc_set_error("hotcold engine: out of memory listing devices");
                    return -1;
                }
                e->devices = v;
                e->cap_devices = ncap;
            }
            hc_engine_device *d = &e->devices[e->n_devices++];
            d->plugin = pl;
            d->index = i;
            d->info = info;
        }
    }
    return 0;
}

/* Initialise `family` (NULL: every family) if that has not happened yet,
 * and list its devices.  The public functions that call this take a const
 * engine: what they change is the engine's cache of what it had not looked
 * at yet, never what it reports. */
static int activate(const hc_engine *ce, const char *family)
{
    hc_engine *e = (hc_engine *)ce;
    int from = e->reg.n_plugins;
    int rc = 0;
    if (hc_registry_activate(&e->reg, family) > 0) {
        rc = collect_devices(e, from);
        HC_INFO("engine: %d plugin(s) initialised, %d device(s) in all", e->reg.n_plugins,
                e->n_devices);
    }
    return rc;
}

const hc_registry *hc_engine_registry(hc_engine *e)
{
    activate(e, NULL);
    return &e->reg;
}

hc_engine *hc_engine_open(const hc_engine_params *params)
{
    hc_engine_params p = hc_engine_default_params();
    hc_engine *e = NULL;
    if (params) {
        if (params->size == 0) {
            hc_set_error("hc_engine_open: params.size is 0 (start from hc_engine_default_params())");
            goto fail;
        }
        /* An application built against a newer, longer struct passes a
         * larger size: take the fields we know. */
        memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
        p.size = sizeof p;
    }
    if (p.n_threads < 0) {
        hc_set_error("hc_engine_open: n_threads %d is negative", p.n_threads);
        goto fail;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        hc_set_error("hc_engine_open: out of memory");
        goto fail;
    }
    e->n_threads = p.n_threads > 0 ? p.n_threads : online_cpus();
    hc_loader_options lo = {
        .plugin_path = p.plugin_path,
        .select = p.plugins,
        .exe_dir = NULL,
        .use_default_dirs = 1,
        .n_threads = e->n_threads,
        .defer_init = 1,
    };
    if (hc_registry_load(&e->reg, &lo) != 0)
        goto fail; /* the loader set the error */
    int usable = 0;
    for (int i = 0; i < e->reg.n_candidates; i++)
        usable += e->reg.candidates[i].state == HC_CAND_DEFERRED;
    HC_INFO("engine: %d plugin file(s) found, %d usable, initialised when a device is needed; "
            "%d CPU thread(s)",
            e->reg.n_candidates, usable, e->n_threads);
    return e;
fail:
    hc_engine_close(e);
    return NULL;
}

void hc_engine_close(hc_engine *e)
{
    if (!e)
        return;
    free(e->devices);
    hc_registry_free(&e->reg);
    free(e);
}

int hc_engine_set_threads(hc_engine *e, int n_threads)
{
    if (!e || n_threads < 0) {
        hc_set_error("hc_engine_set_threads: %s", e ? "negative thread count" : "no engine");
        return -1;
    }
    int n = n_threads > 0 ? n_threads : online_cpus();
    int rc = 0;
    for (int b = 0; b < e->reg.n_plugins; b++) {
        hc_plugin *pl = &e->reg.plugins[b];
        if (!HC_OPS_HAS(pl->ops, set_threads))
            continue;
        hc_status st = pl->ops->set_threads(pl->ctx, n);
        if (st != HC_OK) {
            hc_set_error("%s: set_threads(%d) failed (status %d): %s", pl->family, n, (int)st,
                         pl->ops->last_error(pl->ctx));
            rc = -1;
        }
    }
    if (rc == 0) {
        e->n_threads = n;
        e->reg.n_threads = n; /* for plugins initialised later */
    }
    /* Refresh in place (never reallocate: others may hold device pointers)
     * so reports show the thread count now in use. */
    for (int i = 0; i < e->n_devices; i++) {
        hc_engine_device *d = &e->devices[i];
        hc_device_info info;
        if (query_info(d->plugin, d->index, &info) == HC_OK)
            d->info = info;
    }
    return rc;
}

static const char *state_name(int state)
{
    switch (state) {
    case HC_CAND_LOADED: return "loaded";
    case HC_CAND_REJECTED: return "rejected";
    case HC_CAND_SHADOWED: return "shadowed";
    case HC_CAND_FILTERED: return "filtered";
    case HC_CAND_DEFERRED: return "deferred"; /* not seen: reports activate first */
    }
    return "unknown";
}

int hc_engine_plugin_count(const hc_engine *e)
{
    if (!e)
        return 0;
    activate(e, NULL);
    return e->reg.n_candidates;
}

int hc_engine_plugin_report(const hc_engine *e, int i, hc_plugin_report *out)
{
    if (!e || !out || i < 0 || i >= e->reg.n_candidates) {
        hc_set_error("hc_engine_plugin_report: no plugin %d", i);
        return -1;
    }
    activate(e, NULL); /* a report says what became of the plugin */
    const hc_plugin_candidate *c = &e->reg.candidates[i];
    out->path = c->path;
    out->family = c->family;
    out->variant = c->variant;
    out->state = state_name(c->state);
    out->reason = c->reason;
    out->probe = c->probe;
    return 0;
}

int hc_engine_device_count(const hc_engine *e)
{
    if (!e)
        return 0;
    activate(e, NULL);
    return e->n_devices;
}

int hc_engine_device_report(const hc_engine *e, int i, hc_device_report *out)
{
    /* An index already handed out needs nothing initialised. */
    if (e && i >= e->n_devices)
        activate(e, NULL);
    if (!e || !out || i < 0 || i >= e->n_devices) {
        hc_set_error("hc_engine_device_report: no device %d", i);
        return -1;
    }
    out->family = e->devices[i].plugin->family;
    out->index = e->devices[i].index;
    out->info = e->devices[i].info;
    return 0;
}

int hc_engine_find_device(const hc_engine *e, const char *spec)
{
    if (!e || !spec || !*spec) {
        hc_set_error("hc_engine_find_device: empty device name");
        return -1;
    }
    const char *colon = strchr(spec, ':');
    size_t fam_len = colon ? (size_t)(colon - spec) : strlen(spec);
    long index = -1;
    if (colon) {
        /* Digits only: "cpu:", "cpu:-1", "cpu: 1" are mistakes, not "cpu". */
        const char *p = colon + 1;
        if (!*p) {
            hc_set_error("bad device '%s': expected family or family:N", spec);
            return -1;
        }
        index = 0;
        for (; *p; p++) {
            if (!isdigit((unsigned char)*p) || index > 1000000) {
                hc_set_error("bad device '%s': expected family or family:N", spec);
                return -1;
            }
            index = index * 10 + (*p - '0');
        }
    }
    char family[sizeof e->devices->plugin->family];
    if (fam_len >= sizeof family) {
        hc_set_error("no device '%s': no plugin family has so long a name", spec);
        return -1;
    }
    snprintf(family, sizeof family, "%.*s", (int)fam_len, spec);
    if (activate(e, family) != 0)
        return -1;
    int n_family = 0;
    for (int i = 0; i < e->n_devices; i++) {
        const hc_engine_device *d = &e->devices[i];
        if (strlen(d->plugin->family) != fam_len || strncmp(d->plugin->family, spec, fam_len) != 0)
            continue;
        if (index < 0 || d->index == index)
            return i;
        n_family++;
    }
    /* Say why: the family has fewer devices, or what became of its plugins. */
    if (n_family > 0) {
        if (n_family == 1)
            hc_set_error("no device '%s': the %s plugin has 1 device, %s:0", spec, family, family);
        else
            hc_set_error("no device '%s': the %s plugin has %d devices, %s:0 to %s:%d", spec,
                         family, n_family, family, family, n_family - 1);
        return -1;
    }
    char why[1024];
    hc_registry_explain(&e->reg, family, why, sizeof why);
    hc_set_error("no device '%s': %s (see 'hotcold devices')", spec, why);
    return -1;
}

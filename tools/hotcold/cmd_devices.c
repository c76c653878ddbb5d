/*
 * `hotcold devices`: where plugins were looked for, every plugin file found
 * with what became of it (and why), and the devices of the loaded ones.
 * Meant to answer "why is my GPU not used?" without reading logs.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "tool_util.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold devices [-t N]\n"
            "\n"
            "Lists the plugin search path, every plugin file found (loaded, rejected,\n"
            "shadowed or filtered, with the reason) and the devices of the loaded plugins.\n"
            "\n"
            "options:\n"
            "  -t, --threads N   CPU worker threads to give the CPU plugin, 1 to 1024\n"
            "                    (default: all cores)\n"
            "  -h, --help        this text\n"
            "\n"
            "environment:\n"
            "  HOTCOLD_PLUGIN_PATH  colon-separated plugin files or directories, searched first\n"
            "  HOTCOLD_PLUGINS      comma list of families or family-variants to use, e.g. cpu,vulkan\n");
}

/* The search path as the loader walked it, with what stopped it where. */
static void print_search_path(const hc_engine *e)
{
    printf("plugin search path (a file name found twice: the first wins):\n");
    for (int i = 0; i < hc_engine_search_count(e); i++) {
        hc_search_dir d;
        if (hc_engine_search_dir(e, i, &d) != 0)
            continue;
        printf("  %d. %s  (%s%s)\n", i + 1, d.path, d.origin, d.missing ? ", missing" : "");
        if (d.problem[0])
            printf("     why: %s\n", d.problem);
    }
    const char *select = getenv("HOTCOLD_PLUGINS");
    if (select && *select)
        printf("selection: HOTCOLD_PLUGINS=%s\n", select);
    if (hc_engine_selection_note(e)[0])
        printf("     why: %s\n", hc_engine_selection_note(e));
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case HC_DEVICE_CPU: return "cpu";
    case HC_DEVICE_GPU: return "gpu";
    case HC_DEVICE_IGPU: return "integrated gpu";
    case HC_DEVICE_SOFT: return "software rasteriser (runs on the CPU)";
    }
    return "unknown";
}

static void format_caps(uint32_t caps, char *buf, size_t len)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {
        {HC_CAP_HOST_MAPPED, "host-mapped"}, {HC_CAP_WRAP_HOST, "wrap-host"},
        {HC_CAP_F16, "f16"},                 {HC_CAP_SUBGROUP, "subgroup"},
        {HC_CAP_ASYNC, "async"},
    };
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(caps & names[i].bit))
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", names[i].name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    if (!used)
        snprintf(buf, len, "none");
}

static double gib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

static void print_plugins(const hc_engine *e)
{
    int n = hc_engine_plugin_count(e);
    printf("\nplugins: %d found\n", n);
    for (int i = 0; i < n; i++) {
        hc_plugin_report p;
        if (hc_engine_plugin_report(e, i, &p) != 0)
            continue;
        char name[80];
        snprintf(name, sizeof name, "%s%s%s", p.family[0] ? p.family : "?", p.variant[0] ? "-" : "",
                 p.variant);
        char probe[16];
        if (p.probe >= 0)
            snprintf(probe, sizeof probe, "%d", p.probe);
        else
            snprintf(probe, sizeof probe, "-");
        printf("  %-9s %-16s probe %-4s %s\n", p.state, name, probe, p.path);
        if (p.reason[0])
            printf("            why: %s\n", p.reason);
    }
}

/* A software rasteriser (lavapipe) as the only GPU is worth a warning: it
 * is a GPU API over the CPU, so "the GPU path" would gain nothing. */
static void warn_software_only(const hc_engine *e)
{
    int n = hc_engine_device_count(e), n_gpu = 0, soft = -1;
    for (int i = 0; i < n; i++) {
        hc_device_report d;
        if (hc_engine_device_report(e, i, &d) != 0)
            continue;
        if (d.info.kind == HC_DEVICE_GPU || d.info.kind == HC_DEVICE_IGPU)
            n_gpu++;
        else if (d.info.kind == HC_DEVICE_SOFT && soft < 0)
            soft = i;
    }
    hc_device_report d;
    if (n_gpu > 0 || soft < 0 || hc_engine_device_report(e, soft, &d) != 0)
        return;
    printf("\nwarning: the only GPU device is a software rasteriser: %s:%d (%s).\n"
           "         It runs on the CPU, so it is no faster than the cpu device; to use a GPU,\n"
           "         install its Vulkan driver (or its plugin's runtime).\n",
           d.family, d.index, d.info.name);
}

static void print_devices(const hc_engine *e)
{
    int n = hc_engine_device_count(e);
    printf("\ndevices: %d\n", n);
    for (int i = 0; i < n; i++) {
        hc_device_report d;
        if (hc_engine_device_report(e, i, &d) != 0)
            continue;
        char spec[64], caps[96], threads[32] = "";
        snprintf(spec, sizeof spec, "%s:%d", d.family, d.index);
        format_caps(d.info.caps, caps, sizeof caps);
        if (d.info.n_threads > 0)
            snprintf(threads, sizeof threads, ", %d thread%s", d.info.n_threads,
                     d.info.n_threads == 1 ? "" : "s");
        printf("  %-10s %s\n", spec, d.info.name);
        printf("             %s, memory %.1f GiB total, %.1f GiB free, caps %s%s\n",
               kind_name(d.info.kind), gib(d.info.mem_total), gib(d.info.mem_free), caps, threads);
    }
}

int hc_cmd_devices(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"threads", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    hc_engine_params params = hc_engine_default_params();
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:h", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            /* The range run and bench accept: 0 is not "all cores" here either. */
            if (!hc_tool_parse_int(optarg, 1, 1024, &params.n_threads)) {
                fprintf(stderr, "hotcold devices: bad value '%s' for %s (see --help)\n", optarg,
                        hc_tool_option_name(longopts, c));
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold devices: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }

    hc_engine *e = hc_engine_open(&params);
    if (!e) {
        fprintf(stderr, "hotcold devices: %s\n", hc_last_error());
        return 1;
    }
    print_search_path(e);
    print_plugins(e);
    if (hc_engine_plugin_count(e) == 0) {
        printf("\nno plugins found. Set HOTCOLD_PLUGIN_PATH to the directory holding the\n"
               "libhc-*.so files (in a build tree: HOTCOLD_PLUGIN_PATH=<build>/lib/hotcold), or to\n"
               "a colon-separated list of plugin files and directories.\n");
    }
    print_devices(e);
    if (hc_engine_device_count(e) == 0 && hc_engine_plugin_count(e) > 0) {
        printf("\nno devices: no loaded plugin reports one (see 'why:' above; a plugin whose\n"
               "driver is missing loads but reports zero devices).\n");
    }
    warn_software_only(e);
    hc_engine_close(e);
    return 0;
}

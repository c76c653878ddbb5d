/*
 * The ROCm/HIP plugin (plugins/rocm: plugins/cuda's sources built by
 * hipcc) on a machine without an AMD GPU (every build machine here): it
 * loads through the core's loader as family "rocm", offers every entry the
 * CUDA sources implement, reports zero devices with the HIP runtime's own
 * words, refuses device calls with HC_E_NODEV, stays mapped when dlclosed,
 * and `hotcold devices` / `--device rocm` say why.  No HIP kernel runs
 * here; the kernels' logic is the CUDA plugin's, checked by the conformance
 * suite on an NVIDIA GPU (also in the wave64 emulation,
 * HC_CUDA_EMULATE_WAVE64).  On a machine WITH an AMD GPU the zero-device
 * assertions are skipped, said as "skipped: ...".
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "hotcold/plugin.h"
#include "runtime/loader.h"
#include "test_util.h"

static const char *plugin_file(void)
{
    return hc_test_path(HC_PLUGIN_BUILD_DIR, "libhc-rocm.so");
}

static hc_registry reg;

static hc_plugin *load_rocm(void)
{
    hc_loader_options o = {.plugin_path = plugin_file(), .use_default_dirs = 0};
    memset(&reg, 0, sizeof reg);
    ck_assert_int_eq(hc_registry_load(&reg, &o), 0);
    ck_assert_int_eq(reg.n_candidates, 1);
    const hc_plugin_candidate *c = &reg.candidates[0];
    ck_assert_msg(c->state == HC_CAND_LOADED, "state %d: %s", c->state, c->reason);
    hc_plugin *pl = hc_registry_find(&reg, "rocm");
    ck_assert_ptr_nonnull(pl);
    return pl;
}

/* The HIP runtime's own answer, asked directly (not through the plugin):
 * the reason the plugin must give, in the CUDA plugin's format.  0: there
 * are devices (or the runtime is missing: then the plugin could not load). */
static int runtime_reason(char *out, size_t len)
{
    typedef int (*count_fn)(int *);
    typedef const char *(*text_fn)(int);
    /* The runtime the plugin links, whatever its soname (5 in Debian, 6 in
     * later ROCm): dlsym on the plugin's handle searches its dependencies. */
    void *h = dlopen(plugin_file(), RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    count_fn count = (count_fn)dlsym(h, "hipGetDeviceCount");
    text_fn text = (text_fn)dlsym(h, "hipGetErrorString");
    text_fn name = (text_fn)dlsym(h, "hipGetErrorName");
    ck_assert(count && text && name);
    int n = 0, e = count(&n);
    /* Never dlclosed: see core/runtime/loader.h. */
    if (e == 0)
        return n > 0 ? 0 : (snprintf(out, len, "hipGetDeviceCount found no device"), 1);
    snprintf(out, len, "hipGetDeviceCount failed: %s (%s, %d)", text(e), name(e), e);
    return 1;
}

START_TEST(loads_as_rocm_with_every_entry)
{
    hc_plugin *pl = load_rocm();
    ck_assert_str_eq(pl->ops->family, "rocm");
    ck_assert_str_eq(pl->ops->variant, "");
    ck_assert_uint_eq(pl->ops->abi_major, HC_PLUGIN_ABI_MAJOR);
    ck_assert_uint_eq(pl->ops->abi_minor, HC_PLUGIN_ABI_MINOR);
    ck_assert_uint_eq(pl->ops->size, sizeof(hc_plugin_ops));
    /* Every entry of the ABI but the three the CUDA sources leave NULL
     * (device memory only; no thread count to set). */
#define CHECK_ENTRY(name, op, need, minor)                                                    \
    if (strcmp(#name, "buffer_wrap_host") && strcmp(#name, "buffer_host_ptr") &&             \
        strcmp(#name, "set_threads"))                                                        \
        ck_assert_msg(HC_OPS_HAS(pl->ops, name), "entry %s is missing", #name);             \
    else                                                                                     \
        ck_assert_msg(!HC_OPS_HAS(pl->ops, name), "entry %s is offered", #name);
    HC_PLUGIN_ENTRIES(CHECK_ENTRY)
#undef CHECK_ENTRY
    hc_registry_free(&reg);
}
END_TEST

START_TEST(no_device_says_why)
{
    hc_plugin *pl = load_rocm();
    const hc_plugin_candidate *c = &reg.candidates[0];
    char want[320];
    int n = pl->ops->device_count(pl->ctx);
    if (n > 0 || !runtime_reason(want, sizeof want)) {
        hc_test_skip("no_device_says_why: this machine has %d AMD device(s)", n);
        hc_registry_free(&reg);
        return;
    }
    ck_assert_int_eq(n, 0);
    const char *why = pl->ops->no_device_reason(pl->ctx);
    ck_assert_ptr_nonnull(why);
    /* The runtime's own words, as the runtime gives them to the test. */
    ck_assert_str_eq(why, want);
    ck_assert_msg(strncmp(c->reason, "no devices: ", 12) == 0 && strstr(c->reason, why),
                  "candidate reason: %s", c->reason);
    /* Zero devices is not a failure: nothing in last_error. */
    ck_assert_str_eq(pl->ops->last_error(pl->ctx), "");

    hc_device_info info = {.size = sizeof info};
    hc_device *dev = NULL;
    ck_assert_int_eq(pl->ops->device_info(pl->ctx, 0, &info), HC_E_NODEV);
    ck_assert_ptr_nonnull(strstr(pl->ops->last_error(pl->ctx), "no device 0"));
    ck_assert_int_eq(pl->ops->device_open(pl->ctx, 0, &dev), HC_E_NODEV);
    ck_assert_ptr_null(dev);
    ck_assert_int_eq(pl->ops->device_open(pl->ctx, -1, &dev), HC_E_NODEV);
    hc_registry_free(&reg);
}
END_TEST

START_TEST(bad_init_arguments_are_refused)
{
    hc_plugin *pl = load_rocm();
    ck_assert_int_eq(pl->ops->init(NULL, NULL), HC_E_INVALID);
    ck_assert_ptr_nonnull(strstr(pl->ops->last_error(NULL), "out is NULL"));
    hc_plugin_host host = {.size = sizeof host, .abi_major = HC_PLUGIN_ABI_MAJOR + 1};
    hc_plugin_ctx *ctx = (hc_plugin_ctx *)&host; /* must be overwritten with NULL */
    ck_assert_int_eq(pl->ops->init(&host, &ctx), HC_E_UNSUPPORTED);
    ck_assert_ptr_null(ctx);
    host.abi_major = HC_PLUGIN_ABI_MAJOR;
    ck_assert_int_eq(pl->ops->init(&host, &ctx), HC_OK);
    ck_assert_int_eq(pl->ops->device_count(ctx), pl->ops->device_count(pl->ctx));
    pl->ops->shutdown(ctx);
    hc_registry_free(&reg);
}
END_TEST

/* exports.map: the plugin's own functions stay hidden.  (dlsym on the
 * handle also searches its dependencies, so the HIP runtime's names are
 * found there, in libamdhip64: tests/rocm_links.sh checks the plugin's own
 * dynamic symbols.) */
START_TEST(only_the_entry_is_exported)
{
    void *h = dlopen(plugin_file(), RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    ck_assert_ptr_nonnull(dlsym(h, HC_PLUGIN_ENTRY_SYMBOL));
    ck_assert_ptr_null(dlsym(h, "hc_cu_launch_dot_rows"));
    ck_assert_ptr_null(dlsym(h, "hc_cu_devices_probe"));
}
END_TEST

/* -z nodelete: a dlclose, after the runtime was used, unmaps neither the
 * plugin nor the HIP runtime (which leaks at unload: LeakSanitizer noise
 * in the sanitizer pass). */
START_TEST(dlclose_keeps_it_mapped)
{
    void *h = dlopen(plugin_file(), RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    hc_plugin_entry_fn entry = (hc_plugin_entry_fn)dlsym(h, HC_PLUGIN_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    const hc_plugin_ops *ops = entry(HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR);
    ck_assert_ptr_nonnull(ops);
    hc_plugin_host host = {.size = sizeof host, .abi_major = HC_PLUGIN_ABI_MAJOR,
                           .abi_minor = HC_PLUGIN_ABI_MINOR};
    hc_plugin_ctx *ctx = NULL;
    ck_assert_int_eq(ops->init(&host, &ctx), HC_OK);
    ops->shutdown(ctx);
    ck_assert_int_eq(dlclose(h), 0);
    void *again = dlopen(plugin_file(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    ck_assert_msg(again != NULL, "libhc-rocm.so was unmapped by dlclose");
    /* And the HIP runtime with it (the file the plugin's dependency is). */
    Dl_info where;
    void *sym = dlsym(again, "hipGetDeviceCount");
    ck_assert_msg(sym && dladdr(sym, &where) && where.dli_fname, "no hipGetDeviceCount");
    ck_assert_msg(dlopen(where.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) != NULL,
                  "%s was unmapped", where.dli_fname);
}
END_TEST

/* Library code never prints: init (the HIP runtime's first call) and the
 * zero-device answers write nothing to stdout or stderr. */
START_TEST(init_prints_nothing)
{
    hc_plugin *pl = load_rocm();
    char path[] = "/tmp/hc_test_rocm_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2);
    ck_assert(out >= 0 && err >= 0);
    ck_assert_int_ge(dup2(fd, 1), 0);
    ck_assert_int_ge(dup2(fd, 2), 0);
    hc_plugin_host host = {.size = sizeof host, .abi_major = HC_PLUGIN_ABI_MAJOR,
                           .abi_minor = HC_PLUGIN_ABI_MINOR};
    hc_plugin_ctx *ctx = NULL;
    hc_status st = pl->ops->init(&host, &ctx);
    hc_device *dev = NULL;
    if (st == HC_OK) {
        (void)pl->ops->device_count(ctx);
        (void)pl->ops->no_device_reason(ctx);
        if (pl->ops->device_open(ctx, 0, &dev) == HC_OK)
            pl->ops->device_close(dev);
        pl->ops->shutdown(ctx);
    }
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    off_t printed = lseek(fd, 0, SEEK_END);
    close(fd);
    unlink(path);
    ck_assert_int_eq(st, HC_OK);
    ck_assert_msg(printed == 0, "the plugin printed %lld bytes", (long long)printed);
    hc_registry_free(&reg);
}
END_TEST

START_TEST(devices_command_says_why)
{
    char want[320];
    if (!runtime_reason(want, sizeof want)) {
        hc_test_skip("devices_command_says_why: this machine has an AMD device");
        return;
    }
    cli_result r;
    cli(&r, "devices");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "loaded    rocm "), "stdout: %s", r.out);
    char line[400];
    snprintf(line, sizeof line, "why: no devices: %s\n", want);
    ck_assert_msg(strstr(r.out, line), "no '%s' in stdout: %s", line, r.out);
    cli_free(&r);
    cli(&r, "run -n 1 --device rocm");
    ck_assert_int_eq(r.status, 1);
    snprintf(line, sizeof line, "no device 'rocm': rocm loaded, no devices: %s", want);
    ck_assert_msg(strstr(r.err, line), "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

static Suite *rocm_suite(void)
{
    Suite *s = suite_create("rocm");
    TCase *tc = tcase_create("no_gpu");
    tcase_add_test(tc, loads_as_rocm_with_every_entry);
    tcase_add_test(tc, no_device_says_why);
    tcase_add_test(tc, bad_init_arguments_are_refused);
    tcase_add_test(tc, only_the_entry_is_exported);
    tcase_add_test(tc, dlclose_keeps_it_mapped);
    tcase_add_test(tc, init_prints_nothing);
    tcase_add_test(tc, devices_command_says_why);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rocm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

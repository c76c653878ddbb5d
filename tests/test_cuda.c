/*
 * The CUDA plugin on a machine without a GPU (CI): it loads through the
 * core's loader, answers the ABI 1.3 table, reports zero devices with the
 * runtime's reason, and refuses device calls with HC_E_NODEV instead of
 * failing or aborting.  What the kernels compute is the conformance suite's
 * job, on a machine with a device (test_conformance build/lib/hotcold/
 * libhc-cuda.so).  On a machine WITH a CUDA device the zero-device
 * assertions are skipped, said as "skipped: ...".
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "hotcold/plugin.h"
#include "runtime/loader.h"
#include "test_util.h"

static const char *plugin_file(void)
{
    return hc_test_path(HC_PLUGIN_BUILD_DIR, "libhc-cuda.so");
}

static hc_registry reg;

static const hc_plugin_candidate *load_cuda(void)
{
    hc_loader_options o = {.plugin_path = plugin_file(), .use_default_dirs = 0};
    memset(&reg, 0, sizeof reg);
    ck_assert_int_eq(hc_registry_load(&reg, &o), 0);
    ck_assert_int_eq(reg.n_candidates, 1);
    return &reg.candidates[0];
}

START_TEST(loads_with_the_1_3_table)
{
    const hc_plugin_candidate *c = load_cuda();
    ck_assert_msg(c->state == HC_CAND_LOADED, "state %d: %s", c->state, c->reason);
    hc_plugin *pl = hc_registry_find(&reg, "cuda");
    ck_assert_ptr_nonnull(pl);
    ck_assert_str_eq(pl->ops->family, "cuda");
    ck_assert_str_eq(pl->ops->variant, "");
    ck_assert_uint_eq(pl->ops->abi_major, HC_PLUGIN_ABI_MAJOR);
    ck_assert_uint_eq(pl->ops->abi_minor, HC_PLUGIN_ABI_MINOR);
    ck_assert_uint_eq(pl->ops->size, sizeof(hc_plugin_ops));
    ck_assert(HC_OPS_HAS(pl->ops, no_device_reason));
    ck_assert(HC_OPS_HAS(pl->ops, op_cost));
    ck_assert(HC_OPS_HAS(pl->ops, copy));
    /* Every op of the ABI is the plugin's own (the conformance suite, on a
     * machine with a device, checks what they compute). */
    ck_assert(HC_OPS_HAS(pl->ops, rmsnorm) && HC_OPS_HAS(pl->ops, rope) &&
              HC_OPS_HAS(pl->ops, attention) && HC_OPS_HAS(pl->ops, unary) &&
              HC_OPS_HAS(pl->ops, binary) && HC_OPS_HAS(pl->ops, glu) &&
              HC_OPS_HAS(pl->ops, matmul_batch) && HC_OPS_HAS(pl->ops, stream_flush));
    /* ABI 1.3 device-side selection: all three, or the core selects on the
     * host and waits for the GPU at every layer. */
    ck_assert(HC_OPS_HAS(pl->ops, select_rows));
    ck_assert(HC_OPS_HAS(pl->ops, matvec_rows_counted));
    ck_assert(HC_OPS_HAS(pl->ops, axpy_rows_counted));
    /* ABI 1.3 for GPUs: the KV rows by device positions, page-locked host
     * memory, capture. */
    ck_assert(HC_OPS_HAS(pl->ops, scatter_rows) && HC_OPS_HAS(pl->ops, host_alloc) &&
              HC_OPS_HAS(pl->ops, host_free) && HC_OPS_HAS(pl->ops, capture_begin) &&
              HC_OPS_HAS(pl->ops, capture_end) && HC_OPS_HAS(pl->ops, graph_launch) &&
              HC_OPS_HAS(pl->ops, graph_free));
    hc_registry_free(&reg);
}
END_TEST

START_TEST(no_device_says_why)
{
    const hc_plugin_candidate *c = load_cuda();
    ck_assert_msg(c->state == HC_CAND_LOADED, "state %d: %s", c->state, c->reason);
    hc_plugin *pl = hc_registry_find(&reg, "cuda");
    int n = pl->ops->device_count(pl->ctx);
    if (n > 0) {
        hc_test_skip("no_device_says_why: this machine has %d CUDA device(s)", n);
        hc_registry_free(&reg);
        return;
    }
    ck_assert_int_eq(n, 0);
    const char *why = pl->ops->no_device_reason(pl->ctx);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strlen(why) > 0, "no_device_reason is empty");
    /* The runtime's own words: cudaGetDeviceCount's error and its text. */
    ck_assert_msg(strstr(why, "cudaGetDeviceCount"), "reason: %s", why);
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
    load_cuda();
    hc_plugin *pl = hc_registry_find(&reg, "cuda");
    ck_assert_ptr_nonnull(pl);
    ck_assert_int_eq(pl->ops->init(NULL, NULL), HC_E_INVALID);
    ck_assert_ptr_nonnull(strstr(pl->ops->last_error(NULL), "out is NULL"));
    /* A host of another major version. */
    hc_plugin_host host = {.size = sizeof host, .abi_major = HC_PLUGIN_ABI_MAJOR + 1};
    hc_plugin_ctx *ctx = (hc_plugin_ctx *)&host; /* must be overwritten with NULL */
    ck_assert_int_eq(pl->ops->init(&host, &ctx), HC_E_UNSUPPORTED);
    ck_assert_ptr_null(ctx);
    /* A second context alongside the loader's is independent. */
    host.abi_major = HC_PLUGIN_ABI_MAJOR;
    ck_assert_int_eq(pl->ops->init(&host, &ctx), HC_OK);
    ck_assert_int_eq(pl->ops->device_count(ctx), pl->ops->device_count(pl->ctx));
    pl->ops->shutdown(ctx);
    hc_registry_free(&reg);
}
END_TEST

/* exports.map: the runtime linked in statically stays hidden, so it cannot
 * interpose on (or be interposed by) another copy in the process. */
START_TEST(only_the_entry_is_exported)
{
    void *h = dlopen(plugin_file(), RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
    ck_assert_ptr_nonnull(dlsym(h, HC_PLUGIN_ENTRY_SYMBOL));
    ck_assert_ptr_null(dlsym(h, "cudaGetDeviceCount"));
    ck_assert_ptr_null(dlsym(h, "cudaMalloc"));
    ck_assert_ptr_null(dlsym(h, "hc_cu_launch_dot_rows"));
    /* Never dlclosed: see core/runtime/loader.h. */
}
END_TEST

static Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda");
    TCase *tc = tcase_create("no_gpu");
    tcase_add_test(tc, loads_with_the_1_3_table);
    tcase_add_test(tc, no_device_says_why);
    tcase_add_test(tc, bad_init_arguments_are_refused);
    tcase_add_test(tc, only_the_entry_is_exported);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cuda_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

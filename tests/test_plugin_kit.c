/*
 * include/hotcold/plugin_kit.h on its own: the checks every plugin shares,
 * against values worked out here (overflow at 2^64, ranges at the end of a
 * buffer, the exact message a user sees), and the host and device-info
 * helpers against structs of other sizes.  The plugins' own suites
 * (test_cpu_plugin, conformance) check the same behaviour through their
 * ops.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hotcold/plugin_kit.h"

/* The fail function under test records here. */
typedef struct sink {
    int calls;
    hc_status st;
    char msg[HC_KIT_MSG_LEN];
} sink;

static hc_status record(void *user, hc_status st, const char *msg)
{
    sink *s = user;
    s->calls++;
    s->st = st;
    hc_kit_set_error(s->msg, sizeof s->msg, msg);
    return st;
}

START_TEST(mul3_overflow)
{
    uint64_t out = 7;
    ck_assert(hc_kit_mul3(3, 5, 7, &out) && out == 105);
    ck_assert(hc_kit_mul3(0, UINT64_MAX, UINT64_MAX, &out) && out == 0);
    ck_assert(hc_kit_mul3(UINT64_MAX, 1, 1, &out) && out == UINT64_MAX);
    /* 2^32 * 2^32 = 2^64: one past the largest value. */
    out = 7;
    ck_assert(!hc_kit_mul3((uint64_t)1 << 32, (uint64_t)1 << 32, 1, &out) && out == 7);
    ck_assert(!hc_kit_mul3((uint64_t)1 << 32, (uint64_t)1 << 31, 2, &out));
    /* 2^32 * (2^31 - 1) * 2 = 2^64 - 2^33: fits. */
    ck_assert(hc_kit_mul3((uint64_t)1 << 32, ((uint64_t)1 << 31) - 1, 2, &out) &&
              out == UINT64_MAX - ((uint64_t)1 << 33) + 1);
}
END_TEST

START_TEST(ranges)
{
    ck_assert(hc_kit_range_inside(0, 100, 100));
    ck_assert(hc_kit_range_inside(100, 0, 100));
    ck_assert(!hc_kit_range_inside(101, 0, 100));
    ck_assert(!hc_kit_range_inside(1, 100, 100));
    /* off + bytes wraps to 4: still outside. */
    ck_assert(!hc_kit_range_inside(8, UINT64_MAX - 3, 100));
    ck_assert(hc_kit_overlap(0, 10, 9, 1));
    ck_assert(!hc_kit_overlap(0, 10, 10, 5));
    ck_assert(!hc_kit_overlap(5, 0, 0, 10)); /* empty ranges share nothing */
}
END_TEST

START_TEST(check_messages)
{
    sink s = {0};
    uint64_t bytes = 1;
    ck_assert_int_eq(hc_kit_check_range(record, &s, "matmul", "y", 92, 8, 100, 4, 0), HC_OK);
    ck_assert_int_eq(s.calls, 0);
    ck_assert_int_eq(hc_kit_check_range(record, &s, "matmul", "y", 96, 16, 100, 4, 0),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "matmul: y: range [96, 96 + 16) exceeds the buffer of 100 bytes");
    ck_assert_int_eq(hc_kit_check_range(record, &s, "rope", "pos", 6, 4, 100, 4, 0),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "rope: pos: offset 6 is not 4-byte aligned");
    /* Alignment of the address: base 2 + offset 6 is a multiple of 4. */
    ck_assert_int_eq(hc_kit_check_range(record, &s, "rope", "pos", 6, 4, 100, 4, 2), HC_OK);

    ck_assert_int_eq(hc_kit_check_count(record, &s, "glu", "g", 3, 5, 4, &bytes), HC_OK);
    ck_assert_uint_eq(bytes, 60);
    ck_assert_int_eq(hc_kit_check_count(record, &s, "glu", "g", -1, 5, 4, &bytes), HC_E_INVALID);
    ck_assert_str_eq(s.msg, "glu: g: negative size (-1 x 5)");
    ck_assert_int_eq(hc_kit_check_count(record, &s, "glu", "g", INT64_MAX, 3, 4, &bytes),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "glu: g: size 9223372036854775807 x 3 x 4 overflows");

    const int32_t idx[] = {0, 4, 5};
    ck_assert_int_eq(hc_kit_check_rows(record, &s, "axpy_rows", idx, 3, 6), HC_OK);
    ck_assert_int_eq(hc_kit_check_rows(record, &s, "axpy_rows", idx, 3, 5), HC_E_INVALID);
    ck_assert_str_eq(s.msg, "axpy_rows: idx[2] = 5 is outside [0, 5)");

    ck_assert_int_eq(hc_kit_check_disjoint(record, &s, "matmul", "y", 0, 8, "x", 8, 8), HC_OK);
    ck_assert_int_eq(hc_kit_check_disjoint(record, &s, "matmul", "y", 0, 9, "x", 8, 8),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "matmul: y overlaps x");
    ck_assert_int_eq(hc_kit_check_same_or_disjoint(record, &s, "unary", "y", 8, 8, "x", 8, 8),
                     HC_OK);
    ck_assert_int_eq(hc_kit_check_same_or_disjoint(record, &s, "unary", "y", 8, 8, "x", 12, 8),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "unary: y partially overlaps x");
}
END_TEST

START_TEST(weights)
{
    sink s = {0};
    uint64_t rb, bytes;
    ck_assert_int_eq(hc_kit_check_weights(record, &s, "matmul", HC_TYPE_Q4_0, 3, 64, &rb, &bytes),
                     HC_OK);
    ck_assert_uint_eq(rb, 36); /* 2 blocks of 18 bytes */
    ck_assert_uint_eq(bytes, 108);
    ck_assert_int_eq(hc_kit_check_weights(record, &s, "matmul", HC_TYPE_Q6_K, 2, 512, &rb, &bytes),
                     HC_OK);
    ck_assert_uint_eq(bytes, 2 * 2 * 210);
    ck_assert_int_eq(hc_kit_check_weights(record, &s, "matmul", (hc_type)3, 1, 32, &rb, &bytes),
                     HC_E_UNSUPPORTED);
    ck_assert_str_eq(s.msg, "matmul: weight type 3 is not supported (F32, F16, Q4_0, Q8_0, Q6_K)");
    ck_assert_int_eq(hc_kit_check_weights(record, &s, "matmul", HC_TYPE_Q6_K, 1, 64, &rb, &bytes),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "matmul: cols 64 is not a multiple of 256 for type 14");
    ck_assert_int_eq(hc_kit_check_weights(record, &s, "axpy_rows", HC_TYPE_F32, -2, 8, &rb,
                                          &bytes),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "axpy_rows: negative shape -2 x 8");
    ck_assert_int_eq(hc_kit_check_weights(record, &s, "matmul", HC_TYPE_F32, INT64_MAX, 8, &rb,
                                          &bytes),
                     HC_E_INVALID);
    ck_assert_str_eq(s.msg, "matmul: w: 9223372036854775807 rows of 32 bytes overflow");
    ck_assert(hc_kit_type_known(HC_TYPE_Q8_0) && !hc_kit_type_known((hc_type)7));
    ck_assert_int_eq(hc_kit_type_block(HC_TYPE_F16), 1);
    ck_assert_int_eq(hc_kit_type_block(HC_TYPE_Q8_0), 32);
    ck_assert_uint_eq(hc_kit_weight_align(HC_TYPE_F32), 4);
    ck_assert_uint_eq(hc_kit_weight_align(HC_TYPE_Q4_0), 1);
}
END_TEST

static char g_logged[256];
static int g_level = -1;

static void host_log(void *user, int level, const char *msg)
{
    snprintf(g_logged, sizeof g_logged, "%s|%s", (const char *)user, msg);
    g_level = level;
}

START_TEST(host_helpers)
{
    hc_plugin_host host = {sizeof host, HC_PLUGIN_ABI_MAJOR, HC_PLUGIN_ABI_MINOR, host_log,
                           "cpu-avx2", 3};
    hc_kit_host_logf(&host, HC_LOG_INFO, "%d threads", 3);
    ck_assert_str_eq(g_logged, "cpu-avx2|3 threads");
    ck_assert_int_eq(g_level, HC_LOG_INFO);

    /* A host struct that ends before log_user: no log. */
    hc_plugin_host old = host;
    old.size = offsetof(hc_plugin_host, log_user);
    g_logged[0] = 0;
    hc_kit_host_log(&old, HC_LOG_INFO, "not to be seen");
    ck_assert_str_eq(g_logged, "");

    /* Copy: only what the source's size covers, the rest zero. */
    hc_plugin_host copy;
    memset(&copy, 0xab, sizeof copy);
    old.size = offsetof(hc_plugin_host, n_threads);
    hc_kit_host_copy(&copy, &old);
    ck_assert_uint_eq(copy.size, sizeof copy);
    ck_assert_ptr_eq(copy.log_user, host.log_user);
    ck_assert_int_eq(copy.n_threads, 0);
    hc_kit_host_copy(&copy, NULL);
    ck_assert_ptr_null(copy.log);

    /* device_info: a caller that knows a shorter struct gets its prefix. */
    hc_device_info info = {0};
    info.size = sizeof info;
    snprintf(info.name, sizeof info.name, "dev");
    info.kind = HC_DEVICE_GPU;
    info.n_threads = 9;
    _Alignas(hc_device_info) unsigned char raw[sizeof info + 8];
    memset(raw, 0xab, sizeof raw);
    size_t small = offsetof(hc_device_info, caps);
    memcpy(raw, &small, sizeof small);
    hc_kit_device_info_copy((hc_device_info *)raw, &info);
    for (size_t i = small; i < sizeof raw; i++)
        ck_assert_uint_eq(raw[i], 0xab);
    ck_assert_int_eq(((hc_device_info *)raw)->kind, HC_DEVICE_GPU);
    ck_assert_uint_eq(((hc_device_info *)raw)->size, small);
    hc_device_info full;
    full.size = sizeof full;
    hc_kit_device_info_copy(&full, &info);
    ck_assert_int_eq(full.n_threads, 9);
    ck_assert_uint_eq(full.size, sizeof full);

    ck_assert_str_eq(hc_kit_status_name(HC_E_NOMEM), "out of memory");
}
END_TEST

/* The memory-limit knobs: a decimal count of bytes, or nothing. */
START_TEST(env_bytes)
{
    static const struct {
        const char *value; /* NULL: unset */
        int rc;
        uint64_t out;
    } cases[] = {
        {NULL, 0, UINT64_MAX},
        {"", 0, UINT64_MAX},
        {"0", 1, 0},
        {"4000000", 1, 4000000},
        {"18446744073709551615", 1, UINT64_MAX},
        {"18446744073709551616", -1, UINT64_MAX}, /* 2^64 */
        {"-1", -1, UINT64_MAX},
        {"+5", -1, UINT64_MAX},
        {" 5", -1, UINT64_MAX},
        {"12x", -1, UINT64_MAX},
        {"1e9", -1, UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].value)
            setenv("HC_KIT_TEST_BYTES", cases[i].value, 1);
        else
            unsetenv("HC_KIT_TEST_BYTES");
        uint64_t out = 7;
        int rc = hc_kit_env_bytes("HC_KIT_TEST_BYTES", &out);
        ck_assert_msg(rc == cases[i].rc && out == cases[i].out, "'%s': rc %d, out %llu",
                      cases[i].value ? cases[i].value : "(unset)", rc, (unsigned long long)out);
    }
    unsetenv("HC_KIT_TEST_BYTES");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plugin_kit");
    TCase *tc = tcase_create("kit");
    tcase_add_test(tc, mul3_overflow);
    tcase_add_test(tc, ranges);
    tcase_add_test(tc, check_messages);
    tcase_add_test(tc, weights);
    tcase_add_test(tc, host_helpers);
    tcase_add_test(tc, env_bytes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

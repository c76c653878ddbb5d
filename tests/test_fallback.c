/*
 * The core's CPU fallback (core/exec/device.c, device_fallback.c), end to
 * end, on stub GPU plugins (tests/stubs/stub_gpu.c: host memory, the
 * reference kernels of core/ref) so it runs on every machine:
 *
 *  - refgpu takes every call: a model on it gives the all-CPU run's greedy
 *    ids, and nothing falls back (it provides every op the core calls);
 *  - HOTCOLD_DISABLE_OPS names any op of HC_PLUGIN_ENTRIES, the required
 *    weight ops included: disabled on refgpu they run on the CPU, the ids
 *    stay the same and the run counts the fallbacks;
 *  - refusegpu answers HC_E_UNSUPPORTED for some shapes of matmul,
 *    matvec_rows, axpy_rows and attention (plugin.h: a refusal is for that
 *    call): each refused call runs on the CPU, the ids stay the same, and
 *    the run's fallback count is exactly the number of refusals.
 *
 * The model is the packed sparse relu2M (predictor mode: matvec_rows and
 * axpy_rows over the listed rows, the dense output head by matmul), wholly
 * on the stub GPU.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hotcold/hotcold.h"
#include "test_util.h"

#define N_IDS 40
#define MODEL "relu2M.powerinfer.gguf"

static hc_engine *engine;

static const char *model_path(void)
{
    return hc_test_path(HC_MODELS_DIR, MODEL);
}

/* Greedy ids from `prompt` on `device` (a whole model there), and the run's
 * statistics. */
static void greedy(const char *device, const int32_t *prompt, int n_prompt, int32_t *out,
                   hc_context_run_stats *rs)
{
    hc_model_params mp = hc_model_default_params();
    mp.device = device;
    mp.vram_budget = 1e12;
    mp.sparse = HC_SPARSE_PREDICTOR;
    mp.gpu_index = HC_GPU_INDEX_DISABLE;
    mp.n_ctx = 128;
    hc_model *m = hc_model_load(engine, model_path(), &mp);
    ck_assert_msg(m != NULL, "load on %s: %s", device, hc_last_error());
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = 128;
    hc_context *c = hc_context_new(m, &cp);
    ck_assert_msg(c != NULL, "context: %s", hc_last_error());
    hc_model_desc d;
    hc_model_describe(m, &d);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    ck_assert(logits != NULL);
    ck_assert_msg(hc_context_eval(c, prompt, n_prompt, logits) == 0, "%s: %s", device,
                  hc_last_error());
    for (int i = 0; i < N_IDS; i++) {
        out[i] = hc_test_argmax(logits, d.n_vocab);
        if (i + 1 < N_IDS)
            ck_assert_msg(hc_context_eval(c, &out[i], 1, logits) == 0, "%s, step %d: %s", device,
                          i, hc_last_error());
    }
    hc_context_run_stats_get(c, rs);
    free(logits);
    hc_context_free(c);
    hc_model_free(m);
}

/* A prompt of several tokens, so the batched paths run too. */
static const int32_t PROMPT[] = {1, 9, 33, 74, 180, 12, 401, 7};
#define N_PROMPT ((int)(sizeof PROMPT / sizeof PROMPT[0]))

static int32_t g_cpu_ids[N_IDS];

static void cpu_ids_once(void)
{
    static int done;
    hc_context_run_stats rs;
    if (!done)
        greedy("cpu", PROMPT, N_PROMPT, g_cpu_ids, &rs);
    done = 1;
}

static void print_ids(const char *what, const int32_t *ids, const hc_context_run_stats *rs)
{
    printf("%-34s ids", what);
    for (int i = 0; i < 12; i++)
        printf(" %d", ids[i]);
    printf(" ...; %llu op calls fell back to the CPU\n", (unsigned long long)rs->fallback_calls);
}

START_TEST(stub_gpu_matches_cpu)
{
    int32_t got[N_IDS];
    hc_context_run_stats rs;
    cpu_ids_once();
    greedy("refgpu", PROMPT, N_PROMPT, got, &rs);
    print_ids("refgpu (takes every call)", got, &rs);
    ck_assert_mem_eq(got, g_cpu_ids, sizeof got);
    ck_assert_msg(rs.gpu_rows > 0 && rs.cpu_rows == 0, "FFN rows: %lld on the GPU, %lld on the CPU",
                  (long long)rs.gpu_rows, (long long)rs.cpu_rows);
    ck_assert_uint_eq(rs.fallback_calls, 0);
}
END_TEST

START_TEST(disabled_weight_ops)
{
    int32_t got[N_IDS];
    hc_context_run_stats rs;
    cpu_ids_once();
    setenv("HOTCOLD_DISABLE_OPS", "matmul,matvec_rows,axpy_rows", 1);
    greedy("refgpu", PROMPT, N_PROMPT, got, &rs);
    unsetenv("HOTCOLD_DISABLE_OPS");
    print_ids("refgpu, weight ops disabled", got, &rs);
    ck_assert_mem_eq(got, g_cpu_ids, sizeof got);
    ck_assert_msg(rs.fallback_calls > 0, "no op fell back");
}
END_TEST

/* The lines of the stub's refusal log that start with `op`. */
static int count_refusals(const char *log, const char *op)
{
    int n = 0;
    size_t len = strlen(op);
    for (const char *p = log; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, op, len) == 0 && p[len] == ' ';
    return n;
}

START_TEST(refused_calls_fall_back)
{
    int32_t got[N_IDS];
    hc_context_run_stats rs;
    cpu_ids_once();
    const char *log_path = hc_test_path(hc_test_tmpdir(), "refusals.log");
    remove(log_path);
    setenv("HC_STUB_GPU_REFUSALS", log_path, 1);
    greedy("refusegpu", PROMPT, N_PROMPT, got, &rs);
    unsetenv("HC_STUB_GPU_REFUSALS");
    print_ids("refusegpu (refuses some shapes)", got, &rs);
    size_t len;
    char *log = hc_test_read_file(log_path, &len);
    ck_assert_msg(log != NULL, "the stub logged no refusal (%s)", log_path);
    int n_lines = 0;
    for (size_t i = 0; i < len; i++)
        n_lines += log[i] == '\n';
    const char *ops[] = {"matmul", "matvec_rows", "axpy_rows", "attention"};
    for (int i = 0; i < 4; i++) {
        int n = count_refusals(log, ops[i]);
        printf("  %-12s %d call(s) refused\n", ops[i], n);
        ck_assert_msg(n > 0, "no %s call was refused: the test does not test it", ops[i]);
    }
    free(log);
    ck_assert_mem_eq(got, g_cpu_ids, sizeof got);
    /* The stub provides every op the core calls: refusals are the only
     * fallbacks, and each refused call fell back once. */
    ck_assert_uint_eq(rs.fallback_calls, (uint64_t)n_lines);
}
END_TEST

int main(void)
{
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = HC_TEST_THREADS;
    ep.plugin_path = HC_STUB_GPU_DIR ":" HC_PLUGIN_BUILD_DIR;
    engine = hc_engine_open(&ep);
    if (!engine) {
        fprintf(stderr, "engine: %s\n", hc_last_error());
        return 1;
    }
    Suite *s = suite_create("fallback");
    TCase *tc = tcase_create("stub_gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, stub_gpu_matches_cpu);
    tcase_add_test(tc, disabled_weight_ops);
    tcase_add_test(tc, refused_calls_fall_back);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    hc_engine_close(engine);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * GPU placement end to end, on whatever Vulkan device is here (Mesa's
 * lavapipe in CI: the real plugin, SPIR-V and driver, on the CPU), or on
 * the plugin family HOTCOLD_TEST_GPU names (cuda: tools/gpu-check.sh).
 *
 *  - Whole models on the GPU (a budget that holds everything) reproduce
 *    the golden greedy ids of the independent float64 reference, from BOS
 *    and from the golden prompt (near-ties handled as in test_golden).
 *  - Hybrid runs of the packed sparse relu2M model at budgets holding
 *    nothing, about half the hot neurons, and everything give the same
 *    greedy ids as the all-CPU run, in predictor, oracle and dense modes.
 *  - The CPU fallback for ops a plugin lacks (HOTCOLD_DISABLE_OPS) gives
 *    the same ids, and the run reports the fallbacks.
 *  - All on the GPU, rows chosen there: one wait for the GPU per pass, and
 *    one-token passes replayed from a capture give the same ids.
 *  - A hybrid run reports each device's busy time within the wall time.
 *  - A saved neuron split (gpuidx) is reused on the next load with the same
 *    budget, solved afresh under another; PowerInfer's own index files (I32
 *    as id 18) are read, and an unusable one never stops a run.
 *  - A small GPU (HOTCOLD_<FAMILY>_MEMORY_LIMIT: the plugin fails allocations
 *    past it as a real out-of-memory does) under a budget that asks for
 *    everything: the load re-solves for a smaller hot set, or with no
 *    memory at all puts everything on the CPU, and the ids stay the same.
 *
 * Without a Vulkan device the binary prints "skipped" and exits 77.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "q6k_models.h"
#include "runtime/model.h" /* hc_model_plan: the plan itself */
#include "runtime/placement.h"
#include "test_util.h"

#define N_IDS 60
#define MAX_IDS 512
#define NEAR_TIE 1e-4f
/* The GPU family under test: "vulkan" (CI: lavapipe), or another plugin's
 * family named by HOTCOLD_TEST_GPU (tools/gpu-check.sh: cuda). */
static const char *GPU = "vulkan";

static hc_engine *engine;
/* greedy()'s contexts: 1 = never replay a captured pass. */
static int g_no_graphs;

static const char *model(const char *name)
{
    return hc_test_path(HC_MODELS_DIR, name);
}

static hc_model *load(const char *path, const char *device, double budget, int sparse,
                      int gpu_index, const char *idx_path)
{
    hc_model_params mp = hc_model_default_params();
    mp.device = device;
    mp.vram_budget = budget;
    mp.sparse = sparse;
    mp.gpu_index = gpu_index;
    mp.gpu_index_path = idx_path;
    mp.n_ctx = 256;
    hc_model *m = hc_model_load(engine, path, &mp);
    ck_assert_msg(m != NULL, "load %s on %s: %s", path, device, hc_last_error());
    return m;
}

/* Greedy from `prompt`; where `expect` is given, a differing id must be a
 * near-tie and the golden id is fed on. */
static void greedy(hc_model *m, const int32_t *prompt, int n_prompt, const int32_t *expect,
                   int n, int32_t *out, hc_context_run_stats *rs)
{
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = 256;
    cp.no_graphs = g_no_graphs;
    hc_context *c = hc_context_new(m, &cp);
    ck_assert_msg(c != NULL, "context: %s", hc_last_error());
    hc_model_desc d;
    hc_model_describe(m, &d);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    ck_assert(logits != NULL);
    ck_assert_msg(hc_context_eval(c, prompt, n_prompt, logits) == 0, "%s", hc_last_error());
    for (int i = 0; i < n; i++) {
        int32_t id = hc_test_argmax(logits, d.n_vocab);
        if (expect && id != expect[i]) {
            float gap = logits[id] - logits[expect[i]];
            ck_assert_msg(gap < NEAR_TIE, "step %d: got %d, golden %d, logit gap %g (no tie)", i,
                          id, expect[i], (double)gap);
            printf("  step %d: near-tie %d vs golden %d (gap %.2g)\n", i, id, expect[i],
                   (double)gap);
            id = expect[i];
        }
        out[i] = id;
        if (i + 1 < n)
            ck_assert_msg(hc_context_eval(c, &id, 1, logits) == 0, "%s", hc_last_error());
    }
    if (rs)
        hc_context_run_stats_get(c, rs);
    free(logits);
    hc_context_free(c);
}

/* ---- golden, whole model on the GPU ---------------------------------------- */

static void golden_on_gpu(const char *name)
{
    char file[256];
    snprintf(file, sizeof file, "golden/%s.json", name);
    json_object *root = hc_test_load_json(hc_test_path(HC_TEST_DATA, file)), *bos, *fp, *o;
    ck_assert_msg(root != NULL, "cannot read %s", file);
    int32_t bos_ids[MAX_IDS], prompt_ids[MAX_IDS], prompt_greedy[MAX_IDS], got[MAX_IDS];
    ck_assert(json_object_object_get_ex(root, "from_bos", &bos) &&
              json_object_object_get_ex(root, "from_prompt", &fp));
    ck_assert(json_object_object_get_ex(bos, "greedy_ids", &o));
    int n_bos = hc_test_json_ints(o, bos_ids, MAX_IDS);
    ck_assert(json_object_object_get_ex(fp, "prompt_ids", &o));
    int n_prompt = hc_test_json_ints(o, prompt_ids, MAX_IDS);
    ck_assert(json_object_object_get_ex(fp, "greedy_ids", &o));
    int n_pg = hc_test_json_ints(o, prompt_greedy, MAX_IDS);

    snprintf(file, sizeof file, "%s.gguf", name);
    hc_model *m = load(model(file), GPU, 1e12, HC_SPARSE_AUTO, HC_GPU_INDEX_DISABLE, NULL);
    const hc_plan *p = hc_model_plan(m);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->output, 1);
    for (int il = 0; il < p->n_layer; il++) {
        ck_assert_int_eq(p->layers[il].attn, 1);
        ck_assert_int_eq(p->layers[il].n_hot, p->n_ff);
    }
    hc_context_run_stats rs;
    int32_t bos_tok = 1;
    greedy(m, &bos_tok, 1, bos_ids, n_bos, got, &rs);
    ck_assert_int_eq(rs.cpu_rows, 0); /* nothing ran on the CPU */
    greedy(m, prompt_ids, n_prompt, prompt_greedy, n_pg, got, NULL);
    printf("%s on %s: %d ids from BOS and %d from the prompt match the golden file "
           "(%llu ops fell back to the CPU)\n",
           name, GPU, n_bos, n_pg, (unsigned long long)rs.fallback_calls);
    hc_model_free(m);
    json_object_put(root);
}

START_TEST(stories260K_golden_on_gpu)
{
    golden_on_gpu("stories260K");
}
END_TEST

START_TEST(relu2M_golden_on_gpu)
{
    golden_on_gpu("relu2M");
}
END_TEST

/* ---- hybrid budgets ---------------------------------------------------------- */

#define SPARSE_MODEL "relu2M.powerinfer.gguf"

static int64_t hot_total(const hc_plan *p)
{
    int64_t n = 0;
    for (int il = 0; il < p->n_layer; il++)
        n += p->layers[il].n_hot;
    return n;
}

static void hybrid_budgets(int sparse)
{
    const char *path = model(SPARSE_MODEL);
    int32_t prompt[32], want[N_IDS], got[N_IDS];
    hc_context_run_stats rs;

    hc_model *m = load(path, "cpu", -1, sparse, HC_GPU_INDEX_DISABLE, NULL);
    /* A prompt of several tokens, so the batched pass is split too. */
    const char *text = "Once upon a time, there was a little dog named";
    const int n_prompt = hc_model_tokenize(m, text, strlen(text), 1, prompt, 32);
    ck_assert(n_prompt > 5 && n_prompt <= 32);
    greedy(m, prompt, n_prompt, NULL, N_IDS, want, NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    hc_model_free(m);

    /* Everything: the budget is then the size of the whole GPU share. */
    m = load(path, GPU, 1e12, sparse, HC_GPU_INDEX_DISABLE, NULL);
    const double all_bytes = (double)hc_model_plan(m)->gpu_bytes;
    ck_assert_int_eq(hot_total(hc_model_plan(m)), (int64_t)d.n_ff * d.n_layer);
    greedy(m, prompt, n_prompt, NULL, N_IDS, got, &rs);
    ck_assert_int_eq(rs.cpu_rows, 0);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);

    /* About half the hot neurons: everything but half the FFN bytes. */
    m = load(path, GPU, all_bytes - (double)d.ffn_bytes / 2, sparse, HC_GPU_INDEX_DISABLE, NULL);
    const int64_t half = hot_total(hc_model_plan(m)), n_all = (int64_t)d.n_ff * d.n_layer;
    ck_assert_msg(half > n_all / 4 && half < n_all * 3 / 4, "%lld of %lld neurons hot",
                  (long long)half, (long long)n_all);
    greedy(m, prompt, n_prompt, NULL, N_IDS, got, &rs);
    ck_assert_msg(rs.gpu_rows > 0 && rs.cpu_rows > 0, "both devices work: gpu %lld cpu %lld",
                  (long long)rs.gpu_rows, (long long)rs.cpu_rows);
    ck_assert_mem_eq(got, want, sizeof want);
    printf("mode %d: half budget: %lld of %lld neurons on the GPU, %.1f%% of rows computed "
           "there, %.1f KiB moved per token\n",
           sparse, (long long)half, (long long)n_all,
           100.0 * (double)rs.gpu_rows / (double)(rs.gpu_rows + rs.cpu_rows),
           (double)rs.bytes_moved / (double)rs.tokens / 1024.0);
    hc_model_free(m);

    /* Nothing. */
    m = load(path, GPU, 0, sparse, HC_GPU_INDEX_DISABLE, NULL);
    ck_assert_int_eq(hot_total(hc_model_plan(m)), 0);
    greedy(m, prompt, n_prompt, NULL, N_IDS, got, &rs);
    ck_assert_int_eq(rs.gpu_rows, 0);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);
}

START_TEST(hybrid_predictor)
{
    hybrid_budgets(HC_SPARSE_PREDICTOR);
}
END_TEST

START_TEST(hybrid_oracle)
{
    hybrid_budgets(HC_SPARSE_ORACLE);
}
END_TEST

START_TEST(hybrid_dense)
{
    hybrid_budgets(HC_SPARSE_OFF);
}
END_TEST

/* ---- Q4_0: the devices round activations differently ---------------------
 * Issue 12 item 8.  For Q4_0 (and Q8_0) weights the CPU plugin quantizes x
 * to 8 (16) bits per 32-block before its dot products, as ggml does; the
 * Vulkan shader multiplies the float x.  Both are within the conformance
 * bound of the reference (NMSE 5e-4, max 0.1 RMS for Q4_0), but the two
 * devices' logits then differ by ~0.1 (NMSE 1e-5..4e-4) and greedy
 * decoding parts at the first near-tie below that (reglu1M Q4_0, "The
 * little dog", predictor mode: step 14, CPU gap 0.010, max |dlogit| 0.11).
 * Rounding x on the GPU exactly as the CPU does was tried and does not
 * help: logits then agree to 1e-5 only until the first ulp of difference
 * (float sums in another order) flips one rounding, a few tokens in, and
 * from there differ as much as before.  So for Q4_0 the ids are not
 * compared; the logits are, step by step, with both runs fed the CPU's
 * greedy ids:
 *  - dense and oracle: within the Q4_0 conformance bound (measured on
 *    relu2M Q4_0 here: NMSE <= 1.6e-4, max <= 0.06 RMS);
 *  - predictor: also a neuron at the threshold may be predicted active on
 *    one device only, adding (or not) its whole h * down_t row: one such
 *    neuron among the ~100 a layer computes moves the output by ~1/10 of
 *    its size, NMSE ~1e-2 (measured: <= 3e-3, max <= 0.29 RMS), the bound. */
#define Q4_STEPS 60

typedef struct logit_bound {
    double nmse, max;
} logit_bound;

static void q4_logits(const char *path, int sparse, double budget, const int32_t *prompt,
                      int n_prompt, const int32_t *ids, const float *want, int n_vocab,
                      logit_bound b)
{
    hc_model *m = load(path, GPU, budget, sparse, HC_GPU_INDEX_DISABLE, NULL);
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = 256;
    hc_context *c = hc_context_new(m, &cp);
    ck_assert_msg(c != NULL, "context: %s", hc_last_error());
    float *got = malloc((size_t)n_vocab * sizeof *got);
    ck_assert_ptr_nonnull(got);
    double worst_nmse = 0, worst_max = 0;
    int first_diff = -1;
    for (int s = 0; s < Q4_STEPS; s++) {
        const int32_t *in = s ? &ids[s - 1] : prompt;
        ck_assert_msg(hc_context_eval(c, in, s ? 1 : n_prompt, got) == 0, "%s", hc_last_error());
        const float *w = want + (size_t)s * n_vocab;
        double se = 0, ss = 0, mx = 0;
        for (int i = 0; i < n_vocab; i++) {
            double d = (double)got[i] - w[i];
            se += d * d;
            ss += (double)w[i] * w[i];
            mx = fabs(d) > mx ? fabs(d) : mx;
        }
        const double nmse = se / ss, rel = mx / sqrt(ss / n_vocab);
        ck_assert_msg(nmse <= b.nmse && rel <= b.max,
                      "mode %d, budget %.0f, step %d: logits nmse %.2e (<= %.0e), max %.3f RMS "
                      "(<= %.2f)",
                      sparse, budget, s, nmse, b.nmse, rel, b.max);
        worst_nmse = nmse > worst_nmse ? nmse : worst_nmse;
        worst_max = rel > worst_max ? rel : worst_max;
        const int a = hc_test_argmax(got, n_vocab), e = hc_test_argmax(w, n_vocab);
        if (a != e && first_diff < 0) {
            first_diff = s;
            printf("  q4_0 mode %d: greedy would part at step %d: CPU %d leads %d by %.4f, the "
                   "GPU run puts %d ahead by %.4f (max |dlogit| %.4f)\n",
                   sparse, s, e, a, (double)(w[e] - w[a]), a, (double)(got[a] - got[e]), mx);
        }
    }
    hc_context_run_stats rs;
    hc_context_run_stats_get(c, &rs);
    ck_assert(rs.gpu_rows > 0);
    if (budget < 1e12)
        ck_assert_msg(rs.cpu_rows > 0, "budget %.0f: no FFN row on the CPU", budget);
    printf("q4_0 mode %d, budget %.3g (%.0f%% of FFN rows on the GPU): %d steps, logits nmse <= "
           "%.2e, max <= %.3f RMS%s\n",
           sparse, budget, 100.0 * (double)rs.gpu_rows / (double)(rs.gpu_rows + rs.cpu_rows),
           Q4_STEPS, worst_nmse, worst_max, first_diff < 0 ? ", same greedy ids" : "");
    free(got);
    hc_context_free(c);
    hc_model_free(m);
}

START_TEST(hybrid_q4_0_logits)
{
    char q4[4096];
    snprintf(q4, sizeof q4, "%s", hc_test_path(hc_test_tmpdir(), "relu2M-q4_0.powerinfer.gguf"));
    ck_assert_msg(hc_quantize_file(model(SPARSE_MODEL), q4, HC_TYPE_Q4_0, NULL, NULL) == 0,
                  "%s", hc_last_error());
    static const struct {
        int sparse;
        logit_bound b;
    } modes[] = {{HC_SPARSE_OFF, {5e-4, 0.1}},
                 {HC_SPARSE_ORACLE, {5e-4, 0.1}},
                 {HC_SPARSE_PREDICTOR, {1e-2, 0.5}}};
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        const int sparse = modes[k].sparse;
        hc_model *m = load(q4, "cpu", -1, sparse, HC_GPU_INDEX_DISABLE, NULL);
        hc_model_desc d;
        hc_model_describe(m, &d);
        int32_t prompt[32], ids[Q4_STEPS];
        const char *text = "Once upon a time";
        const int n_prompt = hc_model_tokenize(m, text, strlen(text), 1, prompt, 32);
        ck_assert_int_gt(n_prompt, 1);
        float *want = malloc((size_t)Q4_STEPS * d.n_vocab * sizeof *want);
        ck_assert_ptr_nonnull(want);
        hc_context_params cp = hc_context_default_params();
        cp.n_ctx = 256;
        hc_context *c = hc_context_new(m, &cp);
        ck_assert_ptr_nonnull(c);
        for (int s = 0; s < Q4_STEPS; s++) {
            float *w = want + (size_t)s * d.n_vocab;
            ck_assert_int_eq(hc_context_eval(c, s ? &ids[s - 1] : prompt, s ? 1 : n_prompt, w),
                             0);
            ids[s] = hc_test_argmax(w, d.n_vocab);
        }
        hc_context_free(c);
        hc_model_free(m);
        /* Everything on the GPU, then about half its FFN there (hybrid). */
        m = load(q4, GPU, 1e12, sparse, HC_GPU_INDEX_DISABLE, NULL);
        const double all_bytes = (double)hc_model_plan(m)->gpu_bytes;
        hc_model_free(m);
        q4_logits(q4, sparse, 1e12, prompt, n_prompt, ids, want, d.n_vocab, modes[k].b);
        q4_logits(q4, sparse, all_bytes - (double)d.ffn_bytes / 2, prompt, n_prompt, ids, want,
                  d.n_vocab, modes[k].b);
        free(want);
    }
    unlink(q4);
}
END_TEST

/* ---- the CPU fallback for ops a plugin lacks ----------------------------- */

START_TEST(fallback_ops)
{
    const char *path = model(SPARSE_MODEL);
    int32_t bos = 1, want[N_IDS], got[N_IDS];
    hc_context_run_stats rs;
    hc_model *m = load(path, "cpu", -1, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, want, NULL);
    hc_model_free(m);
    setenv("HOTCOLD_DISABLE_OPS", "rmsnorm,rope,attention,unary,binary,glu", 1);
    m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    unsetenv("HOTCOLD_DISABLE_OPS");
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert_msg(rs.fallback_calls > 0, "no op fell back");
    printf("fallback: %llu ops ran on the CPU for the GPU plugin; ids equal\n",
           (unsigned long long)rs.fallback_calls);
    hc_model_free(m);
}
END_TEST

/* ---- an all-GPU step without host synchronisation -------------------------
 * Issue 14 item 4: with every layer on the GPU and a plugin that selects
 * rows on the device (select_rows, the counted ops), the host waits for the
 * GPU once per pass (the logits download), not once per layer, and the ids
 * are the CPU's.  The core's default for a plugin without select_rows
 * (HOTCOLD_DISABLE_OPS) reads each layer's scores back: same ids, a wait
 * per layer. */
static void all_gpu_syncs(int sparse)
{
    const char *path = model(SPARSE_MODEL);
    int32_t bos = 1, want[N_IDS], got[N_IDS];
    hc_context_run_stats rs;
    hc_model *m = load(path, "cpu", -1, sparse, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, want, NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    hc_model_free(m);

    m = load(path, GPU, 1e12, sparse, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert_msg(rs.gpu_rows > 0 && rs.cpu_rows == 0, "gpu rows %lld, cpu rows %lld",
                  (long long)rs.gpu_rows, (long long)rs.cpu_rows);
    ck_assert_msg(rs.gpu_syncs == (uint64_t)rs.passes,
                  "mode %d: the host waited for the GPU %llu times in %lld passes (want one "
                  "per pass)",
                  sparse, (unsigned long long)rs.gpu_syncs, (long long)rs.passes);
    const double frac = (double)rs.gpu_rows / ((double)rs.tokens * d.n_ff * d.n_layer);
    hc_model_free(m);

    setenv("HOTCOLD_DISABLE_OPS", "select_rows", 1);
    m = load(path, GPU, 1e12, sparse, HC_GPU_INDEX_DISABLE, NULL);
    unsetenv("HOTCOLD_DISABLE_OPS");
    hc_context_run_stats host;
    greedy(m, &bos, 1, NULL, N_IDS, got, &host);
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert_int_eq(host.gpu_rows, rs.gpu_rows);
    ck_assert_msg(host.gpu_syncs > (uint64_t)host.passes,
                  "selecting on the host took %llu waits in %lld passes",
                  (unsigned long long)host.gpu_syncs, (long long)host.passes);
    printf("mode %d all on the GPU: %.1f%% of FFN rows computed, %llu waits for the GPU in %lld "
           "passes (rows chosen on the host: %llu); ids equal the CPU's\n",
           sparse, 100 * frac, (unsigned long long)rs.gpu_syncs, (long long)rs.passes,
           (unsigned long long)host.gpu_syncs);
    hc_model_free(m);
}

START_TEST(all_gpu_predictor_syncs)
{
    all_gpu_syncs(HC_SPARSE_PREDICTOR);
}
END_TEST

START_TEST(all_gpu_oracle_syncs)
{
    all_gpu_syncs(HC_SPARSE_ORACLE);
}
END_TEST

/* ---- the overlap report ---------------------------------------------------
 * Issue 14 item 4: a hybrid run reports how long each device worked (the
 * GPU's work between waits, timed by its events; the host's time inside
 * the CPU device's ops) and the wall time of its passes.  Both devices
 * worked, so each is > 0, and each lies within the passes, so neither
 * exceeds the wall (5% slack for the two clocks' reads).  No speed is
 * asserted.  An all-CPU run reports no GPU time. */
START_TEST(hybrid_overlap_report)
{
    const char *path = model(SPARSE_MODEL);
    int32_t bos = 1, got[N_IDS];
    hc_context_run_stats rs;
    hc_model *m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    const double all_bytes = (double)hc_model_plan(m)->gpu_bytes;
    hc_model_desc d;
    hc_model_describe(m, &d);
    hc_model_free(m);
    m = load(path, GPU, all_bytes - (double)d.ffn_bytes / 2, HC_SPARSE_PREDICTOR,
             HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    hc_model_free(m);
    ck_assert_msg(rs.gpu_rows > 0 && rs.cpu_rows > 0, "not hybrid: gpu %lld cpu %lld rows",
                  (long long)rs.gpu_rows, (long long)rs.cpu_rows);
    const double wall = (double)rs.wall_ns, gpu = (double)rs.gpu_busy_ns,
                 cpu = (double)rs.cpu_busy_ns;
    printf("overlap, hybrid: GPU busy %.3f ms, CPU busy %.3f ms, wall %.3f ms per token (%s "
           "clock)\n",
           gpu / 1e6 / (double)rs.tokens, cpu / 1e6 / (double)rs.tokens,
           wall / 1e6 / (double)rs.tokens, rs.gpu_busy_host_clock ? "host" : "device");
    ck_assert_msg(wall > 0, "no wall time in %lld passes", (long long)rs.passes);
    ck_assert_msg(gpu > 0, "the GPU computed %lld rows but reports no busy time",
                  (long long)rs.gpu_rows);
    ck_assert_msg(cpu > 0, "the CPU computed %lld rows but reports no busy time",
                  (long long)rs.cpu_rows);
    ck_assert_msg(gpu <= wall * 1.05, "GPU busy %.0f ns > wall %.0f ns", gpu, wall);
    ck_assert_msg(cpu <= wall * 1.05, "CPU busy %.0f ns > wall %.0f ns", cpu, wall);
    /* The plugin times its own work (event_elapsed), not the host. */
    ck_assert_msg(!rs.gpu_busy_host_clock, "the GPU's busy time fell back to the host's clock");

    m = load(path, "cpu", -1, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    hc_model_free(m);
    ck_assert_uint_eq(rs.gpu_busy_ns, 0);
    ck_assert_msg(rs.cpu_busy_ns > 0 && rs.cpu_busy_ns <= rs.wall_ns * 1.05,
                  "all-CPU: CPU busy %llu ns, wall %llu ns", (unsigned long long)rs.cpu_busy_ns,
                  (unsigned long long)rs.wall_ns);
}
END_TEST

/* Captured passes (ABI 1.3 capture; Vulkan records and replays the calls,
 * CUDA makes a graph): from a prompt of several tokens, every one-token
 * pass of an all-GPU model is a replay, and the ids are those of the
 * issued passes (no_graphs) and of the CPU.  Without scatter_rows a pass
 * depends on n_past and is never captured. */
static void captured(int sparse)
{
    const char *path = model(SPARSE_MODEL);
    int32_t prompt[32], want[N_IDS], got[N_IDS];
    hc_context_run_stats rs;
    hc_model *m = load(path, "cpu", -1, sparse, HC_GPU_INDEX_DISABLE, NULL);
    const char *text = "Once upon a time, there was";
    const int n_prompt = hc_model_tokenize(m, text, strlen(text), 1, prompt, 32);
    ck_assert_int_gt(n_prompt, 1);
    greedy(m, prompt, n_prompt, NULL, N_IDS, want, NULL);
    hc_model_free(m);

    m = load(path, GPU, 1e12, sparse, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, prompt, n_prompt, NULL, N_IDS, got, &rs);
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert_msg(rs.graph_passes == rs.passes - 1,
                  "mode %d: %lld of %lld passes replayed (want all but the prompt's)", sparse,
                  (long long)rs.graph_passes, (long long)rs.passes);
    ck_assert_msg(rs.gpu_syncs == (uint64_t)rs.passes, "%llu waits in %lld passes",
                  (unsigned long long)rs.gpu_syncs, (long long)rs.passes);
    const int64_t rows = rs.gpu_rows, replayed = rs.graph_passes;
    g_no_graphs = 1;
    greedy(m, prompt, n_prompt, NULL, N_IDS, got, &rs);
    g_no_graphs = 0;
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert_int_eq(rs.graph_passes, 0);
    ck_assert_int_eq(rs.gpu_rows, rows);
    hc_model_free(m);

    setenv("HOTCOLD_DISABLE_OPS", "scatter_rows", 1);
    m = load(path, GPU, 1e12, sparse, HC_GPU_INDEX_DISABLE, NULL);
    unsetenv("HOTCOLD_DISABLE_OPS");
    greedy(m, prompt, n_prompt, NULL, N_IDS, got, &rs);
    ck_assert_mem_eq(got, want, sizeof want);
    ck_assert_int_eq(rs.graph_passes, 0);
    printf("mode %d captured: %d-token prompt issued, %lld passes replayed, ids equal the "
           "issued passes' and the CPU's\n",
           sparse, n_prompt, (long long)replayed);
    hc_model_free(m);
}

START_TEST(captured_predictor)
{
    captured(HC_SPARSE_PREDICTOR);
}
END_TEST

START_TEST(captured_dense)
{
    captured(HC_SPARSE_OFF);
}
END_TEST

/* ---- the saved neuron split ------------------------------------------------ */

START_TEST(gpu_index_reused)
{
    const char *path = model(SPARSE_MODEL);
    char idx[4096];
    snprintf(idx, sizeof idx, "%s", hc_test_path(hc_test_tmpdir(), "relu2M.generated.gpuidx"));
    hc_model *m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    const double half = (double)hc_model_plan(m)->gpu_bytes - (double)d.ffn_bytes / 2;
    hc_model_free(m);

    m = load(path, GPU, half, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_RESET, idx);
    ck_assert_int_eq(hc_model_plan(m)->from_file, 0);
    const int64_t n_hot = hot_total(hc_model_plan(m));
    const int64_t n_all = (int64_t)d.n_ff * d.n_layer;
    hc_model_free(m);
    m = load(path, GPU, half, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, idx);
    ck_assert_msg(hc_model_plan(m)->from_file == 1, "not reused: %s", hc_model_plan_note(m));
    ck_assert_int_eq(hot_total(hc_model_plan(m)), n_hot);
    hc_model_free(m);
    /* A smaller budget than the saved split's solves again. */
    m = load(path, GPU, half / 2, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, idx);
    ck_assert_int_eq(hc_model_plan(m)->from_file, 0);
    ck_assert(hot_total(hc_model_plan(m)) < n_hot);
    ck_assert_msg(strstr(hc_model_plan_note(m), "re-solved") != NULL, "%s",
                  hc_model_plan_note(m));
    hc_model_free(m);
    /* So does a larger one (issue 12 item 10: a small split was kept under a
     * budget that holds everything), and it says so. */
    m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, idx);
    ck_assert_msg(hc_model_plan(m)->from_file == 0, "reused: %s", hc_model_plan_note(m));
    ck_assert_int_eq(hot_total(hc_model_plan(m)), n_all);
    ck_assert_msg(strstr(hc_model_plan_note(m), "re-solved") != NULL, "%s",
                  hc_model_plan_note(m));
    hc_model_free(m);
}
END_TEST

/* ---- PowerInfer's own GPU index beside a PWRI model ---------------------- */

/* `file` with k[l] GPU neurons in layer l, the even ids 0, 2, ... (not what
 * our solver picks), in PowerInfer's layout: PWRI, I32 as id 18 (our writer
 * stores it so), split.vram_capacity `cap`, `blocks` layers. */
static void write_powerinfer_gpuidx(const char *file, int blocks, int n_layer, int64_t n_ff,
                                    const int64_t *k, uint64_t cap)
{
    char err[512], name[64];
    int32_t *idx = calloc((size_t)n_ff, sizeof *idx), *bucket = malloc((size_t)n_ff * 4);
    ck_assert(idx && bucket);
    hc_gguf_writer *w = hc_gguf_writer_new("PWRI", 3, 32);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(hc_gguf_writer_set_str(w, "general.architecture", "generic.gpu_index"), 0);
    ck_assert_int_eq(hc_gguf_writer_set_u32(w, "generic.gpu_index.block_count",
                                            (uint32_t)blocks), 0);
    ck_assert_int_eq(hc_gguf_writer_set_scalar(w, "split.vram_capacity", HC_GGUF_U64, &cap), 0);
    for (int l = 0; l < n_layer; l++) {
        uint64_t ne_idx = (uint64_t)n_ff, ne_bucket = (uint64_t)k[l];
        snprintf(name, sizeof name, "blk.%d.gpu_idx", l);
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, name, 1, &ne_idx, HC_GGML_TYPE_I32), 0);
        snprintf(name, sizeof name, "blk.%d.gpu_bucket", l);
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, name, 1, &ne_bucket, HC_GGML_TYPE_I32), 0);
    }
    ck_assert_msg(hc_gguf_writer_begin(w, file, err, sizeof err) == 0, "%s", err);
    for (int l = 0; l < n_layer; l++) {
        memset(idx, 0, (size_t)n_ff * sizeof *idx);
        for (int64_t j = 0; j < k[l]; j++) {
            bucket[j] = (int32_t)(2 * j);
            idx[2 * j] = 1;
        }
        ck_assert_int_eq(hc_gguf_writer_write_data(w, idx, 4 * (uint64_t)n_ff, err, sizeof err),
                         0);
        ck_assert_int_eq(hc_gguf_writer_write_data(w, bucket, 4 * (uint64_t)k[l], err,
                                                   sizeof err), 0);
    }
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
    free(idx);
    free(bucket);
    uint32_t raw = 0;
    ck_assert_int_eq(hc_test_raw_tensor_type(file, "blk.0.gpu_bucket", &raw, NULL), 0);
    ck_assert_uint_eq(raw, 18);
}

static void copy_file(const char *from, const char *to)
{
    size_t len;
    char *bytes = hc_test_read_file(from, &len);
    ck_assert_ptr_nonnull(bytes);
    FILE *f = fopen(to, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    free(bytes);
}

static int same_bytes(const char *file, const char *bytes, size_t len)
{
    size_t n;
    char *now = hc_test_read_file(file, &n);
    int same = now && n == len && !memcmp(now, bytes, len);
    free(now);
    return same;
}

/* Issue 12 item 5: PowerInfer's index for 1024 GPU neurons beside the model
 * as <model file>.generated.gpuidx (the default path) is read, not refused:
 * reused when its capacity is the one this budget leaves, else solved
 * afresh; and an index that cannot be used never stops the run. */
START_TEST(gpu_index_from_powerinfer)
{
    char dir_model[4096], idx[4200];
    snprintf(dir_model, sizeof dir_model, "%s", hc_test_path(hc_test_tmpdir(), SPARSE_MODEL));
    snprintf(idx, sizeof idx, "%s.generated.gpuidx", dir_model);
    copy_file(model(SPARSE_MODEL), dir_model);
    int32_t bos = 1, want[N_IDS], got[N_IDS];
    hc_context_run_stats rs;
    hc_model *m = load(dir_model, "cpu", -1, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, want, NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    hc_model_free(m);
    /* Every item but the neurons fits a budget of 1e12: what is not
     * capacity then is their bytes. */
    m = load(dir_model, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    const uint64_t items = hc_model_plan(m)->budget - hc_model_plan(m)->capacity;
    hc_model_free(m);
    const uint64_t neuron = d.ffn_bytes / ((uint64_t)d.n_ff * (uint64_t)d.n_layer);
    int64_t k[64] = {0}, left = 1024; /* GPU neurons, at most n_ff / 2 a layer */
    ck_assert_int_le(d.n_layer, 64);
    for (int l = 0; l < d.n_layer; l++) {
        k[l] = left < d.n_ff / 2 ? left : d.n_ff / 2;
        left -= k[l];
    }
    ck_assert_int_eq(left, 0);

    /* As PowerInfer's solver writes it for --vram-budget 0.002: its own
     * capacity (1024000), not the one our byte count gives: solved afresh
     * (and replaced), and the note says why. */
    write_powerinfer_gpuidx(idx, d.n_layer, d.n_layer, d.n_ff, k, 1024000);
    m = load(dir_model, GPU, 0.002 * 1073741824.0, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, NULL);
    const char *note = hc_model_plan_note(m);
    printf("powerinfer gpuidx, capacity 1024000: %s\n", note);
    ck_assert_int_eq(hc_model_plan(m)->from_file, 0);
    ck_assert_msg(strstr(note, "re-solved") && strstr(note, "1024000"), "%s", note);
    greedy(m, &bos, 1, NULL, N_IDS, got, NULL);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);

    /* The capacity that fits its 1024 neurons exactly, and a budget that
     * leaves that much: its split is used as it is. */
    const uint64_t cap = 1024 * neuron;
    write_powerinfer_gpuidx(idx, d.n_layer, d.n_layer, d.n_ff, k, cap);
    m = load(dir_model, GPU, (double)(items + cap), HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, NULL);
    const hc_plan *p = hc_model_plan(m);
    ck_assert_msg(p->from_file == 1, "not reused: %s", hc_model_plan_note(m));
    ck_assert_ptr_nonnull(strstr(hc_model_plan_note(m), "reused"));
    ck_assert_int_eq(hot_total(p), 1024);
    for (int l = 0; l < d.n_layer; l++)
        for (int64_t r = 0; r < d.n_ff; r++)
            ck_assert_int_eq(p->layers[l].on_gpu[r], r % 2 == 0 && r / 2 < k[l]);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    ck_assert(rs.gpu_rows > 0 && rs.cpu_rows > 0);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);

    /* Unusable: not a GGUF at all, then another model's (5 layers).  Each
     * is reported, left as it is, and the run goes on with a fresh split. */
    static const char junk[] = "PWRI not really a gpu index";
    FILE *f = fopen(idx, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    ck_assert_int_eq(fclose(f), 0);
    m = load(dir_model, GPU, (double)(items + cap), HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, NULL);
    note = hc_model_plan_note(m);
    printf("junk gpuidx: %s\n", note);
    ck_assert_int_eq(hc_model_plan(m)->from_file, 0);
    ck_assert_msg(strstr(note, "ignored") && strstr(note, "--reset-gpu-index"), "%s", note);
    ck_assert(same_bytes(idx, junk, sizeof junk));
    greedy(m, &bos, 1, NULL, N_IDS, got, NULL);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);

    write_powerinfer_gpuidx(idx, d.n_layer - 1, d.n_layer - 1, d.n_ff, k, cap);
    size_t len;
    char *other = hc_test_read_file(idx, &len);
    m = load(dir_model, GPU, (double)(items + cap), HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, NULL);
    note = hc_model_plan_note(m);
    printf("another model's gpuidx: %s\n", note);
    ck_assert_int_eq(hc_model_plan(m)->from_file, 0);
    ck_assert_msg(strstr(note, "generic.gpu_index.block_count") &&
                      strstr(note, "--reset-gpu-index"),
                  "%s", note);
    ck_assert(same_bytes(idx, other, len));
    hc_model_free(m);
    free(other);
    /* --reset-gpu-index replaces it; the next run reuses that. */
    m = load(dir_model, GPU, (double)(items + cap), HC_SPARSE_PREDICTOR, HC_GPU_INDEX_RESET,
             NULL);
    hc_model_free(m);
    m = load(dir_model, GPU, (double)(items + cap), HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, NULL);
    ck_assert_msg(hc_model_plan(m)->from_file == 1, "%s", hc_model_plan_note(m));
    hc_model_free(m);
    /* A FIFO in its place is not opened (that would block the load). */
    unlink(idx);
    ck_assert_int_eq(mkfifo(idx, 0600), 0);
    m = load(dir_model, GPU, (double)(items + cap), HC_SPARSE_PREDICTOR, HC_GPU_INDEX_USE, NULL);
    ck_assert_msg(strstr(hc_model_plan_note(m), "not a regular file"), "%s",
                  hc_model_plan_note(m));
    hc_model_free(m);
    /* Nor written: saving into a FIFO nobody reads fails instead of waiting. */
    m = load(dir_model, GPU, (double)(items + cap), HC_SPARSE_PREDICTOR, HC_GPU_INDEX_RESET,
             NULL);
    ck_assert_msg(strstr(hc_model_plan_note(m), "not saved") &&
                      strstr(hc_model_plan_note(m), "no process reads"),
                  "%s", hc_model_plan_note(m));
    hc_model_free(m);
    unlink(idx);
    unlink(dir_model);
}
END_TEST

/* ---- PowerInfer's q4 layout: the Q6_K output head on the GPU ---------------- */

/*
 * The q4_0 model with a Q6_K output head (q6k_models.c, as PowerInfer's
 * quantize makes them) with its head on the GPU:
 *  - everything on the GPU, against the twin whose head holds the same
 *    values in F32, also all on the GPU: the kernels differ only in their
 *    summation order (both multiply float x), measured 2e-7 of max
 *    |logit| on lavapipe; bound 1e-4;
 *  - a hybrid split (the head, attention and predictors on the GPU, half
 *    the FFN bytes on each side) against the same file all on the CPU, whose
 *    Q4_0 and Q6_K kernels quantize x to 8 bits per 32 where the GPU's do
 *    not, in every product: as test_golden's q6_k-everywhere case, bound
 *    5e-2 (measured 1.4e-2).
 * A differing greedy id must be explained by the logit difference
 * (hc_q6k_compare).
 */
static void q6k_run(hc_model *a, hc_model *b, double bound, const char *what)
{
    hc_q6k_cmp r;
    int32_t prompt[64];
    const char *text = "Once upon a time, there was a little dog";
    const int n_prompt = hc_model_tokenize(b, text, strlen(text), 1, prompt, 64);
    ck_assert(n_prompt > 1 && n_prompt <= 64);
    hc_q6k_compare(a, b, prompt, n_prompt, 40, bound, &r);
    printf("%s: %d greedy steps, %d near-ties, worst logit difference %.3g of max |logit| "
           "(bound %.0g)\n",
           what, r.steps, r.ties, r.worst_rel, bound);
}

START_TEST(q6_k_head_on_gpu)
{
    const hc_q6k_models *qm = hc_q6k_models_get();
    hc_model *a = load(qm->head_q6k, GPU, 1e12, HC_SPARSE_AUTO, HC_GPU_INDEX_DISABLE, NULL);
    hc_model *b = load(qm->head_f32, GPU, 1e12, HC_SPARSE_AUTO, HC_GPU_INDEX_DISABLE, NULL);
    ck_assert_int_eq(hc_model_plan(a)->output, 1);
    ck_assert_int_eq(hc_model_plan(b)->output, 1);
    hc_model_desc d;
    hc_model_describe(a, &d);
    const double all_bytes = (double)hc_model_plan(a)->gpu_bytes;
    q6k_run(a, b, 1e-4, "q6_k head vs f32 head, all on the GPU");
    hc_model_free(a);
    hc_model_free(b);

    a = load(qm->head_q6k, GPU, all_bytes - (double)d.ffn_bytes / 2, HC_SPARSE_AUTO,
             HC_GPU_INDEX_DISABLE, NULL);
    b = load(qm->head_q6k, "cpu", -1, HC_SPARSE_AUTO, HC_GPU_INDEX_DISABLE, NULL);
    const hc_plan *p = hc_model_plan(a);
    const int64_t hot = hot_total(p), n_all = (int64_t)d.n_ff * d.n_layer;
    ck_assert_int_eq(p->output, 1);
    ck_assert_msg(hot > 0 && hot < n_all, "%lld of %lld neurons hot", (long long)hot,
                  (long long)n_all);
    q6k_run(a, b, 5e-2, "q6_k head on the GPU, hybrid FFN, vs all on the CPU");
    hc_model_free(a);
    hc_model_free(b);
}
END_TEST

/* ---- a GPU smaller than the budget ---------------------------------------- */

/* The plugin's small-card knob: HOTCOLD_VULKAN_MEMORY_LIMIT,
 * HOTCOLD_CUDA_MEMORY_LIMIT (HOTCOLD_<FAMILY>_MEMORY_LIMIT). */
static const char *memory_limit_var(void)
{
    static char var[64];
    int n = snprintf(var, sizeof var, "HOTCOLD_");
    for (const char *c = GPU; *c && *c != ':' && n < 40; c++)
        var[n++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    snprintf(var + n, sizeof var - (size_t)n, "_MEMORY_LIMIT");
    return var;
}

static void set_memory_limit(double bytes)
{
    char v[32];
    snprintf(v, sizeof v, "%.0f", bytes);
    setenv(memory_limit_var(), v, 1);
}

/* After every test, failed or not: the later ones must see no limit. */
static void clear_memory_limit(void)
{
    unsetenv(memory_limit_var());
}

START_TEST(gpu_out_of_memory)
{
    const char *path = model(SPARSE_MODEL);
    int32_t bos = 1, want[N_IDS], got[N_IDS];
    hc_context_run_stats rs;

    hc_model *m = load(path, "cpu", -1, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, want, NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    hc_model_free(m);
    const int64_t n_all = (int64_t)d.n_ff * d.n_layer;

    /* The whole GPU share, with no limit. */
    m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    const double share = (double)hc_model_plan(m)->gpu_bytes;
    ck_assert_int_eq(hot_total(hc_model_plan(m)), n_all);
    hc_model_free(m);

    /* A device with 40% of that: the budget (everything) does not fit, the
     * first placement runs out of device memory and is solved again. */
    set_memory_limit(0.4 * share);
    m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    const int64_t hot = hot_total(hc_model_plan(m));
    const char *note = hc_model_plan_note(m);
    printf("limit %.0f bytes (40%% of %.0f): %lld of %lld neurons hot; plan: %s\n", 0.4 * share,
           share, (long long)hot, (long long)n_all, note);
    ck_assert_msg(hot > 0 && hot < n_all, "%lld of %lld neurons hot", (long long)hot,
                  (long long)n_all);
    ck_assert_msg(strstr(note, "re-solved") != NULL, "plan note: %s", note);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    ck_assert_msg(rs.gpu_rows > 0 && rs.cpu_rows > 0, "both devices work: gpu %lld cpu %lld",
                  (long long)rs.gpu_rows, (long long)rs.cpu_rows);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);

    /* No device memory at all: everything on the CPU. */
    set_memory_limit(0);
    m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    printf("limit 0 bytes: %lld neurons hot; plan: %s\n",
           (long long)hot_total(hc_model_plan(m)), hc_model_plan_note(m));
    ck_assert_int_eq(hot_total(hc_model_plan(m)), 0);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    ck_assert_int_eq(rs.gpu_rows, 0);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);
    clear_memory_limit();
}
END_TEST

/* ---- --split layers: whole layers from layer 0 ------------------------------ */

static hc_model *load_split(const char *path, double budget, int sparse, int split,
                            int gpu_index, const char *idx_path)
{
    hc_model_params mp = hc_model_default_params();
    mp.device = GPU;
    mp.vram_budget = budget;
    mp.sparse = sparse;
    mp.split = split;
    mp.gpu_index = gpu_index;
    mp.gpu_index_path = idx_path;
    mp.n_ctx = 256;
    hc_model *m = hc_model_load(engine, path, &mp);
    ck_assert_msg(m != NULL, "load %s, split %d: %s", path, split, hc_last_error());
    return m;
}

/* The plan and the model it placed: layers 0 .. n-1 whole on the GPU, the
 * rest whole on the CPU, no neuron split, within the budget.  Returns n. */
static int whole_layer_prefix(const hc_model *m, double budget)
{
    const hc_plan *p = hc_model_plan(m);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->whole_layers, 1);
    ck_assert_int_eq(hc_model_split(m), HC_SPLIT_LAYERS);
    ck_assert_msg((double)p->gpu_bytes <= budget, "%llu bytes on the GPU, budget %.0f",
                  (unsigned long long)p->gpu_bytes, budget);
    int n = 0;
    while (n < p->n_layer && p->layers[n].attn)
        n++;
    for (int il = 0; il < p->n_layer; il++) {
        const int on = il < n;
        const hc_place_layer *pl = &p->layers[il];
        ck_assert_msg(pl->attn == on && pl->ffn_norm == on && pl->kv == on &&
                          pl->n_hot == (on ? p->n_ff : 0) && (on || !pl->pred),
                      "layer %d of a %d-layer prefix: attn %d norm %d kv %d pred %d, %lld hot",
                      il, n, pl->attn, pl->ffn_norm, pl->kv, pl->pred, (long long)pl->n_hot);
        /* What was placed is what the plan says. */
        ck_assert_int_eq(m->layers[il].attn_gpu, on);
        ck_assert_int_eq(m->layers[il].n_hot, on ? p->n_ff : 0);
    }
    if (p->output)
        ck_assert_int_eq(n, p->n_layer); /* the head goes after the last layer */
    return n;
}

/* Greedy ids with --split layers at budgets holding no layer, the first
 * half of them (and half the next), and everything, each against `want`:
 * golden ids (near-ties as in test_golden) or the all-CPU run's (equal). */
static void layers_at_budgets(const char *path, int sparse, const int32_t *prompt, int n_prompt,
                              const int32_t *want, int n, int golden)
{
    int32_t got[MAX_IDS];
    hc_context_run_stats rs;
    /* Each layer's bytes, from a neuron-split plan that holds everything
     * (another solver path: there every layer is whole too). */
    hc_model *m = load(path, GPU, 1e12, sparse, HC_GPU_INDEX_DISABLE, NULL);
    const hc_plan *all = hc_model_plan(m);
    const int n_layer = all->n_layer, k = all->n_layer / 2;
    double prefix = 0;
    for (int il = 0; il < k; il++)
        prefix += (double)all->layers[il].gpu_bytes;
    const double half = prefix + (double)all->layers[k].gpu_bytes / 2;
    hc_model_free(m);

    const struct {
        double budget;
        int n_gpu;
    } cases[] = {{0, 0}, {half, k}, {1e12, n_layer}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        m = load_split(path, cases[c].budget, sparse, HC_SPLIT_LAYERS, HC_GPU_INDEX_DISABLE, NULL);
        ck_assert_int_eq(whole_layer_prefix(m, cases[c].budget), cases[c].n_gpu);
        greedy(m, prompt, n_prompt, golden ? want : NULL, n, got, &rs);
        if (!golden)
            ck_assert_mem_eq(got, want, (size_t)n * sizeof *got);
        if (cases[c].n_gpu == 0)
            ck_assert_int_eq(rs.gpu_rows, 0);
        else if (cases[c].n_gpu == n_layer)
            ck_assert_int_eq(rs.cpu_rows, 0);
        else
            ck_assert_msg(rs.gpu_rows > 0 && rs.cpu_rows > 0, "gpu %lld cpu %lld rows",
                          (long long)rs.gpu_rows, (long long)rs.cpu_rows);
        printf("%s, mode %d, --split layers, budget %.0f: %d of %d layers on the GPU, %d ids "
               "equal to the %s\n",
               path, sparse, cases[c].budget, cases[c].n_gpu, n_layer, n,
               golden ? "golden file's" : "all-CPU run's");
        hc_model_free(m);
    }
}

START_TEST(split_layers_stories260K_golden)
{
    json_object *root = hc_test_load_json(hc_test_path(HC_TEST_DATA, "golden/stories260K.json"));
    json_object *fp, *o;
    ck_assert(root != NULL);
    int32_t prompt[MAX_IDS], want[MAX_IDS];
    ck_assert(json_object_object_get_ex(root, "from_prompt", &fp));
    ck_assert(json_object_object_get_ex(fp, "prompt_ids", &o));
    const int n_prompt = hc_test_json_ints(o, prompt, MAX_IDS);
    ck_assert(json_object_object_get_ex(fp, "greedy_ids", &o));
    const int n = hc_test_json_ints(o, want, MAX_IDS);
    ck_assert(n_prompt > 1 && n > 10);
    layers_at_budgets(model("stories260K.gguf"), HC_SPARSE_AUTO, prompt, n_prompt, want, n, 1);
    json_object_put(root);
}
END_TEST

START_TEST(split_layers_relu2M_powerinfer)
{
    const char *path = model(SPARSE_MODEL);
    static const int modes[] = {HC_SPARSE_PREDICTOR, HC_SPARSE_OFF};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        int32_t prompt[32], want[N_IDS];
        hc_model *m = load(path, "cpu", -1, modes[i], HC_GPU_INDEX_DISABLE, NULL);
        const char *text = "Once upon a time, there was a little dog named";
        const int n_prompt = hc_model_tokenize(m, text, strlen(text), 1, prompt, 32);
        ck_assert(n_prompt > 5 && n_prompt <= 32);
        greedy(m, prompt, n_prompt, NULL, N_IDS, want, NULL);
        hc_model_free(m);
        layers_at_budgets(path, modes[i], prompt, n_prompt, want, N_IDS, 0);
    }
}
END_TEST

/* A neuron split saved by a neurons run is neither applied in layers mode
 * (which needs no solve) nor overwritten by it, --reset-gpu-index or not,
 * and the next neurons run still reuses it. */
START_TEST(split_layers_leave_gpu_index_alone)
{
    const char *path = model(SPARSE_MODEL);
    char idx[4096];
    snprintf(idx, sizeof idx, "%s", hc_test_path(hc_test_tmpdir(), "split.generated.gpuidx"));
    unlink(idx);
    hc_model *m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    const double half = (double)hc_model_plan(m)->gpu_bytes - (double)d.ffn_bytes / 2;
    hc_model_free(m);

    /* Layers mode with no index there makes none. */
    m = load_split(path, half, HC_SPARSE_PREDICTOR, HC_SPLIT_LAYERS, HC_GPU_INDEX_USE, idx);
    whole_layer_prefix(m, half);
    ck_assert_int_ne(access(idx, F_OK), 0);
    hc_model_free(m);

    m = load_split(path, half, HC_SPARSE_PREDICTOR, HC_SPLIT_NEURONS, HC_GPU_INDEX_RESET, idx);
    ck_assert_int_eq(hc_model_split(m), HC_SPLIT_NEURONS);
    const int64_t n_hot = hot_total(hc_model_plan(m));
    hc_model_free(m);
    size_t len;
    char *saved = hc_test_read_file(idx, &len);
    ck_assert_ptr_nonnull(saved);

    static const int modes[] = {HC_GPU_INDEX_USE, HC_GPU_INDEX_RESET};
    for (size_t i = 0; i < 2; i++) {
        m = load_split(path, half, HC_SPARSE_PREDICTOR, HC_SPLIT_LAYERS, modes[i], idx);
        whole_layer_prefix(m, half);
        ck_assert_int_eq(hc_model_plan(m)->from_file, 0);
        ck_assert_msg(strstr(hc_model_plan_note(m), "neither read nor written") != NULL, "%s",
                      hc_model_plan_note(m));
        ck_assert_msg(same_bytes(idx, saved, len), "gpu index mode %d: the file changed",
                      modes[i]);
        hc_model_free(m);
    }
    m = load_split(path, half, HC_SPARSE_PREDICTOR, HC_SPLIT_AUTO, HC_GPU_INDEX_USE, idx);
    ck_assert_msg(hc_model_plan(m)->from_file == 1, "not reused: %s", hc_model_plan_note(m));
    ck_assert_int_eq(hot_total(hc_model_plan(m)), n_hot);
    hc_model_free(m);
    free(saved);
    unlink(idx);
}
END_TEST

/* A GPU smaller than the budget in layers mode: the retry after running
 * out of memory places fewer whole layers, never a part of one. */
START_TEST(split_layers_out_of_memory)
{
    const char *path = model(SPARSE_MODEL);
    int32_t bos = 1, want[N_IDS], got[N_IDS];
    hc_context_run_stats rs;
    hc_model *m = load(path, "cpu", -1, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    greedy(m, &bos, 1, NULL, N_IDS, want, NULL);
    hc_model_free(m);
    m = load(path, GPU, 1e12, HC_SPARSE_PREDICTOR, HC_GPU_INDEX_DISABLE, NULL);
    const double share = (double)hc_model_plan(m)->gpu_bytes;
    const int n_layer = hc_model_plan(m)->n_layer;
    hc_model_free(m);
    set_memory_limit(0.4 * share);
    m = load_split(path, 1e12, HC_SPARSE_PREDICTOR, HC_SPLIT_LAYERS, HC_GPU_INDEX_DISABLE, NULL);
    const int n = whole_layer_prefix(m, 1e12);
    printf("--split layers, limit 40%% of %.0f bytes: %d of %d layers on the GPU; plan: %s\n",
           share, n, n_layer, hc_model_plan_note(m));
    ck_assert_msg(n > 0 && n < n_layer, "%d of %d layers", n, n_layer);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);
    set_memory_limit(0);
    m = load_split(path, 1e12, HC_SPARSE_PREDICTOR, HC_SPLIT_LAYERS, HC_GPU_INDEX_DISABLE, NULL);
    ck_assert_int_eq(whole_layer_prefix(m, 1e12), 0);
    greedy(m, &bos, 1, NULL, N_IDS, got, &rs);
    ck_assert_int_eq(rs.gpu_rows, 0);
    ck_assert_mem_eq(got, want, sizeof want);
    hc_model_free(m);
    clear_memory_limit();
}
END_TEST

int main(void)
{
    const char *gpu = getenv("HOTCOLD_TEST_GPU");
    if (gpu && *gpu)
        GPU = gpu;
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = HC_TEST_THREADS;
    engine = hc_engine_open(&ep);
    if (!engine || hc_engine_find_device(engine, GPU) < 0) {
        hc_test_skip("no %s device here (%s)", GPU,
                     engine ? "see 'hotcold devices'" : hc_last_error());
        hc_engine_close(engine);
        return 77;
    }
    Suite *s = suite_create("hybrid");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, clear_memory_limit);
    tcase_add_test(tc, stories260K_golden_on_gpu);
    tcase_add_test(tc, relu2M_golden_on_gpu);
    tcase_add_test(tc, hybrid_predictor);
    tcase_add_test(tc, hybrid_oracle);
    tcase_add_test(tc, hybrid_dense);
    tcase_add_test(tc, hybrid_q4_0_logits);
    tcase_add_test(tc, fallback_ops);
    tcase_add_test(tc, all_gpu_predictor_syncs);
    tcase_add_test(tc, all_gpu_oracle_syncs);
    tcase_add_test(tc, hybrid_overlap_report);
    tcase_add_test(tc, captured_predictor);
    tcase_add_test(tc, captured_dense);
    tcase_add_test(tc, gpu_index_reused);
    tcase_add_test(tc, q6_k_head_on_gpu);
    tcase_add_test(tc, gpu_index_from_powerinfer);
    suite_add_tcase(s, tc);
    /* Its own case, so that a run can pick it alone (CK_RUN_CASE=oom:
     * test_hybrid_staging in hybrid.cmake). */
    TCase *oom = tcase_create("oom");
    tcase_set_timeout(oom, 600);
    tcase_add_checked_fixture(oom, NULL, clear_memory_limit);
    tcase_add_test(oom, gpu_out_of_memory);
    suite_add_tcase(s, oom);
    TCase *split = tcase_create("split");
    tcase_set_timeout(split, 600);
    tcase_add_checked_fixture(split, NULL, clear_memory_limit);
    tcase_add_test(split, split_layers_stories260K_golden);
    tcase_add_test(split, split_layers_relu2M_powerinfer);
    tcase_add_test(split, split_layers_leave_gpu_index_alone);
    tcase_add_test(split, split_layers_out_of_memory);
    suite_add_tcase(s, split);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    hc_engine_close(engine);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

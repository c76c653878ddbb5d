/*
 * `hotcold perplexity` end to end, against figures computed here from the
 * spec (llama.cpp's method: chunks of -c tokens starting with BOS, the
 * second half scored) through the library's one-token eval, which the
 * golden suites check on their own: not through the command's batched
 * all-logits path or its chunk loop.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "hotcold/hotcold.h"
#include "test_util.h"

#define TEXT HC_TEST_DATA "/corpus/tinystories_valid.txt"

static const char *model(const char *name)
{
    return hc_test_path(HC_MODELS_DIR, name);
}

/* The number after `key` in s, or NAN. */
static double figure_after(const char *s, const char *key)
{
    const char *p = s ? strstr(s, key) : NULL;
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

static void cli_ok(cli_result *r, const char *args)
{
    cli(r, args);
    ck_assert_msg(r->status == 0, "hotcold %s: status %d\n%s", args, r->status, r->err);
}

/* PPL and its error, the method done by hand: every chunk from a fresh
 * context, one token at a time, the log-softmax in double here. */
static void ppl_by_hand(const char *model_file, int n_ctx, int n_chunk, double *ppl, double *err)
{
    hc_engine *e = hc_engine_open(NULL);
    ck_assert(e != NULL);
    hc_model_params mp = hc_model_default_params();
    mp.sparse = HC_SPARSE_OFF;
    hc_model *m = hc_model_load(e, model(model_file), &mp);
    ck_assert_msg(m != NULL, "%s", hc_last_error());
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = n_ctx;
    hc_context *c = hc_context_new(m, &cp);
    ck_assert_msg(c != NULL, "%s", hc_last_error());
    hc_model_desc d;
    hc_model_describe(m, &d);
    char *text = hc_test_read_file(TEXT, NULL);
    ck_assert(text != NULL);
    const int n_ids = hc_model_tokenize(m, text, strlen(text), 1, NULL, 0);
    ck_assert_int_ge(n_ids, n_ctx * n_chunk);
    int32_t *ids = malloc((size_t)n_ids * sizeof *ids);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    ck_assert(ids && logits);
    hc_model_tokenize(m, text, strlen(text), 1, ids, n_ids);
    double sum = 0, sum2 = 0;
    int n = 0;
    for (int i = 0; i < n_chunk; i++) {
        const int32_t *chunk = ids + (size_t)i * n_ctx;
        hc_context_reset(c);
        for (int j = 0; j < n_ctx - 1; j++) {
            const int32_t tok = j == 0 ? hc_model_token_bos(m) : chunk[j];
            ck_assert_msg(hc_context_eval(c, &tok, 1, logits) == 0, "%s", hc_last_error());
            if (j < n_ctx / 2)
                continue;
            double mx = logits[0], s = 0;
            for (int v = 1; v < d.n_vocab; v++)
                mx = fmax(mx, logits[v]);
            for (int v = 0; v < d.n_vocab; v++)
                s += exp((double)logits[v] - mx);
            const double nll = -((double)logits[chunk[j + 1]] - mx - log(s));
            sum += nll;
            sum2 += nll * nll;
            n++;
        }
    }
    const double mean = sum / n;
    *ppl = exp(mean);
    *err = sqrt((sum2 / n - mean * mean) / (n - 1)) * *ppl;
    free(ids);
    free(logits);
    free(text);
    hc_context_free(c);
    hc_model_free(m);
    hc_engine_close(e);
}

START_TEST(matches_the_method_done_by_hand)
{
    /* In one pass per chunk, and in passes of 5 tokens (the scored half
     * starts inside one). */
    static const char *const files[] = {"stories260K.gguf", "relu2M.gguf", "stories260K.gguf"};
    static const int batch[] = {64, 64, 5};
    for (int k = 0; k < 3; k++) {
        double ppl, err;
        ppl_by_hand(files[k], 32, 3, &ppl, &err);
        char args[512];
        snprintf(args, sizeof args, "perplexity -m %s -f %s -c 32 --chunks 3 -t 2 -b %d",
                 model(files[k]), TEXT, batch[k]);
        cli_result r;
        cli_ok(&r, args);
        /* One running value per chunk, then the final line. */
        ck_assert_msg(strstr(r.out, "[1]") && strstr(r.out, "[2]") && strstr(r.out, "[3]") &&
                          !strstr(r.out, "[4]"),
                      "%s", r.out);
        const double got = figure_after(r.out, "Final estimate: PPL = ");
        const double got_err = figure_after(r.out, " +/- ");
        printf("%s: PPL %.4f +/- %.5f (by hand %.4f +/- %.5f)\n", files[k], got, got_err, ppl,
               err);
        ck_assert_msg(fabs(got - ppl) <= 1e-3 * ppl, "PPL %.6f, by hand %.6f", got, ppl);
        ck_assert_msg(fabs(got_err - err) <= 2e-3 * err + 1e-5, "error %.6f, by hand %.6f",
                      got_err, err);
        /* The chunk header says how much was scored. */
        ck_assert_msg(strstr(r.err, "3 chunks of 32 (the last 15 positions"), "%s", r.err);
        cli_free(&r);
    }
}
END_TEST

/* A temporary path that does not exist yet. */
static void temp_path(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "%s/ppl-%s-%d.klbase", HC_TEST_BIN_DIR, tag, (int)getpid());
    unlink(buf);
}

START_TEST(kl_base_against_itself_is_zero)
{
    char base[512], args[1024];
    temp_path(base, sizeof base, "self");
    snprintf(args, sizeof args,
             "perplexity -m %s -f %s -c 32 --chunks 2 --sparse off --kl-base %s",
             model("relu2M.powerinfer.gguf"), TEXT, base);
    cli_result r;
    cli_ok(&r, args);
    ck_assert_msg(strstr(r.err, "saving this run's logits to"), "%s", r.err);
    ck_assert(access(base, F_OK) == 0);
    ck_assert(strstr(r.out, "KL divergence") == NULL);
    cli_free(&r);
    cli_ok(&r, args);
    ck_assert_msg(strstr(r.err, "comparing with the base logits in"), "%s", r.err);
    ck_assert_msg(strstr(r.out, "mean 0.000000 +/- 0.000000 nats"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "top-1 agreement with it: 100.00% (30 of 30 tokens)"), "%s",
                  r.out);
    ck_assert_msg(strstr(r.out, "PPL ratio: 1.0000"), "%s", r.out);
    cli_free(&r);
    unlink(base);
}
END_TEST

START_TEST(kl_base_measures_what_sparsity_costs)
{
    char base[512], args[1024];
    temp_path(base, sizeof base, "sparse");
    const char *common = "-c 32 --chunks 4 -t 2";
    snprintf(args, sizeof args, "perplexity -m %s -f %s %s --sparse off --kl-base %s",
             model("relu2M.powerinfer.gguf"), TEXT, common, base);
    cli_result r;
    cli_ok(&r, args);
    const double dense = figure_after(r.out, "Final estimate: PPL = ");
    cli_free(&r);

    /* The oracle computes exactly the neurons a ReLU FFN fires: the same
     * distribution up to rounding. */
    snprintf(args, sizeof args, "perplexity -m %s -f %s %s --sparse oracle --kl-base %s",
             model("relu2M.powerinfer.gguf"), TEXT, common, base);
    cli_ok(&r, args);
    const char *mean = strstr(r.out, ": mean ");
    ck_assert_msg(mean != NULL, "%s", r.out);
    ck_assert_msg(strtod(mean + 7, NULL) < 1e-6, "oracle KL %s", mean);
    cli_free(&r);

    /* The predictor misses some neurons: a small, positive divergence, and
     * the ratio is the two perplexities'. */
    snprintf(args, sizeof args, "perplexity -m %s -f %s %s --sparse predictor --kl-base %s",
             model("relu2M.powerinfer.gguf"), TEXT, common, base);
    cli_ok(&r, args);
    mean = strstr(r.out, ": mean ");
    ck_assert_msg(mean != NULL, "%s", r.out);
    const double kl = strtod(mean + 7, NULL);
    const double sparse = figure_after(r.out, "Final estimate: PPL = ");
    const double ratio = figure_after(r.out, "PPL ratio: ");
    const double base_ppl = figure_after(r.out, "/ base ");
    printf("relu2M: dense PPL %.4f, predictor PPL %.4f, KL %.6f, ratio %.4f\n", dense, sparse,
           kl, ratio);
    ck_assert_msg(kl > 0 && kl < 1.0, "predictor KL %g", kl);
    ck_assert_msg(fabs(base_ppl - dense) <= 1e-4 * dense, "base %.4f, dense run %.4f", base_ppl,
                  dense);
    ck_assert_msg(fabs(ratio - sparse / dense) <= 2e-4, "ratio %.4f vs %.4f", ratio,
                  sparse / dense);
    ck_assert_msg(strstr(r.out, "top-1 agreement with it: "), "%s", r.out);
    cli_free(&r);

    /* Another chunk size scores other tokens: refused, and why. */
    snprintf(args, sizeof args, "perplexity -m %s -f %s -c 16 --chunks 4 --kl-base %s",
             model("relu2M.powerinfer.gguf"), TEXT, base);
    cli(&r, args);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "saved for other tokens"), "%s", r.err);
    cli_free(&r);
    /* A file that is no base file. */
    snprintf(args, sizeof args, "perplexity -m %s -f %s -c 32 --chunks 4 --kl-base %s",
             model("relu2M.powerinfer.gguf"), TEXT, TEXT);
    cli(&r, args);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "not a file of base logits"), "%s", r.err);
    cli_free(&r);
    unlink(base);
}
END_TEST

/* Greedy ids from BOS in FFN mode `mode`, through the library. */
static void greedy_ids(const char *file, int mode, int32_t *ids, int n)
{
    hc_engine *e = hc_engine_open(NULL);
    hc_model_params mp = hc_model_default_params();
    mp.sparse = mode;
    hc_model *m = hc_model_load(e, model(file), &mp);
    ck_assert_msg(m != NULL, "%s", hc_last_error());
    hc_context *c = hc_context_new(m, NULL);
    hc_model_desc d;
    hc_model_describe(m, &d);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    ck_assert(c && logits);
    int32_t tok = hc_model_token_bos(m);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(hc_context_eval(c, &tok, 1, logits) == 0, "%s", hc_last_error());
        tok = ids[i] = hc_test_argmax(logits, d.n_vocab);
    }
    free(logits);
    hc_context_free(c);
    hc_model_free(m);
    hc_engine_close(e);
}

/* The bench's sparse-vs-dense line says how much of the greedy text the two
 * modes share: the prefix computed here from the two modes' ids. */
START_TEST(bench_reports_greedy_agreement)
{
    enum { N = 48 };
    int32_t dense[N], sparse[N];
    greedy_ids("relu2M.powerinfer.gguf", HC_SPARSE_OFF, dense, N);
    greedy_ids("relu2M.powerinfer.gguf", HC_SPARSE_PREDICTOR, sparse, N);
    int same = 0;
    while (same < N && dense[same] == sparse[same])
        same++;
    char args[1024], want[128];
    snprintf(args, sizeof args, "bench -m %s --sparse off,predictor -p 0 -n %d -r 1",
             model("relu2M.powerinfer.gguf"), N);
    cli_result r;
    cli_ok(&r, args);
    if (same == N)
        snprintf(want, sizeof want, "greedy text: the same %d tokens as dense", N);
    else
        snprintf(want, sizeof want, "greedy text: the first %d of %d tokens as dense", same, N);
    printf("bench: %s\n", want);
    ck_assert_msg(strstr(r.out, want), "want '%s' in\n%s", want, r.out);
    cli_free(&r);
}
END_TEST

START_TEST(bad_requests_say_why)
{
    cli_result r;
    char args[1024];
    snprintf(args, sizeof args, "perplexity -m %s", model("stories260K.gguf"));
    cli(&r, args);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "no text to score"), "%s", r.err);
    cli_free(&r);
    /* The model's context is 512: a chunk may not be longer. */
    snprintf(args, sizeof args, "perplexity -m %s -f %s -c 4096", model("stories260K.gguf"),
             TEXT);
    cli(&r, args);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "past the model's context"), "%s", r.err);
    cli_free(&r);
    /* A text shorter than one chunk. */
    char path[512];
    snprintf(path, sizeof path, "%s/ppl-short-%d.txt", HC_TEST_BIN_DIR, (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs("Once upon a time.", f);
    fclose(f);
    snprintf(args, sizeof args, "perplexity -m %s -f %s -c 64", model("stories260K.gguf"), path);
    cli(&r, args);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "less than one chunk of -c 64"), "%s", r.err);
    cli_free(&r);
    unlink(path);
    cli(&r, "perplexity --help");
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, "--kl-base FILE") && strstr(r.out, "--chunks N"));
    cli_free(&r);
}
END_TEST

static Suite *perplexity_suite(void)
{
    Suite *s = suite_create("perplexity");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, matches_the_method_done_by_hand);
    tcase_add_test(tc, kl_base_against_itself_is_zero);
    tcase_add_test(tc, kl_base_measures_what_sparsity_costs);
    tcase_add_test(tc, bench_reports_greedy_agreement);
    tcase_add_test(tc, bad_requests_say_why);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(perplexity_suite());
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

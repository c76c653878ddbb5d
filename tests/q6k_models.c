/* See q6k_models.h. */
#include "q6k_models.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "hotcold/toolchain.h"
#include "test_util.h"

static hc_q6k_models g_models;
static int g_made;

static void expect_type(const char *path, const char *tensor, uint32_t type)
{
    char err[512];
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, tensor);
    ck_assert_msg(t != NULL, "%s: no %s", path, tensor);
    ck_assert_msg(t->type == type, "%s: %s is %s, expected %s", path, tensor,
                  hc_ggml_type_name(t->type), hc_ggml_type_name(type));
    hc_gguf_close(g);
}

const hc_q6k_models *hc_q6k_models_get(void)
{
    if (g_made)
        return &g_models;
    char base[4096];
    snprintf(base, sizeof base, "%s", hc_test_path(hc_test_tmpdir(), "q6k-base.gguf"));
    snprintf(g_models.head_q6k, sizeof g_models.head_q6k, "%s",
             hc_test_path(hc_test_tmpdir(), "q6k-head.gguf"));
    snprintf(g_models.head_f32, sizeof g_models.head_f32, "%s",
             hc_test_path(hc_test_tmpdir(), "q6k-head-f32.gguf"));
    snprintf(g_models.all_q6k, sizeof g_models.all_q6k, "%s",
             hc_test_path(hc_test_tmpdir(), "q6k-all.gguf"));
    snprintf(g_models.all_f32, sizeof g_models.all_f32, "%s",
             hc_test_path(hc_test_tmpdir(), "q6k-all-f32.gguf"));

    /* Two layers of a small PowerInfer-style ReGLU model, grouped-query
     * attention, predictors and down_t included. */
    hc_mkmodel_params p = hc_mkmodel_default_params();
    p.n_embd = HC_Q6K_N_EMBD;
    p.n_ff = 1024;
    p.n_layer = 2;
    p.n_head = 4;
    p.n_head_kv = 2;
    p.n_vocab = HC_Q6K_N_VOCAB;
    p.n_ctx = 256;
    p.type = HC_TYPE_Q4_0;
    p.seed = 6;
    p.n_threads = HC_TEST_THREADS;
    p.name = "q6k-test";
    ck_assert_msg(hc_mkmodel_write(base, &p, NULL, NULL, NULL) == 0, "%s", hc_last_error());
    ck_assert_msg(hc_quantize_file_mixed(base, g_models.head_q6k, HC_TYPE_Q4_0, HC_TYPE_Q6_K,
                                         NULL, NULL) == 0,
                  "%s", hc_last_error());
    ck_assert_msg(hc_quantize_file_mixed(g_models.head_q6k, g_models.head_f32, HC_TYPE_Q4_0,
                                         HC_TYPE_F32, NULL, NULL) == 0,
                  "%s", hc_last_error());
    ck_assert_msg(hc_quantize_file(base, g_models.all_q6k, HC_TYPE_Q6_K, NULL, NULL) == 0, "%s",
                  hc_last_error());
    ck_assert_msg(hc_quantize_file(g_models.all_q6k, g_models.all_f32, HC_TYPE_F32, NULL,
                                   NULL) == 0,
                  "%s", hc_last_error());

    expect_type(g_models.head_q6k, "output.weight", HC_TYPE_Q6_K);
    expect_type(g_models.head_q6k, "token_embd.weight", HC_TYPE_Q4_0);
    expect_type(g_models.head_q6k, "blk.1.attn_v.weight", HC_TYPE_Q4_0);
    expect_type(g_models.head_q6k, "blk.1.ffn_down_t.weight", HC_TYPE_Q4_0);
    expect_type(g_models.head_q6k, "blk.1.fc2.weight", HC_TYPE_Q4_0);
    expect_type(g_models.head_f32, "output.weight", HC_TYPE_F32);
    expect_type(g_models.head_f32, "blk.1.ffn_up.weight", HC_TYPE_Q4_0);
    expect_type(g_models.all_q6k, "output.weight", HC_TYPE_Q6_K);
    expect_type(g_models.all_q6k, "token_embd.weight", HC_TYPE_Q6_K);
    expect_type(g_models.all_q6k, "blk.0.attn_q.weight", HC_TYPE_Q6_K);
    expect_type(g_models.all_q6k, "blk.0.ffn_gate.weight", HC_TYPE_Q6_K);
    expect_type(g_models.all_q6k, "blk.0.fc1.weight", HC_TYPE_Q6_K);
    expect_type(g_models.all_q6k, "blk.0.fc2.weight", HC_TYPE_Q8_0);       /* rows of 64 */
    expect_type(g_models.all_q6k, "blk.0.ffn_down_t.weight", HC_TYPE_Q8_0); /* no q6_k axpy */
    expect_type(g_models.all_f32, "blk.0.ffn_gate.weight", HC_TYPE_F32);
    g_made = 1;
    return &g_models;
}

static double max_abs(const float *x, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs((double)x[i]));
    return m;
}

void hc_q6k_compare(hc_model *a, hc_model *b, const int32_t *prompt, int n_prompt, int n,
                    double rel_bound, hc_q6k_cmp *out)
{
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = n_prompt + n;
    hc_context *ca = hc_context_new(a, &cp), *cb = hc_context_new(b, &cp);
    ck_assert_msg(ca && cb, "context: %s", hc_last_error());
    hc_model_desc d;
    hc_model_describe(b, &d);
    float *la = malloc((size_t)d.n_vocab * sizeof *la), *lb = malloc((size_t)d.n_vocab * sizeof *lb);
    ck_assert(la && lb);
    memset(out, 0, sizeof *out);
    ck_assert_msg(hc_context_eval(ca, prompt, n_prompt, la) == 0, "%s", hc_last_error());
    ck_assert_msg(hc_context_eval(cb, prompt, n_prompt, lb) == 0, "%s", hc_last_error());
    for (int step = 0; step < n; step++) {
        double diff = 0;
        for (int i = 0; i < d.n_vocab; i++)
            diff = fmax(diff, fabs((double)la[i] - (double)lb[i]));
        const double rel = diff / max_abs(lb, d.n_vocab);
        out->worst_rel = fmax(out->worst_rel, rel);
        ck_assert_msg(rel <= rel_bound, "step %d: logits differ by %.3g relative (bound %.3g)",
                      step, rel, rel_bound);
        int32_t ia = hc_test_argmax(la, d.n_vocab), ib = hc_test_argmax(lb, d.n_vocab);
        if (ia != ib) {
            const double gap = (double)lb[ib] - (double)lb[ia];
            ck_assert_msg(gap <= 2 * diff,
                          "step %d: ids %d vs %d, b's logit gap %.3g exceeds twice the "
                          "largest logit difference %.3g",
                          step, ia, ib, gap, diff);
            printf("  step %d: near-tie, ids %d vs %d (gap %.2g, max logit difference %.2g)\n",
                   step, ia, ib, gap, diff);
            out->ties++;
        }
        out->steps++;
        if (step + 1 < n) {
            ck_assert_msg(hc_context_eval(ca, &ib, 1, la) == 0, "%s", hc_last_error());
            ck_assert_msg(hc_context_eval(cb, &ib, 1, lb) == 0, "%s", hc_last_error());
        }
    }
    free(la);
    free(lb);
    hc_context_free(ca);
    hc_context_free(cb);
}

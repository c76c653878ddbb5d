/*
 * Test models with Q6_K weights, made at test time, and a lockstep greedy
 * comparison of two models (test_golden.c on the CPU, test_hybrid.c with
 * the output head on the GPU).
 */
#ifndef HC_TEST_Q6K_MODELS_H
#define HC_TEST_Q6K_MODELS_H

#include "hotcold/hotcold.h"

/* The shape of the files below: PowerInfer's quantize gives output.weight
 * Q6_K only when n_embd is a multiple of 256. */
#define HC_Q6K_N_EMBD 256
#define HC_Q6K_N_VOCAB 512

typedef struct hc_q6k_models {
    /* PowerInfer's q4 layout (hotcold mkmodel, then hotcold quantize q4_0
     * --output-tensor-type q6_k): every 2-D weight Q4_0, output.weight Q6_K. */
    char head_q6k[4096];
    /* The same file with output.weight decoded to F32 (the same values),
     * every other tensor copied bit for bit. */
    char head_f32[4096];
    /* hotcold quantize q6_k of the mkmodel file: Q6_K wherever rows allow
     * (Q8_0 for ffn_down_t and fc2), and its every-weight-F32 twin. */
    char all_q6k[4096];
    char all_f32[4096];
} hc_q6k_models;

/* Makes the files once per process in the test's tmp dir (ck_assert on
 * failure) and checks their tensor types. */
const hc_q6k_models *hc_q6k_models_get(void);

/* How two runs compared. */
typedef struct hc_q6k_cmp {
    int steps;
    int ties;         /* differing greedy ids, each explained by the logit gap */
    double worst_rel; /* max over steps of max|a - b| / max|b| */
} hc_q6k_cmp;

/* Greedy decoding of a and b in lockstep from `prompt` for n steps.  Every
 * step's logits must agree within rel_bound (max |a - b| over max |b|).
 * Where the argmaxes differ, b's logit gap between its own pick and a's
 * must be at most twice that step's max |a - b| -- the ids then differ
 * because of the difference the bound allows, not because of a fault --
 * and both are fed b's pick. */
void hc_q6k_compare(hc_model *a, hc_model *b, const int32_t *prompt, int n_prompt, int n,
                    double rel_bound, hc_q6k_cmp *out);

#endif

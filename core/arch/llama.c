/*
 * llama: its hyper-parameters, its tensors, its forward pass.  bamboo
 * (PowerInfer's Bamboo) is the same architecture with a dReLU FFN.
 *
 * Variants honoured:
 *  - FFN activation: SwiGLU (silu(gate)*up), ReGLU (relu(gate - s)*up) or
 *    dReLU (relu(gate)*relu(up));
 *  - relu2M-style block inputs: relu(rmsnorm(x)*w - shift) before attention
 *    and FFN (the final norm stays plain);
 *  - grouped-query attention, rope in llama's adjacent-pair layout;
 *  - tied output head (output.weight absent -> token_embd);
 *  - sparse FFN (PowerInfer): a predictor, or the gate itself (oracle),
 *    picks the neurons; only their rows are read and computed.
 */
#include "arch/llama.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exec/exec.h"
#include "runtime/model.h"
#include "util/log.h"

/* ---- the tensors ------------------------------------------------------------ */

/* Columns are GGUF's ne0.  Norms belong to the block they feed. */
static const hc_tensor_spec model_tensors[] = {
    /* id               name in the file      cols         rows          presence */
    {HC_M_TOK_EMBD,     "token_embd.weight",  HC_DIM_EMBD, HC_DIM_VOCAB, HC_REQUIRED, 0,
     HC_BLOCK_MODEL, 0},
    {HC_M_OUTPUT_NORM,  "output_norm.weight", HC_DIM_EMBD, HC_DIM_ONE,   HC_REQUIRED, 0,
     HC_BLOCK_MODEL, 0},
    {HC_M_OUTPUT,       "output.weight",      HC_DIM_EMBD, HC_DIM_VOCAB, HC_OR_TIED, HC_M_TOK_EMBD,
     HC_BLOCK_MODEL, 0},
};

/* PowerInfer files store the down projection only transposed (ffn_down_t:
 * row r is what neuron r adds, summed by axpy_rows), and a predictor per
 * layer: fc2 . relu(fc1 . x), [n_embd -> H -> n_ff]. */
static const hc_tensor_spec layer_tensors[] = {
    /* id               name in the file      cols         rows          presence */
    {HC_T_ATTN_NORM,    "attn_norm.weight",   HC_DIM_EMBD, HC_DIM_ONE,   HC_REQUIRED, 0,
     HC_BLOCK_ATTN, 0},
    {HC_T_WQ,           "attn_q.weight",      HC_DIM_EMBD, HC_DIM_EMBD,  HC_REQUIRED, 0,
     HC_BLOCK_ATTN, 0},
    {HC_T_WK,           "attn_k.weight",      HC_DIM_EMBD, HC_DIM_KV,    HC_REQUIRED, 0,
     HC_BLOCK_ATTN, 0},
    {HC_T_WV,           "attn_v.weight",      HC_DIM_EMBD, HC_DIM_KV,    HC_REQUIRED, 0,
     HC_BLOCK_ATTN, 0},
    {HC_T_WO,           "attn_output.weight", HC_DIM_EMBD, HC_DIM_EMBD,  HC_REQUIRED, 0,
     HC_BLOCK_ATTN, 0},
    {HC_T_FFN_NORM,     "ffn_norm.weight",    HC_DIM_EMBD, HC_DIM_ONE,   HC_REQUIRED, 0,
     HC_BLOCK_FFN, 0},
    {HC_T_FFN_GATE,     "ffn_gate.weight",    HC_DIM_EMBD, HC_DIM_FF,    HC_REQUIRED, 0,
     HC_BLOCK_FFN, 0},
    {HC_T_FFN_UP,       "ffn_up.weight",      HC_DIM_EMBD, HC_DIM_FF,    HC_REQUIRED, 0,
     HC_BLOCK_FFN, 0},
    {HC_T_FFN_DOWN,     "ffn_down.weight",    HC_DIM_FF,   HC_DIM_EMBD,  HC_UNLESS, HC_T_FFN_DOWN_T,
     HC_BLOCK_FFN, 0},
    {HC_T_FFN_DOWN_T,   "ffn_down_t.weight",  HC_DIM_EMBD, HC_DIM_FF,    HC_OPTIONAL, 0,
     HC_BLOCK_FFN, HC_TF_AXPY},
    {HC_T_FC1,          "fc1.weight",         HC_DIM_EMBD, HC_DIM_RANK,  HC_WITH, HC_T_FC2,
     HC_BLOCK_PRED, 0},
    {HC_T_FC2,          "fc2.weight",         HC_DIM_RANK, HC_DIM_FF,    HC_WITH, HC_T_FC1,
     HC_BLOCK_PRED, 0},
};

/* ---- the hyper-parameters -------------------------------------------------------- */

static int read_hparams(const hc_arch *a, const hc_gguf *g, const char *path, hc_hparams *hp)
{
    const char *arch = a->name;
    char act[32];
    int has_shift = 0;

    hp->is_pwri = hc_gguf_is_pwri(g);
    /* PowerInfer's files carry no activation key: a PWRI llama is ReGLU
     * (ReluLLaMA, ProSparse), bamboo is dReLU.  Plain llama is SwiGLU. */
    snprintf(act, sizeof act, "%s", hp->is_pwri ? a->default_act_pwri : a->default_act);

    if (hc_arch_key_u32(g, path, arch, "embedding_length", -1, &hp->n_embd) ||
        hc_arch_key_u32(g, path, arch, "block_count", -1, &hp->n_layer) ||
        hc_arch_key_u32(g, path, arch, "feed_forward_length", -1, &hp->n_ff) ||
        hc_arch_key_u32(g, path, arch, "attention.head_count", -1, &hp->n_head) ||
        hc_arch_key_u32(g, path, arch, "attention.head_count_kv", hp->n_head, &hp->n_head_kv) ||
        hc_arch_key_u32(g, path, arch, "context_length", 2048, &hp->n_ctx_train))
        return -1;
    if (hp->n_embd <= 0 || hp->n_layer <= 0 || hp->n_ff <= 0 || hp->n_head <= 0 ||
        hp->n_head_kv <= 0 || hp->n_embd % hp->n_head || hp->n_head % hp->n_head_kv ||
        hp->n_layer > 4096) {
        hc_set_error("%s: inconsistent shape: n_embd %d, n_layer %d, n_ff %d, n_head %d, "
                     "n_head_kv %d",
                     path, hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head, hp->n_head_kv);
        return -1;
    }
    hp->head_dim = hp->n_embd / hp->n_head;
    if (hc_arch_key_u32(g, path, arch, "rope.dimension_count", hp->head_dim, &hp->n_rot))
        return -1;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2) {
        hc_set_error("%s: rope.dimension_count %d must be even and at most the head size %d",
                     path, hp->n_rot, hp->head_dim);
        return -1;
    }
    float scale_linear;
    if (hc_arch_key_f32(g, path, arch, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->norm_eps,
                        NULL) ||
        hc_arch_key_f32(g, path, arch, "rope.freq_base", 10000.0f, &hp->rope_freq_base, NULL) ||
        hc_arch_key_f32(g, path, arch, "rope.scale_linear", 1.0f, &scale_linear, NULL) ||
        hc_arch_key_f32(g, path, arch, "ffn_gate_shift", 0.0f, &hp->ffn_gate_shift, NULL) ||
        hc_arch_key_f32(g, path, arch, "block_input_relu_shift", 0.0f,
                        &hp->block_input_relu_shift, &has_shift))
        return -1;
    if (!(scale_linear > 0.0f) || !(hp->rope_freq_base > 0.0f) || !(hp->norm_eps > 0.0f)) {
        hc_set_error("%s: %s.%s must be positive (it is %g)", path, arch,
                     !(scale_linear > 0.0f)        ? "rope.scale_linear"
                     : !(hp->rope_freq_base > 0.0f) ? "rope.freq_base"
                                                    : "attention.layer_norm_rms_epsilon",
                     !(scale_linear > 0.0f)        ? (double)scale_linear
                     : !(hp->rope_freq_base > 0.0f) ? (double)hp->rope_freq_base
                                                    : (double)hp->norm_eps);
        return -1;
    }
    hp->rope_freq_scale = 1.0f / scale_linear;
    hp->rope_mode = HC_ROPE_NORM; /* llama GGUF files store Q/K permuted for it */
    hp->block_input_relu = has_shift;

    char key[64];
    snprintf(key, sizeof key, "%s.ffn_act", arch);
    if (hc_gguf_find_key(g, key) >= 0 && hc_gguf_get_strbuf(g, key, act, sizeof act)) {
        hc_set_error("%s: key %s is not a string", path, key);
        return -1;
    }
    hp->ffn_act = hc_ffn_act_parse(act);
    if (hp->ffn_act < 0) {
        hc_set_error("%s: unknown FFN activation %s = '%s' (supported: silu, relu, drelu)", path,
                     key, act);
        return -1;
    }
    if (hp->ffn_act == HC_GLU_SILU && hp->ffn_gate_shift != 0.0f) {
        hc_set_error("%s: %s.ffn_gate_shift is only defined for relu FFNs", path, arch);
        return -1;
    }
    /* The vocabulary is token_embd's rows. */
    const hc_gguf_tensor *emb = hc_gguf_find_tensor(g, "token_embd.weight");
    if (!emb || emb->n_dims != 2) {
        hc_set_error("%s: tensor 'token_embd.weight' is %s", path,
                     emb ? "not a matrix" : "missing");
        return -1;
    }
    if (emb->ne[1] > (uint64_t)INT32_MAX) {
        hc_set_error("%s: vocabulary of %llu tokens is too large", path,
                     (unsigned long long)emb->ne[1]);
        return -1;
    }
    hp->n_vocab = (int)emb->ne[1];
    return 0;
}

/* ---- the forward pass --------------------------------------------------------- */

/* xn = norm(x) * w, then relu(xn - shift) in relu2M-style models. */
static int block_input(hc_context *c, const hc_hparams *hp, const hc_weight *norm)
{
    if (hc_exec_rmsnorm(c, HC_ACT_X, norm, HC_ACT_XN, hp->norm_eps))
        return -1;
    if (hp->block_input_relu)
        return hc_exec_unary(c, HC_UNARY_RELU_SHIFT, HC_ACT_XN, HC_ACT_XN,
                             hp->block_input_relu_shift);
    return 0;
}

static int forward(hc_context *c, const hc_model *m, const int32_t *tokens, int n, float *logits)
{
    const hc_hparams *hp = &m->hp;
    const float kq_scale = 1.0f / sqrtf((float)hp->head_dim);

    /* x = the tokens' embeddings, starting where layer 0's attention runs. */
    if (hc_exec_embed(c, &m->tok_embd, tokens, n, m->layers[0].attn_gpu))
        return -1;

    for (int il = 0; il < hp->n_layer; il++) {
        const hc_layer *l = &m->layers[il];

        /* Attention, where its weights and KV cache are:
         *   xn = norm(x); q, k, v = wq.xn, wk.xn, wv.xn; rope(q), rope(k);
         *   x += wo . attention(q, K, V). */
        if (hc_exec_to(c, l->attn_gpu) || block_input(c, hp, &l->attn_norm) ||
            hc_exec_qkv(c, &l->wq, &l->wk, &l->wv, il) || hc_exec_rope_qk(c, il) ||
            hc_exec_attention(c, il, HC_ACT_ATT, kq_scale) ||
            hc_exec_matmul(c, &l->wo, HC_ACT_ATT, HC_ACT_O) || hc_exec_add(c, HC_ACT_X, HC_ACT_O))
            return -1;

        /* FFN, over the neurons that fire:
         *   xn = norm(x); x += down . act(gate.xn, up.xn). */
        if (hc_exec_to(c, hc_ffn_home(c, l)) || block_input(c, hp, &l->ffn_norm) ||
            hc_exec_sparse_ffn(c, l, il))
            return -1;
    }

    /* logits = output . norm(x), the last token's (every token's for
     * hc_context_eval_all), with the final norm plain. */
    if (!logits)
        return 0;
    if (hc_exec_to(c, m->output_gpu) || hc_exec_rmsnorm_last(c, &m->output_norm, hp->norm_eps) ||
        hc_exec_logits(c, &m->output, logits))
        return -1;
    return 0;
}

/* ---- the architectures ------------------------------------------------------------ */

#define N_OF(a) (int)(sizeof(a) / sizeof((a)[0]))

const hc_arch hc_arch_llama = {"llama",       "silu",        "relu",
                               read_hparams,  model_tensors, N_OF(model_tensors),
                               layer_tensors, N_OF(layer_tensors), forward};

const hc_arch hc_arch_bamboo = {"bamboo",      "relu_both",   "relu_both",
                                read_hparams,  model_tensors, N_OF(model_tensors),
                                layer_tensors, N_OF(layer_tensors), forward};

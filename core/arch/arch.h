/*
 * What an architecture gives the runtime (internal): the hyper-parameters it
 * reads from GGUF metadata, one table of the tensors it has, and its forward
 * recipe.  One file per architecture fills an hc_arch (arch/llama.c);
 * arch/registry.h finds it by general.architecture.
 *
 * The tensor table is the only list of weights: loading, freeing and GPU
 * placement (runtime/model_load.c, runtime/model_place.c), `hotcold pack`
 * and `hotcold mkmodel` walk it.  Ids name the tensors any architecture may
 * have (runtime/model.h keeps one hc_weight per id); a table says which of
 * them its architecture uses, under which name, in which shape.
 */
#ifndef HC_CORE_ARCH_H
#define HC_CORE_ARCH_H

#include "format/gguf.h"
#include "hotcold/hotcold.h"

typedef struct hc_hparams {
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_rot, n_ctx_train;
    float norm_eps;
    float rope_freq_base, rope_freq_scale;
    int rope_mode;            /* hc_rope_mode */
    int ffn_act;              /* hc_glu_act */
    float ffn_gate_shift;     /* h = act(gate - shift) * up */
    int block_input_relu;     /* attention/FFN inputs are relu(norm(x) - shift) */
    float block_input_relu_shift;
    int is_pwri;              /* PowerInfer file: ffn_down_t and predictors */
    int has_predictor;        /* every layer has fc1/fc2 */
    int sparse;               /* hc_sparse_mode in effect (never AUTO) */
    float sparse_threshold;   /* predicted active iff logit >= this */
    int max_pred_rank;        /* largest H_i */
} hc_hparams;

/* A layer's tensors, whatever the architecture (hc_layer's fields, in this
 * order). */
typedef enum hc_layer_tensor {
    HC_T_ATTN_NORM, HC_T_WQ, HC_T_WK, HC_T_WV, HC_T_WO,
    HC_T_FFN_NORM, HC_T_FFN_GATE, HC_T_FFN_UP, HC_T_FFN_DOWN, HC_T_FFN_DOWN_T,
    HC_T_FC1, HC_T_FC2,
    HC_T_LAYER_COUNT
} hc_layer_tensor;

/* The model's own tensors (hc_model's fields, in this order). */
typedef enum hc_model_tensor {
    HC_M_TOK_EMBD, HC_M_OUTPUT_NORM, HC_M_OUTPUT,
    HC_M_COUNT
} hc_model_tensor;

/* A tensor dimension in terms of the hyper-parameters. */
typedef enum hc_dim {
    HC_DIM_ONE,    /* rows of a vector */
    HC_DIM_EMBD,   /* n_embd */
    HC_DIM_KV,     /* n_head_kv * head_dim */
    HC_DIM_FF,     /* n_ff */
    HC_DIM_VOCAB,  /* n_vocab */
    HC_DIM_RANK    /* the layer's predictor rank H: the first tensor that has it
                      takes it from the file, the others must match */
} hc_dim;

/* When a tensor must be in the file. */
typedef enum hc_presence {
    HC_REQUIRED,
    HC_OPTIONAL,
    HC_UNLESS,     /* required unless `other` is in the file (then not read) */
    HC_WITH,       /* optional, but present when `other` is (and the reverse) */
    HC_OR_TIED     /* when absent, `other` serves (a tied output head) */
} hc_presence;

/* The block a tensor belongs to: what GPU placement does with it. */
typedef enum hc_block {
    HC_BLOCK_MODEL, /* embedding, output head */
    HC_BLOCK_ATTN,  /* attention (its norm included) */
    HC_BLOCK_FFN,   /* the FFN, split by neuron (its norm included) */
    HC_BLOCK_PRED   /* the FFN's activation predictor */
} hc_block;

/* Flags of a tensor. */
enum {
    HC_TF_AXPY = 1u << 0 /* summed by axpy_rows, which has no Q6_K kernel */
};

typedef struct hc_tensor_spec {
    int id;                 /* hc_layer_tensor (layer table) or hc_model_tensor */
    const char *name;       /* "attn_q.weight": the file's blk.<i>.attn_q.weight (biases,
                               "attn_norm.bias", are tensors of their own) */
    hc_dim cols, rows;      /* cols is GGUF's contiguous ne0; rows ONE: a vector */
    hc_presence presence;
    int other;              /* the id `presence` refers to */
    hc_block block;
    unsigned flags;         /* HC_TF_* */
} hc_tensor_spec;

/* The forward recipe: tokens [0, n) at positions n_past.. of context c, and,
 * if logits is not NULL, the last token's logits (core/exec/exec.h has the
 * steps it calls). */
typedef int (*hc_forward_fn)(hc_context *c, const hc_model *m, const int32_t *tokens, int n,
                             float *logits);

typedef struct hc_arch {
    const char *name;                      /* general.architecture */
    /* The FFN activation when <arch>.ffn_act is absent, for plain GGUF and
     * for PowerInfer (PWRI) files. */
    const char *default_act, *default_act_pwri;
    /* Hyper-parameters from the file's metadata (n_vocab from token_embd);
     * errors name `path`.  0 or -1. */
    int (*read_hparams)(const struct hc_arch *a, const hc_gguf *g, const char *path,
                        hc_hparams *hp);
    const hc_tensor_spec *model_tensors;   /* in binding (= writing) order */
    int n_model_tensors;
    const hc_tensor_spec *layer_tensors;
    int n_layer_tensors;
    hc_forward_fn forward;
} hc_arch;

/* Entry `id` of a table, NULL if the architecture has no such tensor. */
const hc_tensor_spec *hc_arch_layer_tensor(const hc_arch *a, int id);
/* Its name in the file, "blk.<il>.<name>" (il < 0: "<name>"), into buf. */
void hc_tensor_name(char *buf, size_t size, const hc_tensor_spec *t, int il);
/* The size of dimension d (HC_DIM_RANK: `rank`). */
int64_t hc_dim_size(const hc_hparams *hp, hc_dim d, int64_t rank);

/* An FFN activation name ("silu", "swiglu", "relu", "reglu", "relu_both",
 * "drelu") as hc_glu_act, or -1. */
int hc_ffn_act_parse(const char *name);

/* Metadata keys "<arch>.<suffix>" for read_hparams.  def < 0: required.
 * Errors name `path` and the key.  0 or -1. */
int hc_arch_key_u32(const hc_gguf *g, const char *path, const char *arch, const char *suffix,
                    int64_t def, int *out);
/* A finite float; *present (may be NULL) says whether the key exists. */
int hc_arch_key_f32(const hc_gguf *g, const char *path, const char *arch, const char *suffix,
                    float def, float *out, int *present);

#endif /* HC_CORE_ARCH_H */

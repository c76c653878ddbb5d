/*
 * A loaded model (internal): its architecture (arch/arch.h) and
 * hyper-parameters, every weight the architecture's tensor table names,
 * validated (shape, type) and placed — on the CPU device always (zero-copy
 * over the file mapping where it can), and the GPU's share when a GPU was
 * asked for — and the tokenizer.  Read-only once loaded: contexts
 * (exec/context.h) keep every piece of execution state of their own.
 * Loading is runtime/model_load.c; the GPU share runtime/model_place.c.
 */
#ifndef HC_CORE_MODEL_H
#define HC_CORE_MODEL_H

#include "arch/arch.h"
#include "exec/device.h"
#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "runtime/placement.h"
#include "runtime/tokenizer.h"

/* One weight matrix (or vector): `rows` rows of `cols` elements, cols being
 * GGUF's contiguous ne0.  `host` points into the file mapping (the embedding
 * is read there); `ref` is where the CPU device sees it (every weight,
 * zero-copy over the mapping when it can); `gref` is its copy on the GPU
 * when the placement put it there (gref.buf NULL otherwise). */
typedef struct hc_weight {
    const char *name;
    hc_type type;
    int64_t rows, cols;
    uint64_t bytes;
    const void *host;
    int from_file;      /* host lies in the file mapping (else built at load) */
    hc_ref ref;
    hc_ref gref;
} hc_weight;

/* The FFN's down projection is held one of two ways: `ffn_down` as in
 * llama GGUF ([n_embd rows][n_ff cols], used by a dense matmul) or
 * `ffn_down_t` transposed ([n_ff rows][n_embd cols]: row r is what neuron r
 * adds, used by axpy_rows).  PWRI files store only the transpose.  On a
 * plain GGUF the oracle mode keeps the dense down matmul: every activation
 * it did not compute is exactly zero there. */
typedef struct hc_layer {
    /* By name, or by hc_layer_tensor (the architecture's table). */
    union {
        struct {
            hc_weight attn_norm, wq, wk, wv, wo;
            hc_weight ffn_norm, ffn_gate, ffn_up, ffn_down, ffn_down_t;
            hc_weight fc1, fc2; /* predictor: [n_embd -> H] and [H -> n_ff] */
        };
        hc_weight w[HC_T_LAYER_COUNT];
    };
    int pred_rank;            /* H of this layer (0: none) */

    /* Placement (see core/runtime/placement.h).  The GPU holds the layer's hot
     * neurons as compact matrices: compact row j is neuron hot[j].  With
     * every neuron hot the compact matrices are the whole ones. */
    int attn_gpu, pred_gpu;   /* attention (+ its KV cache), predictor */
    int64_t n_hot;
    const int32_t *hot;       /* [n_hot] ascending ids (the plan owns them) */
    int32_t *gpu_row;         /* [n_ff] compact row of a neuron, -1 = on the CPU */
    hc_ref hot_gate, hot_up, hot_down; /* on the GPU: [n_hot] rows each; hot_down
                                          is down_t rows, or ffn_down when all hot */
    hc_ref cold_idx;          /* on the CPU: int32 ids of the CPU's neurons */
    int64_t n_cold;
} hc_layer;

struct hc_model {
    hc_engine *engine;
    hc_gguf *gguf;
    hc_tokenizer *tok;
    char path[1024];
    const hc_arch *arch;
    char arch_name[32];       /* general.architecture */
    char name[128];
    hc_hparams hp;
    union {                   /* by name, or by hc_model_tensor */
        struct {
            hc_weight tok_embd, output_norm, output;
        };
        hc_weight top[HC_M_COUNT];
    };
    hc_layer *layers;
    /* The CPU device always (it also runs the ops a GPU plugin lacks); the
     * GPU device when one was asked for (--device). */
    hc_dev cpu, gpu;
    int has_gpu;
    hc_plan *plan;            /* NULL without a GPU */
    int output_gpu;
    hc_buffer **bufs;         /* CPU buffers holding the weights */
    int n_bufs;
    hc_buffer **gbufs;        /* GPU buffers */
    int n_gbufs;
    uint64_t gpu_weight_bytes;
    char gpu_index_note[1400]; /* how the neuron split was obtained */
    uint64_t weight_bytes;    /* all tensors */
    uint32_t main_type;       /* type of the attention/FFN matrices */
};

_Static_assert(offsetof(struct hc_model, output) - offsetof(struct hc_model, tok_embd) ==
                   HC_M_OUTPUT * sizeof(hc_weight),
               "hc_model's weights are in hc_model_tensor order");
_Static_assert(offsetof(hc_layer, fc2) == HC_T_FC2 * sizeof(hc_weight) &&
                   offsetof(hc_layer, ffn_down_t) == HC_T_FFN_DOWN_T * sizeof(hc_weight),
               "hc_layer's weights are in hc_layer_tensor order");

/* A weight is present when it was bound. */
static inline int hc_weight_present(const hc_weight *w)
{
    return w->name != NULL;
}

/* fn on every weight the architecture's tables name (the model's, then each
 * layer's that are present), in table order; stops at the first -1. */
int hc_model_for_each_weight(hc_model *m, int (*fn)(hc_model *, hc_weight *));

/* Bytes of layer l's present tensors of one block, its vectors (norms)
 * counted or not.  Only one of ffn_down and ffn_down_t is bound: the down
 * projection counts once, whichever way the file stores it. */
uint64_t hc_layer_block_bytes(const hc_model *m, const hc_layer *l, hc_block block, int vectors);

/* Keep a CPU buffer with the model (freed with it); on failure frees b.
 * 0 or -1. */
int hc_model_add_buffer(hc_model *m, hc_buffer *b);

/* Place what the plan puts on the GPU (model_place.c): solve or reload the
 * split, upload, build the per-layer neuron maps.  A GPU out of memory
 * shrinks the budget and retries, down to nothing on the GPU. */
int hc_model_place_gpu(hc_model *m, const hc_model_params *p);
void hc_model_free_gpu(hc_model *m);

/* The plan itself (NULL without a GPU): for white-box tests; the public
 * API copies its figures out (hc_model_plan_info, plan_info.c) with these. */
const hc_plan *hc_model_plan(const hc_model *m);
void hc_plan_info_of(const hc_plan *p, hc_plan_info *out);
void hc_plan_layer_of(const hc_plan *p, int layer, hc_plan_layer_info *out);

/* Bytes one decoded token reads from the weights: every matrix once, one
 * embedding row.  The dense-decode memory floor is this / bandwidth. */
uint64_t hc_model_decode_bytes(const hc_model *m);

#endif /* HC_CORE_MODEL_H */

/*
 * The model object: its weight loop, buffers, the figures it reports
 * (decode bytes, description), its tokenizer, freeing.  Loading is
 * model_load.c.
 */
#include "runtime/model.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int hc_model_for_each_weight(hc_model *m, int (*fn)(hc_model *, hc_weight *))
{
    for (int i = 0; i < m->arch->n_model_tensors; i++)
        if (fn(m, &m->top[m->arch->model_tensors[i].id]))
            return -1;
    for (int il = 0; il < m->hp.n_layer; il++) {
        hc_layer *l = &m->layers[il];
        for (int i = 0; i < m->arch->n_layer_tensors; i++) {
            hc_weight *w = &l->w[m->arch->layer_tensors[i].id];
            if (hc_weight_present(w) && fn(m, w))
                return -1;
        }
    }
    return 0;
}

int hc_model_add_buffer(hc_model *m, hc_buffer *b)
{
    hc_buffer **nb = realloc(m->bufs, (size_t)(m->n_bufs + 1) * sizeof *nb);
    if (!nb) {
        hc_dev_free(&m->cpu, b);
        hc_set_error("out of memory");
        return -1;
    }
    m->bufs = nb;
    m->bufs[m->n_bufs++] = b;
    return 0;
}

int hc_model_weights_mode(const hc_model *m)
{
    if (!m || !m->gguf)
        return HC_WEIGHTS_MMAP;
    return m->gguf->mapped == 2 ? HC_WEIGHTS_READ
           : m->gguf->mapped == 3 ? HC_WEIGHTS_MOVE
                                  : HC_WEIGHTS_MMAP;
}

uint64_t hc_model_weights_wait(hc_model *m)
{
    int error;
    return m && m->gguf ? hc_gguf_move_wait(m->gguf, &error) : 0;
}

void hc_model_free(hc_model *m)
{
    if (!m)
        return;
    hc_model_free_gpu(m);
    if (m->has_gpu)
        hc_dev_close(&m->gpu);
    for (int i = 0; i < m->n_bufs; i++)
        hc_dev_free(&m->cpu, m->bufs[i]);
    free(m->bufs);
    hc_dev_close(&m->cpu);
    hc_tokenizer_free(m->tok);
    free(m->layers);
    hc_gguf_close(m->gguf);
    free(m);
}

uint64_t hc_layer_block_bytes(const hc_model *m, const hc_layer *l, hc_block block, int vectors)
{
    uint64_t b = 0;
    for (int i = 0; i < m->arch->n_layer_tensors; i++) {
        const hc_tensor_spec *t = &m->arch->layer_tensors[i];
        if (t->block == block && (vectors || t->rows != HC_DIM_ONE))
            b += l->w[t->id].bytes;
    }
    return b;
}

uint64_t hc_model_decode_bytes(const hc_model *m)
{
    uint64_t b = m->tok_embd.bytes / (uint64_t)m->hp.n_vocab + m->output_norm.bytes +
                 m->output.bytes;
    for (int il = 0; il < m->hp.n_layer; il++)
        b += hc_layer_block_bytes(m, &m->layers[il], HC_BLOCK_ATTN, 1) +
             hc_layer_block_bytes(m, &m->layers[il], HC_BLOCK_FFN, 1);
    return b;
}

void hc_model_describe(const hc_model *m, hc_model_desc *out)
{
    memset(out, 0, sizeof *out);
    if (!m) {
        out->arch = out->name = ""; /* no model: an empty description, not a crash */
        return;
    }
    out->arch = m->arch_name;
    out->name = m->name;
    out->n_vocab = m->hp.n_vocab;
    out->n_embd = m->hp.n_embd;
    out->n_layer = m->hp.n_layer;
    out->n_head = m->hp.n_head;
    out->n_head_kv = m->hp.n_head_kv;
    out->n_ff = m->hp.n_ff;
    out->n_ctx_train = m->hp.n_ctx_train;
    out->n_rot = m->hp.n_rot;
    out->weight_type = m->main_type;
    out->weight_bytes = m->weight_bytes;
    out->decode_bytes = hc_model_decode_bytes(m);
    for (int il = 0; il < m->hp.n_layer; il++) {
        out->ffn_bytes += hc_layer_block_bytes(m, &m->layers[il], HC_BLOCK_FFN, 0);
        out->predictor_bytes += hc_layer_block_bytes(m, &m->layers[il], HC_BLOCK_PRED, 1);
    }
    out->is_pwri = m->hp.is_pwri;
    out->has_predictor = m->hp.has_predictor;
    out->sparse = m->hp.sparse;
    out->sparse_threshold = m->hp.sparse_threshold;
    out->relu_ffn = m->hp.ffn_act != HC_GLU_SILU;
}


int hc_model_token_bos(const hc_model *m)
{
    return hc_tokenizer_bos(m->tok);
}

int hc_model_token_eos(const hc_model *m)
{
    return hc_tokenizer_eos(m->tok);
}

int hc_model_tokenize(const hc_model *m, const char *text, size_t len, int add_bos,
                      int32_t *ids, int max)
{
    return hc_tokenizer_encode(m->tok, text, len, add_bos, ids, max);
}

int hc_model_token_piece(const hc_model *m, int32_t id, char *buf, int bufsize)
{
    return hc_tokenizer_piece(m->tok, id, buf, bufsize);
}

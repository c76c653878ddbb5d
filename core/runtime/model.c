/*
 * Model loading: read hyper-parameters, validate every tensor the forward
 * pass will touch (presence, shape, type), and place the weights on the
 * chosen device — zero-copy over the file mapping when the device can wrap
 * host memory (the CPU plugin), uploaded otherwise.
 */
#include "runtime/model.h"
#include "util/clock.h"
#include "util/hugemem.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ref/ref.h"
#include "util/log.h"

/* Architectures whose forward pass is the llama one.  bamboo (PowerInfer's
 * Bamboo, Mistral-style attention) differs only in its dReLU FFN. */
static const char *const supported_arch[] = {"llama", "bamboo"};

/* Types every op the forward pass uses has kernels for, except Q6_K's
 * axpy_rows (see bind_layer). */
static int is_computable(uint32_t type)
{
    return type == HC_TYPE_F32 || type == HC_TYPE_F16 || type == HC_TYPE_Q8_0 ||
           type == HC_TYPE_Q4_0 || type == HC_TYPE_Q6_K;
}

/* Look up "<arch>.<suffix>" as u32; `def` < 0 means required. */
static int arch_u32(const hc_model *m, const char *suffix, int64_t def, int *out)
{
    char key[128];
    uint32_t v;
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    if (hc_gguf_get_u32(m->gguf, key, &v) == 0) {
        if (v > (uint32_t)INT32_MAX) {
            hc_set_error("%s: key %s = %u is out of range", m->path, key, v);
            return -1;
        }
        *out = (int)v;
        return 0;
    }
    if (hc_gguf_find_key(m->gguf, key) >= 0) {
        hc_set_error("%s: key %s is not an unsigned integer", m->path, key);
        return -1;
    }
    if (def < 0) {
        hc_set_error("%s: required key %s is missing", m->path, key);
        return -1;
    }
    *out = (int)def;
    return 0;
}

/* "<arch>.<suffix>" as f32; *present says whether the key exists. */
static int arch_f32(const hc_model *m, const char *suffix, float def, float *out, int *present)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    if (present)
        *present = 0;
    if (hc_gguf_find_key(m->gguf, key) < 0) {
        *out = def;
        return 0;
    }
    if (hc_gguf_get_f32(m->gguf, key, out)) {
        hc_set_error("%s: key %s is not a float", m->path, key);
        return -1;
    }
    /* No hyperparameter has a meaning at NaN or infinity: such a file would
     * decode garbage without a word. */
    if (!isfinite(*out)) {
        hc_set_error("%s: key %s is %g; it must be a finite number", m->path, key, (double)*out);
        return -1;
    }
    if (present)
        *present = 1;
    return 0;
}

static int read_hparams(hc_model *m)
{
    hc_hparams *hp = &m->hp;
    char act[32] = "silu";
    int has_shift = 0;

    if (hc_gguf_get_strbuf(m->gguf, "general.architecture", m->arch, sizeof m->arch)) {
        hc_set_error("%s: key general.architecture is missing", m->path);
        return -1;
    }
    int known = 0;
    for (size_t i = 0; i < sizeof supported_arch / sizeof supported_arch[0]; i++)
        known |= !strcmp(m->arch, supported_arch[i]);
    if (!known) {
        hc_set_error("%s: unknown architecture '%s' (supported: llama, bamboo)", m->path, m->arch);
        return -1;
    }
    hp->is_pwri = hc_gguf_is_pwri(m->gguf);
    /* PowerInfer's files carry no activation key: a PWRI llama is ReGLU
     * (ReluLLaMA, ProSparse), bamboo is dReLU.  Plain llama is SwiGLU. */
    if (!strcmp(m->arch, "bamboo"))
        snprintf(act, sizeof act, "relu_both");
    else if (hp->is_pwri)
        snprintf(act, sizeof act, "relu");
    if (hc_gguf_get_strbuf(m->gguf, "general.name", m->name, sizeof m->name))
        snprintf(m->name, sizeof m->name, "%s", m->arch);

    if (arch_u32(m, "embedding_length", -1, &hp->n_embd) ||
        arch_u32(m, "block_count", -1, &hp->n_layer) ||
        arch_u32(m, "feed_forward_length", -1, &hp->n_ff) ||
        arch_u32(m, "attention.head_count", -1, &hp->n_head) ||
        arch_u32(m, "attention.head_count_kv", hp->n_head, &hp->n_head_kv) ||
        arch_u32(m, "context_length", 2048, &hp->n_ctx_train))
        return -1;
    if (hp->n_embd <= 0 || hp->n_layer <= 0 || hp->n_ff <= 0 || hp->n_head <= 0 ||
        hp->n_head_kv <= 0 || hp->n_embd % hp->n_head || hp->n_head % hp->n_head_kv ||
        hp->n_layer > 4096) {
        hc_set_error("%s: inconsistent shape: n_embd %d, n_layer %d, n_ff %d, n_head %d, "
                     "n_head_kv %d",
                     m->path, hp->n_embd, hp->n_layer, hp->n_ff, hp->n_head, hp->n_head_kv);
        return -1;
    }
    hp->head_dim = hp->n_embd / hp->n_head;
    if (arch_u32(m, "rope.dimension_count", hp->head_dim, &hp->n_rot))
        return -1;
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2) {
        hc_set_error("%s: rope.dimension_count %d must be even and at most the head size %d",
                     m->path, hp->n_rot, hp->head_dim);
        return -1;
    }
    float scale_linear;
    if (arch_f32(m, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->norm_eps, NULL) ||
        arch_f32(m, "rope.freq_base", 10000.0f, &hp->rope_freq_base, NULL) ||
        arch_f32(m, "rope.scale_linear", 1.0f, &scale_linear, NULL) ||
        arch_f32(m, "ffn_gate_shift", 0.0f, &hp->ffn_gate_shift, NULL) ||
        arch_f32(m, "block_input_relu_shift", 0.0f, &hp->block_input_relu_shift, &has_shift))
        return -1;
    if (!(scale_linear > 0.0f) || !(hp->rope_freq_base > 0.0f) || !(hp->norm_eps > 0.0f)) {
        hc_set_error("%s: %s.%s must be positive (it is %g)", m->path, m->arch,
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
    snprintf(key, sizeof key, "%s.ffn_act", m->arch);
    if (hc_gguf_find_key(m->gguf, key) >= 0 && hc_gguf_get_strbuf(m->gguf, key, act, sizeof act)) {
        hc_set_error("%s: key %s is not a string", m->path, key);
        return -1;
    }
    if (!strcmp(act, "silu") || !strcmp(act, "swiglu"))
        hp->ffn_act = HC_GLU_SILU;
    else if (!strcmp(act, "relu") || !strcmp(act, "reglu"))
        hp->ffn_act = HC_GLU_RELU;
    else if (!strcmp(act, "relu_both") || !strcmp(act, "drelu"))
        hp->ffn_act = HC_GLU_RELU_BOTH;
    else {
        hc_set_error("%s: unknown FFN activation %s = '%s' (supported: silu, relu, drelu)",
                     m->path, key, act);
        return -1;
    }
    if (hp->ffn_act == HC_GLU_SILU && hp->ffn_gate_shift != 0.0f) {
        hc_set_error("%s: %s.ffn_gate_shift is only defined for relu FFNs", m->path, m->arch);
        return -1;
    }
    return 0;
}

/* Find tensor `name`, check it is [cols, rows] (ggml order; rows = 1 for a
 * vector) and of a type we compute, and fill w. */
static int bind(hc_model *m, hc_weight *w, const char *name, int64_t cols, int64_t rows,
                int vector)
{
    const hc_gguf_tensor *t = hc_gguf_find_tensor(m->gguf, name);
    if (!t) {
        hc_set_error("%s: tensor '%s' is missing", m->path, name);
        return -1;
    }
    int dims_ok = vector ? (t->n_dims == 1 && (int64_t)t->ne[0] == cols)
                         : (t->n_dims == 2 && (int64_t)t->ne[0] == cols &&
                            (int64_t)t->ne[1] == rows);
    if (!dims_ok) {
        char got[96] = "";
        size_t len = 0;
        for (uint32_t i = 0; i < t->n_dims && len < sizeof got; i++)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%llu", i ? ", " : "",
                                    (unsigned long long)t->ne[i]);
        if (vector)
            hc_set_error("%s: tensor '%s' has shape [%s], expected [%lld]", m->path, name, got,
                         (long long)cols);
        else
            hc_set_error("%s: tensor '%s' has shape [%s], expected [%lld, %lld]", m->path, name,
                         got, (long long)cols, (long long)rows);
        return -1;
    }
    if (!is_computable(t->type)) {
        hc_set_error("%s: tensor '%s' has type %s, which hotcold cannot compute (supported: "
                     "f32, f16, q8_0, q4_0, q6_k)",
                     m->path, name, hc_ggml_type_name(t->type));
        return -1;
    }
    if (vector && t->type != HC_TYPE_F32) {
        hc_set_error("%s: tensor '%s' is %s; norm weights must be f32", m->path, name,
                     hc_ggml_type_name(t->type));
        return -1;
    }
    w->name = t->name;
    w->type = (hc_type)t->type;
    w->cols = cols;
    w->rows = vector ? 1 : rows;
    w->bytes = t->n_bytes;
    w->host = t->data;
    w->from_file = 1;
    w->ref.off = t->offset; /* relative to the data section; rebased in place_weights */
    return 0;
}

/* A matrix of `cols` columns whose row count is whatever the file says
 * (predictor ranks differ per layer). */
static int bind_any_rows(hc_model *m, hc_weight *w, const char *name, int64_t cols)
{
    const hc_gguf_tensor *t = hc_gguf_find_tensor(m->gguf, name);
    int64_t rows = t && t->n_dims == 2 && t->ne[1] <= (1u << 24) ? (int64_t)t->ne[1] : -1;
    return bind(m, w, name, cols, rows, 0);
}

static int bind_layer(hc_model *m, int il)
{
    const hc_hparams *hp = &m->hp;
    hc_layer *l = &m->layers[il];
    const int64_t e = hp->n_embd, kv = (int64_t)hp->n_head_kv * hp->head_dim, ff = hp->n_ff;
    char n[12][64];
    static const char *const suffix[12] = {"attn_norm", "attn_q",   "attn_k",     "attn_v",
                                           "attn_output", "ffn_norm", "ffn_gate", "ffn_up",
                                           "ffn_down",  "ffn_down_t", "fc1",      "fc2"};
    for (int i = 0; i < 12; i++)
        snprintf(n[i], sizeof n[i], "blk.%d.%s.weight", il, suffix[i]);
    if (bind(m, &l->attn_norm, n[0], e, 1, 1) || bind(m, &l->wq, n[1], e, e, 0) ||
        bind(m, &l->wk, n[2], e, kv, 0) || bind(m, &l->wv, n[3], e, kv, 0) ||
        bind(m, &l->wo, n[4], e, e, 0) || bind(m, &l->ffn_norm, n[5], e, 1, 1) ||
        bind(m, &l->ffn_gate, n[6], e, ff, 0) || bind(m, &l->ffn_up, n[7], e, ff, 0))
        return -1;
    /* PWRI stores the down projection transposed and only that way.  Its
     * rows are summed by axpy_rows, which has no Q6_K kernel (Q6_K is
     * PowerInfer's output-head type; the plugins compute it in matmul and
     * matvec_rows only). */
    if (hc_gguf_find_tensor(m->gguf, n[9])) {
        if (bind(m, &l->ffn_down_t, n[9], e, ff, 0))
            return -1;
        if (l->ffn_down_t.type == HC_TYPE_Q6_K) {
            hc_set_error("%s: tensor '%s' is q6_k, which hotcold computes only in dense "
                         "products; the transposed down projection needs axpy_rows, which "
                         "has no q6_k kernel (convert the file with hotcold quantize, e.g. "
                         "to q8_0)",
                         m->path, n[9]);
            return -1;
        }
    } else if (bind(m, &l->ffn_down, n[8], ff, e, 0)) {
        return -1;
    }
    if (hc_gguf_find_tensor(m->gguf, n[10]) || hc_gguf_find_tensor(m->gguf, n[11])) {
        if (bind_any_rows(m, &l->fc1, n[10], e))
            return -1;
        l->pred_rank = (int)l->fc1.rows;
        if (bind(m, &l->fc2, n[11], l->pred_rank, ff, 0))
            return -1;
    }
    return 0;
}

static int bind_all(hc_model *m)
{
    hc_hparams *hp = &m->hp;
    const hc_gguf_tensor *emb = hc_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!emb || emb->n_dims != 2) {
        hc_set_error("%s: tensor 'token_embd.weight' is %s", m->path,
                     emb ? "not a matrix" : "missing");
        return -1;
    }
    if (emb->ne[1] > (uint64_t)INT32_MAX) {
        hc_set_error("%s: vocabulary of %llu tokens is too large", m->path,
                     (unsigned long long)emb->ne[1]);
        return -1;
    }
    hp->n_vocab = (int)emb->ne[1];
    if (bind(m, &m->tok_embd, "token_embd.weight", hp->n_embd, hp->n_vocab, 0) ||
        bind(m, &m->output_norm, "output_norm.weight", hp->n_embd, 1, 1))
        return -1;
    /* Tied embeddings: without output.weight the head reuses token_embd. */
    if (hc_gguf_find_tensor(m->gguf, "output.weight")) {
        if (bind(m, &m->output, "output.weight", hp->n_embd, hp->n_vocab, 0))
            return -1;
    } else {
        m->output = m->tok_embd;
    }
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        hc_set_error("%s: out of memory", m->path);
        return -1;
    }
    int with_pred = 0;
    for (int il = 0; il < hp->n_layer; il++) {
        if (bind_layer(m, il))
            return -1;
        with_pred += m->layers[il].pred_rank > 0;
        if (m->layers[il].pred_rank > hp->max_pred_rank)
            hp->max_pred_rank = m->layers[il].pred_rank;
    }
    if (with_pred != 0 && with_pred != hp->n_layer) {
        hc_set_error("%s: only %d of %d layers have predictors (blk.N.fc1/fc2.weight)", m->path,
                     with_pred, hp->n_layer);
        return -1;
    }
    hp->has_predictor = with_pred == hp->n_layer;
    m->main_type = m->layers[0].ffn_up.type;
    return 0;
}

/* Threshold: explicit parameter, else $LLAMA_SPARSE_PRED_THRESHOLD (the name
 * PowerInfer users know), else the file's powerinfer.sparse_threshold.  Each
 * source must give a number within HC_SPARSE_THRESHOLD_LIMIT: predictor
 * logits are O(10), so a larger cut-off (or NaN, or infinity) is a mistake
 * that would switch every neuron on or off. */
static int resolve_threshold(hc_model *m, float param)
{
    const char *env = getenv("LLAMA_SPARSE_PRED_THRESHOLD");
    const char *source = "the sparse_threshold parameter", *file = "";
    float v = param;
    if (isnan(param) && env && *env) {
        char *end;
        errno = 0;
        v = strtof(env, &end);
        source = "LLAMA_SPARSE_PRED_THRESHOLD";
        if (errno || end == env || *end) {
            hc_set_error("LLAMA_SPARSE_PRED_THRESHOLD='%s' is not a number", env);
            return -1;
        }
    } else if (isnan(param)) {
        v = 0.0f;
        source = "powerinfer.sparse_threshold";
        file = m->path;
        if (hc_gguf_find_key(m->gguf, source) >= 0 && hc_gguf_get_f32(m->gguf, source, &v)) {
            hc_set_error("%s: powerinfer.sparse_threshold is not a float", m->path);
            return -1;
        }
    }
    if (!(fabsf(v) <= HC_SPARSE_THRESHOLD_LIMIT)) {
        hc_set_error("%s%s%s is %g; a sparse threshold must be a number in [-%g, %g]", file,
                     *file ? ": " : "", source, (double)v, (double)HC_SPARSE_THRESHOLD_LIMIT,
                     (double)HC_SPARSE_THRESHOLD_LIMIT);
        return -1;
    }
    m->hp.sparse_threshold = v;
    return 0;
}

static int resolve_sparse_mode(hc_model *m, int requested)
{
    hc_hparams *hp = &m->hp;
    static const char *const names[] = {"auto", "off", "oracle", "predictor"};
    if (requested < HC_SPARSE_AUTO || requested > HC_SPARSE_PREDICTOR) {
        hc_set_error("unknown sparse mode %d", requested);
        return -1;
    }
    if (requested == HC_SPARSE_AUTO)
        requested = hp->has_predictor ? HC_SPARSE_PREDICTOR : HC_SPARSE_OFF;
    if (requested == HC_SPARSE_PREDICTOR && !hp->has_predictor) {
        hc_set_error("%s: --sparse predictor needs predictors (blk.N.fc1/fc2.weight), which this "
                     "file lacks; use --sparse oracle, or make them with hotcold "
                     "train-predictor and hotcold pack",
                     m->path);
        return -1;
    }
    /* Predicted rows leave the other activations undefined, so the down
     * projection must be summed over the listed rows only (down^T). */
    for (int il = 0; requested == HC_SPARSE_PREDICTOR && il < hp->n_layer; il++)
        if (!hc_weight_present(&m->layers[il].ffn_down_t)) {
            hc_set_error("%s: --sparse predictor needs blk.%d.ffn_down_t.weight (the down "
                         "projection transposed, as hotcold pack writes it)",
                         m->path, il);
            return -1;
        }
    if (requested != HC_SPARSE_OFF && hp->ffn_act == HC_GLU_SILU) {
        hc_set_error("%s: --sparse %s needs a ReLU-family FFN; this model's SwiGLU activation "
                     "is never exactly zero",
                     m->path, names[requested]);
        return -1;
    }
    hp->sparse = requested;
    return 0;
}

/* Every weight of the model, for loops that treat them alike. */
static int for_each_weight(hc_model *m, int (*fn)(hc_model *, hc_weight *))
{
    hc_weight *top[3] = {&m->tok_embd, &m->output_norm, &m->output};
    for (int i = 0; i < 3; i++)
        if (fn(m, top[i]))
            return -1;
    for (int il = 0; il < m->hp.n_layer; il++) {
        hc_layer *l = &m->layers[il];
        hc_weight *w[12] = {&l->attn_norm, &l->wq,       &l->wk,       &l->wv,
                            &l->wo,        &l->ffn_norm, &l->ffn_gate, &l->ffn_up,
                            &l->ffn_down,  &l->ffn_down_t, &l->fc1,    &l->fc2};
        for (int i = 0; i < 12; i++)
            if (hc_weight_present(w[i]) && fn(m, w[i]))
                return -1;
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

/* Upload one weight to its own device buffer (devices that cannot wrap host
 * memory).  Tied output shares the embedding's buffer. */
static int upload_weight(hc_model *m, hc_weight *w)
{
    if (w->ref.buf)
        return 0;
    if (w == &m->output && m->output.host == m->tok_embd.host) {
        w->ref = m->tok_embd.ref;
        return 0;
    }
    hc_buffer *b;
    if (hc_dev_buffer_from_host(&m->cpu, w->host, w->bytes, &b) || hc_model_add_buffer(m, b))
        return -1;
    w->ref.buf = b;
    w->ref.off = 0;
    return 0;
}

/* Weights in the file live in the one wrapped buffer at their file
 * offsets; weights built at load get buffers of their own. */
static int rebase_weight(hc_model *m, hc_weight *w)
{
    if (!w->from_file)
        return upload_weight(m, w);
    w->ref.buf = m->bufs[0];
    return 0;
}

static int place_weights(hc_model *m)
{
    const hc_gguf *g = m->gguf;
    uint64_t data_bytes = g->file_size - g->data_offset;
    if ((m->cpu.info.caps & HC_CAP_WRAP_HOST) && HC_DEV_HAS(&m->cpu, buffer_wrap_host)) {
        /* Zero copy: one buffer over the whole data section; tensor offsets
         * inside it are the file's own. */
        hc_buffer *b;
        if (hc_dev_buffer_from_host(&m->cpu, g->base + g->data_offset, data_bytes, &b) ||
            hc_model_add_buffer(m, b))
            return -1;
        return for_each_weight(m, rebase_weight);
    }
    return for_each_weight(m, upload_weight);
}

static void on_read_progress(void *user, uint64_t done, uint64_t total)
{
    const hc_model_params *p = user;
    p->progress(p->progress_user, "reading", done, total);
}

/* Maps the file, or reads it into huge-page memory (hc_weights_mode). */
static hc_gguf *open_weights(const char *path, const hc_model_params *p, char *err, size_t errlen)
{
    int resident = p->weights == HC_WEIGHTS_READ;
    const char *why = resident ? "asked for" : "asked to map";
    struct stat st;
    if (p->weights == HC_WEIGHTS_AUTO) {
        uint64_t avail = 0;
        if (strcmp(p->device, "cpu") != 0)
            why = "a GPU takes a share";
        else if (!hc_huge_pages_enabled())
            why = "no transparent huge pages";
        else if (stat(path, &st) != 0 || (avail = hc_mem_available()) == 0 ||
                 (uint64_t)st.st_size > avail / 2)
            why = "the file needs more than half the available memory";
        else
            resident = 1, why = "CPU only";
    }
    const double t0 = hc_time_s();
    hc_gguf *g = resident ? hc_gguf_open_resident(path, p->progress ? on_read_progress : NULL,
                                                  (void *)p, err, errlen)
                          : hc_gguf_open(path, err, errlen);
    if (g && resident)
        HC_INFO("%s: weights read into %.0f MiB of huge-page memory in %.2f s (%s; --mmap maps "
                "the file instead)", path, (double)g->file_size / 1048576.0, hc_time_s() - t0, why);
    else if (g)
        HC_INFO("%s: weights mapped from the file (%s)", path, why);
    return g;
}

int hc_model_weights_mode(const hc_model *m)
{
    return m && m->gguf && m->gguf->mapped == 2 ? HC_WEIGHTS_READ : HC_WEIGHTS_MMAP;
}

hc_model_params hc_model_default_params(void)
{
    hc_model_params p = {sizeof p, "cpu", HC_SPARSE_AUTO, NAN, -1.0, HC_GPU_INDEX_USE, NULL, 0,
                         HC_WEIGHTS_AUTO, NULL, NULL};
    return p;
}

hc_model *hc_model_load(hc_engine *e, const char *path, const hc_model_params *params)
{
    hc_model_params p = hc_model_default_params();
    char err[512];
    if (params) {
        if (params->size == 0) {
            hc_set_error("hc_model_load: params.size is 0 (start from hc_model_default_params())");
            return NULL;
        }
        /* Take the fields the caller's (possibly older, shorter) struct has. */
        memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
        p.size = sizeof p;
        if (!p.device)
            p.device = "cpu";
    }
    hc_model *m = calloc(1, sizeof *m);
    if (!m) {
        hc_set_error("out of memory");
        return NULL;
    }
    m->engine = e;
    snprintf(m->path, sizeof m->path, "%s", path);
    m->gguf = open_weights(path, &p, err, sizeof err);
    if (!m->gguf) {
        hc_set_error("%s", err);
        goto fail;
    }
    m->weight_bytes = m->gguf->file_size - m->gguf->data_offset;
    if (read_hparams(m) || bind_all(m) || resolve_threshold(m, p.sparse_threshold) ||
        resolve_sparse_mode(m, p.sparse))
        goto fail;
    m->tok = hc_tokenizer_load(m->gguf);
    if (!m->tok)
        goto fail;
    if (hc_tokenizer_n_vocab(m->tok) != m->hp.n_vocab) {
        hc_set_error("%s: the tokenizer has %d tokens but token_embd has %d rows", m->path,
                     hc_tokenizer_n_vocab(m->tok), m->hp.n_vocab);
        goto fail;
    }
    /* The CPU device holds every weight (zero-copy where it can) and runs
     * whatever the GPU does not; a GPU takes its share on top. */
    int cpu = hc_engine_find_device(e, "cpu");
    if (cpu < 0) {
        char why[1024]; /* what became of the cpu plugins, from the engine */
        snprintf(why, sizeof why, "%s", hc_last_error());
        hc_set_error("a model needs the CPU device: %s", why);
        goto fail;
    }
    if (hc_dev_open(&m->cpu, e, cpu) || place_weights(m))
        goto fail;
    if (strcmp(p.device, "cpu") != 0 && strcmp(p.device, "cpu:0") != 0) {
        int gpu = hc_engine_find_device(e, p.device);
        if (gpu < 0)
            goto fail; /* the engine said why there is no such device */
        if (hc_dev_open(&m->gpu, e, gpu))
            goto fail;
        if (m->gpu.info.kind == HC_DEVICE_SOFT)
            HC_WARN("%s (%s) is a software rasteriser: it runs on the CPU, so expect it to be "
                    "slower than the CPU device alone",
                    m->gpu.label, m->gpu.info.name);
        m->has_gpu = 1;
        m->gpu.host = &m->cpu;
        if (hc_model_place_gpu(m, &p))
            goto fail;
    }
    return m;
fail:
    hc_model_free(m);
    return NULL;
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

/* Bytes of one layer's FFN matrices as the file holds them (down counted
 * once, whichever way it is stored). */
static uint64_t layer_ffn_bytes(const hc_layer *l)
{
    const hc_weight *down = l->ffn_down_t.from_file || !hc_weight_present(&l->ffn_down)
                                ? &l->ffn_down_t
                                : &l->ffn_down;
    return l->ffn_gate.bytes + l->ffn_up.bytes + down->bytes;
}

uint64_t hc_model_decode_bytes(const hc_model *m)
{
    uint64_t b = m->tok_embd.bytes / (uint64_t)m->hp.n_vocab + m->output_norm.bytes +
                 m->output.bytes;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const hc_layer *l = &m->layers[il];
        b += l->attn_norm.bytes + l->wq.bytes + l->wk.bytes + l->wv.bytes + l->wo.bytes +
             l->ffn_norm.bytes + layer_ffn_bytes(l);
    }
    return b;
}

void hc_model_describe(const hc_model *m, hc_model_desc *out)
{
    memset(out, 0, sizeof *out);
    if (!m) {
        out->arch = out->name = ""; /* no model: an empty description, not a crash */
        return;
    }
    out->arch = m->arch;
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
        out->ffn_bytes += layer_ffn_bytes(&m->layers[il]);
        out->predictor_bytes += m->layers[il].fc1.bytes + m->layers[il].fc2.bytes;
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

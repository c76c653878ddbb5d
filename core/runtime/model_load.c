/*
 * Loading a model: find its architecture, read the hyper-parameters, bind
 * and validate every tensor of the architecture's table (presence, shape,
 * type), and place the weights on the CPU device — zero-copy over the file
 * mapping when the device can wrap host memory (the CPU plugin), uploaded
 * otherwise — then the GPU's share (model_place.c).
 */
#include "hotcold/hotcold.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arch/registry.h"
#include "ref/ref.h"
#include "runtime/model.h"
#include "util/clock.h"
#include "util/hugemem.h"
#include "util/log.h"

/* Types every op the forward pass uses has kernels for, except Q6_K's
 * axpy_rows (see bind_layer). */
static int is_computable(uint32_t type)
{
    return type == HC_TYPE_F32 || type == HC_TYPE_F16 || type == HC_TYPE_Q8_0 ||
           type == HC_TYPE_Q4_0 || type == HC_TYPE_Q6_K;
}

/* general.architecture, its hc_arch, general.name, the hyper-parameters. */
static int read_hparams(hc_model *m)
{
    if (hc_gguf_get_strbuf(m->gguf, "general.architecture", m->arch_name, sizeof m->arch_name)) {
        hc_set_error("%s: key general.architecture is missing", m->path);
        return -1;
    }
    m->arch = hc_arch_find(m->arch_name);
    if (!m->arch) {
        char names[128];
        hc_set_error("%s: unknown architecture '%s' (supported: %s)", m->path, m->arch_name,
                     hc_arch_names(names, sizeof names));
        return -1;
    }
    if (hc_gguf_get_strbuf(m->gguf, "general.name", m->name, sizeof m->name))
        snprintf(m->name, sizeof m->name, "%s", m->arch_name);
    return m->arch->read_hparams(m->arch, m->gguf, m->path, &m->hp);
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

/* Bind one entry of the architecture's table for layer il (il < 0: the
 * model table, into m->top), by its presence rule.  *rank is the layer's
 * predictor rank (HC_DIM_RANK), -1 until a tensor has fixed it. */
static int bind_spec(hc_model *m, hc_weight *slots, const hc_tensor_spec *t, int il,
                     int64_t *rank)
{
    char name[96];
    hc_tensor_name(name, sizeof name, t, il);
    const hc_gguf_tensor *ft = hc_gguf_find_tensor(m->gguf, name);
    int other_present = 0;
    if (t->presence == HC_UNLESS || t->presence == HC_WITH) {
        const hc_tensor_spec *table = il < 0 ? m->arch->model_tensors : m->arch->layer_tensors;
        const int n = il < 0 ? m->arch->n_model_tensors : m->arch->n_layer_tensors;
        for (int i = 0; i < n; i++)
            if (table[i].id == t->other) {
                char other[96];
                hc_tensor_name(other, sizeof other, &table[i], il);
                other_present = hc_gguf_find_tensor(m->gguf, other) != NULL;
            }
    }
    if ((t->presence == HC_OPTIONAL && !ft) || (t->presence == HC_UNLESS && other_present) ||
        (t->presence == HC_WITH && !ft && !other_present))
        return 0;
    if (t->presence == HC_OR_TIED && !ft) {
        slots[t->id] = slots[t->other];
        return 0;
    }
    int64_t cols = hc_dim_size(&m->hp, t->cols, *rank), rows = hc_dim_size(&m->hp, t->rows, *rank);
    /* The first tensor with the rank (as its rows) takes whatever the file
     * says: predictor ranks differ per layer. */
    if (t->rows == HC_DIM_RANK && *rank < 0)
        rows = ft && ft->n_dims == 2 && ft->ne[1] <= (1u << 24) ? (int64_t)ft->ne[1] : -1;
    hc_weight *w = &slots[t->id];
    if (bind(m, w, name, cols, rows, t->rows == HC_DIM_ONE))
        return -1;
    if (t->rows == HC_DIM_RANK)
        *rank = w->rows;
    if ((t->flags & HC_TF_AXPY) && w->type == HC_TYPE_Q6_K) {
        /* Q6_K is PowerInfer's output-head type; the plugins compute it in
         * matmul and matvec_rows only. */
        hc_set_error("%s: tensor '%s' is q6_k, which hotcold computes only in dense "
                     "products; the transposed down projection needs axpy_rows, which "
                     "has no q6_k kernel (convert the file with hotcold quantize, e.g. "
                     "to q8_0)",
                     m->path, name);
        return -1;
    }
    return 0;
}

static int bind_all(hc_model *m)
{
    hc_hparams *hp = &m->hp;
    int64_t no_rank = -1;
    for (int i = 0; i < m->arch->n_model_tensors; i++)
        if (bind_spec(m, m->top, &m->arch->model_tensors[i], -1, &no_rank))
            return -1;
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        hc_set_error("%s: out of memory", m->path);
        return -1;
    }
    int with_pred = 0;
    for (int il = 0; il < hp->n_layer; il++) {
        hc_layer *l = &m->layers[il];
        int64_t rank = -1;
        for (int i = 0; i < m->arch->n_layer_tensors; i++)
            if (bind_spec(m, l->w, &m->arch->layer_tensors[i], il, &rank))
                return -1;
        l->pred_rank = rank > 0 ? (int)rank : 0;
        with_pred += l->pred_rank > 0;
        if (l->pred_rank > hp->max_pred_rank)
            hp->max_pred_rank = l->pred_rank;
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
        return hc_model_for_each_weight(m, rebase_weight);
    }
    return hc_model_for_each_weight(m, upload_weight);
}

static void on_read_progress(void *user, uint64_t done, uint64_t total)
{
    const hc_model_params *p = user;
    p->progress(p->progress_user, "reading", done, total);
}

/* Maps the file, reads it into huge-page memory, or maps it and moves it
 * there in the background (hc_weights_mode). */
static hc_gguf *open_weights(const char *path, const hc_model_params *p, char *err, size_t errlen)
{
    int resident = p->weights == HC_WEIGHTS_READ, moving = p->weights == HC_WEIGHTS_MOVE;
    const char *why = resident || moving ? "asked for" : "asked to map";
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
            moving = 1, why = "CPU only";
    }
    const double t0 = hc_time_s();
    hc_gguf *g = resident ? hc_gguf_open_resident(path, p->progress ? on_read_progress : NULL,
                                                  (void *)p, err, errlen)
                 : moving ? hc_gguf_open_moving(path, err, errlen)
                          : hc_gguf_open(path, err, errlen);
    if (g && resident)
        HC_INFO("%s: weights read into %.0f MiB of huge-page memory in %.2f s (%s; --mmap maps "
                "the file instead)", path, (double)g->file_size / 1048576.0, hc_time_s() - t0, why);
    else if (g && moving)
        HC_INFO("%s: weights mapped, moving into huge-page memory in the background (%s; "
                "--no-mmap reads them before the first token, --mmap only maps)",
                path, why);
    else if (g)
        HC_INFO("%s: weights mapped from the file (%s)", path, why);
    return g;
}

hc_model_params hc_model_default_params(void)
{
    hc_model_params p = {sizeof p, "cpu", HC_SPARSE_AUTO, NAN, -1.0, HC_GPU_INDEX_USE, NULL, 0,
                         HC_WEIGHTS_AUTO, NULL, NULL, HC_SPLIT_AUTO};
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
    if (p.split < HC_SPLIT_AUTO || p.split > HC_SPLIT_LAYERS) {
        hc_set_error("hc_model_load: params.split is %d (HC_SPLIT_AUTO, HC_SPLIT_NEURONS or "
                     "HC_SPLIT_LAYERS)", p.split);
        return NULL;
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
    /* Loaded: contexts compute on streams of their own (exec/context.h). */
    if ((m->has_gpu && hc_dev_end_stream(&m->gpu)) || hc_dev_end_stream(&m->cpu))
        goto fail;
    return m;
fail:
    hc_model_free(m);
    return NULL;
}


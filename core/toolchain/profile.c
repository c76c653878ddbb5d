/*
 * Activation profiling (see profile.h): corpus windows, firing counts via
 * the FFN observer, the profile side file, and PowerInfer's .pt folders.
 */
#include "hotcold/toolchain.h"
#include "format/act_counts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "format/torch_pt.h"
#include "util/log.h"

/* ---- corpus windows ---------------------------------------------------- */

/* Paragraphs: maximal runs of lines holding something other than
 * whitespace; [begin, end) excludes the final newline. */
typedef struct span {
    size_t b, e;
} span;

static int line_is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

static int push_span(span **v, size_t *n, size_t *cap, span s)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        span *nv = realloc(*v, c * sizeof *nv);
        if (!nv) {
            hc_set_error("out of memory splitting the corpus into paragraphs");
            return -1;
        }
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = s;
    return 0;
}

static int find_paragraphs(const char *text, size_t len, span **out, size_t *n_out)
{
    span *v = NULL, cur = {0, 0};
    size_t n = 0, cap = 0, pos = 0;
    int in_par = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (!line_is_blank(text + pos, end - pos)) {
            if (!in_par)
                cur.b = pos;
            cur.e = end;
            in_par = 1;
        } else if (in_par) {
            in_par = 0;
            if (push_span(&v, &n, &cap, cur))
                goto fail;
        }
        pos = nl ? end + 1 : len;
    }
    if (in_par && push_span(&v, &n, &cap, cur))
        goto fail;
    *out = v;
    *n_out = n;
    return 0;
fail:
    free(v);
    return -1;
}

size_t hc_text_split_point(const char *text, size_t len, double frac)
{
    if (!(frac > 0.0))
        return len;
    if (frac >= 1.0)
        return 0;
    size_t pos = (size_t)((double)len * (1.0 - frac));
    /* Back to the start of the line holding the target, and whether the
     * line before it is blank (blank lines may hold spaces or '\r'). */
    while (pos > 0 && text[pos - 1] != '\n')
        pos--;
    int prev_blank = 0;
    if (pos > 0) {
        size_t b = pos - 1;
        while (b > 0 && text[b - 1] != '\n')
            b--;
        prev_blank = line_is_blank(text + b, pos - 1 - b);
    }
    /* The first non-blank line after a blank one starts a paragraph. */
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        int blank = line_is_blank(text + pos, end - pos);
        if (!blank && prev_blank)
            return pos;
        prev_blank = blank;
        pos = nl ? end + 1 : len;
    }
    return len;
}

typedef struct ids_buf {
    int32_t *ids;
    int64_t n, cap;
    int64_t *start;
    int n_win, cap_win;
} ids_buf;

static int push_window(ids_buf *b, const int32_t *ids, int64_t n)
{
    if (b->n + n > b->cap) {
        int64_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        int32_t *ni = realloc(b->ids, (size_t)cap * sizeof *ni);
        if (!ni)
            goto oom;
        b->ids = ni;
        b->cap = cap;
    }
    if (b->n_win + 2 > b->cap_win) {
        int cap = b->cap_win ? 2 * b->cap_win : 256;
        int64_t *ns = realloc(b->start, (size_t)cap * sizeof *ns);
        if (!ns)
            goto oom;
        b->start = ns;
        b->cap_win = cap;
    }
    memcpy(b->ids + b->n, ids, (size_t)n * sizeof *ids);
    b->start[b->n_win] = b->n;
    b->n += n;
    b->n_win++;
    b->start[b->n_win] = b->n;
    return 0;
oom:
    hc_set_error("out of memory collecting corpus tokens");
    return -1;
}

/* Tokenize text[b, e) with BOS into *ids (grown as needed); the count, or -1. */
static int tokenize_span(const hc_model *m, const char *text, size_t b, size_t e, int32_t **ids,
                         int *cap)
{
    int n = hc_model_tokenize(m, text + b, e - b, 1, *ids, *cap);
    if (n < 0)
        return -1;
    if (n > *cap) {
        int32_t *ni = realloc(*ids, (size_t)n * sizeof *ni);
        if (!ni) {
            hc_set_error("out of memory tokenizing the corpus");
            return -1;
        }
        *ids = ni;
        *cap = n;
        n = hc_model_tokenize(m, text + b, e - b, 1, *ids, *cap);
    }
    return n;
}

int hc_token_windows_from_text(const hc_model *m, const char *text, size_t len, int n_ctx,
                               int64_t max_tokens, hc_token_windows *out)
{
    span *par = NULL;
    size_t n_par = 0;
    int32_t *ids = NULL, *best = NULL;
    int cap = 0;
    ids_buf b = {0};
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (n_ctx < 2) {
        hc_set_error("window size %d is too small (at least 2 tokens)", n_ctx);
        return -1;
    }
    if (max_tokens <= 0)
        max_tokens = INT64_MAX;
    best = malloc((size_t)n_ctx * sizeof *best);
    if (!best) {
        hc_set_error("out of memory");
        goto out;
    }
    if (find_paragraphs(text, len, &par, &n_par))
        goto out;
    for (size_t i = 0; i < n_par && b.n < max_tokens;) {
        int n = tokenize_span(m, text, par[i].b, par[i].e, &ids, &cap);
        if (n < 0)
            goto out;
        if (n > n_ctx) {
            /* A paragraph longer than a window: consecutive windows, the
             * later ones continuing without BOS from a fresh context. */
            for (int off = 0; off < n && b.n < max_tokens; off += n_ctx) {
                int64_t k = n - off < n_ctx ? n - off : n_ctx;
                if (k > max_tokens - b.n)
                    k = max_tokens - b.n;
                if (k < 2 && off > 0)
                    break; /* one token predicts nothing new; not worth a window */
                if (push_window(&b, ids + off, k))
                    goto out;
            }
            i++;
            continue;
        }
        /* Grow the run of paragraphs while the whole of it still fits. */
        int n_best = n;
        memcpy(best, ids, (size_t)n * sizeof *ids);
        size_t j = i + 1;
        for (; j < n_par; j++) {
            int k = tokenize_span(m, text, par[i].b, par[j].e, &ids, &cap);
            if (k < 0)
                goto out;
            if (k > n_ctx)
                break;
            n_best = k;
            memcpy(best, ids, (size_t)k * sizeof *ids);
        }
        int64_t take = n_best;
        if (take > max_tokens - b.n)
            take = max_tokens - b.n;
        if (push_window(&b, best, take))
            goto out;
        i = j;
    }
    if (b.n_win == 0) {
        hc_set_error("the corpus holds no text to profile");
        goto out;
    }
    out->ids = b.ids;
    out->start = b.start;
    out->n = b.n_win;
    out->n_tokens = b.n;
    b.ids = NULL;
    b.start = NULL;
    rc = 0;
out:
    free(b.ids);
    free(b.start);
    free(par);
    free(ids);
    free(best);
    return rc;
}

void hc_token_windows_free(hc_token_windows *w)
{
    if (!w)
        return;
    free(w->ids);
    free(w->start);
    memset(w, 0, sizeof *w);
}

hc_context *hc_token_windows_context(hc_model *m, const hc_token_windows *w, hc_ffn_observer fn,
                                     void *user)
{
    int longest = 1;
    for (int i = 0; i < w->n; i++)
        if (w->start[i + 1] - w->start[i] > longest)
            longest = (int)(w->start[i + 1] - w->start[i]);
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = longest;
    /* One forward pass per window keeps the matmuls wide; very long windows
     * are split so the batch buffers stay small. */
    cp.n_batch = longest < 256 ? longest : 256;
    hc_context *c = hc_context_new(m, &cp);
    if (c && hc_context_set_ffn_observer(c, fn, user)) {
        hc_context_free(c);
        return NULL;
    }
    return c;
}

/* ---- counts ------------------------------------------------------------ */
int hc_profile_init(hc_activation_profile *p, int n_layer, int n_ff, const char *model)
{
    memset(p, 0, sizeof *p);
    if (n_layer <= 0 || n_ff <= 0) {
        hc_set_error("profile: bad shape %d layers x %d neurons", n_layer, n_ff);
        return -1;
    }
    p->counts = calloc((size_t)n_layer * (size_t)n_ff, sizeof *p->counts);
    if (!p->counts) {
        hc_set_error("profile: out of memory");
        return -1;
    }
    p->n_layer = n_layer;
    p->n_ff = n_ff;
    snprintf(p->model, sizeof p->model, "%s", model ? model : "");
    return 0;
}

void hc_profile_free(hc_activation_profile *p)
{
    if (!p)
        return;
    free(p->counts);
    memset(p, 0, sizeof *p);
}

static void count_observer(void *user, const hc_ffn_observation *obs)
{
    hc_activation_profile *p = user;
    int64_t *cnt = p->counts + (size_t)obs->layer * (size_t)p->n_ff;
    for (int t = 0; t < obs->n_tok; t++) {
        const float *h = obs->h + (size_t)t * (size_t)obs->n_ff;
        for (int r = 0; r < obs->n_ff; r++)
            cnt[r] += h[r] != 0.0f;
    }
    if (obs->layer == 0)
        p->n_tokens += (uint64_t)obs->n_tok;
}

int hc_profile_model(hc_model *m, const hc_token_windows *w, hc_progress_fn progress,
                     void *user, hc_activation_profile *p)
{
    hc_model_desc d;
    hc_context *c = NULL;
    int rc = -1;
    hc_model_describe(m, &d);
    if (p->n_layer != d.n_layer || p->n_ff != d.n_ff) {
        hc_set_error("profile: counts are for %d layers x %d neurons, the model has %d x %d",
                     p->n_layer, p->n_ff, d.n_layer, d.n_ff);
        return -1;
    }
    c = hc_token_windows_context(m, w, count_observer, p);
    if (!c)
        goto out;
    for (int i = 0; i < w->n; i++) {
        hc_context_reset(c);
        int n = (int)(w->start[i + 1] - w->start[i]);
        if (hc_context_eval(c, w->ids + w->start[i], n, NULL))
            goto out;
        if (progress)
            progress(user, w->start[i + 1], w->n_tokens);
    }
    rc = 0;
out:
    hc_context_free(c);
    return rc;
}

/* ---- side file --------------------------------------------------------- */
int hc_profile_write(const hc_activation_profile *p, const char *path)
{
    int32_t *row = NULL;
    int rc = -1;
    char err[1024];
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, HC_GGUF_DEFAULT_ALIGNMENT);
    if (!w)
        return -1;
    row = malloc((size_t)p->n_ff * sizeof *row);
    if (!row) {
        hc_set_error("profile: out of memory");
        goto out;
    }
    uint64_t nt = p->n_tokens;
    if (hc_gguf_writer_set_str(w, "general.architecture", HC_PROFILE_ARCH) ||
        hc_gguf_writer_set_u32(w, HC_ACT_KEY_BLOCKS, (uint32_t)p->n_layer) ||
        hc_gguf_writer_set_str(w, HC_ACT_KEY_MODEL, p->model) ||
        hc_gguf_writer_set_scalar(w, HC_ACT_KEY_N_TOKENS, HC_GGUF_U64, &nt))
        goto out;
    for (int il = 0; il < p->n_layer; il++) {
        char name[64];
        uint64_t ne[1] = {(uint64_t)p->n_ff};
        snprintf(name, sizeof name, HC_ACT_TENSOR_FMT, il);
        if (hc_gguf_writer_add_tensor(w, name, 1, ne, HC_GGML_TYPE_I32))
            goto out;
    }
    if (hc_gguf_writer_begin(w, path, err, sizeof err))
        goto out;
    for (int il = 0; il < p->n_layer; il++) {
        const int64_t *cnt = p->counts + (size_t)il * (size_t)p->n_ff;
        for (int r = 0; r < p->n_ff; r++) {
            if (cnt[r] < 0 || cnt[r] > INT32_MAX) {
                hc_set_error("%s: layer %d neuron %d count %" PRId64
                             " does not fit the file's I32 counts",
                             path, il, r, cnt[r]);
                goto out;
            }
            row[r] = (int32_t)cnt[r];
        }
        if (hc_gguf_writer_write_data(w, row, (uint64_t)p->n_ff * sizeof *row, err, sizeof err))
            goto out;
    }
    if (hc_gguf_writer_finish(w, err, sizeof err))
        goto out;
    rc = 0;
out:
    hc_gguf_writer_free(w);
    free(row);
    return rc;
}

int hc_profile_read(const char *path, hc_activation_profile *out)
{
    char err[1024], arch[64];
    uint32_t n_layer;
    int64_t nt;
    int rc = -1;
    memset(out, 0, sizeof *out);
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    if (!g) {
        hc_set_error("%s", err);
        return -1;
    }
    if (hc_gguf_get_strbuf(g, "general.architecture", arch, sizeof arch) ||
        strcmp(arch, HC_PROFILE_ARCH)) {
        hc_set_error("%s: not an activation profile (general.architecture is not '%s')", path,
                     HC_PROFILE_ARCH);
        goto out;
    }
    if (hc_gguf_get_u32(g, HC_ACT_KEY_BLOCKS, &n_layer) || n_layer == 0 || n_layer > 4096 ||
        hc_gguf_get_i64(g, HC_ACT_KEY_N_TOKENS, &nt) || nt < 0) {
        hc_set_error("%s: %s or %s is missing or invalid", path, HC_ACT_KEY_BLOCKS,
                     HC_ACT_KEY_N_TOKENS);
        goto out;
    }
    int n_ff = -1;
    for (uint32_t il = 0; il < n_layer; il++) {
        char name[64];
        snprintf(name, sizeof name, HC_ACT_TENSOR_FMT, (int)il);
        const hc_gguf_tensor *t = hc_gguf_find_tensor(g, name);
        if (!t || t->type != HC_GGML_TYPE_I32 || t->n_dims != 1 || t->ne[0] == 0 ||
            t->ne[0] > INT32_MAX || (n_ff >= 0 && (int64_t)t->ne[0] != n_ff)) {
            hc_set_error("%s: tensor %s is %s", path, name,
                         !t ? "missing" : "not an I32 vector of the same length as layer 0's");
            goto out;
        }
        if (n_ff < 0) {
            char model[512] = "";
            hc_gguf_get_strbuf(g, HC_ACT_KEY_MODEL, model, sizeof model);
            if (hc_profile_init(out, (int)n_layer, (int)t->ne[0], model))
                goto out;
            n_ff = (int)t->ne[0];
        }
        const uint8_t *src = t->data;
        for (int r = 0; r < n_ff; r++) {
            int32_t v;
            memcpy(&v, src + 4 * (size_t)r, 4);
            if (v < 0) {
                hc_set_error("%s: %s[%d] = %d is negative", path, name, r, v);
                goto out;
            }
            out->counts[(size_t)il * (size_t)n_ff + (size_t)r] = v;
        }
    }
    out->n_tokens = (uint64_t)nt;
    rc = 0;
out:
    if (rc)
        hc_profile_free(out);
    hc_gguf_close(g);
    return rc;
}

/* ---- summary ----------------------------------------------------------- */
static int cmp_desc_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

int hc_profile_summarize(const hc_activation_profile *p, int layer, hc_profile_summary *out)
{
    memset(out, 0, sizeof *out);
    if (layer < 0 || layer >= p->n_layer) {
        hc_set_error("profile: no layer %d", layer);
        return -1;
    }
    int64_t *s = malloc((size_t)p->n_ff * sizeof *s);
    if (!s) {
        hc_set_error("profile: out of memory");
        return -1;
    }
    memcpy(s, p->counts + (size_t)layer * (size_t)p->n_ff, (size_t)p->n_ff * sizeof *s);
    qsort(s, (size_t)p->n_ff, sizeof *s, cmp_desc_i64);
    double total = 0, top10 = 0, top20 = 0;
    int k10 = (p->n_ff + 9) / 10, k20 = (p->n_ff + 4) / 5, dead = 0;
    for (int r = 0; r < p->n_ff; r++) {
        total += (double)s[r];
        if (r < k10)
            top10 += (double)s[r];
        if (r < k20)
            top20 += (double)s[r];
        dead += s[r] == 0;
    }
    free(s);
    out->mean_active = p->n_tokens ? total / ((double)p->n_tokens * p->n_ff) : 0.0;
    out->top10_share = total > 0 ? top10 / total : 0.0;
    out->top20_share = total > 0 ? top20 / total : 0.0;
    out->dead_frac = (double)dead / p->n_ff;
    return 0;
}

/* ---- PowerInfer's activation/ folder ------------------------------------ */
#define PT_NOMINAL_TOKENS 1000000u

int hc_profile_from_pt_dir(const char *dir, int n_layer, int n_ff, uint64_t n_tokens,
                           hc_activation_profile *out, int *n_tokens_guessed)
{
    hc_pt_activation a = {0};
    int rc = -1;
    memset(out, 0, sizeof *out);
    *n_tokens_guessed = 0;
    if (hc_pt_read_activation_dir(dir, n_layer, n_ff, &a))
        return -1;
    if (a.n_ff > INT32_MAX) {
        hc_set_error("%s: %" PRId64 " neurons per layer is too many", dir, a.n_ff);
        goto out;
    }
    const size_t total = (size_t)a.n_layer * (size_t)a.n_ff;
    double vmax = 0.0;
    for (size_t i = 0; i < total; i++)
        if (a.counts[i] > vmax)
            vmax = a.counts[i];
    double scale = 1.0;
    if (!a.whole) {
        /* Frequencies: PowerInfer's exporter can also write counts divided
         * by the token count. */
        if (vmax > 1.0) {
            hc_set_error("%s: the values are neither whole counts nor frequencies in [0, 1] "
                         "(largest %g)",
                         dir, vmax);
            goto out;
        }
        if (!n_tokens) {
            n_tokens = PT_NOMINAL_TOKENS;
            *n_tokens_guessed = 1;
        }
        scale = (double)n_tokens;
    } else if (!n_tokens) {
        n_tokens = (uint64_t)vmax;
        *n_tokens_guessed = 1;
    }
    if (hc_profile_init(out, a.n_layer, (int)a.n_ff, dir))
        goto out;
    for (size_t i = 0; i < total; i++) {
        double v = a.counts[i] * scale + (a.whole ? 0.0 : 0.5);
        if (v > (double)n_tokens + 0.5) {
            hc_set_error("%s: layer %zu neuron %zu fired %.0f times in %" PRIu64 " tokens", dir,
                         i / (size_t)a.n_ff, i % (size_t)a.n_ff, a.counts[i], n_tokens);
            goto out;
        }
        out->counts[i] = (int64_t)v;
    }
    out->n_tokens = n_tokens;
    rc = 0;
out:
    if (rc)
        hc_profile_free(out);
    hc_pt_activation_free(&a);
    return rc;
}

/* Scores from logits and the --kl-base file (see ppl_score.h). */
#include "ppl_score.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#define BASE_MAGIC "HCKLBASE"
#define BASE_VERSION 1u
/* magic, version, n_vocab, n_ctx, n_chunk, tokens_hash */
#define BASE_HEADER_BYTES (8 + 4 * 4 + 8)

static double max_of(const float *v, int n, int *at)
{
    double m = v[0];
    *at = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > m) {
            m = v[i];
            *at = i;
        }
    return m;
}

/* log sum_i exp(v_i - m) */
static double log_sum_exp(const float *v, int n, double m)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += exp((double)v[i] - m);
    return log(s);
}

double hc_ppl_nll(const float *logits, int n_vocab, int32_t tok)
{
    int at;
    const double m = max_of(logits, n_vocab, &at);
    return -((double)logits[tok] - m - log_sum_exp(logits, n_vocab, m));
}

double hc_ppl_kl(const float *base, const float *run, int n_vocab, int *same_top)
{
    int top_b, top_r;
    const double mb = max_of(base, n_vocab, &top_b), mr = max_of(run, n_vocab, &top_r);
    const double lb = mb + log_sum_exp(base, n_vocab, mb), lr = mr + log_sum_exp(run, n_vocab, mr);
    double kl = 0.0;
    for (int i = 0; i < n_vocab; i++) {
        const double lp = (double)base[i] - lb, lq = (double)run[i] - lr;
        kl += exp(lp) * (lp - lq);
    }
    *same_top = top_b == top_r;
    /* Rounding can leave a hair below 0 for identical distributions. */
    return kl > 0.0 ? kl : 0.0;
}

void hc_ppl_add(hc_ppl_sum *s, double v)
{
    s->sum += v;
    s->sum2 += v * v;
    s->n++;
}

double hc_ppl_mean(const hc_ppl_sum *s)
{
    return s->n ? s->sum / (double)s->n : 0.0;
}

double hc_ppl_stderr(const hc_ppl_sum *s)
{
    if (s->n < 2)
        return 0.0;
    const double mean = hc_ppl_mean(s), var = s->sum2 / (double)s->n - mean * mean;
    return var > 0.0 ? sqrt(var / (double)(s->n - 1)) : 0.0;
}

uint64_t hc_ppl_hash_tokens(const int32_t *ids, int64_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            h ^= ((uint32_t)ids[i] >> (8 * k)) & 0xffu;
            h *= 1099511628211ull;
        }
    return h;
}

int hc_ppl_base_create(hc_ppl_base *b, const char *path, uint32_t n_vocab, uint32_t n_ctx,
                       uint32_t n_chunk, uint64_t tokens_hash)
{
    *b = (hc_ppl_base){NULL, path, 1, n_vocab, n_ctx, n_chunk, tokens_hash};
    b->f = fopen(path, "wb");
    if (!b->f) {
        fprintf(stderr, "hotcold perplexity: %s: cannot create: %s\n", path, strerror(errno));
        return -1;
    }
    const uint32_t head[4] = {BASE_VERSION, n_vocab, n_ctx, n_chunk};
    if (fwrite(BASE_MAGIC, 1, 8, b->f) != 8 || fwrite(head, sizeof head, 1, b->f) != 1 ||
        fwrite(&tokens_hash, sizeof tokens_hash, 1, b->f) != 1) {
        fprintf(stderr, "hotcold perplexity: %s: cannot write: %s\n", path, strerror(errno));
        fclose(b->f);
        b->f = NULL;
        return -1;
    }
    return 0;
}

int hc_ppl_base_open(hc_ppl_base *b, const char *path, uint32_t n_vocab, uint32_t n_ctx,
                     uint32_t n_chunk, uint64_t tokens_hash, int rows_per_chunk)
{
    char magic[8];
    uint32_t head[4];
    uint64_t hash;
    struct stat st;
    *b = (hc_ppl_base){NULL, path, 0, n_vocab, n_ctx, n_chunk, tokens_hash};
    b->f = fopen(path, "rb");
    if (!b->f) {
        fprintf(stderr, "hotcold perplexity: %s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }
    const char *why = NULL;
    if (fread(magic, 1, 8, b->f) != 8 || memcmp(magic, BASE_MAGIC, 8) != 0 ||
        fread(head, sizeof head, 1, b->f) != 1 || fread(&hash, sizeof hash, 1, b->f) != 1)
        why = "not a file of base logits (written by hotcold perplexity --kl-base)";
    else if (head[0] != BASE_VERSION)
        why = "written by another version of hotcold (format version differs)";
    else if (head[1] != n_vocab)
        why = "saved for another vocabulary (n_vocab differs): another model family";
    else if (head[2] != n_ctx || head[3] != n_chunk || hash != tokens_hash)
        why = "saved for other tokens (the text, -c or --chunks differ)";
    else if (fstat(fileno(b->f), &st) != 0 ||
             (uint64_t)st.st_size != BASE_HEADER_BYTES + (uint64_t)n_chunk *
                                                            (uint64_t)rows_per_chunk *
                                                            n_vocab * sizeof(float))
        why = "truncated or padded: its size is not the header's count of logits";
    if (why) {
        fprintf(stderr, "hotcold perplexity: %s: %s\n", path, why);
        fclose(b->f);
        b->f = NULL;
        return -1;
    }
    return 0;
}

int hc_ppl_base_write(hc_ppl_base *b, const float *logits)
{
    if (fwrite(logits, sizeof *logits, b->n_vocab, b->f) == b->n_vocab)
        return 0;
    fprintf(stderr, "hotcold perplexity: %s: cannot write: %s\n", b->path, strerror(errno));
    return -1;
}

int hc_ppl_base_read(hc_ppl_base *b, float *logits)
{
    if (fread(logits, sizeof *logits, b->n_vocab, b->f) == b->n_vocab)
        return 0;
    fprintf(stderr, "hotcold perplexity: %s: ended early\n", b->path);
    return -1;
}

int hc_ppl_base_close(hc_ppl_base *b)
{
    if (!b->f)
        return 0;
    int bad = ferror(b->f);
    if (fclose(b->f) != 0)
        bad = 1;
    b->f = NULL;
    if (bad && b->writing) {
        fprintf(stderr, "hotcold perplexity: %s: writing failed: %s\n", b->path,
                strerror(errno));
        return -1;
    }
    return 0;
}

/*
 * What `hotcold perplexity` computes from logits: a token's negative
 * log-likelihood, the KL divergence of one distribution from another and
 * whether their top tokens agree, running sums of them, and the file of a
 * base run's logits the comparison reads (--kl-base).
 */
#ifndef HC_TOOL_PPL_SCORE_H
#define HC_TOOL_PPL_SCORE_H

#include <stdint.h>
#include <stdio.h>

/* -log softmax(logits)[tok], in double (max-shifted log-sum-exp). */
double hc_ppl_nll(const float *logits, int n_vocab, int32_t tok);

/* KL(base || run) = sum_i p_i (log p_i - log q_i), p = softmax(base),
 * q = softmax(run), in nats; *same_top: their first largest logits are the
 * same token. */
double hc_ppl_kl(const float *base, const float *run, int n_vocab, int *same_top);

/* A mean with its standard error, summed in the order values arrive (the
 * same input, the same figures). */
typedef struct hc_ppl_sum {
    double sum, sum2;
    int64_t n;
} hc_ppl_sum;
void hc_ppl_add(hc_ppl_sum *s, double v);
double hc_ppl_mean(const hc_ppl_sum *s);
/* sqrt(variance / (n - 1)); 0 below two values. */
double hc_ppl_stderr(const hc_ppl_sum *s);

/* The base file: a header naming what was scored (vocabulary, chunk size,
 * chunks, and a hash of every token id of the chunks), then the logits of
 * every scored position, chunk after chunk, n_vocab floats each, in this
 * machine's byte order. */
typedef struct hc_ppl_base {
    FILE *f;
    const char *path;
    int writing;
    uint32_t n_vocab, n_ctx, n_chunk;
    uint64_t tokens_hash;
} hc_ppl_base;

/* FNV-1a over the ids, for the header. */
uint64_t hc_ppl_hash_tokens(const int32_t *ids, int64_t n);
/* Create (0) or open and check against the run's figures (0; -1 with the
 * reason printed as "hotcold perplexity: PATH: ..."). */
int hc_ppl_base_create(hc_ppl_base *b, const char *path, uint32_t n_vocab, uint32_t n_ctx,
                       uint32_t n_chunk, uint64_t tokens_hash);
int hc_ppl_base_open(hc_ppl_base *b, const char *path, uint32_t n_vocab, uint32_t n_ctx,
                     uint32_t n_chunk, uint64_t tokens_hash, int rows_per_chunk);
/* One scored position's logits: written, or read into `logits`. */
int hc_ppl_base_write(hc_ppl_base *b, const float *logits);
int hc_ppl_base_read(hc_ppl_base *b, float *logits);
/* Closes; 0, or -1 when a write did not reach the disk (printed). */
int hc_ppl_base_close(hc_ppl_base *b);

#endif

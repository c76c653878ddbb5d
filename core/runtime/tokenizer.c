/*
 * The tokenizer's loading and dispatch: what every model has (tokens, token
 * types, special ids, flags, the table of pieces text can match), then the
 * algorithm tokenizer.ggml.model names (tokenizer_spm.c, tokenizer_bpe.c).
 */
#include "runtime/tokenizer.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tokenizer_internal.h"
#include "util/log.h"

/* ---- hash table ------------------------------------------------------------ */

/* FNV-1a: simple and good enough for short piece strings. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 16777619u;
    }
    return h;
}

static int text_equals(const hc_tokenizer *t, int32_t id, const char *s, size_t n)
{
    return t->len[id] == n && memcmp(t->blob + t->offset[id], s, n) == 0;
}

int32_t hc_tok_lookup(const hc_tokenizer *t, const char *s, size_t n)
{
    uint32_t i = hash_bytes(s, n) & t->slot_mask;
    for (;;) {
        int32_t id = t->slots[i];
        if (id < 0)
            return -1;
        if (text_equals(t, id, s, n))
            return id;
        i = (i + 1) & t->slot_mask;
    }
}

/* Only pieces SentencePiece would produce from text go in the table: control
 * (<s>), unknown (<unk>) and byte (<0x41>) tokens are spelled like ordinary
 * text but must never be matched by it. */
static int matches_text(uint8_t type)
{
    return type != HC_TOKEN_UNKNOWN && type != HC_TOKEN_CONTROL && type != HC_TOKEN_BYTE &&
           type != HC_TOKEN_UNUSED;
}

static int build_table(hc_tokenizer *t)
{
    /* Load factor <= 1/2 keeps probe chains short. */
    uint64_t size = 16;
    while (size < 2 * (uint64_t)t->n_vocab)
        size *= 2;
    t->slots = malloc(size * sizeof *t->slots);
    if (!t->slots)
        return -1;
    for (uint64_t i = 0; i < size; i++)
        t->slots[i] = -1;
    t->slot_mask = (uint32_t)(size - 1);
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *s = t->blob + t->offset[id];
        if (!matches_text(t->type[id]))
            continue;
        /* SentencePiece vocabs have unique pieces; if one repeats, the first
         * id wins so the result does not depend on table order. */
        if (hc_tok_lookup(t, s, t->len[id]) >= 0)
            continue;
        uint32_t i = hash_bytes(s, t->len[id]) & t->slot_mask;
        while (t->slots[i] >= 0)
            i = (i + 1) & t->slot_mask;
        t->slots[i] = id;
    }
    return 0;
}

/* ---- loading ------------------------------------------------------------------ */

/* Read element i of a numeric array; the mapping gives no alignment guarantee
 * for metadata, hence memcpy. */
static int read_int_elem(uint32_t elem_type, const void *data, uint64_t i, int64_t *out)
{
    const uint8_t *p = data;
    switch (elem_type) {
    case HC_GGUF_I8: { int8_t v; memcpy(&v, p + i, 1); *out = v; return 0; }
    case HC_GGUF_U8: { uint8_t v; memcpy(&v, p + i, 1); *out = v; return 0; }
    case HC_GGUF_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); *out = v; return 0; }
    case HC_GGUF_U16: { uint16_t v; memcpy(&v, p + 2 * i, 2); *out = v; return 0; }
    case HC_GGUF_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); *out = v; return 0; }
    case HC_GGUF_U32: { uint32_t v; memcpy(&v, p + 4 * i, 4); *out = v; return 0; }
    case HC_GGUF_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); *out = v; return 0; }
    case HC_GGUF_U64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        *out = v > INT64_MAX ? INT64_MAX : (int64_t)v;
        return 0;
    }
    default:
        return -1;
    }
}

/* An optional token id key: default when absent, error when out of range. */
static int read_id(const hc_gguf *g, const char *key, int def, int n_vocab, int *out)
{
    int64_t v;
    if (hc_gguf_find_key(g, key) < 0) {
        *out = def;
    } else if (hc_gguf_get_i64(g, key, &v) != 0) {
        hc_set_error("tokenizer: %s is not an integer", key);
        return -1;
    } else {
        if (v < 0 || v >= n_vocab) {
            hc_set_error("tokenizer: %s = %lld is outside the vocab of %d", key, (long long)v,
                         n_vocab);
            return -1;
        }
        *out = (int)v;
    }
    if (*out >= n_vocab) {
        hc_set_error("tokenizer: default %s %d is outside the vocab of %d", key, *out, n_vocab);
        return -1;
    }
    return 0;
}

static int read_flag(const hc_gguf *g, const char *key, int def, int *out)
{
    *out = def;
    if (hc_gguf_find_key(g, key) < 0)
        return 0;
    if (hc_gguf_get_bool(g, key, out) != 0) {
        hc_set_error("tokenizer: %s is not a bool", key);
        return -1;
    }
    *out = *out != 0;
    return 0;
}

static int load_model_name(const hc_gguf *g, hc_tokenizer_kind *kind)
{
    const char *model;
    uint64_t n;
    if (hc_gguf_find_key(g, "tokenizer.ggml.model") < 0) {
        hc_set_error("tokenizer: the model has no tokenizer (tokenizer.ggml.model missing)");
        return -1;
    }
    if (hc_gguf_get_str(g, "tokenizer.ggml.model", &model, &n) != 0) {
        hc_set_error("tokenizer: tokenizer.ggml.model is not a string");
        return -1;
    }
    if (n == 5 && memcmp(model, "llama", 5) == 0) {
        *kind = HC_TOKENIZER_SPM;
        return 0;
    }
    if (n == 4 && memcmp(model, "gpt2", 4) == 0) {
        *kind = HC_TOKENIZER_BPE;
        return 0;
    }
    hc_set_error("tokenizer: unsupported tokenizer.ggml.model '%.*s' (llama and gpt2 are)",
                 (int)(n > 32 ? 32 : n), model);
    return -1;
}

static int load_tokens(hc_tokenizer *t, const hc_gguf *g)
{
    int64_t k = hc_gguf_find_key(g, "tokenizer.ggml.tokens");
    const hc_gguf_kv *kv;
    uint64_t total = 0;
    if (k < 0) {
        hc_set_error("tokenizer: tokenizer.ggml.tokens missing");
        return -1;
    }
    kv = &g->kv[k];
    if (kv->type != HC_GGUF_ARRAY || kv->arr_type != HC_GGUF_STRING) {
        hc_set_error("tokenizer: tokenizer.ggml.tokens is not an array of strings");
        return -1;
    }
    if (kv->arr_n == 0 || kv->arr_n > (uint64_t)INT32_MAX / 2) {
        hc_set_error("tokenizer: tokenizer.ggml.tokens has %llu entries",
                     (unsigned long long)kv->arr_n);
        return -1;
    }
    t->n_vocab = (int)kv->arr_n;
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        uint64_t n;
        if (!hc_gguf_arr_str(kv, i, &n) || n > UINT32_MAX) {
            hc_set_error("tokenizer: tokenizer.ggml.tokens[%llu] is unreadable",
                         (unsigned long long)i);
            return -1;
        }
        total += n + 1;
    }
    t->blob = malloc(total ? total : 1);
    t->offset = malloc(kv->arr_n * sizeof *t->offset);
    t->len = malloc(kv->arr_n * sizeof *t->len);
    if (!t->blob || !t->offset || !t->len) {
        hc_set_error("tokenizer: out of memory for %d tokens", t->n_vocab);
        return -1;
    }
    total = 0;
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        uint64_t n;
        const char *s = hc_gguf_arr_str(kv, i, &n);
        memcpy(t->blob + total, s, n);
        t->blob[total + n] = 0;
        t->offset[i] = total;
        t->len[i] = (uint32_t)n;
        total += n + 1;
    }
    return 0;
}

/* token_type, or all normal when the file has none; *have says which. */
static int load_types(hc_tokenizer *t, const hc_gguf *g, int *have_types)
{
    uint32_t et;
    uint64_t n;
    const void *data;
    int have = hc_gguf_find_key(g, "tokenizer.ggml.token_type") >= 0;
    *have_types = have;
    t->type = malloc((size_t)t->n_vocab);
    if (!t->type) {
        hc_set_error("tokenizer: out of memory");
        return -1;
    }
    if (have) {
        if (hc_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n, &data) != 0) {
            hc_set_error("tokenizer: tokenizer.ggml.token_type is not an array");
            return -1;
        }
        if (n != (uint64_t)t->n_vocab) {
            hc_set_error("tokenizer: tokenizer.ggml.token_type has %llu entries, tokens has %d",
                         (unsigned long long)n, t->n_vocab);
            return -1;
        }
    }
    for (int i = 0; i < t->n_vocab; i++) {
        int64_t v = HC_TOKEN_NORMAL;
        if (have && read_int_elem(et, data, (uint64_t)i, &v) != 0) {
            hc_set_error("tokenizer: tokenizer.ggml.token_type is not an integer array");
            return -1;
        }
        if (v < HC_TOKEN_UNDEFINED || v > HC_TOKEN_BYTE) {
            hc_set_error("tokenizer: tokenizer.ggml.token_type[%d] = %lld is not a token type", i,
                         (long long)v);
            return -1;
        }
        t->type[i] = (uint8_t)v;
    }
    return 0;
}

hc_tokenizer *hc_tokenizer_load(const hc_gguf *g)
{
    hc_tokenizer *t = NULL;
    hc_tokenizer_kind kind;
    int have_types;
    if (!g) {
        hc_set_error("tokenizer: no GGUF");
        goto fail;
    }
    if (load_model_name(g, &kind) != 0)
        goto fail;
    t = calloc(1, sizeof *t);
    if (!t) {
        hc_set_error("tokenizer: out of memory");
        goto fail;
    }
    t->kind = kind;
    if (load_tokens(t, g) != 0 || load_types(t, g, &have_types) != 0)
        goto fail;
    if (read_id(g, "tokenizer.ggml.bos_token_id", 1, t->n_vocab, &t->bos) != 0 ||
        read_id(g, "tokenizer.ggml.eos_token_id", 2, t->n_vocab, &t->eos) != 0 ||
        read_id(g, "tokenizer.ggml.unknown_token_id", 0, t->n_vocab, &t->unk) != 0 ||
        /* SentencePiece models add BOS unless told not to; GPT-2's and
         * Falcon's tokenizers never did. */
        read_flag(g, "tokenizer.ggml.add_bos_token", kind == HC_TOKENIZER_SPM, &t->add_bos) != 0 ||
        read_flag(g, "tokenizer.ggml.add_space_prefix", 1, &t->add_space_prefix) != 0)
        goto fail;
    /* SentencePiece may find byte tokens the table must leave out; BPE looks
     * its merges up in the table. */
    if (kind == HC_TOKENIZER_SPM && hc_spm_load(t, g, have_types) != 0)
        goto fail;
    if (build_table(t) != 0) {
        hc_set_error("tokenizer: out of memory for the piece table");
        goto fail;
    }
    if (kind == HC_TOKENIZER_BPE && hc_bpe_load(t, g) != 0)
        goto fail;
    return t;
fail:
    hc_tokenizer_free(t);
    return NULL;
}

void hc_tokenizer_free(hc_tokenizer *t)
{
    if (!t)
        return;
    free(t->blob);
    free(t->offset);
    free(t->len);
    free(t->score);
    free(t->type);
    free(t->slots);
    hc_bpe_free(t->bpe);
    free(t);
}

int hc_tokenizer_n_vocab(const hc_tokenizer *t) { return t->n_vocab; }
int hc_tokenizer_bos(const hc_tokenizer *t) { return t->bos; }
int hc_tokenizer_eos(const hc_tokenizer *t) { return t->eos; }
int hc_tokenizer_add_bos_default(const hc_tokenizer *t) { return t->add_bos; }


/* ---- shared helpers and dispatch ------------------------------------------------ */

size_t hc_tok_utf8_len(const unsigned char *s, size_t avail)
{
    size_t n;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4;
    else
        return 1;
    if (n > avail)
        return 1;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 1;
    return n;
}

int hc_tokenizer_encode(const hc_tokenizer *t, const char *text, size_t len, int add_bos,
                        int32_t *ids, int max)
{
    int count = 0;
    if (!t || (!text && len > 0) || max < 0 || (!ids && max > 0)) {
        hc_set_error("tokenizer: invalid arguments to encode");
        return -1;
    }
    if (add_bos < 0)
        add_bos = t->add_bos;
    if (add_bos)
        hc_tok_emit(t->bos, ids, max, &count);
    if (len == 0)
        return count;
    if ((t->kind == HC_TOKENIZER_SPM ? hc_spm_encode : hc_bpe_encode)(t, text, len, ids, max,
                                                                      &count) != 0)
        return -1;
    return count;
}

int hc_tokenizer_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize)
{
    if (!t || id < 0 || id >= t->n_vocab) {
        hc_set_error("tokenizer: token id %d is outside the vocab", (int)id);
        return -1;
    }
    if (bufsize < 0 || (!buf && bufsize > 0)) {
        hc_set_error("tokenizer: invalid buffer for a piece");
        return -1;
    }
    return t->kind == HC_TOKENIZER_SPM ? hc_spm_piece(t, id, buf, bufsize)
                                       : hc_bpe_piece(t, id, buf, bufsize);
}

/*
 * SentencePiece-style BPE tokenizer (see tokenizer.h for the algorithm).
 *
 * Encoding is O(n log n) in the text length: the symbols form a doubly linked
 * list over one normalized buffer (adjacent symbols are always contiguous
 * bytes, so a pair's text is a slice of it), candidate merges sit in a binary
 * max-heap, and piece lookups go through an open-addressing hash table.
 */
#include "runtime/tokenizer.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define TOK_SPACE_MARK "\xe2\x96\x81" /* U+2581 LOWER ONE EIGHTH BLOCK */
#define TOK_SPACE_MARK_LEN 3

struct hc_tokenizer {
    int n_vocab;
    char *blob;         /* every token's text, back to back, each NUL-terminated */
    uint64_t *offset;   /* token i's text starts at blob + offset[i] */
    uint32_t *len;      /* ... and is len[i] bytes long */
    float *score;
    uint8_t *type;      /* HC_TOKEN_* */
    int32_t *slots;     /* hash table of ids that may match text; -1 = empty */
    uint32_t slot_mask; /* table size - 1 (a power of two) */
    int32_t byte_id[256]; /* byte-fallback token of each byte value, or -1 */
    int bos, eos, unk;
    int add_bos;
    int add_space_prefix;
};

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

/* Id of the text-matchable piece equal to s[0..n), or -1. */
static int32_t lookup(const hc_tokenizer *t, const char *s, size_t n)
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
        if (lookup(t, s, t->len[id]) >= 0)
            continue;
        uint32_t i = hash_bytes(s, t->len[id]) & t->slot_mask;
        while (t->slots[i] >= 0)
            i = (i + 1) & t->slot_mask;
        t->slots[i] = id;
    }
    return 0;
}

/* ---- loading ------------------------------------------------------------------ */

/* Parse "<0xXX>" (exactly two hex digits); -1 if s is not that. */
static int parse_byte_piece(const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    int v = 0;
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    for (int i = 3; i < 5; i++) {
        const char *p = strchr(hex, s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 'A' : s[i]);
        if (!p || !*p)
            return -1;
        v = v * 16 + (int)(p - hex);
    }
    return v;
}

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

static int load_model_name(const hc_gguf *g)
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
    if (n != 5 || memcmp(model, "llama", 5) != 0) {
        hc_set_error("tokenizer: unsupported tokenizer.ggml.model '%.*s' (only 'llama' is)",
                     (int)(n > 32 ? 32 : n), model);
        return -1;
    }
    return 0;
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

static int load_scores(hc_tokenizer *t, const hc_gguf *g)
{
    uint32_t et;
    uint64_t n;
    const void *data;
    if (hc_gguf_find_key(g, "tokenizer.ggml.scores") < 0) {
        hc_set_error("tokenizer: tokenizer.ggml.scores missing");
        return -1;
    }
    if (hc_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n, &data) != 0 || et != HC_GGUF_F32) {
        hc_set_error("tokenizer: tokenizer.ggml.scores is not an array of f32");
        return -1;
    }
    if (n != (uint64_t)t->n_vocab) {
        hc_set_error("tokenizer: tokenizer.ggml.scores has %llu entries, tokens has %d",
                     (unsigned long long)n, t->n_vocab);
        return -1;
    }
    t->score = malloc((size_t)n * sizeof *t->score);
    if (!t->score) {
        hc_set_error("tokenizer: out of memory");
        return -1;
    }
    memcpy(t->score, data, (size_t)n * sizeof *t->score);
    return 0;
}

static int load_types(hc_tokenizer *t, const hc_gguf *g)
{
    uint32_t et;
    uint64_t n;
    const void *data;
    int have = hc_gguf_find_key(g, "tokenizer.ggml.token_type") >= 0;
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
        if (!have && parse_byte_piece(t->blob + t->offset[i], t->len[i]) >= 0)
            v = HC_TOKEN_BYTE;
        if (v < HC_TOKEN_UNDEFINED || v > HC_TOKEN_BYTE) {
            hc_set_error("tokenizer: tokenizer.ggml.token_type[%d] = %lld is not a token type", i,
                         (long long)v);
            return -1;
        }
        t->type[i] = (uint8_t)v;
    }
    return 0;
}

static int load_bytes(hc_tokenizer *t)
{
    for (int b = 0; b < 256; b++)
        t->byte_id[b] = -1;
    for (int i = 0; i < t->n_vocab; i++) {
        int b;
        if (t->type[i] != HC_TOKEN_BYTE)
            continue;
        b = parse_byte_piece(t->blob + t->offset[i], t->len[i]);
        if (b < 0) {
            hc_set_error("tokenizer: byte token %d is '%.*s', not <0xXX>", i,
                         (int)(t->len[i] > 32 ? 32 : t->len[i]), t->blob + t->offset[i]);
            return -1;
        }
        if (t->byte_id[b] < 0)
            t->byte_id[b] = i;
    }
    return 0;
}

hc_tokenizer *hc_tokenizer_load(const hc_gguf *g)
{
    hc_tokenizer *t = NULL;
    if (!g) {
        hc_set_error("tokenizer: no GGUF");
        goto fail;
    }
    if (load_model_name(g) != 0)
        goto fail;
    t = calloc(1, sizeof *t);
    if (!t) {
        hc_set_error("tokenizer: out of memory");
        goto fail;
    }
    if (load_tokens(t, g) != 0 || load_scores(t, g) != 0 || load_types(t, g) != 0 ||
        load_bytes(t) != 0)
        goto fail;
    if (read_id(g, "tokenizer.ggml.bos_token_id", 1, t->n_vocab, &t->bos) != 0 ||
        read_id(g, "tokenizer.ggml.eos_token_id", 2, t->n_vocab, &t->eos) != 0 ||
        read_id(g, "tokenizer.ggml.unknown_token_id", 0, t->n_vocab, &t->unk) != 0 ||
        read_flag(g, "tokenizer.ggml.add_bos_token", 1, &t->add_bos) != 0 ||
        read_flag(g, "tokenizer.ggml.add_space_prefix", 1, &t->add_space_prefix) != 0)
        goto fail;
    if (build_table(t) != 0) {
        hc_set_error("tokenizer: out of memory for the piece table");
        goto fail;
    }
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
    free(t);
}

int hc_tokenizer_n_vocab(const hc_tokenizer *t) { return t->n_vocab; }
int hc_tokenizer_bos(const hc_tokenizer *t) { return t->bos; }
int hc_tokenizer_eos(const hc_tokenizer *t) { return t->eos; }
int hc_tokenizer_add_bos_default(const hc_tokenizer *t) { return t->add_bos; }

/* ---- encoding ------------------------------------------------------------------ */

typedef struct symbol {
    size_t start; /* into the normalized buffer */
    size_t n;     /* bytes; 0 once merged into its left neighbour */
    int prev, next; /* -1 at the ends */
} symbol;

/* A candidate merge of symbol `left` with its right neighbour.  It is stale
 * once either side has changed; since symbols only grow, comparing the
 * combined length with the one recorded here detects that. */
typedef struct bigram {
    float score;
    int left, right;
    size_t n;
} bigram;

typedef struct encoder {
    const hc_tokenizer *t;
    char *text;   /* normalized */
    symbol *sym;
    bigram *heap;
    size_t heap_n;
} encoder;

/* Higher score first; on equal scores the leftmost pair (lower left index,
 * and symbol indices grow left to right) first. */
static int bigram_before(const bigram *a, const bigram *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    return a->left < b->left;
}

static void heap_push(encoder *e, bigram b)
{
    size_t i = e->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!bigram_before(&b, &e->heap[parent]))
            break;
        e->heap[i] = e->heap[parent];
        i = parent;
    }
    e->heap[i] = b;
}

static bigram heap_pop(encoder *e)
{
    bigram top = e->heap[0];
    bigram last = e->heap[--e->heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= e->heap_n)
            break;
        if (c + 1 < e->heap_n && bigram_before(&e->heap[c + 1], &e->heap[c]))
            c++;
        if (!bigram_before(&e->heap[c], &last))
            break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (e->heap_n > 0)
        e->heap[i] = last;
    return top;
}

static void try_pair(encoder *e, int left, int right)
{
    size_t n;
    int32_t id;
    if (left < 0 || right < 0)
        return;
    n = e->sym[left].n + e->sym[right].n;
    id = lookup(e->t, e->text + e->sym[left].start, n);
    if (id < 0)
        return;
    heap_push(e, (bigram){e->t->score[id], left, right, n});
}

/* Length of the valid UTF-8 sequence starting at s[0] (at most avail bytes),
 * or 1 when s[0] does not begin one: such a byte is a symbol by itself and
 * ends up as a byte-fallback token. */
static size_t utf8_char_len(const unsigned char *s, size_t avail)
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

/* Append id to the output, counting past max. */
static void emit(int32_t id, int32_t *ids, int max, int *count)
{
    if (*count < max)
        ids[*count] = id;
    (*count)++;
}

int hc_tokenizer_encode(const hc_tokenizer *t, const char *text, size_t len, int add_bos,
                        int32_t *ids, int max)
{
    encoder e = {t, NULL, NULL, NULL, 0};
    size_t cap, n_text = 0, n_sym = 0;
    int count = 0, ret = -1;

    if (!t || (!text && len > 0) || max < 0 || (!ids && max > 0)) {
        hc_set_error("tokenizer: invalid arguments to encode");
        goto out;
    }
    if (add_bos < 0)
        add_bos = t->add_bos;
    if (add_bos)
        emit(t->bos, ids, max, &count);
    if (len == 0) {
        ret = count;
        goto out;
    }
    /* Worst case every byte is a space (3 bytes each) plus the prefix, and
     * every byte of that becomes an id: keep the count (with BOS) in an int. */
    if (len > ((size_t)INT_MAX - 2 * TOK_SPACE_MARK_LEN) / TOK_SPACE_MARK_LEN) {
        hc_set_error("tokenizer: text of %zu bytes is too long", len);
        goto out;
    }
    cap = TOK_SPACE_MARK_LEN * (len + 1);
    e.text = malloc(cap);
    if (!e.text) {
        hc_set_error("tokenizer: out of memory for %zu bytes of text", len);
        goto out;
    }
    if (t->add_space_prefix) {
        memcpy(e.text, TOK_SPACE_MARK, TOK_SPACE_MARK_LEN);
        n_text = TOK_SPACE_MARK_LEN;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(e.text + n_text, TOK_SPACE_MARK, TOK_SPACE_MARK_LEN);
            n_text += TOK_SPACE_MARK_LEN;
        } else {
            e.text[n_text++] = text[i];
        }
    }

    /* One symbol per character; at most one per byte. */
    e.sym = malloc(n_text * sizeof *e.sym);
    /* Each merge adds at most two candidates to the n-1 initial ones. */
    e.heap = malloc(3 * n_text * sizeof *e.heap);
    if (!e.sym || !e.heap) {
        hc_set_error("tokenizer: out of memory for %zu bytes of text", len);
        goto out;
    }
    for (size_t off = 0; off < n_text;) {
        size_t n = utf8_char_len((const unsigned char *)e.text + off, n_text - off);
        e.sym[n_sym] = (symbol){off, n, (int)n_sym - 1, -1};
        if (n_sym > 0)
            e.sym[n_sym - 1].next = (int)n_sym;
        n_sym++;
        off += n;
    }
    for (size_t i = 1; i < n_sym; i++)
        try_pair(&e, (int)i - 1, (int)i);

    while (e.heap_n > 0) {
        bigram b = heap_pop(&e);
        symbol *l = &e.sym[b.left], *r = &e.sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.n)
            continue; /* stale: one side was merged elsewhere */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            e.sym[r->next].prev = b.left;
        try_pair(&e, l->prev, b.left);
        try_pair(&e, b.left, l->next);
    }

    for (int i = 0; i >= 0 && n_sym > 0; i = e.sym[i].next) {
        const symbol *s = &e.sym[i];
        int32_t id = lookup(t, e.text + s->start, s->n);
        if (id >= 0) {
            emit(id, ids, max, &count);
            continue;
        }
        for (size_t k = 0; k < s->n; k++) {
            int32_t b = t->byte_id[(uint8_t)e.text[s->start + k]];
            emit(b >= 0 ? b : t->unk, ids, max, &count);
        }
    }
    ret = count;
out:
    free(e.text);
    free(e.sym);
    free(e.heap);
    return ret;
}

/* ---- decoding ------------------------------------------------------------------ */

int hc_tokenizer_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize)
{
    const char *s;
    size_t n, out = 0;
    if (!t || id < 0 || id >= t->n_vocab) {
        hc_set_error("tokenizer: token id %d is outside the vocab", (int)id);
        return -1;
    }
    if (bufsize < 0 || (!buf && bufsize > 0)) {
        hc_set_error("tokenizer: invalid buffer for a piece");
        return -1;
    }
    if (t->type[id] == HC_TOKEN_CONTROL)
        return 0;
    if (t->type[id] == HC_TOKEN_BYTE) {
        if (bufsize > 0)
            buf[0] = (char)parse_byte_piece(t->blob + t->offset[id], t->len[id]);
        return 1;
    }
    s = t->blob + t->offset[id];
    n = t->len[id];
    for (size_t i = 0; i < n;) {
        if (i + TOK_SPACE_MARK_LEN <= n && memcmp(s + i, TOK_SPACE_MARK, TOK_SPACE_MARK_LEN) == 0) {
            if (out < (size_t)bufsize)
                buf[out] = ' ';
            out++;
            i += TOK_SPACE_MARK_LEN;
        } else {
            if (out < (size_t)bufsize)
                buf[out] = s[i];
            out++;
            i++;
        }
    }
    return (int)out;
}

/*
 * SentencePiece-style BPE (tokenizer.ggml.model = "llama"; the algorithm is
 * in tokenizer.h).
 *
 * Encoding is O(n log n) in the text length: the symbols form a doubly linked
 * list over one normalized buffer (adjacent symbols are always contiguous
 * bytes, so a pair's text is a slice of it), candidate merges sit in a binary
 * max-heap, and piece lookups go through the tokenizer's hash table.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tokenizer_internal.h"
#include "util/heap.h"
#include "util/log.h"

#define TOK_SPACE_MARK "\xe2\x96\x81" /* U+2581 LOWER ONE EIGHTH BLOCK */
#define TOK_SPACE_MARK_LEN 3

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

int hc_spm_load(hc_tokenizer *t, const hc_gguf *g, int have_types)
{
    /* Without token_type, the <0xXX> pieces are the byte tokens. */
    if (!have_types)
        for (int i = 0; i < t->n_vocab; i++)
            if (parse_byte_piece(t->blob + t->offset[i], t->len[i]) >= 0)
                t->type[i] = HC_TOKEN_BYTE;
    return load_scores(t, g) != 0 || load_bytes(t) != 0 ? -1 : 0;
}

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
    hc_heap heap; /* of bigram */
} encoder;
_Static_assert(sizeof(bigram) <= HC_HEAP_MAX_ITEM, "a bigram fits the heap's elements");

/* Higher score first; on equal scores the leftmost pair (lower left index,
 * and symbol indices grow left to right) first. */
static int bigram_before(const void *pa, const void *pb)
{
    const bigram *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score;
    return a->left < b->left;
}

static void try_pair(encoder *e, int left, int right)
{
    size_t n;
    int32_t id;
    if (left < 0 || right < 0)
        return;
    n = e->sym[left].n + e->sym[right].n;
    id = hc_tok_lookup(e->t, e->text + e->sym[left].start, n);
    if (id < 0)
        return;
    const bigram b = {e->t->score[id], left, right, n};
    hc_heap_push(&e->heap, &b);
}

int hc_spm_encode(const hc_tokenizer *t, const char *text, size_t len, int32_t *ids, int max,
                  int *count)
{
    encoder e = {t, NULL, NULL, {NULL, 0, sizeof(bigram), bigram_before}};
    size_t cap, n_text = 0, n_sym = 0;
    int ret = -1;

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
    e.heap = (hc_heap){malloc(3 * n_text * sizeof(bigram)), 0, sizeof(bigram), bigram_before};
    if (!e.sym || !e.heap.items) {
        hc_set_error("tokenizer: out of memory for %zu bytes of text", len);
        goto out;
    }
    /* A byte that does not start a valid UTF-8 sequence is a character of its
     * own, and ends up as a byte-fallback token. */
    for (size_t off = 0; off < n_text;) {
        size_t n = hc_tok_utf8_len((const unsigned char *)e.text + off, n_text - off);
        e.sym[n_sym] = (symbol){off, n, (int)n_sym - 1, -1};
        if (n_sym > 0)
            e.sym[n_sym - 1].next = (int)n_sym;
        n_sym++;
        off += n;
    }
    for (size_t i = 1; i < n_sym; i++)
        try_pair(&e, (int)i - 1, (int)i);

    while (e.heap.n > 0) {
        bigram b;
        hc_heap_pop(&e.heap, &b);
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
        int32_t id = hc_tok_lookup(t, e.text + s->start, s->n);
        if (id >= 0) {
            hc_tok_emit(id, ids, max, count);
            continue;
        }
        for (size_t k = 0; k < s->n; k++) {
            int32_t b = t->byte_id[(uint8_t)e.text[s->start + k]];
            hc_tok_emit(b >= 0 ? b : t->unk, ids, max, count);
        }
    }
    ret = 0;
out:
    free(e.text);
    free(e.sym);
    free(e.heap.items);
    return ret;
}

/* ---- decoding ------------------------------------------------------------------ */

int hc_spm_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize)
{
    const char *s;
    size_t n, out = 0;
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

/*
 * Byte-level BPE as GPT-2 defines it (tokenizer.ggml.model = "gpt2").
 *
 * Vocab pieces are spelled in GPT-2's byte-to-unicode alphabet (one code
 * point per byte, tokenizer_pretok.h), so BPE can work on bytes: every byte
 * starts as the token of its code point (load_byte_tokens), and merge i of tokenizer.ggml.merges
 * ("A B", rank i) joins the adjacent tokens A and B into the token AB.
 * Within each pre-token the adjacent pair of lowest rank merges first, the
 * leftmost on ties, until no adjacent pair has a merge.  A merge table keyed
 * by the pair of ids and a min-heap of candidate pairs make that
 * O(n log n) in the text length.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tokenizer_internal.h"
#include "runtime/tokenizer_pretok.h"
#include "util/heap.h"
#include "util/log.h"

typedef struct merge_slot {
    int32_t left, right; /* the pair; left -1 marks an empty slot */
    int32_t rank;        /* line of tokenizer.ggml.merges */
    int32_t id;          /* the merged token */
} merge_slot;

struct hc_bpe {
    merge_slot *merges;
    uint32_t merge_mask; /* table size - 1 (a power of two) */
    hc_pretok *pretok;
};

static uint32_t pair_hash(int32_t left, int32_t right)
{
    uint64_t h = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

/* The merge of (left, right), or NULL. */
static const merge_slot *find_merge(const hc_bpe *b, int32_t left, int32_t right)
{
    uint32_t i = pair_hash(left, right) & b->merge_mask;
    for (;;) {
        const merge_slot *s = &b->merges[i];
        if (s->left < 0)
            return NULL;
        if (s->left == left && s->right == right)
            return s;
        i = (i + 1) & b->merge_mask;
    }
}

/* ---- loading ------------------------------------------------------------------ */

static int merge_error(uint64_t i, const char *s, uint64_t n, const char *why)
{
    hc_set_error("tokenizer: tokenizer.ggml.merges[%llu] '%.*s' %s", (unsigned long long)i,
                 (int)(n > 64 ? 64 : n), s, why);
    return -1;
}

static int load_merges(hc_tokenizer *t, hc_bpe *b, const hc_gguf *g)
{
    int64_t k = hc_gguf_find_key(g, "tokenizer.ggml.merges");
    const hc_gguf_kv *kv;
    uint64_t size = 16;
    char *joined = NULL;
    size_t joined_cap = 0;
    int ret = -1;
    if (k < 0) {
        hc_set_error("tokenizer: a gpt2 (byte-level BPE) tokenizer needs tokenizer.ggml.merges, "
                     "which is missing");
        return -1;
    }
    kv = &g->kv[k];
    if (kv->type != HC_GGUF_ARRAY || kv->arr_type != HC_GGUF_STRING) {
        hc_set_error("tokenizer: tokenizer.ggml.merges is not an array of strings");
        return -1;
    }
    if (kv->arr_n > (uint64_t)INT32_MAX / 2) {
        hc_set_error("tokenizer: tokenizer.ggml.merges has %llu entries",
                     (unsigned long long)kv->arr_n);
        return -1;
    }
    /* Load factor <= 1/2 keeps probe chains short. */
    while (size < 2 * kv->arr_n)
        size *= 2;
    b->merges = malloc(size * sizeof *b->merges);
    if (!b->merges) {
        hc_set_error("tokenizer: out of memory for %llu merges", (unsigned long long)kv->arr_n);
        return -1;
    }
    for (uint64_t i = 0; i < size; i++)
        b->merges[i].left = -1;
    b->merge_mask = (uint32_t)(size - 1);

    for (uint64_t i = 0; i < kv->arr_n; i++) {
        uint64_t n;
        const char *s = hc_gguf_arr_str(kv, i, &n);
        const char *sp = s ? memchr(s, ' ', n) : NULL;
        size_t na, nb;
        int32_t a, bb, ab;
        if (!s) {
            hc_set_error("tokenizer: tokenizer.ggml.merges[%llu] is unreadable",
                         (unsigned long long)i);
            goto out;
        }
        /* Pieces never hold a space (it is U+0120 in this alphabet). */
        if (!sp || sp == s || sp == s + n - 1 || memchr(sp + 1, ' ', n - (size_t)(sp - s) - 1)) {
            merge_error(i, s, n, "is not two pieces separated by one space");
            goto out;
        }
        na = (size_t)(sp - s);
        nb = n - na - 1;
        a = hc_tok_lookup(t, s, na);
        bb = hc_tok_lookup(t, sp + 1, nb);
        if (a < 0 || bb < 0) {
            merge_error(i, s, n, "names a piece that is not in tokenizer.ggml.tokens");
            goto out;
        }
        if (na + nb > joined_cap) {
            char *p = realloc(joined, na + nb);
            if (!p) {
                hc_set_error("tokenizer: out of memory");
                goto out;
            }
            joined = p;
            joined_cap = na + nb;
        }
        memcpy(joined, s, na);
        memcpy(joined + na, sp + 1, nb);
        ab = hc_tok_lookup(t, joined, na + nb);
        if (ab < 0) {
            merge_error(i, s, n, "makes a piece that is not in tokenizer.ggml.tokens");
            goto out;
        }
        /* A pair listed twice keeps its first (lowest) rank. */
        if (!find_merge(b, a, bb)) {
            uint32_t h = pair_hash(a, bb) & b->merge_mask;
            while (b->merges[h].left >= 0)
                h = (h + 1) & b->merge_mask;
            b->merges[h] = (merge_slot){a, bb, (int32_t)i, ab};
        }
    }
    ret = 0;
out:
    free(joined);
    return ret;
}

/* tokenizer.ggml.pre, or for files written before that key existed (as
 * PowerInfer's converter writes them) the one the architecture implies. */
static int load_pretok(hc_bpe *b, const hc_gguf *g)
{
    const char *name = "gpt-2";
    uint64_t n = 5;
    if (hc_gguf_find_key(g, "tokenizer.ggml.pre") >= 0) {
        if (hc_gguf_get_str(g, "tokenizer.ggml.pre", &name, &n) != 0) {
            hc_set_error("tokenizer: tokenizer.ggml.pre is not a string");
            return -1;
        }
    } else {
        const char *arch;
        uint64_t na;
        if (hc_gguf_get_str(g, "general.architecture", &arch, &na) == 0 && na == 6 &&
            memcmp(arch, "falcon", 6) == 0) {
            name = "falcon";
            n = 6;
        }
    }
    b->pretok = hc_pretok_new(name, (size_t)n);
    return b->pretok ? 0 : -1;
}

/* The token of each byte's code point.  Falcon's vocab lacks 28 of them
 * (bytes UTF-8 never uses, and some ASCII controls): such a byte becomes the
 * unknown token if the vocab names one, else it is left out, as Hugging
 * Face's BPE does (its neighbours then meet and may merge). */
static void load_byte_tokens(hc_tokenizer *t, const hc_gguf *g)
{
    int has_unk = hc_gguf_find_key(g, "tokenizer.ggml.unknown_token_id") >= 0;
    for (int v = 0; v < 256; v++) {
        char c[2];
        size_t n = hc_bytelevel_char((uint8_t)v, c);
        t->byte_id[v] = hc_tok_lookup(t, c, n);
        if (t->byte_id[v] < 0 && has_unk)
            t->byte_id[v] = t->unk;
    }
}

int hc_bpe_load(hc_tokenizer *t, const hc_gguf *g)
{
    t->bpe = calloc(1, sizeof *t->bpe);
    if (!t->bpe) {
        hc_set_error("tokenizer: out of memory");
        return -1;
    }
    if (load_merges(t, t->bpe, g) != 0 || load_pretok(t->bpe, g) != 0)
        return -1;
    load_byte_tokens(t, g);
    return 0;
}

void hc_bpe_free(hc_bpe *b)
{
    if (!b)
        return;
    free(b->merges);
    hc_pretok_free(b->pretok);
    free(b);
}

/* ---- encoding ------------------------------------------------------------------ */

/* A candidate merge of symbol `left` with its right neighbour `right`, which
 * held tokens lid and rid when it was pushed: stale once either changed. */
typedef struct candidate {
    int32_t rank;
    int left, right;
    int32_t lid, rid, id;
} candidate;

typedef struct encoder {
    const hc_bpe *b;
    int32_t *sym_id; /* per byte of the text: the token of the symbol starting there */
    int *next, *prev; /* neighbours; -1 at a pre-token's ends */
    hc_heap heap; /* of candidate */
} encoder;
_Static_assert(sizeof(candidate) <= HC_HEAP_MAX_ITEM, "a candidate fits the heap's elements");

/* Lower rank first; on a tie the leftmost (symbols are indexed by their
 * first byte). */
static int before(const void *px, const void *py)
{
    const candidate *x = px, *y = py;
    if (x->rank != y->rank)
        return x->rank < y->rank;
    return x->left < y->left;
}

static void try_pair(encoder *e, int left, int right)
{
    const merge_slot *m;
    if (left < 0 || right < 0)
        return;
    m = find_merge(e->b, e->sym_id[left], e->sym_id[right]);
    if (m) {
        const candidate c = {m->rank, left, right, m->left, m->right, m->id};
        hc_heap_push(&e->heap, &c);
    }
}

/* BPE over the bytes [start, end) of one pre-token, emitting its ids.  A
 * symbol is named by the offset of its first byte. */
static void encode_piece(encoder *e, const hc_tokenizer *t, const char *text, size_t start,
                         size_t end, int32_t *ids, int max, int *count)
{
    int first = -1, last = -1;
    e->heap.n = 0;
    for (size_t i = start; i < end; i++) {
        int32_t id = t->byte_id[(uint8_t)text[i]];
        if (id < 0)
            continue; /* no token for this byte (load_byte_tokens) */
        e->sym_id[i] = id;
        e->prev[i] = last;
        e->next[i] = -1;
        if (last >= 0)
            e->next[last] = (int)i;
        else
            first = (int)i;
        last = (int)i;
    }
    for (int i = first; i >= 0; i = e->next[i])
        try_pair(e, i, e->next[i]);
    while (e->heap.n > 0) {
        candidate c;
        hc_heap_pop(&e->heap, &c);
        if (e->next[c.left] != c.right || e->sym_id[c.left] != c.lid ||
            e->sym_id[c.right] != c.rid)
            continue; /* stale: a side merged elsewhere since */
        e->sym_id[c.left] = c.id;
        e->next[c.left] = e->next[c.right];
        if (e->next[c.right] >= 0)
            e->prev[e->next[c.right]] = c.left;
        e->sym_id[c.right] = -1; /* gone: no live pair names it */
        e->next[c.right] = -1;
        try_pair(e, e->prev[c.left], c.left);
        try_pair(e, c.left, e->next[c.left]);
    }
    for (int i = first; i >= 0; i = e->next[i])
        hc_tok_emit(e->sym_id[i], ids, max, count);
}

int hc_bpe_encode(const hc_tokenizer *t, const char *text, size_t len, int32_t *ids, int max,
                  int *count)
{
    encoder e = {t->bpe, NULL, NULL, NULL, {NULL, 0, sizeof(candidate), before}};
    size_t *cuts = NULL, n_cuts, longest = 0;
    int ret = -1;

    /* At most one id per byte, plus BOS, in an int. */
    if (len > (size_t)INT_MAX - 1 || len > (SIZE_MAX / sizeof(size_t) - 1) / 2) {
        hc_set_error("tokenizer: text of %zu bytes is too long", len);
        goto out;
    }
    cuts = malloc((2 * len + 1) * sizeof *cuts);
    e.sym_id = malloc(len * sizeof *e.sym_id);
    e.next = malloc(len * sizeof *e.next);
    e.prev = malloc(len * sizeof *e.prev);
    if (!cuts || !e.sym_id || !e.next || !e.prev) {
        hc_set_error("tokenizer: out of memory for %zu bytes of text", len);
        goto out;
    }
    if (hc_pretok_split(t->bpe->pretok, text, len, cuts, &n_cuts) != 0)
        goto out;
    /* A pre-token of n bytes has n - 1 initial candidates and at most two
     * more per merge. */
    for (size_t k = 0; k + 1 < n_cuts; k++)
        longest = cuts[k + 1] - cuts[k] > longest ? cuts[k + 1] - cuts[k] : longest;
    e.heap.items = malloc(3 * longest * sizeof(candidate));
    if (!e.heap.items && longest > 0) {
        hc_set_error("tokenizer: out of memory for %zu bytes of text", len);
        goto out;
    }
    for (size_t k = 0; k + 1 < n_cuts; k++)
        encode_piece(&e, t, text, cuts[k], cuts[k + 1], ids, max, count);
    ret = 0;
out:
    free(cuts);
    free(e.sym_id);
    free(e.next);
    free(e.prev);
    free(e.heap.items);
    return ret;
}

/* ---- decoding ------------------------------------------------------------------ */

/* The code point of the valid UTF-8 sequence s[0..n) (hc_tok_utf8_len). */
static uint32_t utf8_code_point(const unsigned char *s, size_t n)
{
    static const unsigned char lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    uint32_t cp = s[0] & lead_mask[n];
    for (size_t i = 1; i < n; i++)
        cp = cp << 6 | (s[i] & 0x3Fu);
    return cp;
}

/* Normal pieces are in the byte alphabet and go back to the bytes; user
 * defined ones (and <unk>) are plain text; control tokens give nothing.  A
 * character outside the alphabet is kept as it is. */
int hc_bpe_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize)
{
    const unsigned char *s = (const unsigned char *)t->blob + t->offset[id];
    size_t n = t->len[id], out = 0;
    int raw = t->type[id] == HC_TOKEN_USER_DEFINED || t->type[id] == HC_TOKEN_UNKNOWN;
    if (t->type[id] == HC_TOKEN_CONTROL)
        return 0;
    for (size_t i = 0; i < n;) {
        size_t k = raw ? 1 : hc_tok_utf8_len(s + i, n - i);
        int byte = -1;
        if (!raw && (k > 1 || s[i] < 0x80)) /* a valid character */
            byte = hc_bytelevel_byte(utf8_code_point(s + i, k));
        if (byte >= 0) {
            if (out < (size_t)bufsize)
                buf[out] = (char)byte;
            out++;
        } else {
            for (size_t j = 0; j < k; j++, out++)
                if (out < (size_t)bufsize)
                    buf[out] = (char)s[i + j];
        }
        i += k;
    }
    return out > INT_MAX ? INT_MAX : (int)out;
}

/*
 * The tokenizers.  SentencePiece: llama.cpp's 46 LLaMA-2 vocab vectors, the
 * golden prompts of our models, decoding, a hand-made vocab that pins down
 * merge order / byte fallback / control tokens, and load errors.  Byte-level
 * BPE: llama.cpp's 46 Falcon and 46 GPT-2 vectors (encode and decode), the
 * archs README's prompt ids, a hand-made vocab for merge order, pre-token
 * bounds, invalid UTF-8 and missing bytes, load errors, concurrent encodes.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "runtime/tokenizer.h"
#include "test_util.h"

#define SPACE "\xe2\x96\x81" /* U+2581 */

static hc_gguf *open_or_fail(const char *path)
{
    char err[256] = "";
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "open %s: %s", path, err);
    return g;
}

static hc_tokenizer *load_or_fail(const hc_gguf *g)
{
    hc_tokenizer *t = hc_tokenizer_load(g);
    ck_assert_msg(t != NULL, "hc_tokenizer_load: %s", hc_last_error());
    return t;
}

/* Concatenated pieces of ids into a malloc'd buffer; *n gets its length. */
static char *decode(const hc_tokenizer *t, const int32_t *ids, int n_ids, size_t *n)
{
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    for (int i = 0; i < n_ids; i++) {
        char piece[128];
        int k = hc_tokenizer_piece(t, ids[i], piece, sizeof piece);
        ck_assert_msg(k >= 0 && k <= (int)sizeof piece, "piece of %d: %d", (int)ids[i], k);
        if (len + (size_t)k + 1 > cap) {
            cap = 2 * (len + (size_t)k + 1);
            out = realloc(out, cap);
            ck_assert_ptr_nonnull(out);
        }
        memcpy(out + len, piece, (size_t)k);
        len += (size_t)k;
    }
    out[len] = 0;
    *n = len;
    return out;
}

/* Render ids for a failure message. */
static const char *ids_str(const int32_t *ids, int n)
{
    static char buf[2][2048];
    static int which;
    char *b = buf[which++ % 2];
    size_t off = 0;
    b[0] = 0;
    for (int i = 0; i < n && off + 16 < sizeof buf[0]; i++)
        off += (size_t)snprintf(b + off, sizeof buf[0] - off, " %d", (int)ids[i]);
    return b;
}

/* ---- llama.cpp's test vectors ---------------------------------------------- */

/* Run every vector of tokenizer/<vocab>.gguf(.inp/.out): encode without BOS
 * must give the .out line, and decoding must give the text back (behind
 * SentencePiece's dummy-prefix space when spm_prefix).  Returns the number of
 * vectors. */
static int run_vectors(const char *vocab, int n_vocab, int spm_prefix)
{
    char name[256], inp_path[4096], out_path[4096];
    snprintf(name, sizeof name, "tokenizer/%s.gguf", vocab);
    const char *base = hc_test_path(HC_TEST_DATA, name);
    snprintf(inp_path, sizeof inp_path, "%s.inp", base);
    snprintf(out_path, sizeof out_path, "%s.out", base);
    hc_gguf *g = open_or_fail(base);
    hc_tokenizer *t = load_or_fail(g);
    ck_assert_int_eq(hc_tokenizer_n_vocab(t), n_vocab);
    /* The tokenizer copies what it needs: the mapping can go now. */
    hc_gguf_close(g);

    size_t inp_len, out_len;
    char *inp = hc_test_read_file(inp_path, &inp_len);
    char *out = hc_test_read_file(out_path, &out_len);
    ck_assert_msg(inp && out, "cannot read %s / %s", inp_path, out_path);

    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    char *text = inp, *line = out;
    int n_vectors = 0;
    int32_t *ids = malloc(4096 * sizeof *ids);
    int32_t want[4096];
    ck_assert_ptr_nonnull(ids);
    for (;;) {
        char *end = memmem(text, inp_len - (size_t)(text - inp), sep, sep_len);
        if (!end)
            break;
        char *nl = strchr(line, '\n');
        ck_assert_msg(nl != NULL, "%s: .out has fewer lines than .inp has texts (%d)", vocab,
                      n_vectors);
        *nl = 0;
        int n_want = 0;
        for (char *p = line, *q; n_want < 4096; p = q) {
            long v = strtol(p, &q, 10);
            if (q == p)
                break;
            want[n_want++] = (int32_t)v;
        }

        size_t len = (size_t)(end - text);
        int n = hc_tokenizer_encode(t, text, len, 0, ids, 4096);
        ck_assert_msg(n == n_want && memcmp(ids, want, (size_t)n * sizeof *ids) == 0,
                      "%s vector %d \"%.*s\":\n got %s\nwant %s", vocab, n_vectors, (int)len,
                      text, ids_str(ids, n), ids_str(want, n_want));

        /* Every byte is kept (byte fallback, or BPE's byte alphabet), so
         * decoding gives back exactly the text. */
        size_t dn;
        char *dec = decode(t, ids, n, &dn);
        if (len == 0) {
            ck_assert_uint_eq(dn, 0);
        } else if (spm_prefix) {
            ck_assert_msg(dn == len + 1 && dec[0] == ' ' && memcmp(dec + 1, text, len) == 0,
                          "%s vector %d does not round-trip: \"%s\"", vocab, n_vectors, dec);
        } else {
            ck_assert_msg(dn == len && memcmp(dec, text, len) == 0,
                          "%s vector %d does not round-trip: \"%s\"", vocab, n_vectors, dec);
        }
        free(dec);

        n_vectors++;
        text = end + sep_len;
        line = nl + 1;
    }
    ck_assert_msg(*line == 0, "%s: .out has more lines than .inp has texts", vocab);
    free(ids);
    free(inp);
    free(out);
    hc_tokenizer_free(t);
    return n_vectors;
}

START_TEST(vocab_vectors)
{
    hc_gguf *g = open_or_fail(hc_test_path(HC_TEST_DATA, "tokenizer/ggml-vocab-llama-spm.gguf"));
    hc_tokenizer *t = load_or_fail(g);
    ck_assert_int_eq(hc_tokenizer_bos(t), 1);
    ck_assert_int_eq(hc_tokenizer_eos(t), 2);
    hc_tokenizer_free(t);
    hc_gguf_close(g);
    ck_assert_int_eq(run_vectors("ggml-vocab-llama-spm", 32000, 1), 46);
}
END_TEST

/* ---- byte-level BPE: llama.cpp's Falcon and GPT-2 vectors --------------------- */

START_TEST(bpe_vectors_falcon)
{
    ck_assert_int_eq(run_vectors("ggml-vocab-falcon", 65024, 0), 46);
}
END_TEST

START_TEST(bpe_vectors_gpt2)
{
    ck_assert_int_eq(run_vectors("ggml-vocab-gpt-2", 50257, 0), 46);
}
END_TEST

/* ---- golden prompts ----------------------------------------------------------- */

static void check_prompt(const char *model)
{
    char name[64];
    snprintf(name, sizeof name, "%s.gguf", model);
    hc_gguf *g = open_or_fail(hc_test_path(HC_MODELS_DIR, name));
    hc_tokenizer *t = load_or_fail(g);
    hc_gguf_close(g);

    snprintf(name, sizeof name, "golden/%s.json", model);
    json_object *j = hc_test_load_json(hc_test_path(HC_TEST_DATA, name));
    ck_assert_msg(j != NULL, "cannot load %s", name);
    json_object *fp, *pr, *pids;
    ck_assert(json_object_object_get_ex(j, "from_prompt", &fp));
    ck_assert(json_object_object_get_ex(fp, "prompt", &pr));
    ck_assert(json_object_object_get_ex(fp, "prompt_ids", &pids));
    const char *prompt = json_object_get_string(pr);
    int32_t want[256], got[256];
    int n_want = hc_test_json_ints(pids, want, 256);
    ck_assert_int_gt(n_want, 1);
    ck_assert_int_eq(want[0], hc_tokenizer_bos(t));

    int n = hc_tokenizer_encode(t, prompt, strlen(prompt), 1, got, 256);
    ck_assert_msg(n == n_want && memcmp(got, want, (size_t)n * sizeof *got) == 0,
                  "%s: got %s, want %s", model, ids_str(got, n), ids_str(want, n_want));
    /* These models carry no add_bos_token key: the default is to add BOS. */
    memset(got, 0, sizeof got);
    n = hc_tokenizer_encode(t, prompt, strlen(prompt), -1, got, 256);
    ck_assert_int_eq(n, n_want);
    ck_assert_mem_eq(got, want, (size_t)n * sizeof *got);

    /* Decoding: BOS gives nothing, the dummy prefix gives the leading space. */
    size_t dn;
    char *dec = decode(t, got, n, &dn);
    ck_assert_uint_eq(dn, strlen(prompt) + 1);
    ck_assert_int_eq(dec[0], ' ');
    ck_assert_str_eq(dec + 1, prompt);
    free(dec);

    /* A short buffer: the full count comes back, only max ids are written. */
    int32_t few[4] = {-7, -7, -7, -7};
    ck_assert_int_eq(hc_tokenizer_encode(t, prompt, strlen(prompt), 1, few, 3), n_want);
    ck_assert_mem_eq(few, want, 3 * sizeof *few);
    ck_assert_int_eq(few[3], -7);
    ck_assert_int_eq(hc_tokenizer_encode(t, prompt, strlen(prompt), 1, NULL, 0), n_want);

    json_object_put(j);
    hc_tokenizer_free(t);
}

START_TEST(golden_prompt_stories260K)
{
    check_prompt("stories260K");
}
END_TEST

START_TEST(golden_prompt_relu2M)
{
    check_prompt("relu2M");
}
END_TEST

START_TEST(greedy_story_decodes)
{
    hc_gguf *g = open_or_fail(hc_test_path(HC_MODELS_DIR, "stories260K.gguf"));
    hc_tokenizer *t = load_or_fail(g);
    hc_gguf_close(g);
    json_object *j = hc_test_load_json(hc_test_path(HC_TEST_DATA, "golden/stories260K.json"));
    ck_assert_ptr_nonnull(j);
    json_object *fb, *gi;
    ck_assert(json_object_object_get_ex(j, "from_bos", &fb));
    ck_assert(json_object_object_get_ex(fb, "greedy_ids", &gi));
    int32_t ids[1024];
    int n = hc_test_json_ints(gi, ids, 1024);
    ck_assert_int_gt(n, 10);
    ck_assert_int_le(n, 1024);
    size_t dn;
    char *dec = decode(t, ids, n, &dn);
    /* The first piece carries SentencePiece's word-start space. */
    static const char want[] = "Once upon a time, there was a little girl named Lily";
    ck_assert_int_eq(dec[0], ' ');
    ck_assert_msg(strncmp(dec + 1, want, sizeof want - 1) == 0, "decoded: \"%.80s\"", dec);
    free(dec);
    json_object_put(j);
    hc_tokenizer_free(t);
}
END_TEST

/* ---- a hand-made vocab ----------------------------------------------------------
 * A GGUF v3 image written byte by byte here (independently of the project's
 * writer), so each rule of the algorithm can be checked in isolation. */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n) + 64;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(buf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_str(buf *b, const char *k, const char *v)
{
    put_str(b, k);
    put_u32(b, HC_GGUF_STRING);
    put_str(b, v);
}
static void kv_u32(buf *b, const char *k, uint32_t v)
{
    put_str(b, k);
    put_u32(b, HC_GGUF_U32);
    put_u32(b, v);
}
static void kv_bool(buf *b, const char *k, int v)
{
    unsigned char c = (unsigned char)v;
    put_str(b, k);
    put_u32(b, HC_GGUF_BOOL);
    put(b, &c, 1);
}

typedef struct piece_def {
    const char *text;
    float score;
    int32_t type;
} piece_def;

/* The vocab every mini test uses (ids are the indices). */
static const piece_def mini_vocab[] = {
    {"<unk>", 0, 2},      {"<s>", 0, 3},     {"</s>", 0, 3},
    {"<0x63>", 0, 6},     /* 'c' */
    {"<0xC3>", 0, 6},     {"<0xA9>", 0, 6},  /* the two bytes of e-acute */
    {"<0xFF>", 0, 6},
    {SPACE, -5, 1},       /* 7 */
    {"a", -5, 1},         {"b", -5, 1},      /* 8, 9 */
    {"ab", -1, 1},        {"ba", -1, 1},     /* 10, 11: equal scores */
    {"<", -5, 1},         {"s", -5, 1},      {">", -5, 1}, /* 12..14 */
    {"<s", -2, 1},        /* 15: "<s>" itself is only the control token */
    {SPACE "b", -0.5f, 1}, /* 16 */
    {"aa", -3, 1},        /* 17: lower score than "ab" */
    {"x", -5, 5},         /* 18: unused pieces never match */
};
#define MINI_N ((int)(sizeof mini_vocab / sizeof mini_vocab[0]))

/* What to leave out or break in the image. */
enum {
    MINI_OK = 0,
    MINI_NO_TOKENIZER = 1 << 0,
    MINI_GPT2 = 1 << 1,
    MINI_SHORT_SCORES = 1 << 2,
    MINI_BAD_BOS = 1 << 3,
    MINI_NO_TOKENS = 1 << 4,
    MINI_NO_SPACE_PREFIX = 1 << 5,
    MINI_BAD_TYPE = 1 << 6,
};

static unsigned char *mini_gguf(int flags, size_t *len)
{
    buf b = {0};
    int tok = !(flags & MINI_NO_TOKENIZER);
    uint64_t n_kv = 1;
    if (tok)
        n_kv += 7 + !(flags & MINI_NO_TOKENS) + !!(flags & MINI_NO_SPACE_PREFIX);
    put(&b, "GGUF", 4);
    put_u32(&b, 3);
    put_u64(&b, 0);    /* tensors */
    put_u64(&b, n_kv);
    kv_str(&b, "general.architecture", "llama");
    if (tok) {
        kv_str(&b, "tokenizer.ggml.model", flags & MINI_GPT2 ? "gpt2" : "llama");
        if (!(flags & MINI_NO_TOKENS)) {
            put_str(&b, "tokenizer.ggml.tokens");
            put_u32(&b, HC_GGUF_ARRAY);
            put_u32(&b, HC_GGUF_STRING);
            put_u64(&b, MINI_N);
            for (int i = 0; i < MINI_N; i++)
                put_str(&b, mini_vocab[i].text);
        }
        int n_scores = flags & MINI_SHORT_SCORES ? MINI_N - 1 : MINI_N;
        put_str(&b, "tokenizer.ggml.scores");
        put_u32(&b, HC_GGUF_ARRAY);
        put_u32(&b, HC_GGUF_F32);
        put_u64(&b, (uint64_t)n_scores);
        for (int i = 0; i < n_scores; i++)
            put(&b, &mini_vocab[i].score, 4);
        put_str(&b, "tokenizer.ggml.token_type");
        put_u32(&b, HC_GGUF_ARRAY);
        put_u32(&b, HC_GGUF_I32);
        put_u64(&b, MINI_N);
        for (int i = 0; i < MINI_N; i++) {
            int32_t ty = (flags & MINI_BAD_TYPE) && i == 9 ? 42 : mini_vocab[i].type;
            put(&b, &ty, 4);
        }
        kv_u32(&b, "tokenizer.ggml.bos_token_id", flags & MINI_BAD_BOS ? MINI_N : 1);
        kv_u32(&b, "tokenizer.ggml.eos_token_id", 2);
        kv_u32(&b, "tokenizer.ggml.unknown_token_id", 0);
        kv_bool(&b, "tokenizer.ggml.add_bos_token", 0);
        if (flags & MINI_NO_SPACE_PREFIX)
            kv_bool(&b, "tokenizer.ggml.add_space_prefix", 0);
    }
    /* Pad to the default alignment: the (empty) data section starts there. */
    while (b.n % HC_GGUF_DEFAULT_ALIGNMENT)
        put(&b, "", 1);
    *len = b.n;
    return b.p;
}

typedef struct mini {
    unsigned char *img;
    hc_gguf *g;
    hc_tokenizer *t;
} mini;

static mini mini_open(int flags)
{
    mini m = {0};
    size_t len;
    char err[256] = "";
    m.img = mini_gguf(flags, &len);
    m.g = hc_gguf_open_memory(m.img, len, err, sizeof err);
    ck_assert_msg(m.g != NULL, "hand-made GGUF rejected: %s", err);
    m.t = hc_tokenizer_load(m.g);
    return m;
}

static void mini_close(mini *m)
{
    hc_tokenizer_free(m->t);
    hc_gguf_close(m->g);
    free(m->img);
}

/* Encode s (no BOS) and compare with the expected ids (terminated by -1). */
static void expect(const hc_tokenizer *t, const char *s, const int32_t *want)
{
    int32_t got[64];
    int n_want = 0;
    while (want[n_want] >= 0)
        n_want++;
    int n = hc_tokenizer_encode(t, s, strlen(s), 0, got, 64);
    ck_assert_msg(n == n_want && memcmp(got, want, (size_t)n * sizeof *got) == 0,
                  "\"%s\": got%s, want%s", s, ids_str(got, n), ids_str(want, n_want));
}
#define EXPECT(t, s, ...) expect(t, s, (const int32_t[]){__VA_ARGS__, -1})

START_TEST(mini_rules)
{
    mini m = mini_open(MINI_OK);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    const hc_tokenizer *t = m.t;

    /* "ab" and "ba" score the same: the leftmost pair merges first. */
    EXPECT(t, "aba", 7, 10, 8);
    /* The higher score wins even to the right: "ab" (-1) before "aa" (-3). */
    EXPECT(t, "aab", 7, 8, 10);
    EXPECT(t, "aa", 7, 17);
    /* Spaces become U+2581 and merge like any character. */
    EXPECT(t, "a b", 7, 8, 16);
    EXPECT(t, " ", 7, 7);
    EXPECT(t, "b", 16);
    /* Byte fallback, and <unk> for a byte without a byte token. */
    EXPECT(t, "c", 7, 3);
    EXPECT(t, "d", 7, 0);
    EXPECT(t, "\xc3\xa9", 7, 4, 5);
    /* Invalid UTF-8: a stray byte, a truncated sequence, a lead byte followed
     * by a non-continuation byte — each bad byte stands alone. */
    EXPECT(t, "\xff", 7, 6);
    EXPECT(t, "a\xc3", 7, 8, 4);
    EXPECT(t, "\xc3" "a", 7, 4, 8);
    EXPECT(t, "\xa9\xa9", 7, 5, 5);
    /* Control pieces are never produced from text; unused ones neither. */
    EXPECT(t, "<s>", 7, 15, 14);
    EXPECT(t, "x", 7, 0);

    /* Empty text: nothing, or only BOS; this vocab says add_bos_token false. */
    int32_t ids[4] = {-1, -1, -1, -1};
    ck_assert_int_eq(hc_tokenizer_encode(t, "", 0, 0, ids, 4), 0);
    ck_assert_int_eq(hc_tokenizer_encode(t, "", 0, 1, ids, 4), 1);
    ck_assert_int_eq(ids[0], 1);
    ck_assert_int_eq(hc_tokenizer_encode(t, "a", 1, -1, ids, 4), 2);
    ck_assert_int_eq(ids[0], 7);
    ck_assert_int_eq(hc_tokenizer_add_bos_default(t), 0);
    /* len is honoured: bytes past it are not read. */
    ck_assert_int_eq(hc_tokenizer_encode(t, "abzzz", 2, 0, ids, 4), 2);
    ck_assert_int_eq(ids[1], 10);
    ck_assert_int_eq(hc_tokenizer_encode(t, "a", 1, 0, NULL, 4), -1);
    mini_close(&m);

    m = mini_open(MINI_NO_SPACE_PREFIX);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    EXPECT(m.t, "ab", 10);
    EXPECT(m.t, " b", 16);
    mini_close(&m);
}
END_TEST

START_TEST(mini_pieces)
{
    mini m = mini_open(MINI_OK);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    const hc_tokenizer *t = m.t;
    char b[16];
    ck_assert_int_eq(hc_tokenizer_piece(t, 16, b, sizeof b), 2);
    ck_assert_mem_eq(b, " b", 2);
    ck_assert_int_eq(hc_tokenizer_piece(t, 7, b, sizeof b), 1);
    ck_assert_int_eq(b[0], ' ');
    ck_assert_int_eq(hc_tokenizer_piece(t, 10, b, sizeof b), 2);
    ck_assert_mem_eq(b, "ab", 2);
    ck_assert_int_eq(hc_tokenizer_piece(t, 3, b, sizeof b), 1);
    ck_assert_int_eq(b[0], 'c');
    ck_assert_int_eq(hc_tokenizer_piece(t, 6, b, sizeof b), 1);
    ck_assert_int_eq((unsigned char)b[0], 0xFF);
    ck_assert_int_eq(hc_tokenizer_piece(t, 1, b, sizeof b), 0); /* BOS */
    ck_assert_int_eq(hc_tokenizer_piece(t, 2, b, sizeof b), 0); /* EOS */
    ck_assert_int_eq(hc_tokenizer_piece(t, 0, b, sizeof b), 5);
    ck_assert_mem_eq(b, "<unk>", 5);
    /* Short buffer: full length back, nothing written past bufsize. */
    memset(b, '#', sizeof b);
    ck_assert_int_eq(hc_tokenizer_piece(t, 16, b, 1), 2);
    ck_assert_int_eq(b[0], ' ');
    ck_assert_int_eq(b[1], '#');
    ck_assert_int_eq(hc_tokenizer_piece(t, 16, NULL, 0), 2);
    ck_assert_int_eq(hc_tokenizer_piece(t, MINI_N, b, sizeof b), -1);
    ck_assert_int_eq(hc_tokenizer_piece(t, -1, b, sizeof b), -1);
    mini_close(&m);
}
END_TEST

static void expect_load_error(int flags, const char *needle)
{
    mini m = mini_open(flags);
    ck_assert_msg(m.t == NULL, "flags %#x: loaded anyway", flags);
    ck_assert_msg(strstr(hc_last_error(), needle) != NULL, "flags %#x: error \"%s\" lacks \"%s\"",
                  flags, hc_last_error(), needle);
    mini_close(&m);
}

START_TEST(load_errors)
{
    expect_load_error(MINI_NO_TOKENIZER, "tokenizer.ggml.model");
    expect_load_error(MINI_GPT2, "gpt2");
    expect_load_error(MINI_SHORT_SCORES, "scores");
    expect_load_error(MINI_BAD_BOS, "bos_token_id");
    expect_load_error(MINI_NO_TOKENS, "tokenizer.ggml.tokens");
    expect_load_error(MINI_BAD_TYPE, "token_type");
    ck_assert_ptr_null(hc_tokenizer_load(NULL));
    hc_tokenizer_free(NULL);
}
END_TEST

/* A long text stays fast: quadratic merging would take seconds here. */
START_TEST(long_text)
{
    hc_gguf *g = open_or_fail(hc_test_path(HC_TEST_DATA, "tokenizer/ggml-vocab-llama-spm.gguf"));
    hc_tokenizer *t = load_or_fail(g);
    hc_gguf_close(g);
    static const char unit[] = "The quick brown fox jumps over the lazy dog. \xc3\xa9\xe2\x82\xac ";
    const size_t reps = 20000, ul = sizeof unit - 1;
    char *text = malloc(ul * reps);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < reps; i++)
        memcpy(text + i * ul, unit, ul);
    int n = hc_tokenizer_encode(t, text, ul * reps, 0, NULL, 0);
    ck_assert_int_gt(n, (int)reps * 10);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    ck_assert_ptr_nonnull(ids);
    ck_assert_int_eq(hc_tokenizer_encode(t, text, ul * reps, 0, ids, n), n);
    size_t dn;
    char *dec = decode(t, ids, n, &dn);
    ck_assert_uint_eq(dn, ul * reps + 1);
    ck_assert(memcmp(dec + 1, text, ul * reps) == 0);
    free(dec);
    free(ids);
    free(text);
    hc_tokenizer_free(t);
}
END_TEST

/* Long texts stay fast with BPE too: sentences, one 200 KB run of spaces
 * (GPT-2's \s+(?!\S) backs off one space) and one 200 KB word (a single
 * pre-token for the merge heap). */
START_TEST(bpe_long_text)
{
    hc_gguf *g = open_or_fail(hc_test_path(HC_TEST_DATA, "tokenizer/ggml-vocab-falcon.gguf"));
    hc_tokenizer *t = load_or_fail(g);
    hc_gguf_close(g);
    static const char unit[] = "The quick brown fox jumps over the lazy dog. \xc3\xa9\xe2\x82\xac 1234 ";
    const size_t reps = 20000, ul = sizeof unit - 1, run = 200000;
    const size_t len = ul * reps + 2 * run;
    char *text = malloc(len);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < reps; i++)
        memcpy(text + i * ul, unit, ul);
    memset(text + ul * reps, ' ', run);
    memset(text + ul * reps + run, 'a', run);
    int n = hc_tokenizer_encode(t, text, len, 0, NULL, 0);
    ck_assert_int_gt(n, (int)reps * 10);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    ck_assert_ptr_nonnull(ids);
    ck_assert_int_eq(hc_tokenizer_encode(t, text, len, 0, ids, n), n);
    size_t dn;
    char *dec = decode(t, ids, n, &dn);
    ck_assert_uint_eq(dn, len);
    ck_assert(memcmp(dec, text, len) == 0);
    free(dec);
    free(ids);
    free(text);
    hc_tokenizer_free(t);
}
END_TEST

/* ---- byte-level BPE: a hand-made vocab -------------------------------------------
 * Ids 0..255 are the byte alphabet (token b spells byte b's code point),
 * then the pieces below; the merges give each its rank. */

/* GPT-2's bytes_to_unicode (its encoder.py), written out from the spec: the
 * printable bytes keep their code point, the rest take 256, 257, ... in
 * byte order. */
static uint32_t gpt2_code_point(int byte)
{
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        if (b == byte)
            return printable ? (uint32_t)b : 256u + (uint32_t)n;
        if (!printable)
            n++;
    }
    return 0;
}

static void utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

#define G_SPACE "\xc4\xa0" /* U+0120, the space byte */
enum { B_AA = 256, B_AB, B_BC, B_A_SPACE, B_EOT, B_SPACE_B, B_33, B_3333, B_UNK, B_N };
static const char *const bpe_pieces[B_N - 256] = {
    "aa", "ab", "bc", "a" G_SPACE, "<|endoftext|>", G_SPACE "b", "33", "3333", "<unk>",
};
static const char *const bpe_merges[] = {
    "b c", "a b", "a a", "a " G_SPACE, G_SPACE " b", "3 3", "33 33",
};
#define BPE_N_MERGES ((int)(sizeof bpe_merges / sizeof bpe_merges[0]))

enum {
    BPE_OK = 0,
    BPE_NO_MERGES = 1 << 0,
    BPE_MERGE_NO_SPACE = 1 << 1,  /* a line "ab" */
    BPE_MERGE_TWO_SPACES = 1 << 2, /* a line "a b c" */
    BPE_MERGE_NOT_PIECE = 1 << 3, /* a line naming a piece the vocab lacks */
    BPE_MERGE_NO_RESULT = 1 << 4, /* a line whose merged piece the vocab lacks */
    BPE_BAD_PRE = 1 << 5,
    BPE_NO_PRE = 1 << 6,
    BPE_ARCH_FALCON = 1 << 7,
    BPE_MISSING_BYTE = 1 << 8,    /* no piece for byte 0x03 */
    BPE_UNK = 1 << 9,             /* unknown_token_id names <unk> */
    BPE_MERGES_NOT_STRINGS = 1 << 10,
};

static unsigned char *bpe_gguf(int flags, size_t *len)
{
    buf kvs = {0}, b = {0};
    uint64_t n_kv = 0;
    kv_str(&kvs, "general.architecture", flags & BPE_ARCH_FALCON ? "falcon" : "gpt2");
    kv_str(&kvs, "tokenizer.ggml.model", "gpt2");
    n_kv += 2;
    if (!(flags & BPE_NO_PRE)) {
        kv_str(&kvs, "tokenizer.ggml.pre", flags & BPE_BAD_PRE ? "llama3" : "gpt-2");
        n_kv++;
    }
    put_str(&kvs, "tokenizer.ggml.tokens");
    put_u32(&kvs, HC_GGUF_ARRAY);
    put_u32(&kvs, HC_GGUF_STRING);
    put_u64(&kvs, B_N);
    for (int i = 0; i < B_N; i++) {
        char c[4];
        utf8_put(c, gpt2_code_point(i));
        put_str(&kvs, i < 256 ? (i == 3 && (flags & BPE_MISSING_BYTE) ? "<x03>" : c)
                              : bpe_pieces[i - 256]);
    }
    put_str(&kvs, "tokenizer.ggml.token_type");
    put_u32(&kvs, HC_GGUF_ARRAY);
    put_u32(&kvs, HC_GGUF_I32);
    put_u64(&kvs, B_N);
    for (int i = 0; i < B_N; i++) {
        int32_t ty = i == B_EOT ? 3 : i == B_UNK ? 2 : 1;
        put(&kvs, &ty, 4);
    }
    n_kv += 2;
    if (flags & BPE_MERGES_NOT_STRINGS) {
        int32_t v = 0;
        put_str(&kvs, "tokenizer.ggml.merges");
        put_u32(&kvs, HC_GGUF_ARRAY);
        put_u32(&kvs, HC_GGUF_I32);
        put_u64(&kvs, 1);
        put(&kvs, &v, 4);
        n_kv++;
    } else if (!(flags & BPE_NO_MERGES)) {
        const char *extra = flags & BPE_MERGE_NO_SPACE     ? "ab"
                            : flags & BPE_MERGE_TWO_SPACES ? "a b c"
                            : flags & BPE_MERGE_NOT_PIECE  ? "a zz"
                            : flags & BPE_MERGE_NO_RESULT  ? "c a"
                                                           : NULL;
        put_str(&kvs, "tokenizer.ggml.merges");
        put_u32(&kvs, HC_GGUF_ARRAY);
        put_u32(&kvs, HC_GGUF_STRING);
        put_u64(&kvs, (uint64_t)BPE_N_MERGES + (extra != NULL));
        for (int i = 0; i < BPE_N_MERGES; i++)
            put_str(&kvs, bpe_merges[i]);
        if (extra)
            put_str(&kvs, extra);
        n_kv++;
    }
    kv_u32(&kvs, "tokenizer.ggml.bos_token_id", B_EOT);
    kv_u32(&kvs, "tokenizer.ggml.eos_token_id", B_EOT);
    n_kv += 2;
    if (flags & BPE_UNK) {
        kv_u32(&kvs, "tokenizer.ggml.unknown_token_id", B_UNK);
        n_kv++;
    }
    put(&b, "GGUF", 4);
    put_u32(&b, 3);
    put_u64(&b, 0);
    put_u64(&b, n_kv);
    put(&b, kvs.p, kvs.n);
    free(kvs.p);
    while (b.n % HC_GGUF_DEFAULT_ALIGNMENT)
        put(&b, "", 1);
    *len = b.n;
    return b.p;
}

static mini bpe_open(int flags)
{
    mini m = {0};
    size_t len;
    char err[256] = "";
    m.img = bpe_gguf(flags, &len);
    m.g = hc_gguf_open_memory(m.img, len, err, sizeof err);
    ck_assert_msg(m.g != NULL, "hand-made GGUF rejected: %s", err);
    m.t = hc_tokenizer_load(m.g);
    return m;
}

/* Encode s[0..n) and check that decoding gives it back. */
static void expect_bpe(const hc_tokenizer *t, const char *s, size_t n, const int32_t *want)
{
    int32_t got[64];
    int n_want = 0;
    while (want[n_want] >= 0)
        n_want++;
    int k = hc_tokenizer_encode(t, s, n, 0, got, 64);
    ck_assert_msg(k == n_want && memcmp(got, want, (size_t)k * sizeof *got) == 0,
                  "\"%.*s\": got%s, want%s", (int)n, s, ids_str(got, k), ids_str(want, n_want));
    size_t dn;
    char *dec = decode(t, got, k, &dn);
    ck_assert_msg(dn == n && memcmp(dec, s, n) == 0, "\"%.*s\" decodes to \"%s\"", (int)n, s, dec);
    free(dec);
}
#define EXPECT_BPE(t, s, ...) expect_bpe(t, s, sizeof s - 1, (const int32_t[]){__VA_ARGS__, -1})

START_TEST(bpe_rules)
{
    mini m = bpe_open(BPE_OK);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    const hc_tokenizer *t = m.t;
    /* Lowest rank first, wherever it is: "b c" (0) before "a b" (1). */
    EXPECT_BPE(t, "abc", 'a', B_BC);
    EXPECT_BPE(t, "ab", B_AB);
    /* One merge's ties: the leftmost pair first. */
    EXPECT_BPE(t, "aaa", B_AA, 'a');
    EXPECT_BPE(t, "aaaa", B_AA, B_AA);
    /* Pre-tokens are merged alone: GPT-2's pattern cuts "a b" into "a" and
     * " b", and "a " into "a" and " ", so "a" + space never merges. */
    EXPECT_BPE(t, "a b", 'a', B_SPACE_B);
    EXPECT_BPE(t, "a ", 'a', 32);
    /* gpt-2 keeps a run of digits whole. */
    EXPECT_BPE(t, "3333", B_3333);
    /* A control token's text is only text. */
    EXPECT_BPE(t, "<|endoftext|>", '<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't', '|', '>');
    /* Invalid UTF-8: a stray continuation byte, a truncated sequence, bytes
     * UTF-8 never uses: each byte still maps to its token. */
    EXPECT_BPE(t, "\x80", 0x80);
    EXPECT_BPE(t, "a\xc3", 'a', 0xC3);
    EXPECT_BPE(t, "\xff\xfe" "ab\xe2\x82", 0xFF, 0xFE, B_AB, 0xE2, 0x82);
    EXPECT_BPE(t, "\n\t", 10, 9);
    /* Well-formed looking but not UTF-8: a surrogate, an overlong '/', past
     * U+10FFFF; and a bad byte between letters. */
    EXPECT_BPE(t, "\xed\xa0\x80", 0xED, 0xA0, 0x80);
    EXPECT_BPE(t, "\xc0\xaf", 0xC0, 0xAF);
    EXPECT_BPE(t, "\xf4\x90\x80\x80", 0xF4, 0x90, 0x80, 0x80);
    EXPECT_BPE(t, "a\xff" "b", 'a', 0xFF, 'b');

    /* gpt2 vocabs add no BOS unless told; add_bos 1 still does. */
    int32_t ids[4];
    ck_assert_int_eq(hc_tokenizer_add_bos_default(t), 0);
    ck_assert_int_eq(hc_tokenizer_encode(t, "ab", 2, -1, ids, 4), 1);
    ck_assert_int_eq(ids[0], B_AB);
    ck_assert_int_eq(hc_tokenizer_encode(t, "ab", 2, 1, ids, 4), 2);
    ck_assert_int_eq(ids[0], B_EOT);
    ck_assert_int_eq(ids[1], B_AB);
    ck_assert_int_eq(hc_tokenizer_encode(t, "", 0, 0, ids, 4), 0);

    /* Pieces: bytes back from the alphabet, nothing for control tokens. */
    char b[16];
    ck_assert_int_eq(hc_tokenizer_piece(t, B_A_SPACE, b, sizeof b), 2);
    ck_assert_mem_eq(b, "a ", 2);
    ck_assert_int_eq(hc_tokenizer_piece(t, 0xAD, b, sizeof b), 1);
    ck_assert_int_eq((unsigned char)b[0], 0xAD);
    ck_assert_int_eq(hc_tokenizer_piece(t, B_EOT, b, sizeof b), 0);
    ck_assert_int_eq(hc_tokenizer_piece(t, B_UNK, b, sizeof b), 5);
    ck_assert_mem_eq(b, "<unk>", 5);
    memset(b, '#', sizeof b);
    ck_assert_int_eq(hc_tokenizer_piece(t, B_A_SPACE, b, 1), 2);
    ck_assert_int_eq(b[1], '#');
    mini_close(&m);

    /* Without tokenizer.ggml.pre a falcon file gets Falcon's pre-tokenizer,
     * whose [0-9]{3} split cuts "3333" into "333" and "3". */
    m = bpe_open(BPE_NO_PRE | BPE_ARCH_FALCON);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    EXPECT_BPE(m.t, "3333", B_33, '3', '3');
    mini_close(&m);
    m = bpe_open(BPE_NO_PRE);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    EXPECT_BPE(m.t, "3333", B_3333);
    mini_close(&m);
}
END_TEST

/* A byte whose piece the vocab lacks: the unknown token if there is one,
 * else left out (Hugging Face's BPE); never a crash. */
START_TEST(bpe_missing_byte)
{
    mini m = bpe_open(BPE_MISSING_BYTE | BPE_UNK);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    int32_t ids[8];
    ck_assert_int_eq(hc_tokenizer_encode(m.t, "a\x03", 2, 0, ids, 8), 2);
    ck_assert_int_eq(ids[0], 'a');
    ck_assert_int_eq(ids[1], B_UNK);
    mini_close(&m);
    m = bpe_open(BPE_MISSING_BYTE);
    ck_assert_msg(m.t != NULL, "%s", hc_last_error());
    ck_assert_int_eq(hc_tokenizer_encode(m.t, "a\x03", 2, 0, ids, 8), 1);
    ck_assert_int_eq(ids[0], 'a');
    ck_assert_int_eq(hc_tokenizer_encode(m.t, "\x03", 1, 0, ids, 8), 0);
    mini_close(&m);

    /* Falcon's real vocab lacks 28 bytes, 0xFF among them. */
    hc_gguf *g = open_or_fail(hc_test_path(HC_TEST_DATA, "tokenizer/ggml-vocab-falcon.gguf"));
    hc_tokenizer *t = load_or_fail(g);
    hc_gguf_close(g);
    int32_t want[8], got[8];
    int n_want = hc_tokenizer_encode(t, "ab", 2, 0, want, 8);
    ck_assert_int_eq(n_want, 1);
    ck_assert_int_eq(hc_tokenizer_encode(t, "\xff" "ab\xff", 4, 0, got, 8), n_want);
    ck_assert_int_eq(got[0], want[0]);
    hc_tokenizer_free(t);
}
END_TEST

static void expect_bpe_error(int flags, const char *needle)
{
    mini m = bpe_open(flags);
    ck_assert_msg(m.t == NULL, "flags %#x: loaded anyway", flags);
    ck_assert_msg(strstr(hc_last_error(), needle) != NULL, "flags %#x: error \"%s\" lacks \"%s\"",
                  flags, hc_last_error(), needle);
    mini_close(&m);
}

START_TEST(bpe_load_errors)
{
    expect_bpe_error(BPE_NO_MERGES, "tokenizer.ggml.merges");
    expect_bpe_error(BPE_MERGES_NOT_STRINGS, "tokenizer.ggml.merges is not an array of strings");
    /* A malformed line is named by its index and text. */
    expect_bpe_error(BPE_MERGE_NO_SPACE, "tokenizer.ggml.merges[7] 'ab'");
    expect_bpe_error(BPE_MERGE_TWO_SPACES, "tokenizer.ggml.merges[7] 'a b c'");
    expect_bpe_error(BPE_MERGE_NOT_PIECE, "tokenizer.ggml.merges[7] 'a zz' names a piece");
    expect_bpe_error(BPE_MERGE_NO_RESULT, "tokenizer.ggml.merges[7] 'c a' makes a piece");
    expect_bpe_error(BPE_BAD_PRE, "tokenizer.ggml.pre 'llama3'");
}
END_TEST

/* The archs README's prompt, as its independent reference tokenized it. */
static void check_bpe_prompt(const char *vocab, const int32_t *want, int n_want)
{
    char name[128];
    snprintf(name, sizeof name, "tokenizer/%s.gguf", vocab);
    hc_gguf *g = open_or_fail(hc_test_path(HC_TEST_DATA, name));
    hc_tokenizer *t = load_or_fail(g);
    hc_gguf_close(g);
    static const char prompt[] = "Once upon a time, there was a little dog";
    int32_t got[64];
    int n = hc_tokenizer_encode(t, prompt, sizeof prompt - 1, 1, got, 64);
    ck_assert_int_eq(n, n_want + 1);
    ck_assert_int_eq(got[0], hc_tokenizer_bos(t));
    ck_assert_msg(memcmp(got + 1, want, (size_t)n_want * sizeof *want) == 0, "%s: got %s", vocab,
                  ids_str(got + 1, n - 1));
    ck_assert_int_eq(hc_tokenizer_encode(t, prompt, sizeof prompt - 1, -1, got, 64), n_want);
    hc_tokenizer_free(t);
}

START_TEST(bpe_golden_prompts)
{
    static const int32_t falcon[] = {7107, 2918, 241, 601, 23, 629, 398, 241, 1278, 3696};
    static const int32_t gpt2[] = {7454, 2402, 257, 640, 11, 612, 373, 257, 1310, 3290};
    check_bpe_prompt("ggml-vocab-falcon", falcon, 10);
    check_bpe_prompt("ggml-vocab-gpt-2", gpt2, 10);
}
END_TEST

/* One tokenizer, encodes on two threads at once: the same ids as alone. */
typedef struct encode_job {
    const hc_tokenizer *t;
    const char *text;
    size_t len;
    int32_t *ids;
    int max, n;
} encode_job;

static void *encode_thread(void *arg)
{
    encode_job *j = arg;
    for (int rep = 0; rep < 20; rep++)
        j->n = hc_tokenizer_encode(j->t, j->text, j->len, 0, j->ids, j->max);
    return NULL;
}

START_TEST(bpe_concurrent_encodes)
{
    hc_gguf *g = open_or_fail(hc_test_path(HC_TEST_DATA, "tokenizer/ggml-vocab-falcon.gguf"));
    hc_tokenizer *t = load_or_fail(g);
    hc_gguf_close(g);
    size_t len;
    char *text = hc_test_read_file(hc_test_path(HC_TEST_DATA, "tokenizer/ggml-vocab-falcon.gguf.inp"),
                                   &len);
    ck_assert_ptr_nonnull(text);
    enum { MAX = 4096 };
    int32_t *alone = malloc(MAX * sizeof *alone);
    encode_job jobs[2];
    pthread_t th[2];
    ck_assert_ptr_nonnull(alone);
    int n = hc_tokenizer_encode(t, text, len, 0, alone, MAX);
    ck_assert_int_gt(n, 100);
    ck_assert_int_le(n, MAX);
    for (int i = 0; i < 2; i++) {
        jobs[i] = (encode_job){t, text, len, malloc(MAX * sizeof(int32_t)), MAX, -1};
        ck_assert_ptr_nonnull(jobs[i].ids);
        ck_assert_int_eq(pthread_create(&th[i], NULL, encode_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(jobs[i].n, n);
        ck_assert_mem_eq(jobs[i].ids, alone, (size_t)n * sizeof *alone);
        free(jobs[i].ids);
    }
    free(alone);
    free(text);
    hc_tokenizer_free(t);
}
END_TEST

static Suite *tokenizer_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, vocab_vectors);
    tcase_add_test(tc, bpe_vectors_falcon);
    tcase_add_test(tc, bpe_vectors_gpt2);
    tcase_add_test(tc, golden_prompt_stories260K);
    tcase_add_test(tc, golden_prompt_relu2M);
    tcase_add_test(tc, greedy_story_decodes);
    tcase_add_test(tc, mini_rules);
    tcase_add_test(tc, mini_pieces);
    tcase_add_test(tc, load_errors);
    tcase_add_test(tc, long_text);
    tcase_add_test(tc, bpe_rules);
    tcase_add_test(tc, bpe_missing_byte);
    tcase_add_test(tc, bpe_load_errors);
    tcase_add_test(tc, bpe_golden_prompts);
    tcase_add_test(tc, bpe_concurrent_encodes);
    tcase_add_test(tc, bpe_long_text);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tokenizer_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

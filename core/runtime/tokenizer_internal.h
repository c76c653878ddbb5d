/*
 * What the tokenizer's files share — internal to core/runtime/tokenizer*.c.
 *
 * tokenizer.c loads what every model has (tokens, types, special ids, flags)
 * and dispatches on tokenizer.ggml.model; tokenizer_spm.c is SentencePiece
 * ("llama"), tokenizer_bpe.c byte-level BPE ("gpt2").
 */
#ifndef HC_CORE_TOKENIZER_INTERNAL_H
#define HC_CORE_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "format/gguf.h"
#include "runtime/tokenizer.h"

typedef enum hc_tokenizer_kind {
    HC_TOKENIZER_SPM = 0, /* tokenizer.ggml.model = "llama" */
    HC_TOKENIZER_BPE = 1  /* tokenizer.ggml.model = "gpt2" */
} hc_tokenizer_kind;

typedef struct hc_bpe hc_bpe; /* tokenizer_bpe.c */

struct hc_tokenizer {
    hc_tokenizer_kind kind;
    int n_vocab;
    char *blob;         /* every token's text, back to back, each NUL-terminated */
    uint64_t *offset;   /* token i's text starts at blob + offset[i] */
    uint32_t *len;      /* ... and is len[i] bytes long */
    uint8_t *type;      /* HC_TOKEN_* */
    int32_t *slots;     /* hash table of ids that may match text; -1 = empty */
    uint32_t slot_mask; /* table size - 1 (a power of two) */
    int bos, eos, unk;
    int add_bos;
    /* SentencePiece: the byte-fallback token of each byte value, or -1;
     * byte-level BPE: the token of each byte's code point (all 256 exist). */
    int32_t byte_id[256];
    /* SentencePiece only. */
    float *score;
    int add_space_prefix;
    /* Byte-level BPE only. */
    hc_bpe *bpe;
};

/* Id of the text-matchable piece equal to s[0..n), or -1 (tokenizer.c). */
int32_t hc_tok_lookup(const hc_tokenizer *t, const char *s, size_t n);

/* Length of the valid UTF-8 sequence starting at s[0] (at most avail bytes),
 * or 1 when s[0] does not begin one. */
size_t hc_tok_utf8_len(const unsigned char *s, size_t avail);

/* Append id to the output, counting past max. */
static inline void hc_tok_emit(int32_t id, int32_t *ids, int max, int *count)
{
    if (*count < max)
        ids[*count] = id;
    (*count)++;
}

/* SentencePiece (tokenizer_spm.c).  load: scores, byte tokens (guessed from
 * <0xXX> spellings when the file has no token_type: have_types 0). */
int hc_spm_load(hc_tokenizer *t, const hc_gguf *g, int have_types);
/* Encode len > 0 bytes, appending to ids / *count; 0 or -1 (hc_set_error). */
int hc_spm_encode(const hc_tokenizer *t, const char *text, size_t len, int32_t *ids, int max,
                  int *count);
int hc_spm_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize);

/* Byte-level BPE (tokenizer_bpe.c): the same shape; load fills t->bpe and
 * t->byte_id. */
int hc_bpe_load(hc_tokenizer *t, const hc_gguf *g);
void hc_bpe_free(hc_bpe *b);
int hc_bpe_encode(const hc_tokenizer *t, const char *text, size_t len, int32_t *ids, int max,
                  int *count);
int hc_bpe_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize);

#endif /* HC_CORE_TOKENIZER_INTERNAL_H */

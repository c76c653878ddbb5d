/*
 * SentencePiece-style (llama) tokenizer built from a GGUF's tokenizer.ggml.*
 * keys — internal to libhotcold.
 *
 * Encoding follows SentencePiece's BPE model as llama.cpp's "spm" tokenizer
 * does: spaces become U+2581, a dummy-prefix U+2581 is prepended to non-empty
 * text (unless tokenizer.ggml.add_space_prefix is false), the text is split
 * into UTF-8 characters (a byte that does not start a valid sequence is a
 * character of its own), and the adjacent pair whose concatenation is a vocab
 * piece with the highest score is merged, leftmost first on ties, until no
 * pair is in the vocab.  Symbols left that are not pieces become byte-fallback
 * tokens <0xXX>, one per byte (the unknown token if the vocab lacks them).
 * Control, unknown and byte tokens never match text.
 *
 * The tokenizer copies everything it needs out of the GGUF, so it may outlive
 * the mapping.  It is immutable after loading: concurrent encode/piece calls
 * on one tokenizer are safe.
 */
#ifndef HC_CORE_TOKENIZER_H
#define HC_CORE_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "format/gguf.h"

/* tokenizer.ggml.token_type values (SentencePiece piece types). */
enum {
    HC_TOKEN_UNDEFINED = 0,
    HC_TOKEN_NORMAL = 1,
    HC_TOKEN_UNKNOWN = 2,
    HC_TOKEN_CONTROL = 3,
    HC_TOKEN_USER_DEFINED = 4,
    HC_TOKEN_UNUSED = 5,
    HC_TOKEN_BYTE = 6
};

typedef struct hc_tokenizer hc_tokenizer;

/* Build from tokenizer.ggml.{model,tokens,scores,token_type,bos_token_id,
 * eos_token_id,unknown_token_id,add_bos_token,add_space_prefix}.  model must
 * be "llama"; tokens and scores are required, token_type is optional (all
 * normal, with <0xXX> pieces taken as byte tokens).  bos/eos/unk default to
 * 1/2/0.  NULL + hc_set_error() on failure. */
hc_tokenizer *hc_tokenizer_load(const hc_gguf *g);
void hc_tokenizer_free(hc_tokenizer *t);

int hc_tokenizer_n_vocab(const hc_tokenizer *t);
int hc_tokenizer_bos(const hc_tokenizer *t);
int hc_tokenizer_eos(const hc_tokenizer *t);
/* tokenizer.ggml.add_bos_token (1 when the key is absent). */
int hc_tokenizer_add_bos_default(const hc_tokenizer *t);

/* Encode len bytes of UTF-8 text.  add_bos: 1 prepend BOS, 0 do not, < 0 use
 * the model's default (tokenizer.ggml.add_bos_token).  Returns the number of
 * ids, which may exceed max: then only the first max were written (ids may be
 * NULL when max is 0).  -1 on error (hc_set_error). */
int hc_tokenizer_encode(const hc_tokenizer *t, const char *text, size_t len, int add_bos,
                        int32_t *ids, int max);

/* The bytes a token stands for: U+2581 becomes ' ', a byte token <0xXX> the
 * raw byte, control tokens (BOS/EOS) nothing, any other token its text.  Not
 * NUL-terminated (a piece may contain a NUL byte).  Returns the piece's
 * length; when that exceeds bufsize only bufsize bytes were written.  -1 on
 * an id out of range (hc_set_error). */
int hc_tokenizer_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize);

#endif /* HC_CORE_TOKENIZER_H */

/*
 * The tokenizer built from a GGUF's tokenizer.ggml.* keys — internal to
 * libhotcold.  tokenizer.ggml.model picks the algorithm: "llama"
 * (SentencePiece, tokenizer_spm.c) or "gpt2" (byte-level BPE,
 * tokenizer_bpe.c).
 *
 * SentencePiece encoding follows SentencePiece's BPE model as llama.cpp's
 * "spm" tokenizer does: spaces become U+2581, a dummy-prefix U+2581 is prepended to non-empty
 * text (unless tokenizer.ggml.add_space_prefix is false), the text is split
 * into UTF-8 characters (a byte that does not start a valid sequence is a
 * character of its own), and the adjacent pair whose concatenation is a vocab
 * piece with the highest score is merged, leftmost first on ties, until no
 * pair is in the vocab.  Symbols left that are not pieces become byte-fallback
 * tokens <0xXX>, one per byte (the unknown token if the vocab lacks them).
 * Control, unknown and byte tokens never match text.
 *
 * Byte-level BPE follows GPT-2 and Hugging Face's tokenizers: the text is
 * cut into pre-tokens by the pre-tokenizer tokenizer.ggml.pre names ("gpt-2"
 * or "falcon"; without the key, "falcon" for general.architecture falcon,
 * else "gpt-2": tokenizer_pretok.h), each byte becomes the token of its
 * code point in GPT-2's byte-to-unicode alphabet, and within each pre-token
 * the adjacent pair with the lowest-ranked merge (tokenizer.ggml.merges,
 * rank = position) merges first, leftmost on ties, until none is left.  No
 * dummy prefix; control tokens never match text.  A byte whose code point
 * is not a piece (Falcon's vocab lacks 28) becomes the unknown token when
 * the vocab names one, else it is left out, as Hugging Face's BPE does.
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

/* Build from tokenizer.ggml.{model,tokens,scores,token_type,merges,pre,
 * bos_token_id,eos_token_id,unknown_token_id,add_bos_token,add_space_prefix}.
 * model must be "llama" or "gpt2"; tokens are required, and scores for llama,
 * merges ("A B", both pieces and AB in the vocab) for gpt2; token_type is
 * optional (all normal; for llama, <0xXX> pieces taken as byte tokens).
 * bos/eos/unk default to 1/2/0.  NULL + hc_set_error() on failure. */
hc_tokenizer *hc_tokenizer_load(const hc_gguf *g);
void hc_tokenizer_free(hc_tokenizer *t);

int hc_tokenizer_n_vocab(const hc_tokenizer *t);
int hc_tokenizer_bos(const hc_tokenizer *t);
int hc_tokenizer_eos(const hc_tokenizer *t);
/* tokenizer.ggml.add_bos_token (when the key is absent: 1 for llama, 0 for
 * gpt2, as their tokenizers do). */
int hc_tokenizer_add_bos_default(const hc_tokenizer *t);

/* Encode len bytes of UTF-8 text.  add_bos: 1 prepend BOS, 0 do not, < 0 use
 * the model's default (tokenizer.ggml.add_bos_token).  Returns the number of
 * ids, which may exceed max: then only the first max were written (ids may be
 * NULL when max is 0).  -1 on error (hc_set_error). */
int hc_tokenizer_encode(const hc_tokenizer *t, const char *text, size_t len, int add_bos,
                        int32_t *ids, int max);

/* The bytes a token stands for: control tokens (BOS/EOS) nothing; for llama
 * U+2581 becomes ' ', a byte token <0xXX> the raw byte, any other token its
 * text; for gpt2 each code point of the byte alphabet its byte (user-defined
 * tokens: their text).  Not
 * NUL-terminated (a piece may contain a NUL byte).  Returns the piece's
 * length; when that exceeds bufsize only bufsize bytes were written.  -1 on
 * an id out of range (hc_set_error). */
int hc_tokenizer_piece(const hc_tokenizer *t, int32_t id, char *buf, int bufsize);

#endif /* HC_CORE_TOKENIZER_H */

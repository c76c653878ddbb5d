/*
 * Byte-level BPE's pre-tokenizer — internal to core/runtime/tokenizer*.c.
 *
 * A pre-tokenizer cuts the text into pieces that BPE merges within, never
 * across.  Each is a sequence of regex stages, as Hugging Face tokenizers
 * runs them: a stage splits every piece so far at its matches, keeping both
 * the matches and the text between them ("isolated").  The stages before
 * GPT-2's ByteLevel step match the raw UTF-8 text; those after it match the
 * byte-to-unicode image of it (hc_bytelevel_char), where e.g. byte 0xBD is
 * U+00BD and so a number.
 *
 *   gpt-2   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   falcon  runs of punctuation (\p{P} and ASCII punctuation), the gpt-2
 *           pattern, then on the mapped text runs of \p{N}, then [0-9]{3}
 *           (Falcon's tokenizer.json: Punctuation contiguous, ByteLevel,
 *           Digits, Split isolated)
 *
 * Patterns are compiled once (PCRE2, UTF + UCP mode).  Text that is not
 * valid UTF-8 is cut first: each run of bad bytes is a piece of its own that
 * no pattern sees.  The compiled pre-tokenizer is immutable; each split has
 * its own match data, so concurrent splits are safe.
 */
#ifndef HC_CORE_TOKENIZER_PRETOK_H
#define HC_CORE_TOKENIZER_PRETOK_H

#include <stddef.h>
#include <stdint.h>

typedef struct hc_pretok hc_pretok;

/* The pre-tokenizer tokenizer.ggml.pre names (n bytes, not NUL-terminated):
 * "gpt-2" or "falcon".  NULL + hc_set_error() for another name or when
 * PCRE2 refuses a pattern. */
hc_pretok *hc_pretok_new(const char *name, size_t n);
void hc_pretok_free(hc_pretok *p);

/* Cut text[0..len) into pieces: cuts[0..*n_cuts) are their boundaries as
 * byte offsets into text, strictly increasing, 0 first and len last (just
 * {0} for empty text).  cuts must hold 2 * len + 1 entries (the mapped
 * stages cut the mapped text, up to two bytes per byte).  0, or -1 with
 * hc_set_error(). */
int hc_pretok_split(const hc_pretok *p, const char *text, size_t len, size_t *cuts,
                    size_t *n_cuts);

/* GPT-2's byte-to-unicode map: the printable bytes ! to ~, U+00A1 to U+00AC
 * and U+00AE to U+00FF stand for themselves, the other 68 bytes, in order,
 * for U+0100 onwards (space is U+0120, newline U+010A).  char: the UTF-8 of
 * byte b's code point into out, its length (1 or 2).  byte: the byte that
 * code point cp stands for, or -1. */
size_t hc_bytelevel_char(uint8_t b, char out[2]);
int hc_bytelevel_byte(uint32_t cp);

#endif /* HC_CORE_TOKENIZER_PRETOK_H */

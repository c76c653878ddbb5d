/*
 * Byte-level BPE's pre-tokenizers on PCRE2 (tokenizer_pretok.h).  PCRE2 (a
 * Debian library) brings \p{L} / \p{N} / \p{P} from its own Unicode tables
 * and the lookahead of GPT-2's \s+(?!\S), which hand-written code would have
 * to copy and keep up to date.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/tokenizer_pretok.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define MAX_STAGES 4

/* GPT-2's pattern (its encoder.py), which Hugging Face's ByteLevel uses. */
#define PAT_GPT2                                                                           \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
/* Hugging Face's Punctuation: Unicode's P* categories or ASCII punctuation
 * (which also counts $ + < = > ^ ` | ~, symbols to Unicode). */
#define PAT_PUNCT "[\\p{P}!-/:-@\\[-`{-~]+"
/* Hugging Face's Digits without individual_digits: runs of numeric chars. */
#define PAT_DIGITS "\\p{N}+"
#define PAT_THREE_DIGITS "[0-9]{3}"

typedef struct stage_def {
    const char *pattern;
    int on_mapped; /* matches the byte-to-unicode image, not the raw text */
} stage_def;

typedef struct pretok_def {
    const char *name;
    int n_stages;
    stage_def stage[MAX_STAGES]; /* raw stages first */
} pretok_def;

static const pretok_def pretoks[] = {
    {"gpt-2", 1, {{PAT_GPT2, 0}}},
    {"falcon", 4, {{PAT_PUNCT, 0}, {PAT_GPT2, 0}, {PAT_DIGITS, 1}, {PAT_THREE_DIGITS, 1}}},
};

struct hc_pretok {
    const pretok_def *def;
    pcre2_code *code[MAX_STAGES];
};

void hc_pretok_free(hc_pretok *p)
{
    if (!p)
        return;
    for (int i = 0; i < MAX_STAGES; i++)
        pcre2_code_free(p->code[i]);
    free(p);
}

hc_pretok *hc_pretok_new(const char *name, size_t n)
{
    const pretok_def *def = NULL;
    hc_pretok *p = NULL;
    for (size_t i = 0; i < sizeof pretoks / sizeof pretoks[0]; i++)
        if (strlen(pretoks[i].name) == n && memcmp(pretoks[i].name, name, n) == 0)
            def = &pretoks[i];
    if (!def) {
        hc_set_error("tokenizer: tokenizer.ggml.pre '%.*s' is not a pre-tokenizer we know "
                     "(gpt-2, falcon)", (int)(n > 32 ? 32 : n), name);
        goto fail;
    }
    p = calloc(1, sizeof *p);
    if (!p) {
        hc_set_error("tokenizer: out of memory");
        goto fail;
    }
    p->def = def;
    for (int i = 0; i < def->n_stages; i++) {
        int err;
        PCRE2_SIZE at;
        p->code[i] = pcre2_compile((PCRE2_SPTR)def->stage[i].pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &err, &at, NULL);
        if (!p->code[i]) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(err, msg, sizeof msg);
            hc_set_error("tokenizer: PCRE2 cannot compile pre-tokenizer %s's pattern %d at "
                         "offset %zu: %s", def->name, i, (size_t)at, (const char *)msg);
            goto fail;
        }
    }
    return p;
fail:
    hc_pretok_free(p);
    return NULL;
}

/* Length of the valid UTF-8 character at s[0] (RFC 3629: no overlong form,
 * no surrogate, at most U+10FFFF; at most avail bytes), or 0. */
static size_t utf8_valid_len(const unsigned char *s, size_t avail)
{
    unsigned lo = 0x80, hi = 0xBF;
    size_t n;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        n = 3;
        lo = s[0] == 0xE0 ? 0xA0 : lo;
        hi = s[0] == 0xED ? 0x9F : hi;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4;
        lo = s[0] == 0xF0 ? 0x90 : lo;
        hi = s[0] == 0xF4 ? 0x8F : hi;
    } else {
        return 0;
    }
    if (n > avail || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* Split each piece of subject (between in[k] and in[k + 1]) at code's
 * matches into out; a piece is matched alone, so ^, $ and the lookahead see
 * only it. */
static int split_stage(const pcre2_code *code, pcre2_match_data *md, const char *subject,
                       const size_t *in, size_t n_in, size_t *out, size_t *n_out)
{
    size_t n = 0;
    out[n++] = in[0];
    for (size_t k = 0; k + 1 < n_in; k++) {
        const char *piece = subject + in[k];
        size_t plen = in[k + 1] - in[k], at = 0;
        /* A run of bad bytes (split_invalid_utf8) stays whole. */
        if (utf8_valid_len((const unsigned char *)piece, plen) == 0)
            at = plen;
        while (at < plen) {
            /* Pieces are valid UTF-8 (split_invalid_utf8); PCRE2's own check
             * would rescan the rest of the piece at every call. */
            int rc = pcre2_match(code, (PCRE2_SPTR)piece, plen, at,
                                 PCRE2_NOTEMPTY | PCRE2_NO_UTF_CHECK, md, NULL);
            const PCRE2_SIZE *ov;
            if (rc == PCRE2_ERROR_NOMATCH)
                break;
            if (rc < 0) {
                PCRE2_UCHAR msg[128];
                pcre2_get_error_message(rc, msg, sizeof msg);
                hc_set_error("tokenizer: pre-tokenizer match failed: %s", (const char *)msg);
                return -1;
            }
            ov = pcre2_get_ovector_pointer(md);
            if (in[k] + ov[0] > out[n - 1])
                out[n++] = in[k] + ov[0];
            if (in[k] + ov[1] > out[n - 1])
                out[n++] = in[k] + ov[1];
            at = ov[1];
        }
        if (in[k + 1] > out[n - 1])
            out[n++] = in[k + 1];
    }
    *n_out = n;
    return 0;
}

/* The first cuts: between runs of valid UTF-8 and runs of bytes that are
 * not, so each run of bad bytes is a piece the patterns never see (as
 * PCRE2's invalid-UTF mode would treat them, without its rescans). */
static size_t split_invalid_utf8(const char *text, size_t len, size_t *cuts)
{
    size_t n = 0;
    int prev_valid = -1;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_valid_len((const unsigned char *)text + i, len - i);
        int valid = k > 0;
        if (valid != prev_valid)
            cuts[n++] = i;
        prev_valid = valid;
        i += valid ? k : 1;
    }
    cuts[n++] = len;
    return n;
}

/* Move cuts from raw byte offsets to offsets into the mapped text
 * (to_mapped 1) or back (0).  Cuts are sorted and on character boundaries of
 * the mapped text, so each lands on a byte of its own. */
static void convert_cuts(const char *text, size_t len, size_t *cuts, size_t n, int to_mapped)
{
    size_t raw = 0, mapped = 0;
    char tmp[2];
    for (size_t j = 0; j < n; j++) {
        while ((to_mapped ? raw : mapped) < cuts[j] && raw < len)
            mapped += hc_bytelevel_char((uint8_t)text[raw++], tmp);
        cuts[j] = to_mapped ? mapped : raw;
    }
}

int hc_pretok_split(const hc_pretok *p, const char *text, size_t len, size_t *cuts,
                    size_t *n_cuts)
{
    pcre2_match_data *md = NULL;
    size_t *tmp = NULL, *in = cuts, *out, n;
    char *mapped = NULL;
    const char *subject = text;
    int ret = -1, on_mapped = 0;

    cuts[0] = 0;
    if (len == 0) {
        *n_cuts = 1;
        return 0;
    }
    n = split_invalid_utf8(text, len, cuts);
    /* No pattern captures: the whole match is all the match data holds. */
    md = pcre2_match_data_create(1, NULL);
    tmp = malloc((2 * len + 1) * sizeof *tmp);
    if (!md || !tmp) {
        hc_set_error("tokenizer: out of memory for %zu bytes of text", len);
        goto out;
    }
    out = tmp;
    for (int i = 0; i < p->def->n_stages; i++) {
        size_t *swap;
        if (p->def->stage[i].on_mapped && !on_mapped) {
            size_t m = 0;
            mapped = malloc(2 * len);
            if (!mapped) {
                hc_set_error("tokenizer: out of memory for %zu bytes of text", len);
                goto out;
            }
            for (size_t b = 0; b < len; b++)
                m += hc_bytelevel_char((uint8_t)text[b], mapped + m);
            convert_cuts(text, len, in, n, 1);
            subject = mapped;
            on_mapped = 1;
        }
        if (split_stage(p->code[i], md, subject, in, n, out, &n) != 0)
            goto out;
        swap = in;
        in = out;
        out = swap;
    }
    if (on_mapped)
        convert_cuts(text, len, in, n, 0);
    if (in != cuts)
        memcpy(cuts, in, n * sizeof *cuts);
    *n_cuts = n;
    ret = 0;
out:
    pcre2_match_data_free(md);
    free(tmp);
    free(mapped);
    return ret;
}

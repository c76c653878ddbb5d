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
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at,
                                   NULL);
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
        while (at < plen) {
            int rc = pcre2_match(code, (PCRE2_SPTR)piece, plen, at, PCRE2_NOTEMPTY, md, NULL);
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
    size_t *tmp = NULL, *in = cuts, *out, n = 1;
    char *mapped = NULL;
    const char *subject = text;
    int ret = -1, on_mapped = 0;

    cuts[0] = 0;
    if (len == 0) {
        *n_cuts = 1;
        return 0;
    }
    cuts[n++] = len;
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

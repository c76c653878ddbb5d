/* Helpers shared by the `hotcold` subcommands. */
#ifndef HC_TOOL_UTIL_H
#define HC_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h" /* hc_time_s */
#include "hotcold/hotcold.h"

#define HC_DEFAULT_MODEL_NAME "stories260K.gguf"

/* Strict number parsing: the whole string, within [lo, hi].  1 = ok. */
int hc_tool_parse_int(const char *s, int lo, int hi, int *out);
int hc_tool_parse_u64(const char *s, uint64_t *out);
int hc_tool_parse_float(const char *s, float lo, float hi, float *out);
/* --vram-budget: GiB (0 .. 1e6) into bytes.  1 = ok. */
int hc_tool_parse_gib(const char *s, double *bytes);
/* "-n" or "--temp": how the user spelled option `val` (for messages). */
struct option;
const char *hc_tool_option_name(const struct option *longopts, int val);
/* A whole text file, NUL-terminated; prints the error and returns NULL. */
char *hc_tool_read_text(const char *path);
uint64_t hc_tool_random_seed(void);
/* Find the model shipped in models/: next to the build tree, the install
 * data dir, or ./models.  0 = found (path written), -1 = error set. */
int hc_tool_default_model(char *path, size_t size);

typedef struct hc_run_stats {
    double load_s;
    int prompt_tokens;
    double prompt_s;
    int decode_tokens; /* tokens emitted */
    int decode_evals;  /* forward passes of one token */
    double decode_s;
    const char *stop_reason;
} hc_run_stats;
/* "dir/relu2M.powerinfer.gguf" -> "relu2M<suffix>" in the current
 * directory: the default output of a tool that derives a side file from
 * a model (or a folder: trailing '/' ignored; `fallback` names an empty
 * stem). */
void hc_tool_output_name(const char *src, const char *suffix, const char *fallback, char *buf,
                         size_t size);

/* Progress of a job over tokens on stderr ("what: done/total tokens (%),
 * tok/s, ETA"): one live line on a terminal, a line every 5 s otherwise. */
typedef struct hc_tool_token_progress {
    const char *what;
    int quiet, tty;
    double t0, last;
} hc_tool_token_progress;
void hc_tool_token_progress_init(hc_tool_token_progress *p, const char *what, int quiet);
/* An hc_progress_fn (core/profile.h); user is the hc_tool_token_progress. */
void hc_tool_on_token_progress(void *user, int64_t done, int64_t total);

/* "off", "oracle", "predictor", "auto" -> hc_sparse_mode.  1 = ok. */
int hc_tool_parse_sparse_mode(const char *s, int *mode);
const char *hc_tool_sparse_mode_name(int mode);
/* Bytes a decoded token reads given the context's measured sparsity (the
 * dense figure when the FFN is dense). */
double hc_tool_token_bytes(const hc_model *m, const hc_context *c);
void hc_tool_print_run_stats(FILE *f, const hc_engine *e, const hc_model *m, const hc_context *c,
                             const hc_sampler_params *sp, const hc_run_stats *st);

#endif

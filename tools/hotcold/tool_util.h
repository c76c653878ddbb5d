/* Helpers shared by the `hotcold` subcommands. */
#ifndef HC_TOOL_UTIL_H
#define HC_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hotcold/hotcold.h"

#define HC_DEFAULT_MODEL_NAME "stories260K.gguf"

/* Strict number parsing: the whole string, within [lo, hi].  1 = ok. */
int hc_tool_parse_int(const char *s, int lo, int hi, int *out);
int hc_tool_parse_u64(const char *s, uint64_t *out);
int hc_tool_parse_float(const char *s, float lo, float hi, float *out);
/* "-n" or "--temp": how the user spelled option `val` (for messages). */
struct option;
const char *hc_tool_option_name(const struct option *longopts, int val);
/* A whole text file, NUL-terminated; prints the error and returns NULL. */
char *hc_tool_read_text(const char *path);
/* Monotonic seconds. */
double hc_tool_now(void);
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
/* "off", "oracle", "predictor", "auto" -> hc_sparse_mode.  1 = ok. */
int hc_tool_parse_sparse_mode(const char *s, int *mode);
const char *hc_tool_sparse_mode_name(int mode);
/* Bytes a decoded token reads given the context's measured sparsity (the
 * dense figure when the FFN is dense). */
double hc_tool_token_bytes(const hc_model *m, const hc_context *c);
void hc_tool_print_run_stats(FILE *f, const hc_engine *e, const hc_model *m, const hc_context *c,
                             const hc_sampler_params *sp, const hc_run_stats *st);

#endif

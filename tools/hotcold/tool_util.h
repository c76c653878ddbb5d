/* Helpers shared by the `hotcold` subcommands. */
#ifndef HC_TOOL_UTIL_H
#define HC_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "hotcold/hotcold.h"

#define HC_DEFAULT_MODEL_NAME "stories260K.gguf"

/* Monotonic wall-clock seconds, for the durations the tools report. */
static inline double hc_tool_time_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Strict number parsing: the whole string, within [lo, hi].  1 = ok. */
int hc_tool_parse_int(const char *s, int lo, int hi, int *out);
int hc_tool_parse_u64(const char *s, uint64_t *out);
int hc_tool_parse_float(const char *s, float lo, float hi, float *out);
/* --vram-budget: GiB (0 .. 1e6) into bytes.  1 = ok. */
int hc_tool_parse_gib(const char *s, double *bytes);
/* "-n" or "--temp": how the user spelled option `val` (for messages). */
struct option;
const char *hc_tool_option_name(const struct option *longopts, int val);
/* A whole text file (a regular file, pipe or device), NUL-terminated; prints
 * the error and returns NULL.  An input with a NUL byte is not text, and one
 * over max_bytes is refused as soon as it passes the limit (`-f /dev/zero`
 * and endless pipes end with an error, not with all memory). */
char *hc_tool_read_text(const char *path, size_t max_bytes);
/* Before any work: may the tool write `path`?  core/format/output_file.h's rules
 * (links written through, devices and FIFOs written in place, directories
 * refused); an existing file only with --force.  Prints "hotcold CMD:
 * reason" and returns -1 when not. */
int hc_tool_check_output(const char *cmd, const char *path, int force);
/* A SwiGLU FFN has no exact zeros: nothing to count or predict, and `pack`
 * would refuse the result.  Refuse it before the work: prints "hotcold CMD:
 * PATH: ..." and returns -1. */
int hc_tool_require_relu_ffn(const char *cmd, const hc_model *m, const char *path);
/* Flags of llama.cpp's main and llama-bench (-ngl, -fa, -cnv, ...) that
 * are not the command's own: prints "hotcold CMD: -ngl is a llama.cpp flag;
 * instead: ..." and returns -1.  Values of the command's own options are
 * skipped (`-p -fa` is a prompt). */
int hc_tool_reject_foreign_flags(const char *cmd, int argc, char **argv, const char *shortopts,
                                 const struct option *longopts);
/* The limits: a prompt is bounded by the context anyway; a corpus may be
 * big (TinyStories' training split is 1.9 GB). */
#define HC_TOOL_MAX_PROMPT_BYTES ((size_t)64 << 20)
#define HC_TOOL_MAX_CORPUS_BYTES ((size_t)4 << 30)
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

/* Progress of a long job on stderr: one live line on a terminal, a line
 * every 5 s otherwise. */
typedef struct hc_tool_progress {
    const char *what;
    int quiet, tty;
    double t0, last;
} hc_tool_progress;
void hc_tool_progress_init(hc_tool_progress *p, const char *what, int quiet);
/* Over tokens ("what: done/total tokens (%), tok/s, ETA"): an hc_progress_fn
 * (core/toolchain/profile.h); user is the hc_tool_progress. */
void hc_tool_on_token_progress(void *user, int64_t done, int64_t total);
/* Over the bytes of a model load ("what: reading 1.2/3.9 GiB (31%), MB/s,
 * ETA"): hc_model_params.progress; silent for loads under 256 MiB, which
 * take well under a second. */
void hc_tool_on_load_progress(void *user, const char *step, uint64_t done, uint64_t total);

/* "off", "oracle", "predictor", "auto" -> hc_sparse_mode.  1 = ok. */
int hc_tool_parse_sparse_mode(const char *s, int *mode);
const char *hc_tool_sparse_mode_name(int mode);
/* "neurons", "layers" -> hc_split_mode (--split; "auto" is no value a user
 * types: it is what no --split means).  1 = ok. */
int hc_tool_parse_split(const char *s, int *mode);
/* "neurons", "layers", or "auto" for HC_SPLIT_AUTO. */
const char *hc_tool_split_name(int mode);
/* Bytes a decoded token reads given the context's measured sparsity (the
 * dense figure when the FFN is dense). */
double hc_tool_token_bytes(const hc_model *m, const hc_context *c);
/* "<lead>GPU busy X ms, CPU busy Y ms, wall Z ms per token (W ms overlapped)":
 * the run statistics' busy times and wall time per evaluated token. */
void hc_tool_print_overlap(FILE *f, const char *lead, const hc_context_run_stats *rs);
void hc_tool_print_run_stats(FILE *f, const hc_engine *e, const char *path, const hc_model *m,
                             const hc_context *c, const hc_sampler_params *sp,
                             const hc_run_stats *st);

#endif

/*
 * `hotcold profile`: how often each FFN neuron fires over a corpus (or as
 * PowerInfer's activation_<i>.pt files say), written as the profile side
 * file (core/toolchain/profile.h), with a per-layer power-law summary.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "tool_util.h"

typedef struct profile_opts {
    const char *model;
    const char *text;
    const char *out;
    const char *pt_dir;
    uint64_t pt_tokens;
    int n_ctx;
    int64_t max_tokens;
    int n_threads;
    int quiet, force;
} profile_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold profile -m MODEL --text FILE [options]\n"
            "       hotcold profile --pt-dir DIR [-m MODEL] [options]\n"
            "\n"
            "Count, per layer and neuron, on how many tokens of a corpus the FFN neuron\n"
            "fires (h != 0), and write the counts as a GGUF side file for `hotcold pack`.\n"
            "The corpus is cut at blank lines into paragraphs, packed into windows of at\n"
            "most --ctx tokens, each run from an empty context.  With --pt-dir, PowerInfer's\n"
            "activation/activation_<i>.pt files are converted instead (read in numeric\n"
            "layer order).  Ends with each layer's mean fraction of active neurons and the\n"
            "share of activations made by its 10%% / 20%% most active neurons.\n"
            "\n"
            "  -m, --model FILE       the model (a ReLU-family GGUF or PWRI file)\n"
            "      --text FILE        UTF-8 corpus, paragraphs separated by blank lines\n"
            "  -o, --output FILE      side file to write (default: MODEL's name with\n"
            "                         .activation.gguf, in the current directory; must\n"
            "                         not exist, see --force)\n"
            "      --force            replace the output file if it exists\n"
            "      --ctx N            window size in tokens (default: the model's training\n"
            "                         context, at most 2048)\n"
            "      --max-tokens N     stop after N tokens (default: the whole corpus)\n"
            "  -t, --threads N        CPU threads (default: all cores)\n"
            "      --pt-dir DIR       convert PowerInfer's activation folder instead\n"
            "      --pt-tokens N      tokens behind the .pt counts (they do not say; default:\n"
            "                         the largest count, a lower bound)\n"
            "  -q, --quiet            no progress\n"
            "  -h, --help             this text\n");
}

enum { OPT_TEXT = 1000, OPT_CTX, OPT_MAX_TOKENS, OPT_PT_DIR, OPT_PT_TOKENS, OPT_FORCE };

static int parse_args(int argc, char **argv, profile_opts *o)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},
        {"text", required_argument, 0, OPT_TEXT},
        {"output", required_argument, 0, 'o'},
        {"ctx", required_argument, 0, OPT_CTX},
        {"max-tokens", required_argument, 0, OPT_MAX_TOKENS},
        {"threads", required_argument, 0, 't'},
        {"pt-dir", required_argument, 0, OPT_PT_DIR},
        {"pt-tokens", required_argument, 0, OPT_PT_TOKENS},
        {"force", no_argument, 0, OPT_FORCE},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:t:qh", longopts, NULL)) != -1) {
        int ok = 1;
        uint64_t u = 0;
        switch (c) {
        case 'm': o->model = optarg; break;
        case OPT_TEXT: o->text = optarg; break;
        case 'o': o->out = optarg; break;
        case OPT_CTX: ok = hc_tool_parse_int(optarg, 2, 1 << 20, &o->n_ctx); break;
        case OPT_MAX_TOKENS:
            ok = hc_tool_parse_u64(optarg, &u) && u > 0 && u < INT64_MAX;
            o->max_tokens = (int64_t)u;
            break;
        case 't': ok = hc_tool_parse_int(optarg, 1, 1024, &o->n_threads); break;
        case OPT_PT_DIR: o->pt_dir = optarg; break;
        case OPT_PT_TOKENS:
            ok = hc_tool_parse_u64(optarg, &o->pt_tokens) && o->pt_tokens > 0;
            break;
        case OPT_FORCE: o->force = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return -1;
        }
        if (!ok) {
            fprintf(stderr, "hotcold profile: bad value '%s' for %s (see --help)\n", optarg,
                    hc_tool_option_name(longopts, c));
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold profile: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return -1;
    }
    if (o->pt_dir && o->text) {
        fprintf(stderr, "hotcold profile: give --text or --pt-dir, not both\n");
        return -1;
    }
    if (!o->pt_dir && (!o->model || !o->text)) {
        fprintf(stderr, "hotcold profile: %s is required (see --help)\n",
                !o->model ? "-m MODEL" : "--text FILE");
        return -1;
    }
    return 0;
}

static void print_summary(const hc_activation_profile *prof)
{
    printf("layer  active/token  top10%% share  top20%% share  never fired\n");
    double sum = 0;
    for (int il = 0; il < prof->n_layer; il++) {
        hc_profile_summary s;
        hc_profile_summarize(prof, il, &s);
        sum += s.mean_active;
        printf("%5d  %11.1f%%  %12.1f%%  %12.1f%%  %10.1f%%\n", il, 100 * s.mean_active,
               100 * s.top10_share, 100 * s.top20_share, 100 * s.dead_frac);
    }
    printf("mean   %11.1f%%   (%d neurons per layer, %" PRIu64 " tokens)\n",
           100 * sum / prof->n_layer, prof->n_ff, prof->n_tokens);
}

/* Profile a corpus with the model. */
static int profile_text(const profile_opts *o, hc_activation_profile *prof)
{
    hc_engine *e = NULL;
    hc_model *m = NULL;
    hc_token_windows w = {0};
    char *text = NULL;
    int rc = -1;
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = o->n_threads;
    e = hc_engine_open(&ep);
    hc_model_params mp = hc_model_default_params();
    mp.sparse = HC_SPARSE_OFF;
    m = e ? hc_model_load(e, o->model, &mp) : NULL;
    if (!m) {
        fprintf(stderr, "hotcold profile: %s\n", hc_last_error());
        goto out;
    }
    if (hc_tool_require_relu_ffn("profile", m, o->model))
        goto out;
    text = hc_tool_read_text(o->text, HC_TOOL_MAX_CORPUS_BYTES);
    if (!text)
        goto out;
    hc_model_desc d;
    hc_model_describe(m, &d);
    int n_ctx = o->n_ctx ? o->n_ctx : (d.n_ctx_train < 2048 ? d.n_ctx_train : 2048);
    double t0 = hc_tool_time_s();
    if (hc_token_windows_from_text(m, text, strlen(text), n_ctx, o->max_tokens, &w) ||
        hc_profile_init(prof, d.n_layer, d.n_ff, o->model)) {
        fprintf(stderr, "hotcold profile: %s: %s\n", o->text, hc_last_error());
        goto out;
    }
    if (!o->quiet)
        fprintf(stderr,
                "profile: %s: %" PRId64 " tokens in %d windows of <= %d tokens (tokenized in "
                "%.2f s)\n",
                o->text, w.n_tokens, w.n, n_ctx, hc_tool_time_s() - t0);
    hc_tool_progress pr;
    hc_tool_progress_init(&pr, "profile", o->quiet);
    if (hc_profile_model(m, &w, hc_tool_on_token_progress, &pr, prof)) {
        fprintf(stderr, "\nhotcold profile: %s\n", hc_last_error());
        goto out;
    }
    rc = 0;
out:
    hc_token_windows_free(&w);
    free(text);
    hc_model_free(m);
    hc_engine_close(e);
    return rc;
}

/* The model's layer count and FFN width, to check a .pt folder against. */
static int model_shape(const char *path, int n_threads, int *n_layer, int *n_ff)
{
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = n_threads;
    hc_engine *e = hc_engine_open(&ep);
    hc_model_params mp = hc_model_default_params();
    mp.sparse = HC_SPARSE_OFF;
    hc_model *m = e ? hc_model_load(e, path, &mp) : NULL;
    if (!m) {
        fprintf(stderr, "hotcold profile: %s\n", hc_last_error());
        hc_engine_close(e);
        return -1;
    }
    hc_model_desc d;
    hc_model_describe(m, &d);
    *n_layer = d.n_layer;
    *n_ff = d.n_ff;
    int rc = hc_tool_require_relu_ffn("profile", m, path);
    hc_model_free(m);
    hc_engine_close(e);
    return rc;
}

int hc_cmd_profile(int argc, char **argv)
{
    profile_opts o = {0};
    hc_activation_profile prof = {0};
    char out_buf[4096];
    int pr = parse_args(argc, argv, &o);
    if (pr)
        return pr > 0 ? 0 : 2;
    if (!o.out) {
        hc_tool_output_name(o.pt_dir ? o.pt_dir : o.model, ".activation.gguf", "activation", out_buf,
                            sizeof out_buf);
        o.out = out_buf;
    }
    if (hc_tool_check_output("profile", o.out, o.force))
        return 1;
    int rc = 1;
    double t0 = hc_tool_time_s();
    if (o.pt_dir) {
        int n_layer = 0, n_ff = 0, guessed = 0;
        if (o.model && model_shape(o.model, o.n_threads, &n_layer, &n_ff))
            goto out;
        if (hc_profile_from_pt_dir(o.pt_dir, n_layer, n_ff, o.pt_tokens, &prof, &guessed)) {
            fprintf(stderr, "hotcold profile: %s\n", hc_last_error());
            goto out;
        }
        if (guessed && !o.quiet)
            fprintf(stderr,
                    "profile: the .pt files do not record a token count; using %" PRIu64
                    " (give the real one with --pt-tokens)\n",
                    prof.n_tokens);
        if (o.model)
            snprintf(prof.model, sizeof prof.model, "%s", o.model);
    } else if (profile_text(&o, &prof)) {
        goto out;
    }
    if (hc_profile_write(&prof, o.out)) {
        fprintf(stderr, "hotcold profile: %s\n", hc_last_error());
        goto out;
    }
    print_summary(&prof);
    if (!o.quiet)
        fprintf(stderr, "profile: wrote %s (%d layers x %d neurons) in %.1f s\n", o.out,
                prof.n_layer, prof.n_ff, hc_tool_time_s() - t0);
    rc = 0;
out:
    hc_profile_free(&prof);
    return rc;
}

/*
 * `hotcold mkmodel`: write a deterministic synthetic PowerInfer (PWRI) model
 * of any shape (core/toolchain/mkmodel.h), with progress on stderr.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "tool_util.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold mkmodel -o OUT [options]\n"
            "\n"
            "Write a synthetic ReLU (PowerInfer-style) llama model of any shape straight\n"
            "to disk: predictors, transposed down projection and activation statistics\n"
            "included, FFN activations following a power-law profile the predictor\n"
            "matches.  The same options give a byte-identical file.  For benchmarks on\n"
            "machines that cannot download real sparse models.\n"
            "\n"
            "  -o, --output FILE        where to write (must not exist, see --force)\n"
            "      --preset NAME        shape: %s\n"
            "      --n-embd N           embedding size\n"
            "      --n-ff N             FFN neurons per layer\n"
            "      --n-layer N          layers\n"
            "      --n-head N           attention heads\n"
            "      --n-head-kv N        key/value heads (default: n-head)\n"
            "      --n-vocab N          vocabulary size (default 32000)\n"
            "      --n-ctx N            context length recorded in the file (default 2048)\n"
            "      --type T             f16, q8_0, q4_0 (default) or f32\n"
            "      --sparsity S         fraction of neurons that do not fire (default 0.9)\n"
            "      --alpha A            power-law exponent of the neurons' firing\n"
            "                           frequencies (default 1.2)\n"
            "      --predictor-rank H   rows of each predictor's fc1, even (default:\n"
            "                           n_embd/8 rounded to a multiple of 64)\n"
            "      --seed S             (default 1)\n"
            "      --threshold T        powerinfer.sparse_threshold (default 0)\n"
            "  -t, --threads N          threads (default: all cores; output unchanged)\n"
            "      --force              replace OUT if it exists\n"
            "  -q, --quiet              no progress\n"
            "  -h, --help               this text\n"
            "\n"
            "A preset sets every shape option; shape options given as well override it.\n"
            "Without a preset, --n-embd, --n-ff, --n-layer and --n-head are required.\n",
            hc_mkmodel_preset_names());
}

enum {
    OPT_PRESET = 1000, OPT_N_EMBD, OPT_N_FF, OPT_N_LAYER, OPT_N_HEAD, OPT_N_HEAD_KV,
    OPT_N_VOCAB, OPT_N_CTX, OPT_TYPE, OPT_SPARSITY, OPT_ALPHA, OPT_RANK, OPT_SEED,
    OPT_THRESHOLD, OPT_FORCE
};

typedef struct progress_state {
    int quiet, tty;
    double t0, last_print;
    int last_pct;
} progress_state;

static int on_progress(void *user, uint64_t done, uint64_t total, const char *tensor)
{
    progress_state *ps = user;
    if (ps->quiet)
        return 0;
    double now = hc_tool_time_s(), dt = now - ps->t0;
    int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    /* On a terminal: redraw at most 10 times a second.  Otherwise one line
     * per 5%, so logs stay short. */
    if (ps->tty ? (now - ps->last_print < 0.1 && done < total)
                : (pct / 5 == ps->last_pct / 5 && done < total))
        return 0;
    ps->last_print = now;
    ps->last_pct = pct;
    double mb = (double)done / 1e6, rate = dt > 0 ? mb / dt : 0.0;
    double eta = rate > 0 ? ((double)total / 1e6 - mb) / rate : 0.0;
    fprintf(stderr, "%s[%3d%%] %9.1f / %.1f MB  %7.1f MB/s  ETA %4.0f s  %s%s",
            ps->tty ? "\r\033[K" : "", pct, mb, (double)total / 1e6, rate, eta, tensor,
            ps->tty && done < total ? "" : "\n");
    return 0;
}

static int parse_type(const char *s, hc_type *t)
{
    static const struct {
        const char *name;
        hc_type type;
    } k[] = {{"f32", HC_TYPE_F32}, {"f16", HC_TYPE_F16}, {"q8_0", HC_TYPE_Q8_0},
             {"q4_0", HC_TYPE_Q4_0}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcasecmp(s, k[i].name)) {
            *t = k[i].type;
            return 1;
        }
    return 0;
}

int hc_cmd_mkmodel(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'},
        {"preset", required_argument, 0, OPT_PRESET},
        {"n-embd", required_argument, 0, OPT_N_EMBD},
        {"n-ff", required_argument, 0, OPT_N_FF},
        {"n-layer", required_argument, 0, OPT_N_LAYER},
        {"n-head", required_argument, 0, OPT_N_HEAD},
        {"n-head-kv", required_argument, 0, OPT_N_HEAD_KV},
        {"n-vocab", required_argument, 0, OPT_N_VOCAB},
        {"n-ctx", required_argument, 0, OPT_N_CTX},
        {"type", required_argument, 0, OPT_TYPE},
        {"sparsity", required_argument, 0, OPT_SPARSITY},
        {"alpha", required_argument, 0, OPT_ALPHA},
        {"predictor-rank", required_argument, 0, OPT_RANK},
        {"seed", required_argument, 0, OPT_SEED},
        {"threshold", required_argument, 0, OPT_THRESHOLD},
        {"threads", required_argument, 0, 't'},
        {"force", no_argument, 0, OPT_FORCE},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    hc_mkmodel_params p = hc_mkmodel_default_params();
    /* Shape options given explicitly; -1 = not given. */
    int shape[7] = {-1, -1, -1, -1, -1, -1, -1};
    const char *out = NULL, *preset = NULL;
    progress_state ps = {.tty = isatty(fileno(stderr))};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:t:qh", longopts, NULL)) != -1) {
        int ok = 1;
        switch (c) {
        case 'o': out = optarg; break;
        case OPT_PRESET: preset = optarg; break;
        case OPT_N_EMBD: case OPT_N_FF: case OPT_N_LAYER: case OPT_N_HEAD:
        case OPT_N_HEAD_KV: case OPT_N_VOCAB: case OPT_N_CTX:
            ok = hc_tool_parse_int(optarg, 1, INT_MAX, &shape[c - OPT_N_EMBD]);
            break;
        case OPT_TYPE: ok = parse_type(optarg, &p.type); break;
        case OPT_SPARSITY: ok = hc_tool_parse_float(optarg, 0.0f, 1.0f, &p.sparsity); break;
        case OPT_ALPHA: ok = hc_tool_parse_float(optarg, 0.0f, 100.0f, &p.alpha); break;
        case OPT_RANK: ok = hc_tool_parse_int(optarg, 1, INT_MAX, &p.predictor_rank); break;
        case OPT_SEED: ok = hc_tool_parse_u64(optarg, &p.seed); break;
        case OPT_THRESHOLD:
            ok = hc_tool_parse_float(optarg, -HC_SPARSE_THRESHOLD_LIMIT, HC_SPARSE_THRESHOLD_LIMIT,
                                     &p.threshold);
            break;
        case 't': ok = hc_tool_parse_int(optarg, 1, 1024, &p.n_threads); break;
        case OPT_FORCE: p.force = 1; break;
        case 'q': ps.quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (!ok) {
            fprintf(stderr, "hotcold mkmodel: bad value '%s' for %s (see --help)\n", optarg,
                    hc_tool_option_name(longopts, c));
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold mkmodel: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return 2;
    }
    if (!out) {
        fprintf(stderr, "hotcold mkmodel: no output file (-o OUT; see --help)\n");
        return 2;
    }
    if (preset) {
        if (hc_mkmodel_preset(preset, &p)) {
            fprintf(stderr, "hotcold mkmodel: %s\n", hc_last_error());
            return 2;
        }
    } else {
        if (shape[0] < 0 || shape[1] < 0 || shape[2] < 0 || shape[3] < 0) {
            fprintf(stderr, "hotcold mkmodel: give --preset (%s) or the shape: --n-embd, "
                            "--n-ff, --n-layer and --n-head\n",
                    hc_mkmodel_preset_names());
            return 2;
        }
        p.n_head_kv = shape[3];
        p.n_vocab = 32000;
        p.n_ctx = 2048;
    }
    int *field[7] = {&p.n_embd, &p.n_ff, &p.n_layer, &p.n_head,
                     &p.n_head_kv, &p.n_vocab, &p.n_ctx};
    for (int i = 0; i < 7; i++)
        if (shape[i] >= 0)
            *field[i] = shape[i];
    if (!preset && shape[4] < 0)
        p.n_head_kv = p.n_head;
    if (hc_mkmodel_check(&p)) {
        fprintf(stderr, "hotcold %s\n", hc_last_error());
        return 2;
    }

    uint64_t size = hc_mkmodel_file_size(&p);
    if (!ps.quiet)
        fprintf(stderr,
                "hotcold mkmodel: %s: %d layers, n_embd %d, n_ff %d, heads %d/%d, vocab %d, "
                "%s, sparsity %g, alpha %g, predictor rank %d, seed %llu (about %.2f GB)\n",
                out, p.n_layer, p.n_embd, p.n_ff, p.n_head, p.n_head_kv, p.n_vocab,
                hc_type_name(p.type), (double)p.sparsity, (double)p.alpha,
                p.predictor_rank ? p.predictor_rank : hc_mkmodel_default_rank(p.n_embd),
                (unsigned long long)p.seed, (double)size / 1e9);
    ps.t0 = hc_tool_time_s();
    ps.last_pct = -100;
    hc_mkmodel_report rep;
    if (hc_mkmodel_write(out, &p, on_progress, &ps, &rep) != 0) {
        if (ps.tty && !ps.quiet)
            fprintf(stderr, "\n");
        fprintf(stderr, "hotcold %s\n", hc_last_error());
        return 1;
    }
    double dt = hc_tool_time_s() - ps.t0;
    if (!ps.quiet)
        fprintf(stderr,
                "hotcold mkmodel: wrote %s: %.1f MB in %.1f s (%.1f MB/s)\n"
                "  calibration: fraction of FFN neurons firing per layer %.3f..%.3f, mean "
                "%.3f (designed %.3f); final residual rms %.2f\n",
                out, (double)rep.file_bytes / 1e6, dt,
                dt > 0 ? (double)rep.file_bytes / 1e6 / dt : 0.0, rep.calib_active_min,
                rep.calib_active_max, rep.calib_active_mean, rep.design_active,
                rep.residual_rms_last);
    return 0;
}

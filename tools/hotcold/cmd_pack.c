/*
 * `hotcold pack`: write a PowerInfer (PWRI) model from a GGUF model, the
 * predictors of `hotcold train-predictor` and, optionally, the activation
 * statistics of `hotcold profile` (rules in core/toolchain/pack.h).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "tool_util.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold pack -m MODEL --predictor FILE [--profile FILE]\n"
            "                    -o OUT.powerinfer.gguf\n"
            "\n"
            "Write a PowerInfer model (magic PWRI): every key and tensor of MODEL, with each\n"
            "layer's ffn_down stored transposed as ffn_down_t, the layer's predictor fc1/fc2\n"
            "(f32) and, with --profile, its activation counts; powerinfer.sparse_threshold is\n"
            "set.  f32/f16 downs are transposed exactly; q8_0/q4_0 ones are dequantized and\n"
            "quantized again (lossy).  `hotcold quantize` converts the result later and keeps\n"
            "it PWRI.  The predictor and profile must match MODEL's shape.\n"
            "\n"
            "  -m, --model FILE       GGUF model with a ReLU-family FFN\n"
            "      --predictor FILE   output of hotcold train-predictor\n"
            "      --profile FILE     output of hotcold profile (optional)\n"
            "      --threshold T      powerinfer.sparse_threshold (default: the predictor\n"
            "                         file's, which train-predictor measured recall at)\n"
            "  -o, --output FILE      the PWRI model to write (must not exist, see --force)\n"
            "      --force            replace OUT if it exists\n"
            "  -q, --quiet            no progress\n"
            "  -h, --help             this text\n");
}

enum { OPT_PREDICTOR = 1000, OPT_PROFILE, OPT_THRESHOLD, OPT_FORCE };

typedef struct progress_state {
    int quiet, tty;
} progress_state;

static void on_progress(void *user, int done, int total, const char *tensor)
{
    const progress_state *ps = user;
    if (ps->quiet)
        return;
    if (ps->tty)
        fprintf(stderr, "\r\033[K[%d/%d] %s%s", done, total, tensor, done == total ? "\n" : "");
    else if (done == total || done % 16 == 0)
        fprintf(stderr, "[%d/%d] %s\n", done, total, tensor);
}

static double file_mib(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_size / (1024.0 * 1024.0) : 0.0;
}

int hc_cmd_pack(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},
        {"predictor", required_argument, 0, OPT_PREDICTOR},
        {"profile", required_argument, 0, OPT_PROFILE},
        {"threshold", required_argument, 0, OPT_THRESHOLD},
        {"output", required_argument, 0, 'o'},
        {"force", no_argument, 0, OPT_FORCE},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    hc_pack_params p = hc_pack_default_params();
    progress_state ps = {0, isatty(fileno(stderr))};
    int c, force = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': p.model = optarg; break;
        case OPT_PREDICTOR: p.predictor = optarg; break;
        case OPT_PROFILE: p.profile = optarg; break;
        case OPT_THRESHOLD:
            if (!hc_tool_parse_float(optarg, -HC_SPARSE_THRESHOLD_LIMIT, HC_SPARSE_THRESHOLD_LIMIT,
                                     &p.threshold)) {
                fprintf(stderr, "hotcold pack: bad value '%s' for --threshold\n", optarg);
                return 2;
            }
            break;
        case 'o': p.out = optarg; break;
        case OPT_FORCE: force = 1; break;
        case 'q': ps.quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold pack: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    if (!p.model || !p.predictor || !p.out) {
        fprintf(stderr, "hotcold pack: %s is required (see --help)\n",
                !p.model ? "-m MODEL" : !p.predictor ? "--predictor FILE" : "-o OUT");
        return 2;
    }
    if (hc_tool_check_output("pack", p.out, force))
        return 1;
    p.progress = on_progress;
    p.user = &ps;
    hc_pack_report rep;
    double t0 = hc_tool_time_s();
    if (hc_pack_file(&p, &rep)) {
        fprintf(stderr, "%shotcold pack: %s\n", ps.tty && !ps.quiet ? "\n" : "",
                hc_last_error());
        return 1;
    }
    if (!ps.quiet) {
        fprintf(stderr,
                "hotcold pack: wrote %s (PWRI, %d layers, n_embd %d, n_ff %d, threshold %g%s): "
                "%.2f MiB in %.2f s\n",
                p.out, rep.n_layer, rep.n_embd, rep.n_ff, (double)rep.threshold,
                rep.has_profile ? ", activation counts" : "", file_mib(p.out),
                hc_tool_time_s() - t0);
        if (!rep.down_was_transposed)
            fprintf(stderr, "hotcold pack: the input already held ffn_down_t; kept as is\n");
        else if (rep.down_lossy)
            fprintf(stderr,
                    "hotcold pack: note: ffn_down was %s; its transpose was quantized again "
                    "to %s, which is lossy (pack an f16/f32 model and quantize the result to "
                    "avoid this)\n",
                    hc_ggml_type_name(rep.down_in_type), hc_ggml_type_name(rep.down_out_type));
    }
    return 0;
}

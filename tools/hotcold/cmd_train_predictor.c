/*
 * `hotcold train-predictor`: collect (p, fires) pairs from a corpus through
 * the FFN observer, train each layer's fc1/fc2 (core/toolchain/train_predictor.h), and
 * report recall and precision on held-out text never used for training.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "tool_util.h"

#define DEFAULT_MAX_SAMPLES 24576
#define DEFAULT_MAX_HELDOUT 8192
#define DEFAULT_MAX_MEMORY_MIB 2048

typedef struct tp_opts {
    const char *model, *text, *valid, *out;
    double held_out;
    int n_ctx;
    int64_t max_samples, max_heldout;
    uint64_t max_memory_mib;
    int quiet, force;
    hc_train_params tp;
} tp_opts;

static void usage(FILE *f)
{
    hc_train_params d = hc_train_default_params();
    fprintf(f,
            "usage: hotcold train-predictor -m MODEL --text FILE [options]\n"
            "\n"
            "Train PowerInfer activation predictors: per layer, logits = fc2.relu(fc1.p)\n"
            "(p = the residual before ffn_norm) guess which FFN neurons fire.  Training pairs\n"
            "come from running MODEL over the corpus; each layer is trained with weighted\n"
            "binary cross-entropy and Adam, deterministically (the result does not depend\n"
            "on -t).  Recall and precision are reported on held-out text that was never used\n"
            "for training.  The output is a side file for `hotcold pack`.\n"
            "\n"
            "  -m, --model FILE        the model (ReLU-family FFN)\n"
            "      --text FILE         training corpus, paragraphs separated by blank lines\n"
            "  -o, --output FILE       predictor file (default: MODEL's name with\n"
            "                          .predictor.gguf, in the current directory; must not\n"
            "                          exist, see --force)\n"
            "      --force             replace the output file if it exists\n"
            "      --held-out F        hold out the last fraction F of --text (default 0.1)\n"
            "      --valid FILE        held-out text from another file instead\n"
            "      --rank auto|H       hidden size of every predictor, or auto: per layer the\n"
            "                          smallest of 16, 32, 64, ... n_embd reaching the target\n"
            "                          recall on the last 10%% of the training tokens, which\n"
            "                          are kept out of fitting for this (default auto)\n"
            "      --max-rank H        top of the auto ladder (default n_embd)\n"
            "      --target-recall R   auto rank goal (default %.2f)\n"
            "      --threshold T       predicted active iff logit >= T (default %g)\n"
            "      --epochs N          passes over the training samples (default %d)\n"
            "      --pos-weight W      loss weight of a firing neuron (default: per layer\n"
            "                          3 sqrt(off/on), so recall is favoured)\n"
            "      --lr R              Adam learning rate (default %g)\n"
            "      --batch N           samples per step (default %d)\n"
            "      --max-samples N     training tokens per layer (default %d; memory is\n"
            "                          n_layer x N x (4 n_embd + n_ff/8) bytes)\n"
            "      --max-heldout N     held-out tokens (default %d)\n"
            "      --max-memory MiB    lower --max-samples to fit (default %d)\n"
            "      --ctx N             window size in tokens (default: the model's context,\n"
            "                          at most 2048)\n"
            "  -t, --threads N         threads (model and layers trained at once; default:\n"
            "                          all cores)\n"
            "  -s, --seed S            random seed (default %" PRIu64 ")\n"
            "  -q, --quiet             no progress\n"
            "  -h, --help              this text\n",
            (double)d.target_recall, (double)d.threshold, d.epochs, (double)d.lr, d.batch,
            DEFAULT_MAX_SAMPLES, DEFAULT_MAX_HELDOUT, DEFAULT_MAX_MEMORY_MIB, d.seed);
}

enum {
    OPT_TEXT = 1000,
    OPT_HELD_OUT,
    OPT_VALID,
    OPT_RANK,
    OPT_MAX_RANK,
    OPT_TARGET,
    OPT_THRESHOLD,
    OPT_EPOCHS,
    OPT_POS_WEIGHT,
    OPT_LR,
    OPT_BATCH,
    OPT_MAX_SAMPLES,
    OPT_MAX_HELDOUT,
    OPT_MAX_MEMORY,
    OPT_CTX,
    OPT_FORCE
};

static int parse_count(const char *s, int64_t *out)
{
    uint64_t u;
    if (!hc_tool_parse_u64(s, &u) || u == 0 || u > (uint64_t)INT32_MAX)
        return 0;
    *out = (int64_t)u;
    return 1;
}

static int parse_args(int argc, char **argv, tp_opts *o)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},
        {"text", required_argument, 0, OPT_TEXT},
        {"output", required_argument, 0, 'o'},
        {"held-out", required_argument, 0, OPT_HELD_OUT},
        {"valid", required_argument, 0, OPT_VALID},
        {"rank", required_argument, 0, OPT_RANK},
        {"max-rank", required_argument, 0, OPT_MAX_RANK},
        {"target-recall", required_argument, 0, OPT_TARGET},
        {"threshold", required_argument, 0, OPT_THRESHOLD},
        {"epochs", required_argument, 0, OPT_EPOCHS},
        {"pos-weight", required_argument, 0, OPT_POS_WEIGHT},
        {"lr", required_argument, 0, OPT_LR},
        {"batch", required_argument, 0, OPT_BATCH},
        {"max-samples", required_argument, 0, OPT_MAX_SAMPLES},
        {"max-heldout", required_argument, 0, OPT_MAX_HELDOUT},
        {"max-memory", required_argument, 0, OPT_MAX_MEMORY},
        {"ctx", required_argument, 0, OPT_CTX},
        {"force", no_argument, 0, OPT_FORCE},
        {"threads", required_argument, 0, 't'},
        {"seed", required_argument, 0, 's'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:t:s:qh", longopts, NULL)) != -1) {
        int ok = 1;
        float fv;
        switch (c) {
        case 'm': o->model = optarg; break;
        case OPT_TEXT: o->text = optarg; break;
        case 'o': o->out = optarg; break;
        case OPT_FORCE: o->force = 1; break;
        case OPT_HELD_OUT:
            ok = hc_tool_parse_float(optarg, 0.0f, 0.9f, &fv) && fv > 0.0f;
            o->held_out = fv;
            break;
        case OPT_VALID: o->valid = optarg; break;
        case OPT_RANK:
            if (!strcmp(optarg, "auto"))
                o->tp.rank = 0;
            else
                ok = hc_tool_parse_int(optarg, 1, 1 << 16, &o->tp.rank);
            break;
        case OPT_MAX_RANK: ok = hc_tool_parse_int(optarg, 1, 1 << 16, &o->tp.max_rank); break;
        case OPT_TARGET: ok = hc_tool_parse_float(optarg, 0.0f, 1.0f, &o->tp.target_recall); break;
        case OPT_THRESHOLD:
            ok = hc_tool_parse_float(optarg, -HC_SPARSE_THRESHOLD_LIMIT, HC_SPARSE_THRESHOLD_LIMIT,
                                     &o->tp.threshold);
            break;
        case OPT_EPOCHS: ok = hc_tool_parse_int(optarg, 1, 10000, &o->tp.epochs); break;
        case OPT_POS_WEIGHT:
            ok = hc_tool_parse_float(optarg, 0.01f, 1000.0f, &o->tp.pos_weight);
            break;
        case OPT_LR: ok = hc_tool_parse_float(optarg, 1e-7f, 1.0f, &o->tp.lr); break;
        case OPT_BATCH: ok = hc_tool_parse_int(optarg, 1, 1 << 16, &o->tp.batch); break;
        case OPT_MAX_SAMPLES: ok = parse_count(optarg, &o->max_samples); break;
        case OPT_MAX_HELDOUT: ok = parse_count(optarg, &o->max_heldout); break;
        case OPT_MAX_MEMORY:
            ok = hc_tool_parse_u64(optarg, &o->max_memory_mib) && o->max_memory_mib > 0 &&
                 o->max_memory_mib < (1ull << 40);
            break;
        case OPT_CTX: ok = hc_tool_parse_int(optarg, 2, 1 << 20, &o->n_ctx); break;
        case 't': ok = hc_tool_parse_int(optarg, 1, 1024, &o->tp.n_threads); break;
        case 's': ok = hc_tool_parse_u64(optarg, &o->tp.seed); break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return -1;
        }
        if (!ok) {
            fprintf(stderr, "hotcold train-predictor: bad value '%s' for %s (see --help)\n",
                    optarg, hc_tool_option_name(longopts, c));
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold train-predictor: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return -1;
    }
    if (!o->model || !o->text) {
        fprintf(stderr, "hotcold train-predictor: %s is required (see --help)\n",
                !o->model ? "-m MODEL" : "--text FILE");
        return -1;
    }
    if (o->valid && o->held_out > 0) {
        fprintf(stderr, "hotcold train-predictor: give --held-out or --valid, not both\n");
        return -1;
    }
    return 0;
}

typedef struct train_progress {
    int quiet;
    int n_layer, layers_done;
    double t0;
} train_progress;

static void on_train_event(void *user, const hc_train_event *ev)
{
    train_progress *p = user;
    p->layers_done += ev->last;
    if (p->quiet)
        return;
    double el = hc_tool_time_s() - p->t0;
    double eta = p->layers_done ? el / p->layers_done * (p->n_layer - p->layers_done) : 0.0;
    fprintf(stderr,
            "train: layer %d rank %4d: selection recall %.3f precision %.3f active %.1f%% "
            "(%.1f s)%s",
            ev->layer, ev->rank, ev->select_recall, ev->select_precision,
            100.0 * ev->select_pred_frac, ev->seconds, ev->last ? "" : "\n");
    if (ev->last)
        fprintf(stderr, " -> rank %d; %d/%d layers, ETA %.0f s\n", ev->chosen_rank,
                p->layers_done, p->n_layer, eta);
}

/* Windows of `text` [0, len) capped at max tokens, then their samples. */
static int gather(hc_model *m, const char *what, const char *text, size_t len, int n_ctx,
                  int64_t max, int quiet, hc_ffn_samples *s)
{
    hc_token_windows w = {0};
    hc_model_desc d;
    int rc = -1;
    hc_model_describe(m, &d);
    if (hc_token_windows_from_text(m, text, len, n_ctx, max, &w) ||
        hc_ffn_samples_init(s, d.n_layer, d.n_embd, d.n_ff, w.n_tokens)) {
        fprintf(stderr, "hotcold train-predictor: %s text: %s\n", what, hc_last_error());
        goto out;
    }
    hc_tool_progress pr;
    hc_tool_progress_init(&pr, what, quiet);
    if (hc_ffn_samples_collect(m, &w, hc_tool_on_token_progress, &pr, s)) {
        fprintf(stderr, "\nhotcold train-predictor: %s\n", hc_last_error());
        goto out;
    }
    rc = 0;
out:
    hc_token_windows_free(&w);
    return rc;
}

static void print_report(const hc_predictor *pr, const hc_train_params *tp, int64_t n_train,
                         int64_t n_held)
{
    printf("layer  rank  recall  precision  predicted  truly active  selection recall  "
           "time\n");
    double r = 0, p = 0, pf = 0, tf = 0;
    for (int il = 0; il < pr->n_layer; il++) {
        const hc_predictor_layer *l = &pr->layers[il];
        char sel[32] = "-";
        if (tp->rank == 0)
            snprintf(sel, sizeof sel, "%.3f", l->select_recall);
        printf("%5d  %4d  %6.3f  %9.3f  %8.1f%%  %11.1f%%  %16s  %4.1fs%s\n", il, l->rank,
               l->recall, l->precision, 100 * l->pred_frac, 100 * l->true_frac, sel, l->seconds,
               tp->rank == 0 && !l->reached_target ? "  (target not reached)" : "");
        r += l->recall;
        p += l->precision;
        pf += l->pred_frac;
        tf += l->true_frac;
    }
    int n = pr->n_layer;
    printf("mean         %6.3f  %9.3f  %8.1f%%  %11.1f%%   (held-out: %" PRId64
           " tokens; trained on %" PRId64 "; threshold %g)\n",
           r / n, p / n, 100 * pf / n, 100 * tf / n, n_held, n_train, (double)pr->threshold);
}

int hc_cmd_train_predictor(int argc, char **argv)
{
    tp_opts o = {0};
    o.tp = hc_train_default_params();
    o.tp.n_threads = 0;
    o.max_samples = DEFAULT_MAX_SAMPLES;
    o.max_heldout = DEFAULT_MAX_HELDOUT;
    o.max_memory_mib = DEFAULT_MAX_MEMORY_MIB;
    char out_buf[4096];
    char *text = NULL, *valid = NULL;
    hc_engine *e = NULL;
    hc_model *m = NULL;
    hc_ffn_samples train = {0}, held = {0};
    hc_predictor pred = {0};
    int rc = 1;

    int pr = parse_args(argc, argv, &o);
    if (pr)
        return pr > 0 ? 0 : 2;
    if (!o.valid && !(o.held_out > 0))
        o.held_out = 0.1;
    if (!o.out) {
        hc_tool_output_name(o.model, ".predictor.gguf", "predictor", out_buf, sizeof out_buf);
        o.out = out_buf;
    }
    if (hc_tool_check_output("train-predictor", o.out, o.force))
        return 1;
    double t_start = hc_tool_time_s();
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = o.tp.n_threads;
    e = hc_engine_open(&ep);
    hc_model_params mp = hc_model_default_params();
    mp.sparse = HC_SPARSE_OFF;
    m = e ? hc_model_load(e, o.model, &mp) : NULL;
    if (!m) {
        fprintf(stderr, "hotcold train-predictor: %s\n", hc_last_error());
        goto out;
    }
    if (o.tp.n_threads == 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        o.tp.n_threads = nc > 0 ? (int)nc : 1;
    }
    hc_model_desc d;
    hc_model_describe(m, &d);
    if (hc_tool_require_relu_ffn("train-predictor", m, o.model))
        goto out;
    if (o.tp.rank > d.n_embd * 4 || o.tp.max_rank > d.n_embd) {
        fprintf(stderr, "hotcold train-predictor: rank %d is larger than this model needs "
                        "(n_embd %d)\n",
                o.tp.rank ? o.tp.rank : o.tp.max_rank, d.n_embd);
        goto out;
    }
    /* Bounded memory: every layer keeps its samples until training. */
    uint64_t budget = o.max_memory_mib << 20;
    uint64_t per_token = hc_ffn_samples_bytes(d.n_layer, d.n_embd, d.n_ff, 1);
    int64_t fit = (int64_t)(budget / per_token);
    if (fit < o.max_samples + o.max_heldout) {
        int64_t want = o.max_samples + o.max_heldout;
        o.max_samples = (int64_t)((double)o.max_samples * fit / want);
        o.max_heldout = (int64_t)((double)o.max_heldout * fit / want);
        if (o.max_samples < 256 || o.max_heldout < 64) {
            fprintf(stderr,
                    "hotcold train-predictor: --max-memory %" PRIu64
                    " MiB holds only %" PRId64 " samples of this model; raise it\n",
                    o.max_memory_mib, fit);
            goto out;
        }
    }
    int n_ctx = o.n_ctx ? o.n_ctx : (d.n_ctx_train < 2048 ? d.n_ctx_train : 2048);
    text = hc_tool_read_text(o.text, HC_TOOL_MAX_CORPUS_BYTES);
    if (!text)
        goto out;
    size_t len = strlen(text), cut = len;
    const char *held_text = NULL;
    size_t held_len = 0;
    if (o.valid) {
        valid = hc_tool_read_text(o.valid, HC_TOOL_MAX_CORPUS_BYTES);
        if (!valid)
            goto out;
        held_text = valid;
        held_len = strlen(valid);
    } else {
        cut = hc_text_split_point(text, len, o.held_out);
        held_text = text + cut;
        held_len = len - cut;
        if (cut == 0 || held_len == 0) {
            fprintf(stderr,
                    "hotcold train-predictor: %s is too short to hold out %.0f%% of it at a "
                    "paragraph break; use --valid\n",
                    o.text, 100 * o.held_out);
            goto out;
        }
    }
    if (!o.quiet)
        fprintf(stderr,
                "train-predictor: %s: %d layers, n_embd %d, n_ff %d; up to %" PRId64
                " training + %" PRId64 " held-out tokens per layer (%.0f MiB), windows of %d\n",
                o.model, d.n_layer, d.n_embd, d.n_ff, o.max_samples, o.max_heldout,
                (double)(per_token * (uint64_t)(o.max_samples + o.max_heldout)) / 1048576.0,
                n_ctx);
    if (gather(m, "collect", text, cut, n_ctx, o.max_samples, o.quiet, &train) ||
        gather(m, "held-out", held_text, held_len, n_ctx, o.max_heldout, o.quiet, &held))
        goto out;

    train_progress tpg = {o.quiet, d.n_layer, 0, hc_tool_time_s()};
    if (hc_predictor_train(&train, &o.tp, on_train_event, &tpg, &pred)) {
        fprintf(stderr, "hotcold train-predictor: %s\n", hc_last_error());
        goto out;
    }
    snprintf(pred.model, sizeof pred.model, "%s", o.model);
    if (hc_predictor_evaluate(&pred, &held) || hc_predictor_write(&pred, o.out)) {
        fprintf(stderr, "hotcold train-predictor: %s\n", hc_last_error());
        goto out;
    }
    print_report(&pred, &o.tp, train.n, held.n);
    if (!o.quiet)
        fprintf(stderr, "train-predictor: wrote %s in %.1f s (%d threads)\n", o.out,
                hc_tool_time_s() - t_start, o.tp.n_threads);
    rc = 0;
out:
    hc_predictor_free(&pred);
    hc_ffn_samples_free(&train);
    hc_ffn_samples_free(&held);
    hc_model_free(m);
    hc_engine_close(e);
    free(text);
    free(valid);
    return rc;
}

/*
 * `hotcold run`: load a model, feed a prompt, stream generated text, and end
 * with load time and prompt/decode speeds (with the weight bandwidth the
 * decode speed implies).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "plan_print.h"
#include "tool_util.h"

typedef struct run_opts {
    const char *model;
    const char *prompt;
    const char *device;
    int n_predict;
    int n_threads;
    int n_ctx;
    int n_batch;
    int ignore_eos;
    int verbose;
    int seed_given;
    int sparse;
    float sparse_threshold;
    int sparse_check;
    double vram_budget;  /* bytes; < 0: the device's free memory - 256 MiB */
    int gpu_index;       /* hc_gpu_index_mode */
    int split;           /* hc_split_mode */
    int print_plan;
    int weights;         /* hc_weights_mode */
    hc_sampler_params sp;
} run_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold run [options]\n"
            "\n"
            "Generate text.  Without -m, runs the model shipped in models/ (%s).\n"
            "\n"
            "  -m, --model FILE        GGUF model to run\n"
            "  -p, --prompt TEXT       prompt (default: empty, start from BOS)\n"
            "  -f, --file FILE         read the prompt from a file\n"
            "  -n, --n-predict N       tokens to generate (default 256; -1 = until EOS or\n"
            "                          the context is full)\n"
            "  -t, --threads N         CPU threads (default: all cores)\n"
            "  -c, --ctx-size N        context size in tokens (default: the model's)\n"
            "  -b, --batch-size N      prompt tokens per forward pass (default 64)\n"
            "      --temp T            temperature; 0 = greedy (default 0.8)\n"
            "      --top-k N           keep the N most likely tokens; 0 = off (default 40)\n"
            "      --top-p P           nucleus sampling; 1 = off (default 0.95)\n"
            "      --min-p P           drop tokens below P x the top probability (default 0.05)\n"
            "      --repeat-penalty R  penalise recent tokens; 1 = off (default 1.0)\n"
            "      --repeat-last-n N   tokens the penalty looks back over (default 64)\n"
            "  -s, --seed N            sampling seed (default: random, printed at the end)\n"
            "      --device SPEC       cpu (default), or a GPU (vulkan, vulkan:1, ...; see\n"
            "                          'hotcold devices'): it holds what fits in the VRAM\n"
            "                          budget, in PowerInfer's order (attention, predictors,\n"
            "                          norms, output, KV cache, hot neurons); the CPU runs\n"
            "                          the rest at the same time (hybrid)\n"
            "      --vram-budget GiB   what the GPU may hold (default: its free memory\n"
            "                          minus 256 MiB; 0 = nothing, everything on the CPU)\n"
            "      --split MODE        how the GPU's share is chosen: neurons (the order\n"
            "                          above; default for PowerInfer files) or layers\n"
            "                          (default for plain GGUF: whole layers from layer 0\n"
            "                          while they fit, as llama.cpp's -ngl; the output head\n"
            "                          once all are on the GPU; no gpu index is used)\n"
            "      --print-plan        print what sits where, per layer, before running\n"
            "      --reset-gpu-index   re-solve the neuron split and overwrite\n"
            "                          <model>.generated.gpuidx (kept for PowerInfer files,\n"
            "                          whose FFN splits by neuron)\n"
            "      --disable-gpu-index neither read nor write <model>.generated.gpuidx\n"
            "      --sparse MODE       FFN: predictor (PowerInfer; default for files with\n"
            "                          predictors), oracle (gate decides; exact for ReLU\n"
            "                          models), off (dense; default otherwise)\n"
            "      --sparse-threshold T  predictor cut-off (default: $LLAMA_SPARSE_PRED_THRESHOLD,\n"
            "                          else the file's powerinfer.sparse_threshold, else 0)\n"
            "      --sparse-check      also compute the dense FFN to report the predictor's\n"
            "                          recall and precision (slower)\n"
            "      --ignore-eos        keep generating past the end-of-sequence token\n"
            "      --no-mmap           read the weights into memory backed by 2 MiB pages\n"
            "                          before the first token (decode touches every weight,\n"
            "                          and 4 KiB pages cost it a TLB miss each).  Default when\n"
            "                          the CPU runs everything and the file needs at most half\n"
            "                          the available memory: map the file and move it into\n"
            "                          2 MiB pages in the background, so the first token does\n"
            "                          not wait for the whole file\n"
            "      --mmap              map the file only (no copy; pages shared and loaded\n"
            "                          on first use)\n"
            "  -v, --verbose           log plugin discovery and loading\n"
            "  -h, --help              this text\n",
            HC_DEFAULT_MODEL_NAME);
}

enum {
    OPT_TEMP = 1000,
    OPT_TOP_K,
    OPT_TOP_P,
    OPT_MIN_P,
    OPT_REPEAT_PENALTY,
    OPT_REPEAT_LAST_N,
    OPT_DEVICE,
    OPT_IGNORE_EOS,
    OPT_SPARSE,
    OPT_SPARSE_THRESHOLD,
    OPT_SPARSE_CHECK,
    OPT_VRAM_BUDGET,
    OPT_PRINT_PLAN,
    OPT_RESET_GPU_INDEX,
    OPT_DISABLE_GPU_INDEX,
    OPT_MMAP,
    OPT_NO_MMAP,
    OPT_SPLIT
};

static int parse_args(int argc, char **argv, run_opts *o, char **prompt_buf)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},
        {"prompt", required_argument, 0, 'p'},
        {"file", required_argument, 0, 'f'},
        {"n-predict", required_argument, 0, 'n'},
        {"threads", required_argument, 0, 't'},
        {"ctx-size", required_argument, 0, 'c'},
        {"batch-size", required_argument, 0, 'b'},
        {"seed", required_argument, 0, 's'},
        {"temp", required_argument, 0, OPT_TEMP},
        {"top-k", required_argument, 0, OPT_TOP_K},
        {"top-p", required_argument, 0, OPT_TOP_P},
        {"min-p", required_argument, 0, OPT_MIN_P},
        {"repeat-penalty", required_argument, 0, OPT_REPEAT_PENALTY},
        {"repeat-last-n", required_argument, 0, OPT_REPEAT_LAST_N},
        {"device", required_argument, 0, OPT_DEVICE},
        {"ignore-eos", no_argument, 0, OPT_IGNORE_EOS},
        {"sparse", required_argument, 0, OPT_SPARSE},
        {"sparse-threshold", required_argument, 0, OPT_SPARSE_THRESHOLD},
        {"sparse-check", no_argument, 0, OPT_SPARSE_CHECK},
        {"vram-budget", required_argument, 0, OPT_VRAM_BUDGET},
        {"split", required_argument, 0, OPT_SPLIT},
        {"print-plan", no_argument, 0, OPT_PRINT_PLAN},
        {"reset-gpu-index", no_argument, 0, OPT_RESET_GPU_INDEX},
        {"disable-gpu-index", no_argument, 0, OPT_DISABLE_GPU_INDEX},
        {"mmap", no_argument, 0, OPT_MMAP},
        {"no-mmap", no_argument, 0, OPT_NO_MMAP},
        {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    static const char shortopts[] = "m:p:f:n:t:c:b:s:vh";
    int c;
    if (hc_tool_reject_foreign_flags("run", argc, argv, shortopts, longopts))
        return -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        int ok = 1;
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'p': o->prompt = optarg; break;
        case 'f':
            free(*prompt_buf);
            *prompt_buf = hc_tool_read_text(optarg, HC_TOOL_MAX_PROMPT_BYTES);
            if (!*prompt_buf)
                return -1;
            o->prompt = *prompt_buf;
            break;
        case 'n': ok = hc_tool_parse_int(optarg, -1, INT_MAX, &o->n_predict); break;
        case 't': ok = hc_tool_parse_int(optarg, 1, 1024, &o->n_threads); break;
        case 'c': ok = hc_tool_parse_int(optarg, 1, 1 << 24, &o->n_ctx); break;
        case 'b': ok = hc_tool_parse_int(optarg, 1, 1 << 16, &o->n_batch); break;
        case 's': ok = hc_tool_parse_u64(optarg, &o->sp.seed); o->seed_given = 1; break;
        case OPT_TEMP: ok = hc_tool_parse_float(optarg, 0.0f, 100.0f, &o->sp.temp); break;
        case OPT_TOP_K: ok = hc_tool_parse_int(optarg, 0, INT_MAX, &o->sp.top_k); break;
        case OPT_TOP_P: ok = hc_tool_parse_float(optarg, 0.0f, 1.0f, &o->sp.top_p); break;
        case OPT_MIN_P: ok = hc_tool_parse_float(optarg, 0.0f, 1.0f, &o->sp.min_p); break;
        case OPT_REPEAT_PENALTY:
            ok = hc_tool_parse_float(optarg, 0.01f, 100.0f, &o->sp.repeat_penalty);
            break;
        case OPT_REPEAT_LAST_N:
            ok = hc_tool_parse_int(optarg, 0, 1 << 20, &o->sp.repeat_last_n);
            break;
        case OPT_DEVICE: o->device = optarg; break;
        case OPT_IGNORE_EOS: o->ignore_eos = 1; break;
        case OPT_SPARSE: ok = hc_tool_parse_sparse_mode(optarg, &o->sparse); break;
        case OPT_SPARSE_THRESHOLD:
            ok = hc_tool_parse_float(optarg, -HC_SPARSE_THRESHOLD_LIMIT, HC_SPARSE_THRESHOLD_LIMIT,
                                      &o->sparse_threshold);
            break;
        case OPT_SPARSE_CHECK: o->sparse_check = 1; break;
        case OPT_VRAM_BUDGET: ok = hc_tool_parse_gib(optarg, &o->vram_budget); break;
        case OPT_SPLIT:
            if (!hc_tool_parse_split(optarg, &o->split)) {
                fprintf(stderr, "hotcold run: bad value '%s' for --split (neurons or layers)\n",
                        optarg);
                return -1;
            }
            break;
        case OPT_PRINT_PLAN: o->print_plan = 1; break;
        case OPT_RESET_GPU_INDEX: o->gpu_index = HC_GPU_INDEX_RESET; break;
        case OPT_DISABLE_GPU_INDEX: o->gpu_index = HC_GPU_INDEX_DISABLE; break;
        case OPT_MMAP: o->weights = HC_WEIGHTS_MMAP; break;
        case OPT_NO_MMAP: o->weights = HC_WEIGHTS_READ; break;
        case 'v': o->verbose = 1; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return -1;
        }
        if (!ok) {
            fprintf(stderr, "hotcold run: bad value '%s' for %s (see --help)\n", optarg,
                    hc_tool_option_name(longopts, c));
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold run: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* Print a token's text; the first piece after BOS drops SentencePiece's
 * dummy-prefix space. */
static void emit_piece(const hc_model *m, int32_t id, int *first)
{
    char piece[256];
    int len = hc_model_token_piece(m, id, piece, (int)sizeof piece);
    if (len <= 0)
        return;
    const char *s = piece;
    if (*first && s[0] == ' ') {
        s++;
        len--;
    }
    *first = 0;
    fwrite(s, 1, (size_t)len, stdout);
    fflush(stdout);
}

static int generate(hc_model *m, hc_context *ctx, hc_sampler *smp, const run_opts *o,
                    hc_run_stats *st)
{
    hc_model_desc desc;
    hc_model_describe(m, &desc);
    const char *text = o->prompt ? o->prompt : "";
    int n_prompt = hc_model_tokenize(m, text, strlen(text), 1, NULL, 0);
    int rc = -1;
    float *logits = malloc((size_t)desc.n_vocab * sizeof *logits);
    int32_t *prompt = malloc((size_t)(n_prompt > 0 ? n_prompt : 1) * sizeof *prompt);
    if (!logits || !prompt || n_prompt < 1) {
        fprintf(stderr, "hotcold run: %s\n", n_prompt < 1 ? hc_last_error() : "out of memory");
        goto out;
    }
    hc_model_tokenize(m, text, strlen(text), 1, prompt, n_prompt);
    if (n_prompt > hc_context_n_ctx(ctx)) {
        fprintf(stderr,
                "hotcold run: the prompt is %d tokens but the context holds %d (raise -c)\n",
                n_prompt, hc_context_n_ctx(ctx));
        goto out;
    }
    int first = 1;
    for (int i = 0; i < n_prompt; i++) {
        if (prompt[i] != hc_model_token_bos(m))
            emit_piece(m, prompt[i], &first);
        hc_sampler_accept(smp, prompt[i]);
    }

    double t0 = hc_tool_time_s();
    if (hc_context_eval(ctx, prompt, n_prompt, logits)) {
        fprintf(stderr, "\nhotcold run: %s\n", hc_last_error());
        goto out;
    }
    st->prompt_tokens = n_prompt;
    st->prompt_s = hc_tool_time_s() - t0;

    t0 = hc_tool_time_s();
    for (int i = 0; o->n_predict < 0 || i < o->n_predict; i++) {
        int32_t id = hc_sampler_sample(smp, logits, desc.n_vocab);
        hc_sampler_accept(smp, id);
        if (id == hc_model_token_eos(m) && !o->ignore_eos) {
            st->stop_reason = "end of sequence";
            break;
        }
        emit_piece(m, id, &first);
        st->decode_tokens++;
        if (o->n_predict >= 0 && i + 1 == o->n_predict)
            break; /* no need to evaluate a token nobody will sample after */
        if (hc_context_n_past(ctx) >= hc_context_n_ctx(ctx)) {
            st->stop_reason = "context full (raise -c)";
            break;
        }
        if (hc_context_eval(ctx, &id, 1, logits)) {
            fprintf(stderr, "\nhotcold run: %s\n", hc_last_error());
            goto out;
        }
        st->decode_evals++;
    }
    st->decode_s = hc_tool_time_s() - t0;
    rc = 0;
out:
    printf("\n");
    free(logits);
    free(prompt);
    return rc;
}

int hc_cmd_run(int argc, char **argv)
{
    run_opts o = {0};
    char *prompt_buf = NULL, model_path[4096];
    hc_engine *e = NULL;
    hc_model *m = NULL;
    hc_context *ctx = NULL;
    hc_sampler *smp = NULL;
    hc_run_stats st = {0};
    int rc = 1;

    o.n_predict = 256;
    o.device = "cpu";
    o.n_batch = 64;
    o.sparse = HC_SPARSE_AUTO;
    o.sparse_threshold = NAN;
    o.vram_budget = -1.0;
    o.gpu_index = HC_GPU_INDEX_USE;
    o.sp = hc_sampler_default_params();
    int pr = parse_args(argc, argv, &o, &prompt_buf);
    if (pr) {
        rc = pr > 0 ? 0 : 2;
        goto out;
    }
    if (!o.seed_given)
        o.sp.seed = hc_tool_random_seed();
    if ((o.vram_budget >= 0 || o.print_plan || o.gpu_index != HC_GPU_INDEX_USE ||
         o.split != HC_SPLIT_AUTO) &&
        strncmp(o.device, "cpu", 3) == 0)
        fprintf(stderr, "hotcold run: note: --vram-budget, --split, --print-plan and the "
                        "gpu-index flags only matter with --device <gpu>\n");
    if (o.verbose)
        hc_log_set_level(HC_LOG_DEBUG);
    if (!o.model) {
        if (hc_tool_default_model(model_path, sizeof model_path)) {
            fprintf(stderr, "hotcold run: no -m given and %s\n", hc_last_error());
            goto out;
        }
        o.model = model_path;
    }

    double t0 = hc_tool_time_s();
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = o.n_threads;
    e = hc_engine_open(&ep);
    if (!e) {
        fprintf(stderr, "hotcold run: %s\n", hc_last_error());
        goto out;
    }
    hc_model_params mp = hc_model_default_params();
    mp.device = o.device;
    mp.sparse = o.sparse;
    mp.sparse_threshold = o.sparse_threshold;
    mp.vram_budget = o.vram_budget;
    mp.gpu_index = o.gpu_index;
    mp.split = o.split;
    mp.n_ctx = o.n_ctx;
    mp.weights = o.weights;
    hc_tool_progress load_progress;
    hc_tool_progress_init(&load_progress, "load", 0);
    mp.progress = hc_tool_on_load_progress;
    mp.progress_user = &load_progress;
    m = hc_model_load(e, o.model, &mp);
    if (!m) {
        fprintf(stderr, "hotcold run: %s\n", hc_last_error());
        goto out;
    }
    if (o.print_plan) {
        hc_tool_print_model_plan(stderr, m, o.device);
    }
    /* Whether a saved split was reused or solved afresh, and why. */
    if (*hc_model_plan_note(m))
        fprintf(stderr, "gpu index: %s\n", hc_model_plan_note(m));
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = o.n_ctx;
    cp.n_batch = o.n_batch;
    cp.sparse_check = o.sparse_check;
    ctx = hc_context_new(m, &cp);
    smp = hc_sampler_new(&o.sp);
    if (!ctx || !smp) {
        fprintf(stderr, "hotcold run: %s\n", hc_last_error());
        goto out;
    }
    st.load_s = hc_tool_time_s() - t0;
    st.stop_reason = "token limit (-n)";
    if (generate(m, ctx, smp, &o, &st) == 0) {
        hc_tool_print_run_stats(stderr, e, o.model, m, ctx, &o.sp, &st);
        rc = 0;
    }
out:
    hc_sampler_free(smp);
    hc_context_free(ctx);
    hc_model_free(m);
    hc_engine_close(e);
    free(prompt_buf);
    return rc;
}

/*
 * `hotcold perplexity`: how well a model predicts a text, in llama.cpp's
 * manner, so the figures compare with its `perplexity` tool: the whole text
 * is tokenized with BOS and cut into chunks of -c tokens; each chunk starts
 * a fresh sequence with BOS in place of its first token, and the second
 * half of it is scored (each position's logits against the next token, the
 * first half being context).  PPL = exp(mean negative log-likelihood),
 * printed after every chunk and at the end with its standard error.
 *
 * --kl-base FILE compares runs: a run with FILE absent saves its logits
 * there (run it dense); a run with FILE present reads them and reports the
 * mean KL divergence of its distribution from the base's, how often their
 * top tokens agree, and the ratio of the two perplexities -- what a sparse
 * FFN costs in accuracy.
 */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "ppl_score.h"
#include "tool_util.h"

typedef struct ppl_opts {
    const char *model, *text_path, *device, *kl_base;
    int n_ctx, n_batch, n_chunks, n_threads, sparse, split, weights, verbose;
    float sparse_threshold;
    double vram_budget;
} ppl_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold perplexity -f TEXT [options]\n"
            "\n"
            "Perplexity of a model on a text, as llama.cpp's perplexity computes it: the\n"
            "text tokenized with BOS, chunks of -c tokens each starting with BOS, the\n"
            "second half of each chunk scored.  Prints [chunk]PPL-so-far as it goes, then\n"
            "'Final estimate: PPL = X +/- Y'.  Without -m, the model shipped in models/.\n"
            "\n"
            "  -m, --model FILE        GGUF model\n"
            "  -f, --file FILE         the text (e.g. wikitext-2's wiki.test.raw)\n"
            "  -c, --ctx-size N        tokens per chunk (default 512, at most the model's\n"
            "                          context)\n"
            "  -b, --batch-size N      tokens per forward pass (default 64)\n"
            "      --chunks N          score only the first N chunks (default: all)\n"
            "  -t, --threads N         CPU threads (default: all cores)\n"
            "      --sparse MODE       FFN: predictor, oracle or off (dense), as for run\n"
            "      --sparse-threshold T  predictor cut-off (as for run)\n"
            "      --kl-base FILE      compare with a base run: when FILE does not exist,\n"
            "                          this run's logits are saved to it (4 bytes x the\n"
            "                          vocabulary per scored token; make it a dense run:\n"
            "                          --sparse off); when it exists, this run is compared\n"
            "                          with it: mean KL divergence, top-1 agreement and the\n"
            "                          perplexity ratio (same model family, text, -c and\n"
            "                          --chunks, or it is refused)\n"
            "      --device SPEC       cpu (default) or a GPU, as for run\n"
            "      --vram-budget GiB   what the GPU may hold (as for run)\n"
            "      --split MODE        neurons or layers (as for run)\n"
            "      --mmap, --no-mmap   how the weights are loaded (as for run)\n"
            "  -v, --verbose           log plugin discovery and loading\n"
            "  -h, --help              this text\n");
}

enum { OPT_CHUNKS = 1000, OPT_SPARSE, OPT_SPARSE_THRESHOLD, OPT_KL_BASE, OPT_DEVICE,
       OPT_VRAM_BUDGET, OPT_SPLIT, OPT_MMAP, OPT_NO_MMAP };

static int parse_args(int argc, char **argv, ppl_opts *o)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},
        {"file", required_argument, 0, 'f'},
        {"ctx-size", required_argument, 0, 'c'},
        {"batch-size", required_argument, 0, 'b'},
        {"threads", required_argument, 0, 't'},
        {"chunks", required_argument, 0, OPT_CHUNKS},
        {"sparse", required_argument, 0, OPT_SPARSE},
        {"sparse-threshold", required_argument, 0, OPT_SPARSE_THRESHOLD},
        {"kl-base", required_argument, 0, OPT_KL_BASE},
        {"device", required_argument, 0, OPT_DEVICE},
        {"vram-budget", required_argument, 0, OPT_VRAM_BUDGET},
        {"split", required_argument, 0, OPT_SPLIT},
        {"mmap", no_argument, 0, OPT_MMAP},
        {"no-mmap", no_argument, 0, OPT_NO_MMAP},
        {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    static const char shortopts[] = "m:f:c:b:t:vh";
    int c;
    if (hc_tool_reject_foreign_flags("perplexity", argc, argv, shortopts, longopts))
        return -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        int ok = 1;
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'f': o->text_path = optarg; break;
        /* 4: the smallest chunk with a scored token after its context. */
        case 'c': ok = hc_tool_parse_int(optarg, 4, 1 << 24, &o->n_ctx); break;
        case 'b': ok = hc_tool_parse_int(optarg, 1, 1 << 16, &o->n_batch); break;
        case 't': ok = hc_tool_parse_int(optarg, 1, 1024, &o->n_threads); break;
        case OPT_CHUNKS: ok = hc_tool_parse_int(optarg, 1, INT_MAX, &o->n_chunks); break;
        case OPT_SPARSE: ok = hc_tool_parse_sparse_mode(optarg, &o->sparse); break;
        case OPT_SPARSE_THRESHOLD:
            ok = hc_tool_parse_float(optarg, -HC_SPARSE_THRESHOLD_LIMIT, HC_SPARSE_THRESHOLD_LIMIT,
                                      &o->sparse_threshold);
            break;
        case OPT_KL_BASE: o->kl_base = optarg; break;
        case OPT_DEVICE: o->device = optarg; break;
        case OPT_VRAM_BUDGET: ok = hc_tool_parse_gib(optarg, &o->vram_budget); break;
        case OPT_SPLIT: ok = hc_tool_parse_split(optarg, &o->split); break;
        case OPT_MMAP: o->weights = HC_WEIGHTS_MMAP; break;
        case OPT_NO_MMAP: o->weights = HC_WEIGHTS_READ; break;
        case 'v': o->verbose = 1; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return -1;
        }
        if (!ok) {
            fprintf(stderr, "hotcold perplexity: bad value '%s' for %s (see --help)\n", optarg,
                    hc_tool_option_name(longopts, c));
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold perplexity: unexpected argument '%s' (see --help)\n",
                argv[optind]);
        return -1;
    }
    if (!o->text_path) {
        fprintf(stderr, "hotcold perplexity: no text to score: give one with -f FILE\n");
        return -1;
    }
    return 0;
}

/* What one run adds up: its own NLL and, against a base, the base's NLL of
 * the same targets, the KL divergence and the top-1 agreements. */
typedef struct ppl_totals {
    hc_ppl_sum nll, base_nll, kl;
    int64_t same_top;
} ppl_totals;

/* Scores the positions j0 .. j0 + n - 1 of a chunk whose logit rows are in
 * `logits` (row j - j0 after token j of `toks`) that are in its second
 * half and have a next token, against or into the base. */
static int score_rows(const float *logits, const int32_t *toks, int j0, int n, int n_ctx,
                      int n_vocab, hc_ppl_base *base, float *base_row, ppl_totals *t)
{
    for (int j = j0 > n_ctx / 2 ? j0 : n_ctx / 2; j < j0 + n && j < n_ctx - 1; j++) {
        const float *row = logits + (size_t)(j - j0) * n_vocab;
        hc_ppl_add(&t->nll, hc_ppl_nll(row, n_vocab, toks[j + 1]));
        if (!base->f)
            continue;
        if (base->writing) {
            if (hc_ppl_base_write(base, row))
                return -1;
            continue;
        }
        int same;
        if (hc_ppl_base_read(base, base_row))
            return -1;
        hc_ppl_add(&t->kl, hc_ppl_kl(base_row, row, n_vocab, &same));
        hc_ppl_add(&t->base_nll, hc_ppl_nll(base_row, n_vocab, toks[j + 1]));
        t->same_top += same;
    }
    return 0;
}

static void print_results(const ppl_opts *o, const hc_ppl_base *base, const ppl_totals *t)
{
    printf("\n");
    const double mean = hc_ppl_mean(&t->nll), ppl = exp(mean);
    printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, hc_ppl_stderr(&t->nll) * ppl);
    if (!o->kl_base || base->writing)
        return;
    const double base_ppl = exp(hc_ppl_mean(&t->base_nll));
    printf("KL divergence from %s: mean %.6f +/- %.6f nats per token\n", o->kl_base,
           hc_ppl_mean(&t->kl), hc_ppl_stderr(&t->kl));
    printf("top-1 agreement with it: %.2f%% (%lld of %lld tokens)\n",
           100.0 * (double)t->same_top / (double)t->kl.n, (long long)t->same_top,
           (long long)t->kl.n);
    printf("PPL ratio: %.4f (this run %.4f / base %.4f)\n", ppl / base_ppl, ppl, base_ppl);
}

/* Chunks of the tokens, scored in order (see the top of this file). */
static int run_chunks(hc_model *m, hc_context *ctx, const ppl_opts *o, const int32_t *ids,
                      int n_ids)
{
    hc_model_desc d;
    hc_model_describe(m, &d);
    const int n_ctx = o->n_ctx, n_vocab = d.n_vocab;
    int n_chunk = n_ids / n_ctx;
    if (o->n_chunks > 0 && o->n_chunks < n_chunk)
        n_chunk = o->n_chunks;
    const int rows = n_ctx - 1 - n_ctx / 2;
    /* A pass's rows at a time: a chunk's would be n_ctx x n_vocab floats
     * (2 GiB for 4096 tokens of a 128k vocabulary). */
    const int n_batch = o->n_batch < n_ctx ? o->n_batch : n_ctx;
    float *logits = malloc((size_t)n_batch * n_vocab * sizeof *logits);
    float *base_row = malloc((size_t)n_vocab * sizeof *base_row);
    int32_t *toks = malloc((size_t)n_ctx * sizeof *toks);
    hc_ppl_base base = {0};
    ppl_totals t = {0};
    int rc = -1;
    if (!logits || !base_row || !toks) {
        fprintf(stderr, "hotcold perplexity: out of memory for %d x %d logits\n", n_batch,
                n_vocab);
        goto out;
    }
    if (o->kl_base) {
        const uint64_t hash = hc_ppl_hash_tokens(ids, (int64_t)n_chunk * n_ctx);
        const int exists = access(o->kl_base, F_OK) == 0;
        if (exists ? hc_ppl_base_open(&base, o->kl_base, (uint32_t)n_vocab, (uint32_t)n_ctx,
                                      (uint32_t)n_chunk, hash, rows)
                   : hc_ppl_base_create(&base, o->kl_base, (uint32_t)n_vocab, (uint32_t)n_ctx,
                                        (uint32_t)n_chunk, hash))
            goto out;
        fprintf(stderr, "perplexity: %s %s (%.1f MiB of logits)\n",
                exists ? "comparing with the base logits in" : "saving this run's logits to",
                o->kl_base, (double)n_chunk * rows * n_vocab * sizeof(float) / 1048576.0);
    }
    fprintf(stderr, "perplexity: %d tokens, %d chunk%s of %d (the last %d positions of each "
                    "scored)\n",
            n_ids, n_chunk, n_chunk == 1 ? "" : "s", n_ctx, rows);
    hc_tool_progress prog;
    hc_tool_progress_init(&prog, "perplexity", 0);
    const int bos = hc_model_token_bos(m);
    for (int i = 0; i < n_chunk; i++) {
        memcpy(toks, ids + (size_t)i * n_ctx, (size_t)n_ctx * sizeof *toks);
        if (bos >= 0)
            toks[0] = bos;
        hc_context_reset(ctx);
        for (int j0 = 0; j0 < n_ctx; j0 += n_batch) {
            const int n = n_ctx - j0 < n_batch ? n_ctx - j0 : n_batch;
            if (hc_context_eval_all(ctx, toks + j0, n, logits)) {
                fprintf(stderr, "\nhotcold perplexity: chunk %d: %s\n", i + 1, hc_last_error());
                goto out;
            }
            if (score_rows(logits, toks, j0, n, n_ctx, n_vocab, &base, base_row, &t))
                goto out;
        }
        printf("[%d]%.4f,", i + 1, exp(hc_ppl_mean(&t.nll)));
        fflush(stdout);
        hc_tool_on_token_progress(&prog, (int64_t)(i + 1) * n_ctx, (int64_t)n_chunk * n_ctx);
    }
    print_results(o, &base, &t);
    rc = 0;
out:
    if (hc_ppl_base_close(&base))
        rc = -1;
    free(logits);
    free(base_row);
    free(toks);
    return rc;
}

int hc_cmd_perplexity(int argc, char **argv)
{
    ppl_opts o = {.device = "cpu", .n_batch = 64, .sparse = HC_SPARSE_AUTO,
                  .sparse_threshold = NAN, .vram_budget = -1.0};
    char model_path[4096], *text = NULL;
    int32_t *ids = NULL;
    hc_engine *e = NULL;
    hc_model *m = NULL;
    hc_context *ctx = NULL;
    int rc = 1;

    int pr = parse_args(argc, argv, &o);
    if (pr) {
        rc = pr > 0 ? 0 : 2;
        goto out;
    }
    if (o.verbose)
        hc_log_set_level(HC_LOG_DEBUG);
    if (!(text = hc_tool_read_text(o.text_path, HC_TOOL_MAX_CORPUS_BYTES)))
        goto out;
    if (!o.model) {
        if (hc_tool_default_model(model_path, sizeof model_path)) {
            fprintf(stderr, "hotcold perplexity: no -m given and %s\n", hc_last_error());
            goto out;
        }
        o.model = model_path;
    }
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = o.n_threads;
    if (!(e = hc_engine_open(&ep)))
        goto fail;
    hc_model_params mp = hc_model_default_params();
    mp.device = o.device;
    mp.sparse = o.sparse;
    mp.sparse_threshold = o.sparse_threshold;
    mp.vram_budget = o.vram_budget;
    mp.split = o.split;
    mp.weights = o.weights;
    hc_tool_progress load_progress;
    hc_tool_progress_init(&load_progress, "load", 0);
    mp.progress = hc_tool_on_load_progress;
    mp.progress_user = &load_progress;
    if (!(m = hc_model_load(e, o.model, &mp)))
        goto fail;
    hc_model_desc d;
    hc_model_describe(m, &d);
    if (o.n_ctx == 0)
        o.n_ctx = d.n_ctx_train < 512 ? d.n_ctx_train : 512;
    if (o.n_ctx > d.n_ctx_train) {
        fprintf(stderr, "hotcold perplexity: -c %d is past the model's context of %d tokens\n",
                o.n_ctx, d.n_ctx_train);
        goto out;
    }
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = o.n_ctx;
    cp.n_batch = o.n_batch;
    cp.logits_all = 1;
    if (!(ctx = hc_context_new(m, &cp)))
        goto fail;

    fprintf(stderr, "perplexity: tokenizing %zu bytes of %s\n", strlen(text), o.text_path);
    const int n_ids = hc_model_tokenize(m, text, strlen(text), 1, NULL, 0);
    if (n_ids < 0)
        goto fail;
    if (n_ids < o.n_ctx) {
        fprintf(stderr, "hotcold perplexity: %s is %d tokens, less than one chunk of -c %d "
                        "(a longer text or a smaller -c)\n",
                o.text_path, n_ids, o.n_ctx);
        goto out;
    }
    if (!(ids = malloc((size_t)n_ids * sizeof *ids))) {
        fprintf(stderr, "hotcold perplexity: out of memory for %d tokens\n", n_ids);
        goto out;
    }
    hc_model_tokenize(m, text, strlen(text), 1, ids, n_ids);
    fprintf(stderr, "perplexity: FFN %s on %s\n", hc_tool_sparse_mode_name(d.sparse), o.device);
    rc = run_chunks(m, ctx, &o, ids, n_ids) ? 1 : 0;
    goto out;
fail:
    fprintf(stderr, "hotcold perplexity: %s\n", hc_last_error());
out:
    hc_context_free(ctx);
    hc_model_free(m);
    hc_engine_close(e);
    free(ids);
    free(text);
    return rc;
}

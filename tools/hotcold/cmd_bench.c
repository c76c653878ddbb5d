/*
 * `hotcold bench`: prompt and decode speed of a model, each figure set
 * against the measured memory-bandwidth floor.  Decode is memory-bound: a
 * token must read every weight it uses once, so its best possible speed is
 * bandwidth / bytes-per-token.  Dense reads every weight; sparse reads the
 * attention, the predictor and only the FFN rows it computes (measured).
 */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ops.h"
#include "commands.h"
#include "hotcold/hotcold.h"
#include "tool_util.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold bench [options]\n"
            "\n"
            "Measure host memory bandwidth, then a model's prompt and decode speed, and\n"
            "report decode as achieved GB/s against that bandwidth floor.\n"
            "\n"
            "  -m, --model FILE      model (default: the one in models/)\n"
            "  -t, --threads N       CPU threads (default: all cores)\n"
            "  -p, --n-prompt N      prompt tokens (default 64; 0 = skip)\n"
            "  -n, --n-gen N         decoded tokens (default 64)\n"
            "  -r, --repetitions N   rounds; each runs every mode once, in turn, so the\n"
            "                        modes see the same machine; the best is reported\n"
            "                        (default 3).  Bandwidth is measured before and after\n"
            "                        every round and its best is the floor.\n"
            "      --sparse LIST     FFN modes to measure, comma-separated: off, oracle,\n"
            "                        predictor (default: off,predictor for files with\n"
            "                        predictors, else off)\n"
            "      --device SPEC     cpu (default) or a GPU, as for 'hotcold run'\n"
            "      --vram-budget GiB what the GPU may hold (default: its free memory - 256 MiB)\n"
            "      --split MODE      neurons (hot neurons on the GPU; default for PowerInfer\n"
            "                        files) or layers (whole layers from layer 0, as llama.cpp's\n"
            "                        -ngl; default for plain GGUF), as for\n"
            "                        'hotcold run'; the report names it\n"
            "      --mmap, --no-mmap map the model file, or read it into memory backed by\n"
            "                        2 MiB pages (default: as 'hotcold run' decides; the\n"
            "                        report says which; weights moving into 2 MiB pages\n"
            "                        are measured once they have moved)\n"
            "      --ops             time single weight ops instead (--ops --help)\n"
            "  -h, --help            this text\n");
}

#define MAX_MODES 4

typedef struct bench_opts {
    const char *model, *device;
    int modes[MAX_MODES], n_modes; /* --sparse; n_modes 0: the default */
    int n_threads, n_prompt, n_gen, reps;
    double vram_budget; /* bytes; < 0: the device's default */
    int split;          /* hc_split_mode */
    int weights;        /* hc_weights_mode */
} bench_opts;

typedef struct bench_result {
    double prompt_s, decode_s; /* best of the repetitions */
    double token_bytes;        /* bytes a decoded token read (measured sparsity) */
    double mean_frac;          /* mean fraction of FFN neurons computed */
    double replayed;           /* share of decode passes replayed from a captured graph */
    double waits;              /* host waits for the GPU per decode pass */
    int32_t *ids;              /* the n_gen greedy ids decoded (from BOS) */
    hc_context_run_stats rs;   /* the last repetition's decode (busy times, rows) */
} bench_result;

/* One repetition: prompt then greedy decode; fills times and bytes/token. */
static int run_once(hc_model *m, const bench_opts *o, bench_result *r)
{
    hc_model_desc d;
    hc_model_describe(m, &d);
    hc_context_params cp = hc_context_default_params();
    cp.n_ctx = o->n_prompt + o->n_gen + 1;
    hc_context *c = hc_context_new(m, &cp);
    float *logits = malloc((size_t)d.n_vocab * sizeof *logits);
    int32_t *prompt = malloc((size_t)(o->n_prompt + 1) * sizeof *prompt);
    int rc = -1;
    if (!c || !logits || !prompt)
        goto out;
    /* Any ids serve for speed; vary them so nothing is degenerate. */
    prompt[0] = hc_model_token_bos(m);
    for (int i = 1; i <= o->n_prompt; i++)
        prompt[i] = (int32_t)((i * 7919) % d.n_vocab);
    double t0 = hc_tool_time_s();
    if (hc_context_eval(c, prompt, o->n_prompt + 1, logits))
        goto out;
    double prompt_s = hc_tool_time_s() - t0;
    hc_context_reset(c); /* statistics of the decode only; the KV cache is rebuilt below */
    if (hc_context_eval(c, prompt, 1, logits))
        goto out;
    t0 = hc_tool_time_s();
    for (int i = 0; i < o->n_gen; i++) {
        int32_t best = 0;
        for (int v = 1; v < d.n_vocab; v++)
            if (logits[v] > logits[best])
                best = v;
        r->ids[i] = best;
        if (hc_context_eval(c, &best, 1, logits))
            goto out;
    }
    double decode_s = hc_tool_time_s() - t0;
    r->prompt_s = fmin(r->prompt_s, prompt_s);
    r->decode_s = fmin(r->decode_s, decode_s);
    r->token_bytes = hc_tool_token_bytes(m, c);
    double sum = 0;
    for (int il = 0; il < d.n_layer; il++) {
        hc_layer_sparse_stats ls;
        hc_context_sparse_stats(c, il, &ls);
        sum += ls.computed_frac;
    }
    r->mean_frac = d.sparse == HC_SPARSE_OFF ? 1.0 : sum / d.n_layer;
    hc_context_run_stats rs;
    hc_context_run_stats_get(c, &rs);
    r->replayed = rs.passes > 0 ? (double)rs.graph_passes / (double)rs.passes : 0.0;
    r->waits = rs.passes > 0 ? (double)rs.gpu_syncs / (double)rs.passes : 0.0;
    r->rs = rs;
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
    free(prompt);
    free(logits);
    hc_context_free(c);
    return rc;
}

/* Load the model once per FFN mode. */
static hc_model *load_mode(hc_engine *e, const bench_opts *o, int mode)
{
    hc_model_params mp = hc_model_default_params();
    mp.device = o->device;
    mp.sparse = mode;
    mp.vram_budget = o->vram_budget;
    mp.split = o->split;
    mp.n_ctx = o->n_prompt + o->n_gen + 1;
    mp.weights = o->weights;
    hc_tool_progress load_progress;
    hc_tool_progress_init(&load_progress, "load", 0);
    mp.progress = hc_tool_on_load_progress;
    mp.progress_user = &load_progress;
    hc_model *m = hc_model_load(e, o->model, &mp);
    if (!m)
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
    return m;
}

/* The split of FFN mode `mode`'s model and what it put on the GPU, so runs
 * with other splits or budgets can be told apart and compared.  A model
 * without a GPU prints nothing. */
static void print_placement(const hc_model *m, int mode)
{
    hc_plan_info p;
    if (hc_model_plan_info(m, &p) != 0)
        return;
    int n_gpu = 0; /* layers wholly on the GPU: attention and every neuron */
    int64_t hot = 0;
    for (int l = 0; l < p.n_layer; l++) {
        hc_plan_layer_info li;
        hc_model_plan_layer(m, l, &li);
        hot += li.n_hot;
        n_gpu += li.n_hot == p.n_ff && li.attn;
    }
    printf("split      %s (ffn %s): %.2f of a %.2f MiB budget on the GPU (%d of %d layers whole, "
           "%.1f%% of FFN neurons), output head on the %s\n",
           hc_tool_split_name(hc_model_split(m)), hc_tool_sparse_mode_name(mode),
           (double)p.gpu_bytes / (1 << 20), (double)p.budget / (1 << 20), n_gpu, p.n_layer,
           100.0 * (double)hot / ((double)p.n_ff * p.n_layer), p.output_on_gpu ? "GPU" : "CPU");
}

/* Is everything a decoded token reads on the GPU (every layer whole, the
 * output head)?  Then its floor is the GPU's bandwidth, else the host's. */
static int wholly_on_gpu(const hc_model *m)
{
    hc_plan_info p;
    if (hc_model_plan_info(m, &p) != 0 || !p.output_on_gpu)
        return 0;
    for (int l = 0; l < p.n_layer; l++) {
        hc_plan_layer_info li;
        hc_model_plan_layer(m, l, &li);
        if (li.n_hot != p.n_ff || !li.attn)
            return 0;
    }
    return 1;
}

/* "off,predictor" -> modes[]; returns the count (>= 1) or -1 after saying
 * what is wrong.  Every entry must name a mode: an empty list or an empty
 * entry ("", ",", "off,,predictor") is a mistake, not "no modes". */
static int parse_modes(const char *list, int *modes, int max)
{
    int n = 0;
    for (const char *p = list;;) {
        const char *end = strchrnul(p, ',');
        int len = (int)(end - p);
        char tok[16];
        if (len == 0) {
            fprintf(stderr, "hotcold bench: --sparse '%s' has an empty entry (a list of off, "
                            "oracle, predictor)\n", list);
            return -1;
        }
        if (n == max) {
            fprintf(stderr, "hotcold bench: --sparse '%s' lists more than %d modes\n", list, max);
            return -1;
        }
        snprintf(tok, sizeof tok, "%.*s", len, p);
        if (len >= (int)sizeof tok || !hc_tool_parse_sparse_mode(tok, &modes[n])) {
            fprintf(stderr, "hotcold bench: bad --sparse entry '%.*s' (off, oracle, predictor)\n",
                    len, p);
            return -1;
        }
        n++;
        if (!*end)
            return n;
        p = end + 1;
    }
}

static int parse_opts(int argc, char **argv, bench_opts *o)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},   {"threads", required_argument, 0, 't'},
        {"n-prompt", required_argument, 0, 'p'}, {"n-gen", required_argument, 0, 'n'},
        {"repetitions", required_argument, 0, 'r'}, {"device", required_argument, 0, 'D'},
        {"sparse", required_argument, 0, 'S'},  {"help", no_argument, 0, 'h'},
        {"vram-budget", required_argument, 0, 'B'}, {"split", required_argument, 0, 'L'},
        {"mmap", no_argument, 0, 'M'},           {"no-mmap", no_argument, 0, 'R'},
        {0, 0, 0, 0},
    };
    static const char shortopts[] = "m:t:p:n:r:h";
    int c, ok;
    if (hc_tool_reject_foreign_flags("bench", argc, argv, shortopts, longopts))
        return -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        ok = 1;
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'D': o->device = optarg; break;
        case 'S':
            if ((o->n_modes = parse_modes(optarg, o->modes, MAX_MODES)) < 0)
                return -1;
            break;
        case 'B': ok = hc_tool_parse_gib(optarg, &o->vram_budget); break;
        case 'L':
            if (!hc_tool_parse_split(optarg, &o->split)) {
                fprintf(stderr, "hotcold bench: bad value '%s' for --split (neurons or layers)\n",
                        optarg);
                return -1;
            }
            break;
        case 'M': o->weights = HC_WEIGHTS_MMAP; break;
        case 'R': o->weights = HC_WEIGHTS_READ; break;
        case 't': ok = hc_tool_parse_int(optarg, 1, 1024, &o->n_threads); break;
        case 'p': ok = hc_tool_parse_int(optarg, 0, 1 << 20, &o->n_prompt); break;
        case 'n': ok = hc_tool_parse_int(optarg, 1, 1 << 20, &o->n_gen); break;
        case 'r': ok = hc_tool_parse_int(optarg, 1, 1000, &o->reps); break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return -1;
        }
        if (!ok) {
            fprintf(stderr, "hotcold bench: bad value '%s' for %s (see --help)\n", optarg,
                    hc_tool_option_name(longopts, c));
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold bench: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

int hc_cmd_bench(int argc, char **argv)
{
    bench_opts o = {.device = "cpu", .n_prompt = 64, .n_gen = 64, .reps = 3,
                    .vram_budget = -1.0, .weights = HC_WEIGHTS_AUTO};
    hc_model *models[MAX_MODES] = {NULL};
    bench_result res[MAX_MODES] = {{0}};
    char model_path[4096];
    hc_engine *e = NULL;
    int rc = 1, modes[MAX_MODES], n_modes;
    if (hc_bench_ops_wanted(argc, argv))
        return hc_bench_ops(argc, argv);
    int pr = parse_opts(argc, argv, &o);
    if (pr)
        return pr > 0 ? 0 : 2;
    if ((o.vram_budget >= 0 || o.split != HC_SPLIT_AUTO) && strncmp(o.device, "cpu", 3) == 0)
        fprintf(stderr, "hotcold bench: note: --vram-budget and --split only matter with "
                        "--device <gpu>\n");
    if (!o.model) {
        if (hc_tool_default_model(model_path, sizeof model_path))
            return 1;
        o.model = model_path;
    }
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = o.n_threads;
    e = hc_engine_open(&ep);
    if (!e) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        return 1;
    }
    /* find_device's error says why a device is missing (no plugin, filtered, no driver). */
    hc_device_report dr = {0}, cr = {0};
    int dev = hc_engine_find_device(e, o.device);
    if (dev < 0 || hc_engine_device_report(e, dev, &dr)) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        goto out;
    }
    int cpu = hc_engine_find_device(e, "cpu");
    if (cpu < 0 || hc_engine_device_report(e, cpu, &cr)) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        goto out;
    }
    dr.info.n_threads = cr.info.n_threads;
    int threads = dr.info.n_threads > 0 ? dr.info.n_threads : 1;

    /* Which modes: the user's list, or dense plus the file's own mode. */
    hc_model_desc d;
    if (o.n_modes > 0) {
        n_modes = o.n_modes;
        memcpy(modes, o.modes, sizeof modes);
    } else {
        /* Metadata only: map, whatever the runs will do. */
        hc_model_params pp = hc_model_default_params();
        pp.weights = HC_WEIGHTS_MMAP;
        hc_model *probe = hc_model_load(e, o.model, &pp);
        if (!probe) {
            fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
            goto out;
        }
        hc_model_describe(probe, &d);
        hc_model_free(probe);
        n_modes = 0;
        modes[n_modes++] = HC_SPARSE_OFF;
        if (d.sparse != HC_SPARSE_OFF)
            modes[n_modes++] = d.sparse;
    }

    for (int i = 0; i < n_modes; i++) {
        if (!(models[i] = load_mode(e, &o, modes[i])))
            goto out;
        /* Every mode loads its weights the way the first did: the page
         * size moves decode speed by 10-20%. */
        o.weights = hc_model_weights_mode(models[i]);
        /* Measure the weights where they stay, not while they move. */
        hc_model_weights_wait(models[i]);
        res[i].prompt_s = res[i].decode_s = INFINITY;
        if (!(res[i].ids = calloc((size_t)o.n_gen + 1, sizeof *res[i].ids))) {
            fprintf(stderr, "hotcold bench: out of memory\n");
            goto out;
        }
    }
    hc_model_describe(models[0], &d);
    /* Rounds: bandwidth, then every mode once.  The machine may be shared
     * and its bandwidth wander; interleaving gives the modes the same
     * conditions, and the best bandwidth seen is the (strictest) floor. */
    double bw = 0, gbw = 0;
    /* The GPU's floor where there is a GPU and it can be measured (a device
     * too full for two 16 MiB buffers, or without copy: the host's, said). */
    int has_gpu = hc_model_split(models[0]) >= 0;
    for (int rep = 0; rep <= o.reps; rep++) {
        if (rep < o.reps)
            fprintf(stderr, "round %d/%d: host memory bandwidth (%d threads)", rep + 1, o.reps,
                    threads);
        else
            fprintf(stderr, "after the last round: host memory bandwidth");
        double b = hc_host_read_bandwidth(threads, 0, 3);
        if (b <= 0) {
            fprintf(stderr, "\nhotcold bench: %s\n", hc_last_error());
            goto out;
        }
        bw = b > bw ? b : bw;
        fprintf(stderr, " %.1f GB/s", b / 1e9);
        if (has_gpu) {
            double g = 0;
            if (hc_model_gpu_bandwidth(models[0], 0, 3, &g)) {
                fprintf(stderr, "\nhotcold bench: warning: the GPU's bandwidth is not measured "
                                "(%s); every floor is the host's\n",
                        hc_last_error());
                has_gpu = 0;
            } else {
                gbw = g > gbw ? g : gbw;
                fprintf(stderr, ", GPU %.1f GB/s", g / 1e9);
            }
        }
        if (rep == o.reps) {
            fprintf(stderr, "\n");
            break; /* the last measurement closes the last round */
        }
        for (int i = 0; i < n_modes; i++) {
            fprintf(stderr, ", %s", hc_tool_sparse_mode_name(modes[i]));
            if (run_once(models[i], &o, &res[i]))
                goto out;
        }
        fprintf(stderr, "\n");
    }

    printf("device     %s (%s), %d threads\n", dr.info.name, o.device, threads);
    printf("model      %s: %s%s, %s, %d layers, n_embd %d, n_ff %d, %.1f MiB\n", o.model, d.arch,
           d.is_pwri ? " (PowerInfer)" : "", hc_type_name((hc_type)d.weight_type), d.n_layer,
           d.n_embd, d.n_ff, (double)d.weight_bytes / (1 << 20));
    printf("weights    %s\n",
           o.weights == HC_WEIGHTS_READ
               ? "read into memory backed by 2 MiB pages (--mmap: map the file)"
           : o.weights == HC_WEIGHTS_MOVE
               ? "mapped, then moved into 2 MiB pages in the background (--no-mmap: read "
                 "there first; --mmap: map only)"
               : "mapped from the file (--no-mmap: read into 2 MiB pages)");
    if (hc_model_split(models[0]) < 0)
        printf("split      none: everything on the CPU\n");
    for (int i = 0; i < n_modes; i++)
        print_placement(models[i], modes[i]);
    printf("bandwidth  %.1f GB/s host read (best of %d measurements with %d threads over 512 MiB)\n",
           bw / 1e9, o.reps + 1, threads);
    if (has_gpu) {
        printf("bandwidth  %.1f GB/s GPU copy, read + written (best of %d x 3 device copies): the "
               "floor of a mode wholly on the GPU, the host's of the others\n",
               gbw / 1e9, o.reps + 1);
        /* What a hybrid layer's crossings ride on. */
        hc_gpu_transfer tr;
        if (hc_model_gpu_transfer(models[0], 0, 3, &tr) == 0)
            printf("transfer   host -> GPU %.2f GB/s, GPU -> host %.2f GB/s (%s host memory, "
                   "best of 3 x 64 MiB), %.2f us for a 4-byte download waited for\n",
                   tr.upload / 1e9, tr.download / 1e9, tr.pinned ? "page-locked" : "pageable",
                   tr.latency_s * 1e6);
        else
            fprintf(stderr, "hotcold bench: warning: host <-> GPU transfers not measured: %s\n",
                    hc_last_error());
    }
    printf("%-10s %8s %9s %10s %9s %8s %10s %8s\n", "ffn", "ffn %", "prompt/s", "decode/s",
           "MiB/tok", "GB/s", "floor/s", "% floor");
    for (int i = 0; i < n_modes; i++) {
        const bench_result *r = &res[i];
        double tps = o.n_gen / r->decode_s;
        const double floor_bw = has_gpu && wholly_on_gpu(models[i]) ? gbw : bw;
        printf("%-10s %7.1f%% %9.1f %10.2f %9.2f %8.2f %10.2f %7.0f%%\n",
               hc_tool_sparse_mode_name(modes[i]), 100.0 * r->mean_frac,
               o.n_prompt > 0 ? (o.n_prompt + 1) / r->prompt_s : 0.0, tps,
               r->token_bytes / (1 << 20), tps * r->token_bytes / 1e9, floor_bw / r->token_bytes,
               100.0 * tps * r->token_bytes / floor_bw);
    }
    /* How the GPU's passes ran: replayed from a capture (ABI 1.3; on CUDA
     * HOTCOLD_CUDA_GRAPHS=0 turns that off, for the comparison), and how
     * often the host waited for it. */
    if (hc_model_split(models[0]) >= 0)
        for (int i = 0; i < n_modes; i++)
            printf("passes     %s: %.0f%% of decode passes replayed from a captured graph, "
                   "%.1f host waits for the GPU per pass\n",
                   hc_tool_sparse_mode_name(modes[i]), 100.0 * res[i].replayed, res[i].waits);
    /* A hybrid mode's overlap: how long each device worked per decoded
     * token against the wall (the last round's decode). */
    for (int i = 0; i < n_modes; i++)
        if (res[i].rs.gpu_rows > 0 && res[i].rs.cpu_rows > 0) {
            char lead[64];
            snprintf(lead, sizeof lead, "overlap    %s: ", hc_tool_sparse_mode_name(modes[i]));
            hc_tool_print_overlap(stdout, lead, &res[i].rs);
        }
    if (n_modes > 1 && modes[0] == HC_SPARSE_OFF)
        for (int i = 1; i < n_modes; i++) {
            /* A ratio under 1 is a slowdown: say so rather than "0.93x faster". */
            double speedup = res[0].decode_s / res[i].decode_s;
            /* What the speed costs: the greedy ids both decoded from BOS,
             * equal up to the first difference (after it the texts part). */
            int same = 0;
            while (same < o.n_gen && res[i].ids[same] == res[0].ids[same])
                same++;
            printf("%s vs dense: %.2fx %s (floor ratio %.2fx); greedy text: ",
                   hc_tool_sparse_mode_name(modes[i]), speedup >= 1.0 ? speedup : 1.0 / speedup,
                   speedup >= 1.0 ? "faster" : "slower", res[0].token_bytes / res[i].token_bytes);
            if (same == o.n_gen)
                printf("the same %d tokens as dense\n", o.n_gen);
            else
                printf("the first %d of %d tokens as dense (hotcold perplexity --kl-base "
                       "measures the divergence)\n",
                       same, o.n_gen);
        }
    if (d.weight_bytes < (64u << 20))
        printf("note: %.1f MiB of weights fit in this machine's cache, so the DRAM floor does "
               "not bind (percentages above 100%% are possible)\n",
               (double)d.weight_bytes / (1 << 20));
    rc = 0;
out:
    for (int i = 0; i < MAX_MODES; i++) {
        hc_model_free(models[i]);
        free(res[i].ids);
    }
    hc_engine_close(e);
    return rc;
}

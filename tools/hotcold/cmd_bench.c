/*
 * `hotcold bench`: prompt and decode speed of a model, each figure set
 * against the measured memory-bandwidth floor.  Decode is memory-bound: a
 * token must read every weight once, so its best possible speed is
 * bandwidth / bytes-per-token.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            "  -r, --repetitions N   runs; the best is reported (default 3)\n"
            "      --device SPEC     device (default cpu)\n"
            "  -h, --help            this text\n");
}

typedef struct bench_opts {
    const char *model, *device;
    int n_threads, n_prompt, n_gen, reps;
} bench_opts;

/* One repetition: returns 0 and fills prompt/decode seconds. */
static int run_once(hc_model *m, const bench_opts *o, double *prompt_s, double *decode_s)
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
    double t0 = hc_tool_now();
    if (hc_context_eval(c, prompt, o->n_prompt + 1, logits))
        goto out;
    *prompt_s = hc_tool_now() - t0;
    t0 = hc_tool_now();
    for (int i = 0; i < o->n_gen; i++) {
        int32_t best = 0;
        for (int v = 1; v < d.n_vocab; v++)
            if (logits[v] > logits[best])
                best = v;
        if (hc_context_eval(c, &best, 1, logits))
            goto out;
    }
    *decode_s = hc_tool_now() - t0;
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
    free(prompt);
    free(logits);
    hc_context_free(c);
    return rc;
}

int hc_cmd_bench(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},   {"threads", required_argument, 0, 't'},
        {"n-prompt", required_argument, 0, 'p'}, {"n-gen", required_argument, 0, 'n'},
        {"repetitions", required_argument, 0, 'r'}, {"device", required_argument, 0, 'D'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
    };
    bench_opts o = {NULL, "cpu", 0, 64, 64, 3};
    char model_path[4096];
    hc_engine *e = NULL;
    hc_model *m = NULL;
    int rc = 1, c, ok;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:t:p:n:r:h", longopts, NULL)) != -1) {
        ok = 1;
        switch (c) {
        case 'm': o.model = optarg; break;
        case 'D': o.device = optarg; break;
        case 't': ok = hc_tool_parse_int(optarg, 1, 1024, &o.n_threads); break;
        case 'p': ok = hc_tool_parse_int(optarg, 0, 1 << 20, &o.n_prompt); break;
        case 'n': ok = hc_tool_parse_int(optarg, 1, 1 << 20, &o.n_gen); break;
        case 'r': ok = hc_tool_parse_int(optarg, 1, 1000, &o.reps); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (!ok) {
            fprintf(stderr, "hotcold bench: bad value '%s' for %s (see --help)\n", optarg,
                    hc_tool_option_name(longopts, c));
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hotcold bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!o.model) {
        if (hc_tool_default_model(model_path, sizeof model_path))
            return 1;
        o.model = model_path;
    }
    hc_engine_params ep = hc_engine_default_params();
    ep.n_threads = o.n_threads;
    e = hc_engine_open(&ep);
    hc_model_params mp = hc_model_default_params();
    mp.device = o.device;
    m = e ? hc_model_load(e, o.model, &mp) : NULL;
    if (!m) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        goto out;
    }
    hc_device_report dr = {0};
    int dev = hc_engine_find_device(e, o.device);
    hc_engine_device_report(e, dev, &dr);
    int threads = dr.info.n_threads > 0 ? dr.info.n_threads : 1;

    fprintf(stderr, "measuring host memory bandwidth with %d thread%s...\n", threads,
            threads == 1 ? "" : "s");
    double bw = hc_host_read_bandwidth(threads, 0, 3);
    if (bw <= 0) {
        fprintf(stderr, "hotcold bench: %s\n", hc_last_error());
        goto out;
    }
    hc_model_desc d;
    hc_model_describe(m, &d);
    double best_p = 1e30, best_d = 1e30;
    for (int r = 0; r < o.reps; r++) {
        double ps = 0, ds = 0;
        fprintf(stderr, "run %d/%d...\n", r + 1, o.reps);
        if (run_once(m, &o, &ps, &ds))
            goto out;
        best_p = ps < best_p ? ps : best_p;
        best_d = ds < best_d ? ds : best_d;
    }
    double bytes = (double)d.decode_bytes;
    double tps = o.n_gen / best_d;
    printf("device        %s (%s), %d threads\n", dr.info.name, o.device, threads);
    printf("model         %s: %s, %s, %d layers, n_embd %d, n_ff %d\n", o.model, d.arch,
           hc_type_name((hc_type)d.weight_type), d.n_layer, d.n_embd, d.n_ff);
    printf("bandwidth     %.1f GB/s host read (measured, %d threads)\n", bw / 1e9, threads);
    if (o.n_prompt > 0)
        printf("prompt        %d tokens: %.1f tok/s\n", o.n_prompt + 1,
               (o.n_prompt + 1) / best_p);
    printf("decode        %d tokens: %.2f tok/s, %.2f MiB/token -> %.2f GB/s achieved\n",
           o.n_gen, tps, bytes / (1 << 20), tps * bytes / 1e9);
    printf("floor         %.2f tok/s at %.1f GB/s: decode runs at %.0f%% of the floor%s\n",
           bw / bytes, bw / 1e9, 100.0 * tps * bytes / bw,
           bytes < 32.0 * (1 << 20) ? " (weights fit in cache: the DRAM floor does not bind)"
                                    : "");
    rc = 0;
out:
    hc_model_free(m);
    hc_engine_close(e);
    return rc;
}

#include "tool_util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hotcold/toolchain.h"

int hc_tool_parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

int hc_tool_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*s == '-')
        return 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end)
        return 0;
    *out = v;
    return 1;
}

int hc_tool_parse_float(const char *s, float lo, float hi, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return 0;
    *out = v;
    return 1;
}

const char *hc_tool_option_name(const struct option *longopts, int val)
{
    static char buf[64];
    for (const struct option *o = longopts; o->name; o++)
        if (o->val == val) {
            snprintf(buf, sizeof buf, "--%s", o->name);
            return buf;
        }
    snprintf(buf, sizeof buf, "-%c", val);
    return buf;
}

char *hc_tool_read_text(const char *path, size_t max_bytes)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (!f) {
        fprintf(stderr, "hotcold: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (len + 4096 + 1 > cap) {
            /* Doubling, but never past the limit plus the one chunk that
             * proves the input is over it. */
            size_t want = cap ? cap * 2 : 8192;
            cap = want < max_bytes + 4096 + 1 ? want : max_bytes + 4096 + 1;
            char *nb = realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "hotcold: out of memory reading '%s'\n", path);
                goto fail;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        /* A NUL byte means binary data (or /dev/zero): not text to tokenize. */
        const char *nul = memchr(buf + len, 0, got);
        if (nul) {
            fprintf(stderr, "hotcold: '%s' is not text (a NUL byte at offset %zu)\n", path,
                    len + (size_t)(nul - (buf + len)));
            goto fail;
        }
        len += got;
        if (len > max_bytes) {
            fprintf(stderr, "hotcold: '%s' is over the %zu MiB this input may have\n", path,
                    max_bytes >> 20);
            goto fail;
        }
        if (got < 4096)
            break;
    }
    if (ferror(f)) {
        fprintf(stderr, "hotcold: error reading '%s'\n", path);
        goto fail;
    }
    buf[len] = 0;
    fclose(f);
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}

int hc_tool_check_output(const char *cmd, const char *path, int force)
{
    if (hc_output_check(path, force) == 0)
        return 0;
    fprintf(stderr, "hotcold %s: %s\n", cmd, hc_last_error());
    return -1;
}

int hc_tool_require_relu_ffn(const char *cmd, const hc_model *m, const char *path)
{
    hc_model_desc d;
    hc_model_describe(m, &d);
    if (d.relu_ffn)
        return 0;
    fprintf(stderr, "hotcold %s: %s: the FFN is SwiGLU, whose neurons are never exactly zero, "
                    "so PowerInfer-style sparsity does not apply (use a ReLU-family model)\n",
            cmd, path);
    return -1;
}

uint64_t hc_tool_random_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid()) %
           4294967296u;
}

static int exe_dir(char *dir, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0)
        return -1;
    dir[n] = 0;
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = 0;
    return 0;
}

int hc_tool_default_model(char *path, size_t size)
{
    char dir[4096], tried[4 * 4096 + 64] = "";
    char candidates[3][4096 + 64];
    int n = 0;
    if (exe_dir(dir, sizeof dir) == 0) {
        /* build/bin/hotcold -> <repo>/models ; <prefix>/bin -> <prefix>/share */
        snprintf(candidates[n++], sizeof candidates[0], "%s/../../models/%s", dir,
                 HC_DEFAULT_MODEL_NAME);
        snprintf(candidates[n++], sizeof candidates[0], "%s/../share/hotcold/models/%s", dir,
                 HC_DEFAULT_MODEL_NAME);
    }
    snprintf(candidates[n++], sizeof candidates[0], "models/%s", HC_DEFAULT_MODEL_NAME);
    for (int i = 0; i < n; i++) {
        if (access(candidates[i], R_OK) == 0) {
            char *real = realpath(candidates[i], NULL);
            snprintf(path, size, "%s", real ? real : candidates[i]);
            free(real);
            return 0;
        }
        size_t len = strlen(tried);
        snprintf(tried + len, sizeof tried - len, "%s%s", i ? ", " : "", candidates[i]);
    }
    fprintf(stderr, "hotcold: the default model %s was not found (looked in: %s)\n",
            HC_DEFAULT_MODEL_NAME, tried);
    return -1;
}

int hc_tool_parse_sparse_mode(const char *s, int *mode)
{
    static const char *const names[] = {"auto", "off", "oracle", "predictor"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) {
            *mode = i;
            return 1;
        }
    return 0;
}

const char *hc_tool_sparse_mode_name(int mode)
{
    static const char *const names[] = {"auto", "off", "oracle", "predictor"};
    return mode >= 0 && mode < 4 ? names[mode] : "?";
}

int hc_tool_parse_split(const char *s, int *mode)
{
    if (!strcmp(s, "neurons"))
        *mode = HC_SPLIT_NEURONS;
    else if (!strcmp(s, "layers"))
        *mode = HC_SPLIT_LAYERS;
    else
        return 0;
    return 1;
}

const char *hc_tool_split_name(int mode)
{
    return mode == HC_SPLIT_LAYERS ? "layers" : mode == HC_SPLIT_NEURONS ? "neurons" : "auto";
}

double hc_tool_token_bytes(const hc_model *m, const hc_context *c)
{
    hc_model_desc d;
    hc_model_describe(m, &d);
    if (d.sparse == HC_SPARSE_OFF)
        return (double)d.decode_bytes;
    /* Sparse: everything but the FFN, plus the predictor (predictor mode),
     * plus the computed fraction of each layer's FFN.  Oracle mode reads the
     * whole gate to decide, so only up and down^T shrink (only up on a plain
     * GGUF, whose down stays dense): the three FFN matrices are equal in
     * size, so that is (1 + 2f)/3, or (2 + f)/3, of the FFN. */
    double bytes = (double)(d.decode_bytes - d.ffn_bytes);
    double per_layer_ffn = (double)d.ffn_bytes / d.n_layer;
    for (int il = 0; il < d.n_layer; il++) {
        hc_layer_sparse_stats ls;
        double f = hc_context_sparse_stats(c, il, &ls) == 0 ? ls.computed_frac : 1.0;
        if (d.sparse == HC_SPARSE_ORACLE)
            f = d.is_pwri ? (1.0 + 2.0 * f) / 3.0 : (2.0 + f) / 3.0;
        bytes += per_layer_ffn * f;
    }
    if (d.sparse == HC_SPARSE_PREDICTOR)
        bytes += (double)d.predictor_bytes;
    return bytes;
}

static void print_sparse_stats(FILE *f, const hc_model *m, const hc_context *c)
{
    hc_model_desc d;
    hc_model_describe(m, &d);
    if (d.sparse == HC_SPARSE_OFF)
        return;
    double sum = 0;
    int checked = 0;
    fprintf(f, "sparse: %s mode", hc_tool_sparse_mode_name(d.sparse));
    if (d.sparse == HC_SPARSE_PREDICTOR)
        fprintf(f, ", threshold %g", (double)d.sparse_threshold);
    fprintf(f, "; neurons computed per layer:");
    for (int il = 0; il < d.n_layer; il++) {
        hc_layer_sparse_stats ls;
        hc_context_sparse_stats(c, il, &ls);
        fprintf(f, " %.1f%%", 100.0 * ls.computed_frac);
        sum += ls.computed_frac;
        checked |= ls.checked;
    }
    fprintf(f, " (mean %.1f%%)\n", 100.0 * sum / d.n_layer);
    if (!checked)
        return;
    double rsum = 0, psum = 0;
    fprintf(f, "sparse-check: predictor recall per layer:");
    for (int il = 0; il < d.n_layer; il++) {
        hc_layer_sparse_stats ls;
        hc_context_sparse_stats(c, il, &ls);
        fprintf(f, " %.3f", ls.recall);
        rsum += ls.recall;
        psum += ls.precision;
    }
    fprintf(f, " (mean %.3f; precision mean %.3f)\n", rsum / d.n_layer, psum / d.n_layer);
}

void hc_tool_print_overlap(FILE *f, const char *lead, const hc_context_run_stats *rs)
{
    const double per = rs->tokens > 0 ? 1e6 * (double)rs->tokens : 1.0;
    const double gpu = (double)rs->gpu_busy_ns / per, cpu = (double)rs->cpu_busy_ns / per,
                 wall = (double)rs->wall_ns / per;
    /* Busy time beyond the wall is time both devices worked at once. */
    const double both = gpu + cpu - wall;
    fprintf(f,
            "%sGPU busy %.2f ms%s, CPU busy %.2f ms, wall %.2f ms per token (%.2f ms "
            "overlapped)\n",
            lead, gpu, rs->gpu_busy_host_clock ? " (host clock: the plugin cannot time it)" : "",
            cpu, wall, both > 0 ? both : 0.0);
}

void hc_tool_print_run_stats(FILE *f, const hc_engine *e, const char *path, const hc_model *m,
                             const hc_context *c, const hc_sampler_params *sp,
                             const hc_run_stats *st)
{
    hc_model_desc d;
    hc_model_describe(m, &d);
    int threads = 0;
    hc_device_report dr;
    /* The cpu device by name: counting every device would initialise every
     * plugin (a Vulkan instance after a CPU-only run). */
    int cpu = hc_engine_find_device(e, "cpu");
    if (cpu >= 0 && hc_engine_device_report(e, cpu, &dr) == 0)
        threads = dr.info.n_threads;
    /* The file, as the user named it: general.name is often a training run's label. */
    fprintf(f, "\n--- %s (%s%s, %d layers, %s weights %.1f MiB, %s) | %d threads | seed %" PRIu64
               " | stop: %s\n",
            path, d.arch, d.is_pwri ? ", PowerInfer" : "", d.n_layer,
            hc_type_name((hc_type)d.weight_type), (double)d.weight_bytes / (1 << 20),
            hc_model_weights_mode(m) == HC_WEIGHTS_READ   ? "read into 2 MiB pages"
            : hc_model_weights_mode(m) == HC_WEIGHTS_MOVE ? "mapped, moved into 2 MiB pages"
                                                          : "mapped",
            threads, sp->seed, st->stop_reason ? st->stop_reason : "error");
    print_sparse_stats(f, m, c);
    hc_context_run_stats rs;
    hc_context_run_stats_get(c, &rs);
    hc_plan_info plan;
    if (hc_model_plan_info(m, &plan) == 0 && rs.tokens > 0) {
        const double rows = (double)(rs.gpu_rows + rs.cpu_rows);
        fprintf(f,
                "devices: FFN rows computed %.1f%% on the GPU, %.1f%% on the CPU; moved %.1f KiB "
                "per token between devices; %" PRIu64 " ops fell back to the CPU; the host "
                "waited for the GPU %.1f times per pass; %.0f%% of passes replayed from a "
                "captured graph\n",
                rows > 0 ? 100.0 * (double)rs.gpu_rows / rows : 0.0,
                rows > 0 ? 100.0 * (double)rs.cpu_rows / rows : 0.0,
                (double)rs.bytes_moved / (double)rs.tokens / 1024.0, rs.fallback_calls,
                rs.passes > 0 ? (double)rs.gpu_syncs / (double)rs.passes : 0.0,
                rs.passes > 0 ? 100.0 * (double)rs.graph_passes / (double)rs.passes : 0.0);
        if (rs.gpu_rows > 0 && rs.cpu_rows > 0)
            hc_tool_print_overlap(f, "overlap: ", &rs);
    }
    fprintf(f, "load:   %8.1f ms\n", st->load_s * 1e3);
    if (st->prompt_tokens > 0 && st->prompt_s > 0)
        fprintf(f, "prompt: %8.1f ms for %d tokens = %.1f tok/s\n", st->prompt_s * 1e3,
                st->prompt_tokens, st->prompt_tokens / st->prompt_s);
    if (st->decode_evals > 0 && st->decode_s > 0) {
        double tps = st->decode_evals / st->decode_s;
        double bytes = hc_tool_token_bytes(m, c);
        fprintf(f,
                "decode: %8.1f ms for %d tokens = %.1f tok/s (weights read per token %.2f MiB: "
                "%.2f GB/s)\n",
                st->decode_s * 1e3, st->decode_evals, tps, bytes / (1 << 20), tps * bytes / 1e9);
    }
}

void hc_tool_output_name(const char *src, const char *suffix, const char *fallback, char *buf,
                         size_t size)
{
    size_t n = strlen(src);
    while (n > 0 && src[n - 1] == '/')
        n--; /* "dir/" names dir */
    const char *base = src;
    for (size_t i = 0; i < n; i++)
        if (src[i] == '/')
            base = src + i + 1;
    n -= (size_t)(base - src);
    if (n == 0) {
        base = fallback;
        n = strlen(base);
    }
    const char *exts[] = {".powerinfer.gguf", ".gguf"};
    for (size_t i = 0; i < 2; i++) {
        size_t el = strlen(exts[i]);
        if (n > el && !strncmp(base + n - el, exts[i], el)) {
            n -= el;
            break;
        }
    }
    snprintf(buf, size, "%.*s%s", (int)n, base, suffix);
}

void hc_tool_progress_init(hc_tool_progress *p, const char *what, int quiet)
{
    *p = (hc_tool_progress){what, quiet, isatty(fileno(stderr)), hc_tool_time_s(), 0};
}

/* Whether a progress line is due now (a live line 4 times a second, a log
 * line every 5 s, and always the last); fills the rate (units/s) and ETA. */
static int progress_due(hc_tool_progress *p, double done, double total, double *rate,
                        double *eta)
{
    double now = hc_tool_time_s();
    if (p->quiet || (done < total && now - p->last < (p->tty ? 0.25 : 5.0)))
        return 0;
    p->last = now;
    double el = now - p->t0;
    *rate = el > 0 ? done / el : 0.0;
    *eta = *rate > 0 ? (total - done) / *rate : 0.0;
    return 1;
}

void hc_tool_on_token_progress(void *user, int64_t done, int64_t total)
{
    hc_tool_progress *p = user;
    double rate, eta;
    if (!progress_due(p, (double)done, (double)total, &rate, &eta))
        return;
    fprintf(stderr, "%s%s: %" PRId64 "/%" PRId64 " tokens (%.0f%%), %.0f tok/s, ETA %.0f s%s",
            p->tty ? "\r\033[K" : "", p->what, done, total,
            total ? 100.0 * (double)done / (double)total : 100.0, rate, eta,
            p->tty && done < total ? "" : "\n");
}

void hc_tool_on_load_progress(void *user, const char *step, uint64_t done, uint64_t total)
{
    hc_tool_progress *p = user;
    double rate, eta;
    if (total < (256u << 20) || !progress_due(p, (double)done, (double)total, &rate, &eta))
        return;
    fprintf(stderr, "%s%s: %s %.2f/%.2f GiB (%.0f%%), %.0f MB/s, ETA %.0f s%s",
            p->tty ? "\r\033[K" : "", p->what, step, (double)done / (1u << 30),
            (double)total / (1u << 30), 100.0 * (double)done / (double)total, rate / 1e6, eta,
            p->tty && done < total ? "" : "\n");
}

int hc_tool_parse_gib(const char *s, double *bytes)
{
    float gib;
    if (!hc_tool_parse_float(s, 0.0f, 1e6f, &gib))
        return 0;
    *bytes = (double)gib * 1024.0 * 1024.0 * 1024.0;
    return 1;
}

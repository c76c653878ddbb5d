/*
 * The `hotcold` command end to end: it is run as a child process, exactly as
 * a user runs it, and its stdout/stderr/exit status are checked.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "test_util.h"

static const char *model(const char *name)
{
    return hc_test_path(HC_MODELS_DIR, name);
}

/* The text the golden greedy ids spell, decoded with the model's own vocab
 * pieces (the tokenizer's piece decoding is tested on its own). */
static char *golden_text(const char *model_name, int n_ids)
{
    char name[256];
    snprintf(name, sizeof name, "golden/%s.json", model_name);
    json_object *root = hc_test_load_json(hc_test_path(HC_TEST_DATA, name)), *bos, *ids;
    ck_assert(root != NULL);
    ck_assert(json_object_object_get_ex(root, "from_bos", &bos));
    ck_assert(json_object_object_get_ex(bos, "greedy_ids", &ids));
    hc_engine *e = hc_engine_open(NULL);
    ck_assert(e != NULL);
    snprintf(name, sizeof name, "%s.gguf", model_name);
    hc_model *m = hc_model_load(e, model(name), NULL);
    ck_assert_msg(m != NULL, "%s", hc_last_error());
    size_t cap = 65536, len = 0;
    char *text = calloc(cap, 1);
    for (int i = 0; i < n_ids; i++) {
        char piece[256];
        int id = json_object_get_int(json_object_array_get_idx(ids, (size_t)i));
        int n = hc_model_token_piece(m, id, piece, (int)sizeof piece);
        ck_assert(n >= 0 && len + (size_t)n < cap);
        const char *p = piece;
        if (i == 0 && n > 0 && piece[0] == ' ') {
            p++;
            n--;
        }
        memcpy(text + len, p, (size_t)n);
        len += (size_t)n;
    }
    hc_model_free(m);
    hc_engine_close(e);
    json_object_put(root);
    return text;
}

START_TEST(default_model_tells_the_story)
{
    cli_result r;
    cli(&r, "run --temp 0 -n 40");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strncmp(r.out, "Once upon a time, there was a little girl named Lily", 52) == 0,
                  "stdout: %s", r.out);
    ck_assert_msg(strstr(r.err, "tok/s") != NULL, "no speed summary: %s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(relu2M_reproduces_golden_text)
{
    char args[4096];
    cli_result r;
    snprintf(args, sizeof args, "run -m '%s' --temp 0 -n 60", model("relu2M.gguf"));
    cli(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    char *want = golden_text("relu2M", 60);
    size_t n = strlen(want);
    ck_assert_msg(strncmp(r.out, want, n) == 0 && r.out[n] == '\n',
                  "stdout:\n%s\nwant:\n%s", r.out, want);
    free(want);
    cli_free(&r);
}
END_TEST

/* Sampling with a seed gives the same text for any thread count. */
START_TEST(seeded_sampling_is_thread_count_independent)
{
    char args[4096];
    cli_result a, b;
    snprintf(args, sizeof args, "run -m '%s' --temp 0.9 --seed 1234 -n 80 -t 1",
             model("relu2M.gguf"));
    cli(&a, args);
    snprintf(args, sizeof args, "run -m '%s' --temp 0.9 --seed 1234 -n 80 -t 2",
             model("relu2M.gguf"));
    cli(&b, args);
    ck_assert_msg(a.status == 0 && b.status == 0, "%s %s", a.err, b.err);
    ck_assert_str_eq(a.out, b.out);
    cli_free(&a);
    cli_free(&b);
}
END_TEST

START_TEST(missing_model_file)
{
    cli_result r;
    cli(&r, "run -m /nonexistent/model.gguf -n 4");
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "/nonexistent/model.gguf") != NULL, "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(context_overflow)
{
    cli_result r;
    cli(&r, "run -c 4 -p 'Once upon a time, there was a little dog' -n 4");
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "context") != NULL, "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(bad_option_value)
{
    cli_result r;
    cli(&r, "run -n lots");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "lots") != NULL, "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(help_lists_the_flags)
{
    static const char *const flags[] = {"-m", "-p", "-n", "-t", "--temp", "--top-k",
                                        "--top-p", "--seed", "-c"};
    cli_result r;
    cli(&r, "run --help");
    ck_assert_int_eq(r.status, 0);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(strstr(r.out, flags[i]) != NULL, "--help lacks %s", flags[i]);
    cli_free(&r);
}
END_TEST

/* --split: both commands list it, a bad value is one line naming the flag
 * and its values, without a GPU it says it does not apply, and -ngl
 * points at it. */
START_TEST(split_flag)
{
    static const char *const cmds[] = {"run", "bench"};
    char args[256];
    cli_result r;
    for (size_t i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "%s --help", cmds[i]);
        cli(&r, args);
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.out, "--split MODE") && strstr(r.out, "neurons") &&
                          strstr(r.out, "layers"),
                      "%s --help: %s", cmds[i], r.out);
        cli_free(&r);
        snprintf(args, sizeof args, "%s --split rows -n 1", cmds[i]);
        cli(&r, args);
        ck_assert_int_eq(r.status, 2);
        snprintf(args, sizeof args, "hotcold %s: bad value 'rows' for --split (neurons or "
                                    "layers)\n", cmds[i]);
        ck_assert_str_eq(r.err, args);
        cli_free(&r);
        snprintf(args, sizeof args, "%s -ngl 99", cmds[i]);
        cli(&r, args);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "-ngl is a llama.cpp flag; instead: --split layers "
                                    "--vram-budget GiB"),
                      "stderr: %s", r.err);
        cli_free(&r);
    }
    cli(&r, "run --split layers -n 2 --temp 0");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "--split") && strstr(r.err, "only matter with --device <gpu>"),
                  "stderr: %s", r.err);
    cli_free(&r);
    /* The bench names the split, so two runs can be compared. */
    cli(&r, "bench --split layers --sparse off -p 0 -n 2 -r 1");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "--split only matter with --device <gpu>"), "stderr: %s", r.err);
    ck_assert_msg(strstr(r.out, "\nsplit      none: everything on the CPU\n"), "stdout: %s",
                  r.out);
    cli_free(&r);
    cli(&r, "devices");
    const int vulkan = r.status == 0 && strstr(r.out, "vulkan:0 ") != NULL;
    cli_free(&r);
    if (!vulkan) {
        printf("split_flag: bench on a GPU skipped: no vulkan device\n");
        return;
    }
    /* 4 MiB: relu2M's layers (f32, n_embd 128, n_ff 384) take 836 KiB each:
     * 256 KiB attention, 384 neurons of 3 x 512 bytes = 576 KiB, 1 KiB of
     * norms, 3 KiB of KV cache (K and V, 3 tokens of 128 floats).  4 layers
     * = 3344 KiB = 3.27 MiB fit, 5 (4.08 MiB) do not. */
    snprintf(args, sizeof args, "bench -m '%s' --device vulkan --split layers --vram-budget "
             "0.00390625 --sparse off -p 0 -n 2 -r 1", model("relu2M.gguf"));
    cli(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "\nsplit      layers (ffn off): 3.27 of a 4.00 MiB budget on "
                                "the GPU (4 of 6 layers whole, 66.7% of FFN neurons)"),
                  "stdout: %s", r.out);
    /* With a GPU the bench measures its bandwidth too (device copies), the
     * floor of a mode wholly on it. */
    const char *gb = strstr(r.out, "GB/s GPU copy, read + written");
    ck_assert_msg(gb != NULL, "no GPU bandwidth line: %s", r.out);
    const char *line = gb;
    while (line > r.out && line[-1] != '\n')
        line--;
    double g = 0;
    ck_assert_msg(sscanf(line, "bandwidth %lf", &g) == 1 && g > 0, "line: %.120s", line);
    /* And the host <-> GPU transfers a hybrid layer's crossings ride on. */
    double up = 0, down = 0, us = -1;
    line = strstr(r.out, "\ntransfer   host -> GPU ");
    ck_assert_msg(line && sscanf(line, "\ntransfer   host -> GPU %lf GB/s, GPU -> host %lf", &up,
                                 &down) == 2 && up > 0 && down > 0,
                  "no transfer line: %s", r.out);
    const char *lat = strstr(line, "), ");
    /* A time, not a bound: a download from mapped memory may print 0.00. */
    ck_assert_msg(lat && sscanf(lat, "), %lf us for a 4-byte download", &us) == 1 && us >= 0,
                  "line: %.200s", line);
    cli_free(&r);
}
END_TEST

/* Issue 14 item 4: a run on both devices reports, after its devices line,
 * how long each device worked and the wall time per token; a run on the
 * CPU alone has neither line, and the bench prints the same three figures
 * for a hybrid mode.  6 MiB of relu2M.powerinfer's 11 for the GPU: some
 * hot neurons there, the rest on the CPU. */
START_TEST(overlap_line)
{
    char args[2048], m[1024];
    cli_result r;
    /* A link in the test's folder: the bench saves its neuron split
     * (.generated.gpuidx) beside the model, not in models/. */
    snprintf(m, sizeof m, "%s/overlap.powerinfer.gguf", hc_test_tmpdir());
    unlink(m);
    ck_assert_int_eq(symlink(model("relu2M.powerinfer.gguf"), m), 0);
    snprintf(args, sizeof args, "run -m '%s' -n 4 --temp 0 -p Once --disable-gpu-index", m);
    cli(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(!strstr(r.err, "\ndevices: ") && !strstr(r.err, "\noverlap: "),
                  "CPU only: stderr: %s", r.err);
    cli_free(&r);
    cli(&r, "devices");
    const int vulkan = r.status == 0 && strstr(r.out, "vulkan:0 ") != NULL;
    cli_free(&r);
    if (!vulkan) {
        printf("overlap_line: skipped: no vulkan device\n");
        return;
    }
    snprintf(args, sizeof args,
             "run -m '%s' -n 4 --temp 0 -p Once --disable-gpu-index --device vulkan "
             "--vram-budget 0.006",
             m);
    cli(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *dev = strstr(r.err, "\ndevices: FFN rows computed ");
    ck_assert_msg(dev != NULL, "no devices line: %s", r.err);
    const char *ov = strchr(dev + 1, '\n');
    double g = -1, c = -1, w = -1, both = -1;
    ck_assert_msg(ov && sscanf(ov, "\noverlap: GPU busy %lf ms, CPU busy %lf ms, wall %lf ms per "
                                   "token (%lf ms overlapped)",
                               &g, &c, &w, &both) == 4,
                  "no overlap line after the devices line: %s", dev);
    ck_assert_msg(g > 0 && c > 0 && w > 0 && both >= 0, "figures: %s", ov);
    cli_free(&r);
    snprintf(args, sizeof args,
             "bench -m '%s' --sparse predictor -p 0 -n 2 -r 1 --device vulkan "
             "--vram-budget 0.006",
             m);
    cli(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *b = strstr(r.out, "\noverlap    predictor: GPU busy ");
    ck_assert_msg(b && sscanf(b, "\noverlap    predictor: GPU busy %lf ms, CPU busy %lf ms, wall "
                              "%lf ms per token",
                              &g, &c, &w) == 3 && g > 0 && c > 0 && w > 0,
                  "stdout: %s", r.out);
    cli_free(&r);
}
END_TEST

/* Copy stories260K with one metadata key or one tensor's type changed.
 * The copy is written by our GGUF writer from the reader's view. */
static const char *doctored_copy(const char *name, const char *arch, const char *tensor,
                                 uint32_t new_type)
{
    static char path[1024];
    char err[512];
    snprintf(path, sizeof path, "%s/%s", hc_test_tmpdir(), name);
    hc_gguf *g = hc_gguf_open(model("stories260K.gguf"), err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    hc_gguf_writer *w = hc_gguf_writer_new("GGUF", 3, 32);
    for (uint64_t i = 0; i < g->n_kv; i++)
        ck_assert_int_eq(hc_gguf_writer_copy_kv(w, &g->kv[i]), 0);
    if (arch)
        ck_assert_int_eq(hc_gguf_writer_set_str(w, "general.architecture", arch), 0);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        uint32_t type = tensor && !strcmp(t->name, tensor) ? new_type : t->type;
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, t->name, t->n_dims, t->ne, type), 0);
    }
    ck_assert_msg(hc_gguf_writer_begin(w, path, err, sizeof err) == 0, "%s", err);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        uint64_t bytes = t->n_bytes;
        if (tensor && !strcmp(t->name, tensor)) /* new type's size, data = zeros */
            bytes = t->n_elements / hc_ggml_block_size(new_type) * hc_ggml_type_size(new_type);
        void *zeros = calloc(1, bytes);
        ck_assert_int_eq(hc_gguf_writer_write_data(w, bytes == t->n_bytes ? t->data : zeros,
                                                   bytes, err, sizeof err),
                         0);
        free(zeros);
    }
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
    hc_gguf_close(g);
    return path;
}

START_TEST(unknown_architecture)
{
    char args[2048];
    cli_result r;
    snprintf(args, sizeof args, "run -m '%s' -n 4", doctored_copy("gpt2.gguf", "gpt2", NULL, 0));
    cli(&r, args);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "architecture") && strstr(r.err, "gpt2"), "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(unknown_tensor_type)
{
    char args[2048];
    cli_result r;
    /* 3 = Q4_1: a real GGUF type (blocks of 32, so the file itself is
     * valid) that hotcold does not compute. */
    snprintf(args, sizeof args, "run -m '%s' -n 4",
             doctored_copy("q4_1.gguf", NULL, "blk.0.attn_q.weight", 3));
    cli(&r, args);
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "blk.0.attn_q.weight") && strstr(r.err, "q4_1"), "stderr: %s",
                  r.err);
    cli_free(&r);
}
END_TEST

/* bench --ops times q6_k's dense ops and reports, without failing, the
 * axpy_rows it has no kernel for (only the lines are checked, no times). */
START_TEST(bench_ops_q6_k)
{
    cli_result r;
    cli(&r, "bench --ops --type q6_k --rows 64 --cols 512 --frac 0.5 --mib 1 -r 1 "
            "--min-time 0.001 -t 1");
    ck_assert_msg(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "matmul       q6_k") && strstr(r.out, "matvec_rows  q6_k") &&
                      strstr(r.out, "axpy_rows    q6_k  not supported by this device"),
                  "stdout: %s", r.out);
    cli_free(&r);
}
END_TEST

/* bench --ops prints the plugin's own estimate (op_cost) beside each time:
 * the CPU plugin has op_cost, so every timed row has a number there. */
START_TEST(bench_ops_estimate)
{
    cli_result r;
    cli(&r, "bench --ops --type q4_0 --rows 64 --cols 512 --frac 0.5 --mib 1 -r 1 "
            "--min-time 0.001 -t 1");
    ck_assert_msg(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "us/op    est us"), "stdout: %s", r.out);
    const char *ops[] = {"matmul", "matvec_rows", "axpy_rows"};
    for (int i = 0; i < 3; i++) {
        char pattern[64];
        snprintf(pattern, sizeof pattern, "\n%-12s q4_0 ", ops[i]);
        const char *line = strstr(r.out, pattern);
        double pct, kib, us, est = -1;
        long long rows;
        ck_assert_msg(line && sscanf(line + strlen(pattern), "%lf%% %lld %lf %lf %lf", &pct, &rows,
                                     &kib, &us, &est) == 5 && est > 0,
                      "%s: no estimate in stdout: %s", ops[i], r.out);
    }
    cli_free(&r);
}
END_TEST

/* bench --ops --shape: the prompt matmul with its arithmetic rate, the
 * selection op and decode attention, each beside its bytes; the fixed cost
 * of the new ops; a shape that is no shape is refused. */
START_TEST(bench_ops_shapes_and_layer_ops)
{
    cli_result r;
    cli(&r, "bench --ops --shape 64x512 --op matmul64,select_rows,attention --frac 0.5 "
            "--ctx 16 --mib 1 -r 1 --min-time 0.001 -t 1");
    ck_assert_msg(r.status == 0, "exit %d, stderr: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "shape        custom: 64 x 512"), "stdout: %s", r.out);
    const char *line = strstr(r.out, "\nmatmul64     q4_0 ");
    ck_assert_msg(line && strstr(line, "GFLOP/s"), "stdout: %s", r.out);
    /* 64 scores read, about half of them listed. */
    line = strstr(r.out, "\nselect_rows  f32 ");
    ck_assert_msg(line, "stdout: %s", r.out);
    double pct, kib;
    long long k;
    ck_assert(sscanf(line + 18, "%lf%% %lld %lf", &pct, &k, &kib) == 3);
    ck_assert_int_eq(k, 32);
    /* 16 positions of K and V, 4 KV heads of 128 floats: 64 KiB. */
    line = strstr(r.out, "\nattention    f32 ");
    ck_assert_msg(line && sscanf(line + 18, "%lf%% %lld %lf", &pct, &k, &kib) == 3 &&
                      k == 16 && kib == 64.0,
                  "stdout: %s", r.out);
    ck_assert_msg(strstr(r.out, "fixed cost   select_rows") &&
                      strstr(r.out, "fixed cost   attention"),
                  "stdout: %s", r.out);
    ck_assert(!strstr(r.out, "\nmatvec_rows"));
    cli_free(&r);
    cli(&r, "bench --ops --shape 7x --mib 1");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "bad value '7x' for --shape"), "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

/* ---- plugins: what `devices` and `run` say about them ------------------- */

/* The plugin tests change the environment the command sees; each starts
 * from what CTest gave the suite. */
static char *saved_plugin_path;

static void plugins_setup(void)
{
    const char *p = getenv("HOTCOLD_PLUGIN_PATH");
    saved_plugin_path = p ? strdup(p) : NULL;
}

static void plugins_teardown(void)
{
    if (saved_plugin_path)
        setenv("HOTCOLD_PLUGIN_PATH", saved_plugin_path, 1);
    else
        unsetenv("HOTCOLD_PLUGIN_PATH");
    free(saved_plugin_path);
    saved_plugin_path = NULL;
    unsetenv("HOTCOLD_PLUGINS");
    unsetenv("VK_DRIVER_FILES");
    unsetenv("HOTCOLD_VULKAN_DEVICE");
}

/* A plugin of the build, copied (first `bytes` bytes, 0 = all) into a
 * folder of its own in the scratch directory; returns the folder. */
static const char *plugin_copy(const char *folder, const char *name, size_t bytes)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", hc_test_tmpdir(), folder);
    mkdir(dir, 0700);
    size_t len = 0;
    char *data = hc_test_read_file(hc_test_path(HC_PLUGIN_BUILD_DIR, name), &len);
    ck_assert_msg(data != NULL, "no %s in %s", name, HC_PLUGIN_BUILD_DIR);
    FILE *f = fopen(hc_test_path(dir, name), "wb");
    ck_assert(f != NULL);
    ck_assert_uint_eq(fwrite(data, 1, bytes ? bytes : len, f), bytes ? bytes : len);
    ck_assert_int_eq(fclose(f), 0);
    free(data);
    return dir;
}

START_TEST(truncated_plugin_is_rejected_not_fatal)
{
    /* Issue 12 item 7: dlopen of a half copy died of SIGBUS. */
    size_t len = 0;
    char *data = hc_test_read_file(hc_test_path(HC_PLUGIN_BUILD_DIR, "libhc-cpu-generic.so"), &len);
    ck_assert(data != NULL);
    free(data);
    /* Searched first, so the build's whole copy is shadowed by the half. */
    setenv("HOTCOLD_PLUGIN_PATH", plugin_copy("half", "libhc-cpu-generic.so", len / 2), 1);
    cli_result r;
    cli(&r, "devices");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "rejected  cpu-generic") && strstr(r.out, "/half/libhc-cpu-generic.so"),
                  "stdout: %s", r.out);
    ck_assert_msg(strstr(r.out, "why: truncated ELF file: PT_LOAD segment"), "stdout: %s", r.out);
    cli_free(&r);
}
END_TEST

START_TEST(selection_that_matches_nothing_is_said)
{
    setenv("HOTCOLD_PLUGINS", "missing", 1);
    cli_result r;
    cli(&r, "devices");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "why: $HOTCOLD_PLUGINS=missing: 'missing' matches no plugin found, "
                                "so every plugin is filtered out (found: cpu-"),
                  "stdout: %s", r.out);
    cli_free(&r);

    /* run: the cpu plugin was filtered out, not "did not load". */
    cli(&r, "run -n 1");
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "cpu plugin found was filtered out: not selected by "
                                "$HOTCOLD_PLUGINS=missing") &&
                      !strstr(r.err, "did not load"),
                  "stderr: %s", r.err);
    cli_free(&r);

    /* A typo next to a good name: the good one loads, the typo is named. */
    setenv("HOTCOLD_PLUGINS", "cpu,vulcan", 1);
    cli(&r, "run -n 1 --device vulkan");
    ck_assert_int_eq(r.status, 1);
    int have_vulkan = access(hc_test_path(HC_PLUGIN_BUILD_DIR, "libhc-vulkan.so"), F_OK) == 0;
    ck_assert_msg(strstr(r.err, "'vulcan' matches no plugin found (found: ") &&
                      strstr(r.err, have_vulkan
                                        ? "no device 'vulkan': the vulkan plugin was filtered out"
                                        : "no device 'vulkan': no plugin of family 'vulkan'"),
                  "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

static int have_vulkan_plugin(void)
{
    return access(hc_test_path(HC_PLUGIN_BUILD_DIR, "libhc-vulkan.so"), F_OK) == 0;
}

START_TEST(vulkan_without_driver_says_why)
{
    if (!have_vulkan_plugin()) {
        printf("vulkan_without_driver_says_why: skipped: the Vulkan plugin is not built\n");
        return;
    }
    /* The Vulkan loader then finds no driver (ICD) at all. */
    setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
    cli_result r;
    cli(&r, "devices");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "loaded    vulkan") &&
                      strstr(r.out, "why: no devices: no Vulkan driver (ICD) was found") &&
                      strstr(r.out, "(VK_DRIVER_FILES=/nonexistent/icd.json is set): "
                                    "vkCreateInstance returned VK_ERROR_INCOMPATIBLE_DRIVER (-9)"),
                  "stdout: %s", r.out);
    cli_free(&r);
    cli(&r, "run -n 1 --device vulkan");
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "no device 'vulkan': vulkan loaded, no devices: no Vulkan driver"),
                  "stderr: %s", r.err);
    cli_free(&r);
    unsetenv("VK_DRIVER_FILES");

    /* A device filter that keeps nothing is named too. */
    setenv("HOTCOLD_VULKAN_DEVICE", "no-such-gpu-name", 1);
    cli(&r, "devices");
    ck_assert_msg(strstr(r.out, "why: no devices: HOTCOLD_VULKAN_DEVICE=no-such-gpu-name matches "
                                "none of the") ||
                      strstr(r.out, "why: no devices: no Vulkan driver"), /* a machine without one */
                  "stdout: %s", r.out);
    cli_free(&r);
    unsetenv("HOTCOLD_VULKAN_DEVICE");
}
END_TEST

static int have_cuda_plugin(void)
{
    return access(hc_test_path(HC_PLUGIN_BUILD_DIR, "libhc-cuda.so"), F_OK) == 0;
}

START_TEST(cuda_without_driver_says_why)
{
    if (!have_cuda_plugin()) {
        printf("cuda_without_driver_says_why: skipped: the CUDA plugin is not built\n");
        return;
    }
    cli_result r;
    cli(&r, "devices");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "loaded    cuda "), "stdout: %s", r.out);
    if (strstr(r.out, "\n  cuda:0 ")) {
        printf("cuda_without_driver_says_why: skipped: this machine has a CUDA device\n");
        cli_free(&r);
        return;
    }
    /* The runtime's reason, as cudaGetDeviceCount gave it. */
    ck_assert_msg(strstr(r.out, "why: no devices: cudaGetDeviceCount "), "stdout: %s", r.out);
    cli_free(&r);
    cli(&r, "run -n 1 --device cuda");
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "no device 'cuda': cuda loaded, no devices: cudaGetDeviceCount "),
                  "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(software_rasteriser_is_warned_about)
{
    /* lavapipe alone: the only GPU is a software rasteriser. */
    setenv("HOTCOLD_VULKAN_DEVICE", "llvmpipe", 1);
    cli_result r;
    cli(&r, "devices");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    if (!strstr(r.out, "vulkan:0   llvmpipe")) {
        printf("software_rasteriser_is_warned_about: skipped: no lavapipe device\n");
        cli_free(&r);
        return;
    }
    ck_assert_msg(strstr(r.out, "warning: the only GPU device is a software rasteriser: vulkan:0 "
                                "(llvmpipe"),
                  "stdout: %s", r.out);
    cli_free(&r);
    char args[2048];
    snprintf(args, sizeof args, "run -m '%s' -n 2 -p Once --device vulkan", model("relu2M.gguf"));
    cli(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "vulkan:0 (llvmpipe") && strstr(r.err, "is a software rasteriser"),
                  "stderr: %s", r.err);
    cli_free(&r);
    unsetenv("HOTCOLD_VULKAN_DEVICE");
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("run");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, default_model_tells_the_story);
    tcase_add_test(tc, relu2M_reproduces_golden_text);
    tcase_add_test(tc, seeded_sampling_is_thread_count_independent);
    tcase_add_test(tc, missing_model_file);
    tcase_add_test(tc, context_overflow);
    tcase_add_test(tc, bad_option_value);
    tcase_add_test(tc, help_lists_the_flags);
    tcase_add_test(tc, split_flag);
    tcase_add_test(tc, overlap_line);
    tcase_add_test(tc, unknown_architecture);
    tcase_add_test(tc, unknown_tensor_type);
    tcase_add_test(tc, bench_ops_q6_k);
    tcase_add_test(tc, bench_ops_estimate);
    tcase_add_test(tc, bench_ops_shapes_and_layer_ops);
    suite_add_tcase(s, tc);

    TCase *pl = tcase_create("plugins");
    tcase_set_timeout(pl, 120);
    tcase_add_checked_fixture(pl, plugins_setup, plugins_teardown);
    tcase_add_test(pl, truncated_plugin_is_rejected_not_fatal);
    tcase_add_test(pl, selection_that_matches_nothing_is_said);
    tcase_add_test(pl, vulkan_without_driver_says_why);
    tcase_add_test(pl, cuda_without_driver_says_why);
    tcase_add_test(pl, software_rasteriser_is_warned_about);
    suite_add_tcase(s, pl);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cli_suite());
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

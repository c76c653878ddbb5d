/*
 * Hostile input and misuse, as a user (or an attacker's file) brings it: each
 * case is one reproduction from the issue tracker, checked for a clear error
 * (or the right result) instead of a crash, a hang, a replaced file or
 * garbage text.
 *
 *  - output files: an existing file is kept without --force, a device (one
 *    the test makes, never the system's) is written in place and not
 *    replaced by a regular file, a link is written through, a directory is
 *    refused;
 *  - inputs that block or never end: FIFOs as models and .pt files, text
 *    from /dev/zero or larger than the limit;
 *  - model settings that are NaN or infinite;
 *  - CLI misuse: bench's --sparse list, llama.cpp's flags, SwiGLU models
 *    given to the sparsity toolchain;
 *  - what a run reports: the model's file name, `help <command>`, the load's
 *    progress.
 * Hangs are caught with timeout(1): a case that blocks ends with status 124.
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "format/gguf.h"
#include "hotcold/hotcold.h"
#include "test_util.h"

#define TIMEOUT "timeout 30 "

static const char *model(const char *name)
{
    return hc_test_path(HC_MODELS_DIR, name);
}

static const char *corpus(void)
{
    return hc_test_path(HC_TEST_DATA, "corpus/tinystories_valid.txt");
}

static const char *tmp(const char *name)
{
    return hc_test_path(hc_test_tmpdir(), name);
}

static void expect_error(const char *args, int status, const char *needle)
{
    cli_result r;
    cli(&r, args);
    ck_assert_msg(r.status == status, "%s: exit %d, wanted %d; stderr: %s", args, r.status,
                  status, r.err);
    ck_assert_msg(strstr(r.err, needle) != NULL, "%s: stderr lacks '%s': %s", args, needle,
                  r.err);
    cli_free(&r);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert(f != NULL);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- output files ------------------------------------------------------- */

START_TEST(quantize_keeps_an_existing_output)
{
    char args[4096];
    const char *out = tmp("kept.gguf");
    write_file(out, "precious");
    snprintf(args, sizeof args, "quantize -q '%s' '%s' q8_0", model("stories260K.gguf"), out);
    expect_error(args, 1, "--force");
    char *after = hc_test_read_file(out, NULL);
    ck_assert_str_eq(after, "precious");
    free(after);

    snprintf(args, sizeof args, "quantize -q --force '%s' '%s' q8_0", model("stories260K.gguf"),
             out);
    cli_result r;
    cli(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    cli_free(&r);
    char err[512];
    hc_gguf *g = hc_gguf_open(out, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    hc_gguf_close(g);
}
END_TEST

/* A model may be quantized over itself, but only when asked. */
START_TEST(quantize_over_its_own_input_needs_force)
{
    char args[4096];
    const char *path = tmp("self.gguf");
    snprintf(args, sizeof args, "cp '%s' '%s'", model("stories260K.gguf"), path);
    ck_assert_int_eq(system(args), 0);
    snprintf(args, sizeof args, "quantize -q '%s' '%s' q8_0", path, path);
    expect_error(args, 1, "already exists");
    snprintf(args, sizeof args, "quantize -q --force '%s' '%s' q8_0", path, path);
    cli_result r;
    cli(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    cli_free(&r);
    char err[512];
    hc_gguf *g = hc_gguf_open(path, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    uint32_t ftype = 0;
    ck_assert_int_eq(hc_gguf_get_u32(g, "general.file_type", &ftype), 0);
    ck_assert_uint_eq(ftype, 7); /* llama.cpp's MOSTLY_Q8_0 */
    hc_gguf_close(g);
}
END_TEST

/* A character device of our own (the system's /dev/full and /dev/null are
 * never put at risk): 0 and its path, or -1 when this machine cannot make
 * one or open it (not root, a nodev mount). */
static int own_device(const char *name, unsigned minor, const char **path)
{
    *path = tmp(name);
    unlink(*path);
    if (mknod(*path, S_IFCHR | 0666, makedev(1, minor)) != 0)
        return -1;
    int fd = open(*path, O_WRONLY);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* Like /dev/full (1, 7): stays a device, and the write fails with ENOSPC. */
START_TEST(quantize_to_a_full_device_fails_and_keeps_it)
{
    const char *full;
    if (own_device("full", 7, &full) != 0) {
        hc_test_skip("quantize to a full device: cannot make one here (mknod needs root)");
        return;
    }
    char args[4096];
    snprintf(args, sizeof args, "quantize -q '%s' '%s' q8_0", model("stories260K.gguf"), full);
    expect_error(args, 1, "No space left on device");
    struct stat st;
    ck_assert_int_eq(stat(full, &st), 0);
    ck_assert_msg(S_ISCHR(st.st_mode), "the device was replaced by a regular file");
}
END_TEST

/* Like /dev/null (1, 3): written in place, no --force needed. */
START_TEST(quantize_to_a_null_device_succeeds)
{
    const char *null;
    if (own_device("null", 3, &null) != 0) {
        hc_test_skip("quantize to a null device: cannot make one here (mknod needs root)");
        return;
    }
    char args[4096];
    cli_result r;
    snprintf(args, sizeof args, "quantize -q '%s' '%s' q4_0", model("reglu1M.gguf"), null);
    cli(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    cli_free(&r);
    struct stat st;
    ck_assert_int_eq(stat(null, &st), 0);
    ck_assert_msg(S_ISCHR(st.st_mode), "the device was replaced by a regular file");
}
END_TEST

/* A FIFO nobody reads: an error at once, not a wait for a reader. */
START_TEST(quantize_to_an_unread_fifo_fails_at_once)
{
    char args[4096];
    const char *path = tmp("out.fifo");
    unlink(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    snprintf(args, sizeof args, TIMEOUT "'%s' quantize -q '%s' '%s' q8_0 2>'%s'", HC_CLI,
             model("stories260K.gguf"), path, tmp("fifo-out.err"));
    int st = system(args);
    char *err = hc_test_read_file(tmp("fifo-out.err"), NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d (124: it blocked); %s", st,
                  err);
    ck_assert_msg(strstr(err, "no process reads") != NULL, "stderr: %s", err);
    free(err);
    struct stat sb;
    ck_assert_int_eq(lstat(path, &sb), 0);
    ck_assert(S_ISFIFO(sb.st_mode));
}
END_TEST

/* The link stays a link; the file it names gets the model. */
START_TEST(quantize_writes_through_a_link)
{
    char args[4096];
    const char *target = tmp("target.gguf"), *link = tmp("link.gguf");
    write_file(target, "old");
    unlink(link);
    ck_assert_int_eq(symlink(target, link), 0);
    snprintf(args, sizeof args, "quantize -q '%s' '%s' q8_0", model("stories260K.gguf"), link);
    expect_error(args, 1, "already exists");
    snprintf(args, sizeof args, "quantize -q --force '%s' '%s' q8_0", model("stories260K.gguf"),
             link);
    cli_result r;
    cli(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    cli_free(&r);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "the link was replaced by a file");
    char err[512];
    hc_gguf *g = hc_gguf_open(target, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    hc_gguf_close(g);

    const char *dangling = tmp("dangling.gguf");
    unlink(dangling);
    ck_assert_int_eq(symlink(tmp("no-such-dir/x.gguf"), dangling), 0);
    snprintf(args, sizeof args, "quantize -q '%s' '%s' q8_0", model("stories260K.gguf"),
             dangling);
    expect_error(args, 1, "symbolic link");
}
END_TEST

START_TEST(quantize_refuses_a_directory)
{
    char args[4096];
    snprintf(args, sizeof args, "quantize -q '%s' '%s' q8_0", model("stories260K.gguf"),
             hc_test_tmpdir());
    expect_error(args, 1, "is a directory");
}
END_TEST

/* pack, profile and train-predictor refuse before doing any work. */
START_TEST(toolchain_outputs_need_force)
{
    char args[4096];
    const char *out = tmp("existing.gguf");
    write_file(out, "precious");
    snprintf(args, sizeof args, "pack -q -m '%s' --predictor '%s' -o '%s'", model("relu2M.gguf"),
             tmp("no-such-predictor.gguf"), out);
    expect_error(args, 1, "--force");
    snprintf(args, sizeof args, "profile -q -m '%s' --text '%s' -o '%s'", model("reglu1M.gguf"),
             corpus(), out);
    expect_error(args, 1, "--force");
    snprintf(args, sizeof args, "train-predictor -q -m '%s' --text '%s' -o '%s'",
             model("reglu1M.gguf"), corpus(), out);
    expect_error(args, 1, "--force");
    char *after = hc_test_read_file(out, NULL);
    ck_assert_str_eq(after, "precious");
    free(after);
}
END_TEST

/* ---- inputs that block or never end -------------------------------------- */

static const char *fifo(const char *name)
{
    const char *path = tmp(name);
    unlink(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    return path;
}

START_TEST(fifo_model_is_refused_without_blocking)
{
    char args[4096];
    snprintf(args, sizeof args, TIMEOUT "'%s' run -m '%s' -n 1", HC_CLI, fifo("model.gguf"));
    /* Through the shell so that timeout(1) wraps hotcold itself. */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "%s >/dev/null 2>'%s'", args, tmp("fifo.err"));
    int st = system(cmd);
    char *err = hc_test_read_file(tmp("fifo.err"), NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d (124: it blocked); %s", st,
                  err);
    ck_assert_msg(strstr(err, "not a regular file") != NULL, "stderr: %s", err);
    free(err);
}
END_TEST

START_TEST(fifo_activation_file_is_refused_without_blocking)
{
    char args[4096];
    const char *dir = tmp("activation");
    mkdir(dir, 0700);
    char name[600];
    snprintf(name, sizeof name, "%s/activation_0.pt", dir);
    unlink(name);
    ck_assert_int_eq(mkfifo(name, 0600), 0);
    snprintf(args, sizeof args, "'%s' profile -q --pt-dir '%s' -o '%s' >/dev/null 2>'%s'",
             HC_CLI, dir, tmp("pt.gguf"), tmp("pt.err"));
    char cmd[4200];
    snprintf(cmd, sizeof cmd, TIMEOUT "sh -c \"%s\"", args);
    int st = system(cmd);
    char *err = hc_test_read_file(tmp("pt.err"), NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d (124: it blocked); %s", st,
                  err);
    ck_assert_msg(strstr(err, "activation_0.pt") && strstr(err, "not a regular file"),
                  "stderr: %s", err);
    free(err);
}
END_TEST

START_TEST(endless_or_binary_text_is_refused)
{
    char args[4096];
    snprintf(args, sizeof args, "run -f /dev/zero -n 1");
    expect_error(args, 2, "not text");
    snprintf(args, sizeof args, "profile -q -m '%s' --text /dev/zero -o '%s'",
             model("reglu1M.gguf"), tmp("zero.gguf"));
    expect_error(args, 1, "not text");
    /* Over the prompt limit (64 MiB): refused once past it, not read whole. */
    const char *big = tmp("big.txt");
    snprintf(args, sizeof args, "head -c 70000000 /dev/zero | tr '\\0' a > '%s'", big);
    ck_assert_int_eq(system(args), 0);
    snprintf(args, sizeof args, "run -f '%s' -n 1", big);
    expect_error(args, 2, "64 MiB");
    unlink(big);
}
END_TEST

/* ---- settings that are NaN or infinite ------------------------------------ */

/* `src` copied to `dst` with one f32 key set (added if absent). */
static void copy_with_f32(const char *src, const char *dst, const char *key, float v)
{
    char err[512];
    hc_gguf *g = hc_gguf_open(src, err, sizeof err);
    ck_assert_msg(g != NULL, "%s", err);
    hc_gguf_writer *w = hc_gguf_writer_new(g->magic, g->version, (uint32_t)g->alignment);
    for (uint64_t i = 0; i < g->n_kv; i++)
        ck_assert_int_eq(hc_gguf_writer_copy_kv(w, &g->kv[i]), 0);
    ck_assert_int_eq(hc_gguf_writer_set_f32(w, key, v), 0);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        ck_assert_int_eq(hc_gguf_writer_add_tensor(w, t->name, t->n_dims, t->ne, t->type), 0);
    }
    ck_assert_msg(hc_gguf_writer_begin(w, dst, err, sizeof err) == 0, "%s", err);
    for (uint64_t i = 0; i < g->n_tensors; i++)
        ck_assert_msg(hc_gguf_writer_write_data(w, g->tensors[i].data, g->tensors[i].n_bytes,
                                                err, sizeof err) == 0,
                      "%s", err);
    ck_assert_msg(hc_gguf_writer_finish(w, err, sizeof err) == 0, "%s", err);
    hc_gguf_writer_free(w);
    hc_gguf_close(g);
}

static const struct {
    const char *model, *key;
    float value;
} bad_settings[] = {
    {"relu2M.powerinfer.gguf", "powerinfer.sparse_threshold", NAN},
    {"relu2M.powerinfer.gguf", "powerinfer.sparse_threshold", INFINITY},
    {"relu2M.powerinfer.gguf", "powerinfer.sparse_threshold", -INFINITY},
    {"relu2M.powerinfer.gguf", "powerinfer.sparse_threshold", 1e30f},
    {"relu2M.gguf", "llama.ffn_gate_shift", NAN},
    {"relu2M.gguf", "llama.block_input_relu_shift", INFINITY},
    {"stories260K.gguf", "llama.attention.layer_norm_rms_epsilon", NAN},
    {"stories260K.gguf", "llama.attention.layer_norm_rms_epsilon", 0.0f},
    {"stories260K.gguf", "llama.rope.freq_base", INFINITY},
};

START_TEST(non_finite_settings_are_refused)
{
    const char *path = tmp("bad-setting.gguf");
    copy_with_f32(model(bad_settings[_i].model), path, bad_settings[_i].key,
                  bad_settings[_i].value);
    hc_engine *e = hc_engine_open(NULL);
    ck_assert(e != NULL);
    hc_model *m = hc_model_load(e, path, NULL);
    ck_assert_msg(m == NULL, "%s with %s = %g loaded", bad_settings[_i].model,
                  bad_settings[_i].key, (double)bad_settings[_i].value);
    ck_assert_msg(strstr(hc_last_error(), bad_settings[_i].key) != NULL, "error: %s",
                  hc_last_error());
    hc_engine_close(e);
    unlink(path);
}
END_TEST

/* The same bound from every source: the flag and the environment too. */
START_TEST(threshold_bound_is_the_same_everywhere)
{
    char args[4096];
    snprintf(args, sizeof args, "run -m '%s' -n 1 --sparse-threshold 1e30",
             model("relu2M.powerinfer.gguf"));
    expect_error(args, 2, "--sparse-threshold");
    snprintf(args, sizeof args, "env LLAMA_SPARSE_PRED_THRESHOLD=1e30 '%s' run -m '%s' -n 1",
             HC_CLI, model("relu2M.powerinfer.gguf"));
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "%s >/dev/null 2>'%s'", args, tmp("env.err"));
    int st = system(cmd);
    char *err = hc_test_read_file(tmp("env.err"), NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d; %s", st, err);
    ck_assert_msg(strstr(err, "LLAMA_SPARSE_PRED_THRESHOLD") != NULL, "stderr: %s", err);
    free(err);
}
END_TEST

/* ---- CLI misuse ---------------------------------------------------------- */

START_TEST(bench_sparse_list_is_checked)
{
    static const char *const lists[] = {"''", "','", "',,,'", "off,,predictor"};
    char args[4096];
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        snprintf(args, sizeof args, "bench -m '%s' -r 1 --sparse %s", model("stories260K.gguf"),
                 lists[i]);
        expect_error(args, 2, "empty entry");
    }
    snprintf(args, sizeof args, "bench -m '%s' -r 1 --sparse off,off,off,off,off",
             model("stories260K.gguf"));
    expect_error(args, 2, "more than 4");
    snprintf(args, sizeof args, "bench -m '%s' -r 1 --sparse off,dense",
             model("stories260K.gguf"));
    expect_error(args, 2, "'dense'");
}
END_TEST

START_TEST(llama_cpp_flags_are_named)
{
    static const struct {
        const char *args, *needle;
    } cases[] = {
        {"run -ngl 99", "--vram-budget"}, {"run -cnv", "-cnv"}, {"run -fa", "-fa"},
        {"run -sys 'be nice'", "-sys"},  {"run --flash-attn=on", "--flash-attn"},
        {"bench -ngl 99", "--vram-budget"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_error(cases[i].args, 2, cases[i].needle);
    /* A value of hotcold's own option is not a flag: "-fa" is the prompt here. */
    cli_result r;
    cli(&r, "run -p -fa -n 2 --temp 0");
    ck_assert_msg(r.status == 0, "%s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(swiglu_models_are_refused_by_the_toolchain)
{
    char args[4096];
    snprintf(args, sizeof args, "profile -q -m '%s' --text '%s' -o '%s'",
             model("stories260K.gguf"), corpus(), tmp("swiglu.activation.gguf"));
    expect_error(args, 1, "SwiGLU");
    snprintf(args, sizeof args, "train-predictor -q -m '%s' --text '%s' -o '%s'",
             model("stories260K.gguf"), corpus(), tmp("swiglu.predictor.gguf"));
    expect_error(args, 1, "SwiGLU");
    ck_assert(access(tmp("swiglu.activation.gguf"), F_OK) != 0);
    ck_assert(access(tmp("swiglu.predictor.gguf"), F_OK) != 0);
}
END_TEST

/* ---- what a run reports --------------------------------------------------- */

START_TEST(run_summary_names_the_file)
{
    char args[4096], want[4200];
    cli_result r;
    snprintf(args, sizeof args, "run -m '%s' -n 2 --temp 0", model("relu2M.gguf"));
    cli(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    snprintf(want, sizeof want, "--- %s (", model("relu2M.gguf"));
    ck_assert_msg(strstr(r.err, want) != NULL, "stderr: %s", r.err);
    cli_free(&r);
}
END_TEST

START_TEST(help_names_a_command)
{
    cli_result r;
    cli(&r, "help run");
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.out, "usage: hotcold run") != NULL, "stdout: %s", r.out);
    cli_free(&r);
    expect_error("help no-such-command", 2, "no-such-command");
}
END_TEST

typedef struct progress_seen {
    int calls;
    uint64_t last_done, last_total;
    char step[32];
} progress_seen;

static void on_progress(void *user, const char *step, uint64_t done, uint64_t total)
{
    progress_seen *p = user;
    p->calls++;
    ck_assert_msg(done >= p->last_done && done <= total, "done %llu after %llu of %llu",
                  (unsigned long long)done, (unsigned long long)p->last_done,
                  (unsigned long long)total);
    p->last_done = done;
    p->last_total = total;
    snprintf(p->step, sizeof p->step, "%s", step);
}

START_TEST(load_reports_read_progress)
{
    hc_engine *e = hc_engine_open(NULL);
    ck_assert(e != NULL);
    progress_seen seen = {0};
    hc_model_params mp = hc_model_default_params();
    mp.weights = HC_WEIGHTS_READ;
    mp.progress = on_progress;
    mp.progress_user = &seen;
    hc_model *m = hc_model_load(e, model("relu2M.gguf"), &mp);
    ck_assert_msg(m != NULL, "%s", hc_last_error());
    struct stat st;
    ck_assert_int_eq(stat(model("relu2M.gguf"), &st), 0);
    ck_assert_int_ge(seen.calls, 1);
    ck_assert_str_eq(seen.step, "reading");
    ck_assert_uint_eq(seen.last_done, (uint64_t)st.st_size);
    ck_assert_uint_eq(seen.last_total, (uint64_t)st.st_size);
    hc_model_free(m);
    hc_engine_close(e);
}
END_TEST

/* hc_model_params.split outside hc_split_mode: refused, naming the field. */
START_TEST(load_refuses_an_unknown_split)
{
    hc_engine *e = hc_engine_open(NULL);
    ck_assert(e != NULL);
    static const int bad[] = {-1, 3, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hc_model_params mp = hc_model_default_params();
        mp.split = bad[i];
        ck_assert_ptr_null(hc_model_load(e, model("relu2M.gguf"), &mp));
        char want[128];
        snprintf(want, sizeof want, "params.split is %d (HC_SPLIT_AUTO, HC_SPLIT_NEURONS or "
                                    "HC_SPLIT_LAYERS)", bad[i]);
        ck_assert_msg(strstr(hc_last_error(), want) != NULL, "error: %s", hc_last_error());
    }
    hc_engine_close(e);
}
END_TEST

START_TEST(describe_of_no_model_is_empty)
{
    hc_model_desc d;
    memset(&d, 0x5a, sizeof d);
    hc_model_describe(NULL, &d);
    ck_assert_int_eq(d.n_layer, 0);
    ck_assert_str_eq(d.arch, "");
    ck_assert_str_eq(d.name, "");
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *out = tcase_create("output files");
    tcase_set_timeout(out, 120);
    tcase_add_test(out, quantize_keeps_an_existing_output);
    tcase_add_test(out, quantize_over_its_own_input_needs_force);
    tcase_add_test(out, quantize_to_a_full_device_fails_and_keeps_it);
    tcase_add_test(out, quantize_to_a_null_device_succeeds);
    tcase_add_test(out, quantize_to_an_unread_fifo_fails_at_once);
    tcase_add_test(out, quantize_writes_through_a_link);
    tcase_add_test(out, quantize_refuses_a_directory);
    tcase_add_test(out, toolchain_outputs_need_force);
    suite_add_tcase(s, out);

    TCase *in = tcase_create("inputs");
    tcase_set_timeout(in, 120);
    tcase_add_test(in, fifo_model_is_refused_without_blocking);
    tcase_add_test(in, fifo_activation_file_is_refused_without_blocking);
    tcase_add_test(in, endless_or_binary_text_is_refused);
    tcase_add_loop_test(in, non_finite_settings_are_refused, 0,
                        (int)(sizeof bad_settings / sizeof bad_settings[0]));
    tcase_add_test(in, threshold_bound_is_the_same_everywhere);
    suite_add_tcase(s, in);

    TCase *cl = tcase_create("cli");
    tcase_set_timeout(cl, 120);
    tcase_add_test(cl, bench_sparse_list_is_checked);
    tcase_add_test(cl, llama_cpp_flags_are_named);
    tcase_add_test(cl, swiglu_models_are_refused_by_the_toolchain);
    tcase_add_test(cl, run_summary_names_the_file);
    tcase_add_test(cl, help_names_a_command);
    tcase_add_test(cl, load_reports_read_progress);
    tcase_add_test(cl, describe_of_no_model_is_empty);
    tcase_add_test(cl, load_refuses_an_unknown_split);
    suite_add_tcase(s, cl);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hostile_suite());
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

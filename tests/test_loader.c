/*
 * Plugin loader, engine device list and `hotcold devices`.
 *
 * The loader is driven against stub plugins (tests/stubs/stub_plugin.c built
 * with different -D options into HC_STUB_DIR, see tests/loader.cmake); each
 * stub breaks one rule, and the expected verdicts below come from the ABI
 * rules, not from the loader.  Files the tests need beyond the stubs
 * (garbage, copies, links) are made in a per-process scratch directory.
 */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <ftw.h>
#include <link.h> /* ElfW() */
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hotcold/hotcold.h"
#include "runtime/loader.h"
#include "test_util.h"

#define STUB(name) HC_STUB_DIR "/libhc-" name ".so"
#define STUB_THREADS 3
#define HC_STR_(x) #x
#define HC_STR(x) HC_STR_(x)

/* ---- fixture: a registry, captured log, clean environment ------------------ */

static hc_registry reg;
static char g_log[1 << 16];
static size_t g_log_len;

static void capture_log(void *user, int level, const char *msg)
{
    (void)user;
    int n = snprintf(g_log + g_log_len, sizeof g_log - g_log_len, "%d %s\n", level, msg);
    if (n > 0 && g_log_len + (size_t)n < sizeof g_log)
        g_log_len += (size_t)n;
}

/* Is there a log line of this level containing both texts? */
static int log_has(int level, const char *a, const char *b)
{
    char prefix[8];
    snprintf(prefix, sizeof prefix, "%d ", level);
    for (const char *line = g_log; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[2048];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        if (strncmp(buf, prefix, strlen(prefix)) == 0 && strstr(buf, a) && (!b || strstr(buf, b)))
            return 1;
        line = end ? end + 1 : line + len;
    }
    return 0;
}

static void setup(void)
{
    memset(&reg, 0, sizeof reg);
    g_log[0] = 0;
    g_log_len = 0;
    hc_log_set_callback(capture_log, NULL);
    unsetenv("HOTCOLD_PLUGINS");
    mkdir(hc_test_tmpdir(), 0700); /* teardown removes it */
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void teardown(void)
{
    hc_registry_free(&reg);
    hc_log_set_callback(NULL, NULL);
    nftw(hc_test_tmpdir(), rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void load(const char *path, const char *select)
{
    hc_loader_options o = {.plugin_path = path, .select = select, .exe_dir = NULL,
                           .use_default_dirs = 0, .n_threads = STUB_THREADS};
    hc_registry_free(&reg);
    ck_assert_int_eq(hc_registry_load(&reg, &o), 0);
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int count_named(const char *base)
{
    int n = 0;
    for (int i = 0; i < reg.n_candidates; i++)
        n += strcmp(base_of(reg.candidates[i].path), base) == 0;
    return n;
}

static const hc_plugin_candidate *cand(const char *base)
{
    for (int i = 0; i < reg.n_candidates; i++)
        if (strcmp(base_of(reg.candidates[i].path), base) == 0)
            return &reg.candidates[i];
    return NULL;
}

static const char *state_str(int s)
{
    static const char *names[] = {"LOADED", "REJECTED", "SHADOWED", "FILTERED"};
    return s >= 0 && s < 4 ? names[s] : "?";
}

/* The candidate `base` is in `state` and its reason contains `part`. */
static const hc_plugin_candidate *expect(const char *base, int state, const char *part)
{
    const hc_plugin_candidate *c = cand(base);
    ck_assert_msg(c != NULL, "%s is not among the %d candidates", base, reg.n_candidates);
    ck_assert_msg(c->state == state, "%s: %s, want %s (reason: %s)", base, state_str(c->state),
                  state_str(state), c->reason);
    if (part)
        ck_assert_msg(strstr(c->reason, part) != NULL, "%s: reason '%s' lacks '%s'", base,
                      c->reason, part);
    if (state == HC_CAND_LOADED && !part) {
        /* Loaded: no reason, unless it has no devices (then why). */
        hc_plugin *pl = hc_registry_find(&reg, c->family);
        ck_assert_ptr_nonnull(pl);
        if (pl->ops->device_count(pl->ctx) == 0)
            ck_assert_msg(strncmp(c->reason, "no devices: ", 12) == 0, "%s: reason '%s'", base,
                          c->reason);
        else
            ck_assert_str_eq(c->reason, "");
    } else if (state != HC_CAND_LOADED)
        ck_assert_msg(log_has(HC_LOG_INFO, c->path, c->reason), "%s: no INFO log with its reason",
                      base);
    return c;
}

/* ---- files in the scratch directory ---------------------------------------- */

static const char *scratch(const char *name)
{
    return hc_test_path(hc_test_tmpdir(), name);
}

static void make_dir(const char *path)
{
    ck_assert_msg(mkdir(path, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static void copy_file(const char *src, const char *dst)
{
    size_t len = 0;
    char *data = hc_test_read_file(src, &len);
    ck_assert_msg(data != NULL, "cannot read %s", src);
    write_file(dst, data, len);
    free(data);
}

/* ---- file names ------------------------------------------------------------ */

START_TEST(test_parse_name)
{
    static const struct {
        const char *name, *family, *variant;
    } good[] = {
        {"libhc-cpu.so", "cpu", ""},
        {"libhc-cpu-avx2.so", "cpu", "avx2"},
        {"libhc-cpu-avx512-vnni.so", "cpu", "avx512-vnni"},
        {"libhc-my_gpu-v2.so", "my_gpu", "v2"},
    };
    static const char *bad[] = {
        "libhc-.so", "libhc-cpu-.so", "libhc-cpu.so.1", "hc-cpu.so", "libhc-cpu.dll",
        "libhc--x.so", "libhc-c.pu.so", "libhcx-cpu.so", "libhc-cpu", "", "libhc-cpu-a b.so",
        "libhc-a_family_name_that_is_far_too_long_for_32.so",
    };
    char f[32], v[32];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ck_assert_msg(hc_plugin_parse_name(good[i].name, f, sizeof f, v, sizeof v) == 0, "%s",
                      good[i].name);
        ck_assert_str_eq(f, good[i].family);
        ck_assert_str_eq(v, good[i].variant);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(hc_plugin_parse_name(bad[i], f, sizeof f, v, sizeof v) == -1,
                      "'%s' accepted", bad[i]);
}
END_TEST

/* ---- one stub at a time ------------------------------------------------------ */

START_TEST(test_good_plugin)
{
    load(STUB("good"), NULL);
    ck_assert_int_eq(reg.n_candidates, 1);
    const hc_plugin_candidate *c = expect("libhc-good.so", HC_CAND_LOADED, NULL);
    ck_assert_int_eq(c->probe, 10);
    ck_assert_str_eq(c->family, "good");
    ck_assert_str_eq(c->variant, "");
    ck_assert_int_eq(reg.n_plugins, 1);
    hc_plugin *pl = hc_registry_find(&reg, "good");
    ck_assert_ptr_nonnull(pl);
    ck_assert_ptr_nonnull(pl->dl);
    ck_assert_ptr_null(hc_registry_find(&reg, "cpu"));
    ck_assert_int_eq(pl->ops->device_count(pl->ctx), 2);
    /* The host struct: the stub's init refuses a bad one, logs through it
     * (the user string names the plugin) and keeps n_threads. */
    ck_assert_msg(log_has(HC_LOG_INFO,
                          "[good] stub init: host abi 1." HC_STR(HC_PLUGIN_ABI_MINOR) ", 3 threads",
                          NULL),
                  "plugin log line missing; log:\n%s", g_log);
    hc_device_info info = {.size = sizeof info};
    ck_assert_int_eq(pl->ops->device_info(pl->ctx, 1, &info), HC_OK);
    ck_assert_int_eq(info.n_threads, STUB_THREADS);
    /* Control for test_cut_table: the full table has the optional entries. */
    ck_assert(HC_OPS_HAS(pl->ops, op_cost));
    ck_assert(HC_OPS_HAS(pl->ops, set_threads));
}
END_TEST

START_TEST(test_wrong_major)
{
    load(STUB("major"), NULL);
    expect("libhc-major.so", HC_CAND_REJECTED, "major 2");
    expect("libhc-major.so", HC_CAND_REJECTED, "needs 1");
    ck_assert_int_eq(reg.n_plugins, 0);
}
END_TEST

START_TEST(test_cut_table)
{
    load(STUB("cut"), NULL);
    expect("libhc-cut.so", HC_CAND_LOADED, NULL);
    hc_plugin *pl = hc_registry_find(&reg, "cut");
    ck_assert_ptr_nonnull(pl);
    ck_assert_uint_eq(pl->ops->size, offsetof(hc_plugin_ops, op_cost));
    /* The stub sets op_cost and set_threads, but they lie past `size`. */
    ck_assert(!HC_OPS_HAS(pl->ops, op_cost));
    ck_assert(!HC_OPS_HAS(pl->ops, set_threads));
    ck_assert(HC_OPS_HAS(pl->ops, glu));
    ck_assert(HC_OPS_HAS(pl->ops, axpy_rows));
    ck_assert(!HC_OPS_HAS(pl->ops, rmsnorm)); /* inside size, but NULL */
}
END_TEST

START_TEST(test_table_too_small)
{
    load(STUB("small"), NULL);
    expect("libhc-small.so", HC_CAND_REJECTED, "too small");
    expect("libhc-small.so", HC_CAND_REJECTED, "axpy_rows");
}
END_TEST

START_TEST(test_probe_zero)
{
    load(STUB("noprobe"), NULL);
    const hc_plugin_candidate *c =
        expect("libhc-noprobe.so", HC_CAND_REJECTED, "probe: cannot run on this machine");
    ck_assert_int_eq(c->probe, 0);
    ck_assert_int_eq(reg.n_plugins, 0);
}
END_TEST

START_TEST(test_missing_entry_symbol)
{
    load(STUB("nosym"), NULL);
    const hc_plugin_candidate *c = expect("libhc-nosym.so", HC_CAND_REJECTED, "hc_plugin_entry");
    ck_assert_int_eq(c->probe, -1);
}
END_TEST

START_TEST(test_entry_returns_null)
{
    load(STUB("nulltab"), NULL);
    expect("libhc-nulltab.so", HC_CAND_REJECTED, "returned NULL");
}
END_TEST

START_TEST(test_init_fails)
{
    load(STUB("initfail"), NULL);
    expect("libhc-initfail.so", HC_CAND_REJECTED, "simulated driver failure (code 42)");
    expect("libhc-initfail.so", HC_CAND_REJECTED, "HC_E_DEVICE");
    ck_assert_int_eq(reg.n_plugins, 0);
}
END_TEST

START_TEST(test_required_entry_null)
{
    load(STUB("nullaxpy"), NULL);
    expect("libhc-nullaxpy.so", HC_CAND_REJECTED, "axpy_rows");
    ck_assert_int_eq(reg.n_plugins, 0);
}
END_TEST

START_TEST(test_family_mismatch)
{
    /* libhc-misnamed.so carries a table of family "other". */
    load(STUB("misnamed"), NULL);
    expect("libhc-misnamed.so", HC_CAND_REJECTED, "'other'");
}
END_TEST

START_TEST(test_zero_devices)
{
    load(STUB("nodev"), NULL);
    /* Loaded, and why it has no devices: the core's default, since the
     * stub's table has no no_device_reason (NULL). */
    expect("libhc-nodev.so", HC_CAND_LOADED, "no devices: the plugin does not say why");
    hc_plugin *pl = hc_registry_find(&reg, "nodev");
    ck_assert_ptr_nonnull(pl);
    ck_assert_int_eq(pl->ops->device_count(pl->ctx), 0);
    ck_assert_msg(!log_has(HC_LOG_WARN, "nodev", NULL) && !log_has(HC_LOG_ERROR, "nodev", NULL),
                  "a plugin without devices is not an error; log:\n%s", g_log);
    ck_assert(log_has(HC_LOG_INFO, "libhc-nodev.so loaded (probe 10), no devices: ", NULL));

    /* ABI 1.3: the plugin's own reason. */
    load(STUB("nodevwhy"), NULL);
    expect("libhc-nodevwhy.so", HC_CAND_LOADED, "no devices: stub: no driver for the stub bus");
    /* A 1.2 table (cut before no_device_reason, which the stub does set):
     * the entry is absent, the default is used. */
    load(STUB("nodevold"), NULL);
    hc_plugin *old = hc_registry_find(&reg, "nodevold");
    ck_assert_ptr_nonnull(old);
    ck_assert_uint_eq(old->ops->size, offsetof(hc_plugin_ops, no_device_reason));
    ck_assert_ptr_nonnull(old->ops->no_device_reason);
    expect("libhc-nodevold.so", HC_CAND_LOADED, "no devices: the plugin does not say why");
}
END_TEST

START_TEST(test_not_elf)
{
    make_dir(scratch("g"));
    const char *path = scratch("g/libhc-garbage.so");
    static const char text[] = "this is not a shared library, only some text to make the file "
                               "longer than an ELF header would be\n";
    write_file(path, text, sizeof text - 1);
    load(scratch("g"), NULL);
    ck_assert_int_eq(reg.n_candidates, 1);
    const hc_plugin_candidate *c = expect("libhc-garbage.so", HC_CAND_REJECTED, "not an ELF file");
    ck_assert_int_eq(c->probe, -1);
}
END_TEST

START_TEST(test_dlopen_fails)
{
    /* A well-formed shared object passes the ELF check; what dlopen itself
     * says about it is the reason. */
    ck_assert_ptr_null(dlopen(STUB("undef"), RTLD_NOW | RTLD_LOCAL));
    const char *err = dlerror();
    ck_assert_ptr_nonnull(err);
    const char *tail = strstr(err, "undefined symbol");
    ck_assert_msg(tail != NULL, "unexpected dlerror text '%s'", err);
    char want[256]; /* a copy: the loader's own dlopen reuses dlerror's buffer */
    snprintf(want, sizeof want, "%s", tail);

    load(STUB("undef"), NULL);
    expect("libhc-undef.so", HC_CAND_REJECTED, "dlopen: ");
    expect("libhc-undef.so", HC_CAND_REJECTED, want);
}
END_TEST

/* ---- files that would crash dlopen: the ELF check ------------------------- */

/* The stub "good" as bytes, with its headers read the way the gABI lays
 * them out (independently of core/runtime/elf_check.c). */
typedef struct elf_image {
    unsigned char *data;
    size_t len;
    ElfW(Ehdr) *eh;
    ElfW(Phdr) *ph;
} elf_image;

static elf_image read_good_stub(void)
{
    elf_image im = {0};
    im.data = (unsigned char *)hc_test_read_file(STUB("good"), &im.len);
    ck_assert_ptr_nonnull(im.data);
    ck_assert_uint_ge(im.len, sizeof(ElfW(Ehdr)));
    im.eh = (ElfW(Ehdr) *)im.data;
    ck_assert_int_eq(memcmp(im.eh->e_ident, ELFMAG, SELFMAG), 0);
    ck_assert_uint_le(im.eh->e_phoff + (size_t)im.eh->e_phnum * sizeof(ElfW(Phdr)), im.len);
    im.ph = (ElfW(Phdr) *)(im.data + im.eh->e_phoff);
    return im;
}

/* Write the first `len` bytes of im (as modified) as <dir>/libhc-good.so and
 * load that directory. */
static void load_image(const elf_image *im, size_t len, const char *dir)
{
    make_dir(scratch(dir));
    char name[64];
    snprintf(name, sizeof name, "%s/libhc-good.so", dir);
    write_file(scratch(name), im->data, len);
    load(scratch(dir), NULL);
    ck_assert_int_eq(reg.n_candidates, 1);
}

START_TEST(test_truncated_elf)
{
    elf_image im = read_good_stub();
    /* Control: the whole file loads. */
    load_image(&im, im.len, "whole");
    expect("libhc-good.so", HC_CAND_LOADED, NULL);

    /* Half the file: the first segment (in header order) whose file bytes
     * run past the cut is what dlopen would have faulted on. */
    size_t half = im.len / 2;
    int first = -1;
    for (int i = 0; i < im.eh->e_phnum && first < 0; i++)
        if (im.ph[i].p_filesz > 0 && im.ph[i].p_offset + im.ph[i].p_filesz > half)
            first = i;
    ck_assert_msg(first >= 0, "no segment of the stub reaches past half its size");
    char want[96];
    snprintf(want, sizeof want, "segment %d needs file bytes %llu..%llu, the file has %zu", first,
             (unsigned long long)im.ph[first].p_offset,
             (unsigned long long)(im.ph[first].p_offset + im.ph[first].p_filesz), half);
    load_image(&im, half, "half");
    expect("libhc-good.so", HC_CAND_REJECTED, "truncated ELF file");
    const hc_plugin_candidate *c = expect("libhc-good.so", HC_CAND_REJECTED, want);
    ck_assert_int_eq(c->probe, -1); /* never opened */

    /* Every segment complete, the section header table (at the end) cut. */
    size_t seg_end = 0;
    for (int i = 0; i < im.eh->e_phnum; i++)
        if (im.ph[i].p_offset + im.ph[i].p_filesz > seg_end)
            seg_end = im.ph[i].p_offset + im.ph[i].p_filesz;
    ck_assert_uint_ne(im.eh->e_shoff, 0);
    ck_assert_uint_lt(seg_end, im.len);
    ck_assert_uint_ge(im.eh->e_shoff, seg_end);
    load_image(&im, im.eh->e_shoff + 1, "sections");
    expect("libhc-good.so", HC_CAND_REJECTED, "section header table");

    /* Inside the ELF header, inside e_ident, and before the magic ends. */
    load_image(&im, sizeof(ElfW(Ehdr)) - 1, "header");
    expect("libhc-good.so", HC_CAND_REJECTED, "truncated ELF file");
    load_image(&im, EI_NIDENT - 1, "ident");
    expect("libhc-good.so", HC_CAND_REJECTED, "truncated ELF file");
    load_image(&im, SELFMAG - 1, "magic");
    expect("libhc-good.so", HC_CAND_REJECTED, "not an ELF file");
    load_image(&im, 0, "empty");
    expect("libhc-good.so", HC_CAND_REJECTED, "not an ELF file");
    free(im.data);
}
END_TEST

START_TEST(test_corrupt_elf_headers)
{
    static const struct {
        const char *what, *reason;
    } cases[] = {
        {"class", "wrong ELF class: a 32-bit file"},
        {"data", "wrong byte order"},
        {"version", "version 0"},
        {"type", "ET_EXEC"},
        {"machine", "machine"},
        {"phentsize", "program header entries of 7 bytes"},
        {"phnum", "0 program headers"},
        {"phoff", "program header table needs bytes"},
        {"load_offset", "truncated ELF file: PT_LOAD segment"},
        {"load_overflow", "truncated ELF file: PT_LOAD segment"},
        {"load_memsz", "file bytes but only"},
        {"no_dynamic", "no PT_DYNAMIC segment"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        elf_image im = read_good_stub();
        const char *w = cases[k].what;
        int load_i = -1, dyn_i = -1;
        for (int i = 0; i < im.eh->e_phnum; i++) {
            if (im.ph[i].p_type == PT_LOAD && im.ph[i].p_filesz > 0 && load_i < 0)
                load_i = i;
            if (im.ph[i].p_type == PT_DYNAMIC)
                dyn_i = i;
        }
        ck_assert(load_i >= 0 && dyn_i >= 0);
        if (!strcmp(w, "class"))
            im.eh->e_ident[EI_CLASS] = ELFCLASS32;
        else if (!strcmp(w, "data"))
            im.eh->e_ident[EI_DATA] =
                im.eh->e_ident[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
        else if (!strcmp(w, "version"))
            im.eh->e_ident[EI_VERSION] = EV_NONE;
        else if (!strcmp(w, "type"))
            im.eh->e_type = ET_EXEC;
        else if (!strcmp(w, "machine"))
            im.eh->e_machine = im.eh->e_machine == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
        else if (!strcmp(w, "phentsize"))
            im.eh->e_phentsize = 7;
        else if (!strcmp(w, "phnum"))
            im.eh->e_phnum = 0;
        else if (!strcmp(w, "phoff"))
            im.eh->e_phoff = im.len - 8;
        else if (!strcmp(w, "load_offset"))
            im.ph[load_i].p_offset = im.len;
        else if (!strcmp(w, "load_overflow"))
            im.ph[load_i].p_offset = (ElfW(Off))-16; /* offset + size wraps around */
        else if (!strcmp(w, "load_memsz"))
            im.ph[load_i].p_memsz = im.ph[load_i].p_filesz - 1;
        else if (!strcmp(w, "no_dynamic"))
            im.ph[dyn_i].p_type = PT_NULL;
        load_image(&im, im.len, w);
        expect("libhc-good.so", HC_CAND_REJECTED, cases[k].reason);
        free(im.data);
    }
}
END_TEST

START_TEST(test_non_matching_names_ignored)
{
    static const char *others[] = {"libhc-good.so.1", "hc-good.so", "libhc-.so", "libfoo.so",
                                   "libhc-good.txt", "libhc-good-.so"};
    make_dir(scratch("n"));
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        copy_file(STUB("good"), hc_test_path(scratch("n"), others[i]));
    copy_file(STUB("good"), scratch("n/libhc-good.so"));
    make_dir(scratch("n/libhc-dir.so")); /* a directory with a plugin's name */

    load(scratch("n"), NULL);
    ck_assert_int_eq(reg.n_candidates, 1);
    expect("libhc-good.so", HC_CAND_LOADED, NULL);

    /* Named explicitly, a wrongly named file is reported, not ignored. */
    load(scratch("n/libfoo.so"), NULL);
    ck_assert_int_eq(reg.n_candidates, 1);
    expect("libfoo.so", HC_CAND_REJECTED, "does not match");
}
END_TEST

START_TEST(test_missing_path_entry)
{
    load("/nonexistent/hotcold-plugins:" STUB("good"), NULL);
    ck_assert_int_eq(reg.n_candidates, 1);
    expect("libhc-good.so", HC_CAND_LOADED, NULL);
    ck_assert(log_has(HC_LOG_INFO, "/nonexistent/hotcold-plugins", NULL));
}
END_TEST

/* ---- choosing between candidates ------------------------------------------ */

START_TEST(test_two_variants)
{
    /* Either order: the higher probe wins, not the earlier file. */
    const char *paths[] = {STUB("duo-low") ":" STUB("duo-high"),
                           STUB("duo-high") ":" STUB("duo-low")};
    for (int k = 0; k < 2; k++) {
        load(paths[k], NULL);
        ck_assert_int_eq(reg.n_plugins, 1);
        expect("libhc-duo-high.so", HC_CAND_LOADED, NULL);
        const hc_plugin_candidate *c = expect("libhc-duo-low.so", HC_CAND_SHADOWED, "duo-high");
        ck_assert_int_eq(c->probe, 5);
        hc_plugin *pl = hc_registry_find(&reg, "duo");
        ck_assert_ptr_nonnull(pl);
        ck_assert_str_eq(pl->variant, "high");
        ck_assert_int_eq(pl->probe, 20);
        ck_assert(log_has(HC_LOG_INFO, "[duo-high] stub init", NULL));
    }
}
END_TEST

START_TEST(test_best_variant_init_fails)
{
    load(STUB("trio-best") ":" STUB("trio-ok"), NULL);
    expect("libhc-trio-best.so", HC_CAND_REJECTED, "simulated driver failure");
    expect("libhc-trio-ok.so", HC_CAND_LOADED, NULL);
    hc_plugin *pl = hc_registry_find(&reg, "trio");
    ck_assert_ptr_nonnull(pl);
    ck_assert_str_eq(pl->variant, "ok");
}
END_TEST

START_TEST(test_select)
{
    const char *path = STUB("good") ":" STUB("nodev") ":" STUB("duo-low") ":" STUB("duo-high");
    setenv("HOTCOLD_PLUGINS", "good,duo-low", 1);
    load(path, NULL);
    expect("libhc-good.so", HC_CAND_LOADED, NULL);
    expect("libhc-duo-low.so", HC_CAND_LOADED, NULL); /* the only eligible duo */
    const hc_plugin_candidate *c = expect("libhc-nodev.so", HC_CAND_FILTERED, "HOTCOLD_PLUGINS");
    ck_assert_int_eq(c->probe, -1); /* never opened */
    expect("libhc-duo-high.so", HC_CAND_FILTERED, NULL);

    /* The option overrides the environment. */
    load(path, "nodev");
    expect("libhc-nodev.so", HC_CAND_LOADED, NULL);
    expect("libhc-good.so", HC_CAND_FILTERED, "plugins option");
    unsetenv("HOTCOLD_PLUGINS");

    load(path, " duo , ");
    expect("libhc-duo-high.so", HC_CAND_LOADED, NULL);
    expect("libhc-duo-low.so", HC_CAND_SHADOWED, NULL);
    expect("libhc-good.so", HC_CAND_FILTERED, NULL);

    load(path, "duo,duo-low"); /* a union: every duo stays eligible */
    expect("libhc-duo-high.so", HC_CAND_LOADED, NULL);

    load(path, ", ,"); /* names nothing: no filter */
    ck_assert_int_eq(reg.n_plugins, 3);

    load(path, "cpu");
    ck_assert_int_eq(reg.n_plugins, 0);
    for (int i = 0; i < reg.n_candidates; i++)
        ck_assert_int_eq(reg.candidates[i].state, HC_CAND_FILTERED);
}
END_TEST

START_TEST(test_select_matches_nothing)
{
    const char *path = STUB("good") ":" STUB("duo-low") ":" STUB("duo-high");
    load(path, "good,duo-high");
    ck_assert_str_eq(reg.select_note, "");

    /* One entry names nothing found: said, with the names that were. */
    load(path, "good, vulcan");
    ck_assert_int_eq(reg.n_plugins, 1);
    ck_assert_msg(strstr(reg.select_note, "'vulcan' matches no plugin found") &&
                      strstr(reg.select_note, "(found: good, duo-low, duo-high)") &&
                      !strstr(reg.select_note, "every plugin"),
                  "note: %s", reg.select_note);
    ck_assert(log_has(HC_LOG_WARN, "'vulcan' matches no plugin found", NULL));

    /* Nothing matches: every plugin is filtered out, and the note says so. */
    load(path, "missing,cpu-avx2");
    ck_assert_int_eq(reg.n_plugins, 0);
    ck_assert_msg(strstr(reg.select_note, "'missing', 'cpu-avx2' match no plugin found, so every "
                                          "plugin is filtered out") != NULL,
                  "note: %s", reg.select_note);
    ck_assert_msg(strstr(reg.select_note, "the plugins option=missing,cpu-avx2") != NULL, "note: %s",
                  reg.select_note);

    /* A variant that does not exist of a family that does. */
    load(path, "duo-medium");
    ck_assert_msg(strstr(reg.select_note, "'duo-medium' matches no plugin found"), "note: %s",
                  reg.select_note);
}
END_TEST

/* ---- an unreadable plugin folder ------------------------------------------- */

/* Root reads a mode-000 folder anyway (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH),
 * so the tests take those two capabilities out of the effective set for the
 * call and put them back after: the folder is then as unreadable to the
 * loader as it is to any other user.  Returns 1 if they were dropped (or
 * were never there), 0 if not. */
static struct __user_cap_header_struct cap_hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
static struct __user_cap_data_struct cap_saved[2];

static int drop_dac_caps(void)
{
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &cap_hdr, cap_saved) != 0)
        return 0;
    memcpy(data, cap_saved, sizeof data);
    const unsigned bits[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH};
    for (size_t i = 0; i < 2; i++)
        data[bits[i] / 32].effective &= ~(1u << (bits[i] % 32));
    return syscall(SYS_capset, &cap_hdr, data) == 0;
}

static void restore_caps(void)
{
    ck_assert_int_eq(syscall(SYS_capset, &cap_hdr, cap_saved), 0);
}

/* A folder holding a good plugin that this process cannot list, or NULL
 * (then the caller says skipped). */
static const char *locked_folder(void)
{
    make_dir(scratch("locked"));
    copy_file(STUB("good"), scratch("locked/libhc-good.so"));
    ck_assert_int_eq(chmod(scratch("locked"), 0), 0);
    if (!drop_dac_caps())
        return NULL;
    DIR *d = opendir(scratch("locked"));
    if (d) { /* still readable: some other privilege we cannot drop */
        closedir(d);
        restore_caps();
        return NULL;
    }
    return scratch("locked");
}

static void unlock_folder(void)
{
    chmod(scratch("locked"), 0700); /* so teardown can remove it */
}

START_TEST(test_unreadable_dir)
{
    const char *dir = locked_folder();
    if (!dir) {
        unlock_folder();
        printf("test_unreadable_dir: skipped: cannot make a folder unreadable to this process\n");
        return;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", dir, STUB("duo-high"));
    load(path, NULL);
    restore_caps();
    unlock_folder();
    ck_assert_int_eq(reg.n_entries, 2);
    ck_assert_str_eq(reg.entries[0].path, dir);
    ck_assert_int_eq(reg.entries[0].missing, 0);
    ck_assert_msg(strstr(reg.entries[0].problem, "cannot read the folder: Permission denied"),
                  "problem: '%s'", reg.entries[0].problem);
    ck_assert(log_has(HC_LOG_INFO, dir, "Permission denied"));
    ck_assert_str_eq(reg.entries[1].problem, "");
    ck_assert_int_eq(reg.n_candidates, 1); /* only duo-high */
    expect("libhc-duo-high.so", HC_CAND_LOADED, NULL);

    /* A missing entry is marked missing, with no problem. */
    load("/nonexistent/hotcold-plugins", NULL);
    ck_assert_int_eq(reg.n_entries, 1);
    ck_assert_int_eq(reg.entries[0].missing, 1);
    ck_assert_str_eq(reg.entries[0].problem, "");
}
END_TEST

/* ---- the search path ------------------------------------------------------- */

START_TEST(test_path_file_and_dir)
{
    make_dir(scratch("d1"));
    copy_file(STUB("good"), scratch("d1/libhc-good.so"));
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", scratch("d1"), STUB("duo-high"));
    load(path, NULL);
    ck_assert_int_eq(reg.n_candidates, 2);
    ck_assert_str_eq(reg.candidates[0].path, scratch("d1/libhc-good.so"));
    ck_assert_str_eq(reg.candidates[1].path, STUB("duo-high"));
    ck_assert_int_eq(reg.n_plugins, 2);
    expect("libhc-good.so", HC_CAND_LOADED, NULL);
    expect("libhc-duo-high.so", HC_CAND_LOADED, NULL);
}
END_TEST

START_TEST(test_duplicates)
{
    /* The same file reached as a file and through its directory: once. */
    load(STUB("good") ":" HC_STUB_DIR "/:" STUB("good"), NULL);
    ck_assert_int_eq(count_named("libhc-good.so"), 1);
    ck_assert_str_eq(cand("libhc-good.so")->path, STUB("good"));

    /* Through a symlink: still the same file. */
    make_dir(scratch("s"));
    ck_assert_int_eq(symlink(STUB("good"), scratch("s/libhc-good.so")), 0);
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", scratch("s"), STUB("good"));
    load(path, NULL);
    ck_assert_int_eq(reg.n_candidates, 1);
    expect("libhc-good.so", HC_CAND_LOADED, NULL);

    /* A different file of the same name: the first in the path wins. */
    make_dir(scratch("c"));
    copy_file(STUB("good"), scratch("c/libhc-good.so"));
    snprintf(path, sizeof path, "%s:%s", STUB("good"), scratch("c"));
    load(path, NULL);
    ck_assert_int_eq(reg.n_candidates, 2);
    ck_assert_int_eq(reg.candidates[0].state, HC_CAND_LOADED);
    ck_assert_int_eq(reg.candidates[1].state, HC_CAND_SHADOWED);
    ck_assert_int_eq(reg.candidates[1].probe, -1);
    ck_assert_ptr_nonnull(strstr(reg.candidates[1].reason, STUB("good")));
}
END_TEST

START_TEST(test_whole_stub_dir)
{
    static const struct {
        const char *name;
        int state;
    } want[] = {
        {"libhc-cut.so", HC_CAND_LOADED},        {"libhc-duo-high.so", HC_CAND_LOADED},
        {"libhc-duo-low.so", HC_CAND_SHADOWED},  {"libhc-example.so", HC_CAND_LOADED},
        {"libhc-good.so", HC_CAND_LOADED},       {"libhc-initfail.so", HC_CAND_REJECTED},
        {"libhc-major.so", HC_CAND_REJECTED},    {"libhc-misnamed.so", HC_CAND_REJECTED},
        {"libhc-nodev.so", HC_CAND_LOADED},      {"libhc-nodevold.so", HC_CAND_LOADED},
        {"libhc-nodevwhy.so", HC_CAND_LOADED},   {"libhc-noprobe.so", HC_CAND_REJECTED},
        {"libhc-nosym.so", HC_CAND_REJECTED},    {"libhc-nullaxpy.so", HC_CAND_REJECTED},
        {"libhc-nulltab.so", HC_CAND_REJECTED},  {"libhc-small.so", HC_CAND_REJECTED},
        {"libhc-trio-best.so", HC_CAND_REJECTED}, {"libhc-trio-ok.so", HC_CAND_LOADED},
        {"libhc-undef.so", HC_CAND_REJECTED},
    };
    const int n = (int)(sizeof want / sizeof want[0]);
    load(HC_STUB_DIR, NULL);
    ck_assert_int_eq(reg.n_candidates, n);
    /* Listed in name order, whatever order the directory returns. */
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(base_of(reg.candidates[i].path), want[i].name);
    for (int i = 0; i < n; i++)
        expect(want[i].name, want[i].state, NULL);
    ck_assert_int_eq(reg.n_plugins, 8);
}
END_TEST

static void search_entry_collect(void *user, const char *entry, const char *origin)
{
    char *buf = user;
    size_t used = strlen(buf);
    snprintf(buf + used, 4096 - used, "%s|%s\n", entry, origin);
}

START_TEST(test_search_path)
{
    char buf[4096] = "";
    hc_loader_options o = {.plugin_path = "/a::/b/", .exe_dir = "/opt/x/bin", .use_default_dirs = 1};
    ck_assert_int_eq(hc_loader_search_path(&o, search_entry_collect, buf), 5);
    /* user entries, then the install dir, then the executable's dirs */
    static const char user_part[] = "/a|plugin_path option\n/b/|plugin_path option\n";
    ck_assert_msg(strncmp(buf, user_part, sizeof user_part - 1) == 0, "%s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "|install dir\n/opt/x/bin|executable's dir\n"
                                      "/opt/x/bin/../lib/hotcold|"));

    buf[0] = 0;
    setenv("HOTCOLD_PLUGIN_PATH", "/env/one", 1);
    o.plugin_path = NULL;
    o.use_default_dirs = 0;
    ck_assert_int_eq(hc_loader_search_path(&o, search_entry_collect, buf), 1);
    ck_assert_str_eq(buf, "/env/one|$HOTCOLD_PLUGIN_PATH\n");
}
END_TEST

/* ---- the engine ------------------------------------------------------------ */

START_TEST(test_engine_devices)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    hc_engine_params p = hc_engine_default_params();
    p.plugin_path = STUB("good") ":" STUB("nodev") ":" STUB("major");
    p.plugins = "good,nodev,major"; /* keep out the real plugins of the default dirs */
    hc_engine *e = hc_engine_open(&p);
    ck_assert_msg(e != NULL, "%s", hc_last_error());

    ck_assert_int_eq(hc_engine_device_count(e), 2); /* good: 2, nodev: 0 */
    for (int i = 0; i < 2; i++) {
        hc_device_report d;
        ck_assert_int_eq(hc_engine_device_report(e, i, &d), 0);
        ck_assert_str_eq(d.family, "good");
        ck_assert_int_eq(d.index, i);
        ck_assert_int_eq(d.info.n_threads, (int)cpus); /* 0 = online CPUs */
        ck_assert_int_eq(d.info.kind, HC_DEVICE_SOFT);
    }
    hc_device_report d;
    ck_assert_int_eq(hc_engine_device_report(e, 2, &d), -1);

    ck_assert_int_eq(hc_engine_find_device(e, "good"), 0);
    ck_assert_int_eq(hc_engine_find_device(e, "good:0"), 0);
    ck_assert_int_eq(hc_engine_find_device(e, "good:1"), 1);
    static const char *none[] = {"good:2", "nodev", "nodev:0", "goo", "goodx", "good:",
                                 "good:-1", "good: 1", "good:1x", ":0", "", "cpu"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        ck_assert_msg(hc_engine_find_device(e, none[i]) == -1, "'%s' found", none[i]);
    /* ... each with why: from the registry's verdicts. */
    static const struct {
        const char *spec, *why;
    } whys[] = {
        {"good:2", "no device 'good:2': the good plugin has 2 devices, good:0 to good:1"},
        {"nodev", "no device 'nodev': nodev loaded, no devices: the plugin does not say why"},
        {"major", "no device 'major': major rejected: plugin ABI major 2"},
        /* the build's cpu plugins, from the default dirs */
        {"cpu", "cpu plugin found was filtered out: not selected by the plugins "
                "option=good,nodev,major"},
        /* a family no build has (cuda is built where nvcc is found) */
        {"npu", "no device 'npu': no plugin of family 'npu' was found on the plugin search path"},
    };
    for (size_t i = 0; i < sizeof whys / sizeof whys[0]; i++) {
        ck_assert_int_eq(hc_engine_find_device(e, whys[i].spec), -1);
        ck_assert_msg(strstr(hc_last_error(), whys[i].why) != NULL, "%s: '%s'", whys[i].spec,
                      hc_last_error());
    }

    int n = hc_engine_plugin_count(e), seen = 0;
    for (int i = 0; i < n; i++) {
        hc_plugin_report r;
        ck_assert_int_eq(hc_engine_plugin_report(e, i, &r), 0);
        if (!strcmp(r.family, "good") || !strcmp(r.family, "nodev")) {
            ck_assert_str_eq(r.state, "loaded");
            ck_assert_str_eq(r.reason, strcmp(r.family, "nodev") ? ""
                                       : "no devices: the plugin does not say why");
            seen++;
        } else if (!strcmp(r.family, "major")) {
            ck_assert_str_eq(r.state, "rejected");
            ck_assert_ptr_nonnull(strstr(r.reason, "major 2"));
            seen++;
        } else {
            ck_assert_str_eq(r.state, "filtered");
        }
    }
    ck_assert_int_eq(seen, 3);

    ck_assert_int_eq(hc_engine_set_threads(e, 5), 0);
    ck_assert_int_eq(hc_engine_device_report(e, 1, &d), 0);
    ck_assert_int_eq(d.info.n_threads, 5);
    ck_assert_int_eq(hc_engine_set_threads(e, 0), 0);
    ck_assert_int_eq(hc_engine_device_report(e, 0, &d), 0);
    ck_assert_int_eq(d.info.n_threads, (int)cpus);
    ck_assert_int_eq(hc_engine_set_threads(e, -1), -1);
    hc_engine_close(e);
}
END_TEST

START_TEST(test_engine_inits_lazily)
{
    hc_engine_params p = hc_engine_default_params();
    p.plugin_path = STUB("good") ":" STUB("duo-low") ":" STUB("duo-high") ":" STUB("trio-best")
                                 ":" STUB("trio-ok");
    p.plugins = "good,duo,trio";
    hc_engine *e = hc_engine_open(&p);
    ck_assert_msg(e != NULL, "%s", hc_last_error());
    ck_assert_msg(!log_has(HC_LOG_INFO, "stub init", NULL), "init at open; log:\n%s", g_log);

    /* Asking for one family initialises that family only. */
    ck_assert_int_eq(hc_engine_find_device(e, "good:1"), 1);
    ck_assert(log_has(HC_LOG_INFO, "[good] stub init", NULL));
    ck_assert_msg(!log_has(HC_LOG_INFO, "[duo-", NULL) && !log_has(HC_LOG_INFO, "[trio-", NULL),
                  "other families initialised; log:\n%s", g_log);
    hc_device_report d;
    ck_assert_int_eq(hc_engine_device_report(e, 1, &d), 0); /* known: nothing more inits */
    ck_assert_str_eq(d.family, "good");
    ck_assert(!log_has(HC_LOG_INFO, "[duo-", NULL));

    /* The list of everything initialises everything, choosing as an eager
     * load would: the best probe, the next variant when init fails. */
    ck_assert_int_eq(hc_engine_device_count(e), 6);
    ck_assert(log_has(HC_LOG_INFO, "[duo-high] stub init", NULL));
    ck_assert(!log_has(HC_LOG_INFO, "[duo-low] stub init", NULL));
    ck_assert(log_has(HC_LOG_INFO, "[trio-ok] stub init", NULL));
    ck_assert_int_eq(hc_engine_device_report(e, 1, &d), 0); /* indices handed out stay */
    ck_assert_str_eq(d.family, "good");
    int n = hc_engine_plugin_count(e);
    for (int i = 0; i < n; i++) {
        hc_plugin_report r;
        ck_assert_int_eq(hc_engine_plugin_report(e, i, &r), 0);
        ck_assert_str_ne(r.state, "deferred");
        if (!strcmp(r.family, "trio") && !strcmp(r.variant, "best"))
            ck_assert_msg(!strcmp(r.state, "rejected") && strstr(r.reason, "simulated driver"),
                          "%s: %s", r.state, r.reason);
        if (!strcmp(r.family, "duo") && !strcmp(r.variant, "low"))
            ck_assert_str_eq(r.state, "shadowed");
    }
    hc_engine_close(e);

    /* The plugin report alone also initialises everything. */
    g_log[0] = 0;
    g_log_len = 0;
    e = hc_engine_open(&p);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_gt(hc_engine_plugin_count(e), 0);
    ck_assert(log_has(HC_LOG_INFO, "[duo-high] stub init", NULL));
    ck_assert(log_has(HC_LOG_INFO, "[good] stub init", NULL));
    hc_engine_close(e);
}
END_TEST

START_TEST(test_engine_params)
{
    hc_engine_params p = hc_engine_default_params();
    ck_assert_uint_eq(p.size, sizeof p);
    ck_assert_ptr_null(p.plugin_path);
    ck_assert_ptr_null(p.plugins);
    ck_assert_int_eq(p.n_threads, 0);

    p.size = 0;
    ck_assert_ptr_null(hc_engine_open(&p));
    ck_assert_ptr_nonnull(strstr(hc_last_error(), "size"));

    /* set_threads is only called where the table has it: "cut" stops
     * before it, so its devices keep the count given at init.  (Asking for
     * the device first: plugins are initialised when first needed.) */
    p = hc_engine_default_params();
    p.plugin_path = STUB("cut");
    p.plugins = "cut";
    p.n_threads = 2;
    hc_engine *e = hc_engine_open(&p);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(hc_engine_find_device(e, "cut"), 0);
    ck_assert_int_eq(hc_engine_set_threads(e, 7), 0);
    hc_device_report d;
    ck_assert_int_eq(hc_engine_device_report(e, 0, &d), 0);
    ck_assert_int_eq(d.info.n_threads, 2);
    hc_engine_close(e);

    /* A plugin initialised after set_threads is told the new count. */
    e = hc_engine_open(&p);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(hc_engine_set_threads(e, 7), 0);
    ck_assert_int_eq(hc_engine_device_report(e, 0, &d), 0);
    ck_assert_int_eq(d.info.n_threads, 7);
    hc_engine_close(e);
}
END_TEST

/* ---- the documentation's example plugin ------------------------------------ */

static hc_buffer *upload_new(const hc_plugin_ops *o, hc_device *dev, hc_stream *s,
                             const void *data, uint64_t bytes)
{
    hc_buffer *b = NULL;
    ck_assert_int_eq(o->buffer_alloc(dev, bytes, &b), HC_OK);
    ck_assert_int_eq(o->upload(s, (hc_ref){b, 0}, data, bytes), HC_OK);
    return b;
}

START_TEST(test_example_plugin)
{
    load(STUB("example"), NULL);
    expect("libhc-example.so", HC_CAND_LOADED, NULL);
    hc_plugin *pl = hc_registry_find(&reg, "example");
    ck_assert_ptr_nonnull(pl);
    const hc_plugin_ops *o = pl->ops;
    ck_assert(HC_OPS_HAS(o, buffer_host_ptr));
    ck_assert(!HC_OPS_HAS(o, rmsnorm));
    ck_assert_int_eq(o->device_count(pl->ctx), 1);

    hc_device *dev = NULL;
    hc_stream *s = NULL;
    ck_assert_int_eq(o->device_open(pl->ctx, 0, &dev), HC_OK);
    ck_assert_int_eq(o->stream_create(dev, &s), HC_OK);

    /* W is 3 x 4; two tokens.  Worked by hand:
     *   x0 = (1, .5, -1, 2): row0 1+1-3+8 = 7, row1 0-.5-.5+4 = 3, row2 -2+0-1-2 = -5
     *   x1 = e1 picks column 1: (2, -1, 0) */
    const float W[12] = {1, 2, 3, 4, 0, -1, 0.5f, 2, -2, 0, 1, -1};
    const float X[8] = {1, 0.5f, -1, 2, 0, 1, 0, 0};
    const float want_mm[6] = {7, 3, -5, 2, -1, 0};
    float Y[6] = {0};
    hc_buffer *bw = upload_new(o, dev, s, W, sizeof W);
    hc_buffer *bx = upload_new(o, dev, s, X, sizeof X);
    hc_buffer *by = upload_new(o, dev, s, Y, sizeof Y);
    ck_assert_int_eq(o->matmul(s, HC_TYPE_F32, (hc_ref){bw, 0}, 3, 4, (hc_ref){bx, 0}, 2,
                               (hc_ref){by, 0}),
                     HC_OK);
    ck_assert_int_eq(o->stream_sync(s), HC_OK);
    ck_assert_int_eq(o->download(s, Y, (hc_ref){by, 0}, sizeof Y), HC_OK);
    ck_assert_int_eq(o->stream_sync(s), HC_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(Y[i] == want_mm[i], "matmul y[%d] = %g, want %g", i, Y[i], want_mm[i]);

    /* matvec_rows over rows {2, 0} of token 0: row 1 keeps its 99. */
    const float y99[3] = {99, 99, 99};
    const int32_t rows20[2] = {2, 0};
    hc_buffer *bi = upload_new(o, dev, s, rows20, sizeof rows20);
    ck_assert_int_eq(o->upload(s, (hc_ref){by, 0}, y99, sizeof y99), HC_OK);
    ck_assert_int_eq(o->matvec_rows(s, HC_TYPE_F32, (hc_ref){bw, 0}, 3, 4, (hc_ref){bx, 0}, 1,
                                    (hc_ref){bi, 0}, 2, (hc_ref){by, 0}),
                     HC_OK);
    float y3[3];
    ck_assert_int_eq(o->download(s, y3, (hc_ref){by, 0}, sizeof y3), HC_OK);
    ck_assert_int_eq(o->stream_sync(s), HC_OK);
    ck_assert(y3[0] == 7 && y3[1] == 99 && y3[2] == -5);

    /* axpy_rows, W read as Wt (3 x 4), h = (1, 0, 2), rows {0, 2}:
     * y = (.5,0,0,0) + 1*(1,2,3,4) + 2*(-2,0,1,-1) = (-2.5, 2, 5, 2). */
    const float h[3] = {1, 0, 2}, y0[4] = {0.5f, 0, 0, 0}, want_ax[4] = {-2.5f, 2, 5, 2};
    const int32_t rows02[2] = {0, 2};
    hc_buffer *bh = upload_new(o, dev, s, h, sizeof h);
    hc_buffer *bi2 = upload_new(o, dev, s, rows02, sizeof rows02);
    hc_buffer *by4 = upload_new(o, dev, s, y0, sizeof y0);
    ck_assert_int_eq(o->axpy_rows(s, HC_TYPE_F32, (hc_ref){bw, 0}, 3, 4, (hc_ref){bh, 0}, 1,
                                  (hc_ref){bi2, 0}, 2, (hc_ref){by4, 0}),
                     HC_OK);
    float y4[4];
    ck_assert_int_eq(o->download(s, y4, (hc_ref){by4, 0}, sizeof y4), HC_OK);
    ck_assert_int_eq(o->stream_sync(s), HC_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(y4[i] == want_ax[i], "axpy y[%d] = %g, want %g", i, y4[i], want_ax[i]);

    /* Refusals are status codes with a message, never crashes. */
    ck_assert_int_eq(o->matmul(s, (hc_type)7, (hc_ref){bw, 0}, 3, 4, (hc_ref){bx, 0}, 1,
                               (hc_ref){by, 0}),
                     HC_E_UNSUPPORTED);
    ck_assert_str_ne(o->last_error(pl->ctx), "");
    ck_assert_int_eq(o->matmul(s, HC_TYPE_F32, (hc_ref){bw, 0}, 4, 4, (hc_ref){bx, 0}, 1,
                               (hc_ref){by, 0}),
                     HC_E_INVALID);

    hc_buffer *bufs[] = {bw, bx, by, bi, bh, bi2, by4};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        o->buffer_free(bufs[i]);
    o->stream_destroy(s);
    o->device_close(dev);
}
END_TEST

/* ---- the Vulkan plugin keeps its driver mapped (issue 12 item 9) ----------- */

/* The files mapped into this process now, one path per line. */
static char *mapped_files(void)
{
    /* A /proc file has no size to ask for: read until the end. */
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    size_t n = 0, cap = 1 << 16;
    char *maps = malloc(cap);
    ck_assert_ptr_nonnull(maps);
    for (size_t got; (got = fread(maps + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            maps = realloc(maps, cap *= 2);
            ck_assert_ptr_nonnull(maps);
        }
    }
    maps[n] = 0;
    fclose(f);
    char *paths = calloc(n + 2, 1);
    ck_assert_ptr_nonnull(paths);
    size_t used = 0;
    for (char *line = strtok(maps, "\n"); line; line = strtok(NULL, "\n")) {
        const char *p = strchr(line, '/'); /* the path column, if the mapping has one */
        if (!p)
            continue;
        size_t len = strlen(p);
        paths[used++] = '\n';
        memcpy(paths + used, p, len);
        used += len;
    }
    paths[used] = '\n';
    free(maps);
    return paths;
}

static int is_mapped(const char *paths, const char *path)
{
    char needle[4200];
    snprintf(needle, sizeof needle, "\n%s\n", path);
    return strstr(paths, needle) != NULL;
}

START_TEST(test_vulkan_driver_stays_mapped)
{
    const char *plugin = HC_PLUGIN_BUILD_DIR "/libhc-vulkan.so";
    if (access(plugin, F_OK) != 0) {
        printf("test_vulkan_driver_stays_mapped: skipped: the Vulkan plugin is not built\n");
        return;
    }
    char *before = mapped_files();
    load(plugin, "vulkan");
    hc_plugin *pl = hc_registry_find(&reg, "vulkan");
    ck_assert_ptr_nonnull(pl);
    if (pl->ops->device_count(pl->ctx) == 0) {
        printf("test_vulkan_driver_stays_mapped: skipped: no Vulkan device (%s)\n",
               cand("libhc-vulkan.so")->reason);
        free(before);
        return;
    }
    /* What the instance brought in: the ICD and its libraries (on lavapipe
     * libvulkan_lvp.so and libLLVM), besides the plugin and libvulkan. */
    char *during = mapped_files();
    hc_registry_free(&reg); /* the plugin's shutdown: vkDestroyInstance */
    char *after = mapped_files();
    int n_new = 0, n_icd = 0, said = 0;
    for (char *line = strtok(during, "\n"); line; line = strtok(NULL, "\n")) {
        if (is_mapped(before, line) || strstr(line, "/libhc-vulkan.so") ||
            strstr(line, "/libvulkan.so"))
            continue;
        n_new += 1;
        n_icd += strstr(line, "/libvulkan_") != NULL || strstr(line, "nvidia") != NULL;
        ck_assert_msg(is_mapped(after, line), "%s was unmapped at vkDestroyInstance", line);
        if (strstr(line, "/libvulkan_lvp.so") && !said++)
            printf("test_vulkan_driver_stays_mapped: %s still mapped after shutdown\n", line);
    }
    free(before);
    free(during);
    free(after);
    if (n_new == 0)
        printf("test_vulkan_driver_stays_mapped: skipped: the driver was mapped before the test\n");
    else
        ck_assert_msg(n_icd > 0, "no Vulkan driver among the %d libraries the instance mapped",
                      n_new);
}
END_TEST

/* ---- `hotcold devices` ----------------------------------------------------- */

/* Run a shell command; its stdout+stderr into out; returns the exit code. */
static int run(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen %s", cmd);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = 0;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A line of out that contains both a and b. */
static int line_has(const char *out, const char *a, const char *b)
{
    for (const char *line = out; *line;) {
        const char *end = strchrnul(line, '\n');
        char buf[2048];
        snprintf(buf, sizeof buf, "%.*s", (int)(end - line), line);
        if (strstr(buf, a) && strstr(buf, b))
            return 1;
        line = *end ? end + 1 : end;
    }
    return 0;
}

static char out[1 << 16];

START_TEST(test_cli_lists_cpu_plugin)
{
    /* CTest points HOTCOLD_PLUGIN_PATH at the build's plugin directory. */
    ck_assert_int_eq(run(HC_CLI " devices 2>&1", out, sizeof out), 0);
    ck_assert_msg(line_has(out, "loaded", "/libhc-cpu"),
                  "the CPU plugin is not listed as loaded:\n%s", out);
    ck_assert_msg(line_has(out, "cpu:0", ""), "no cpu:0 device:\n%s", out);
}
END_TEST

START_TEST(test_cli_explains_stubs)
{
    setenv("HOTCOLD_PLUGIN_PATH", HC_STUB_DIR, 1);
    ck_assert_int_eq(run(HC_CLI " devices -t 3 2>&1", out, sizeof out), 0);
    ck_assert_msg(line_has(out, HC_STUB_DIR, "$HOTCOLD_PLUGIN_PATH"), "search path:\n%s", out);
    ck_assert_msg(line_has(out, "rejected", "/libhc-major.so"), "%s", out);
    ck_assert_msg(line_has(out, "why:", "major 2"), "%s", out);
    ck_assert_msg(line_has(out, "shadowed", "/libhc-duo-low.so"), "%s", out);
    ck_assert_msg(line_has(out, "why:", "probe: cannot run on this machine"), "%s", out);
    ck_assert_msg(line_has(out, "loaded", "/libhc-good.so"), "%s", out);
    ck_assert_msg(line_has(out, "good:1", "stub good device 1"), "%s", out);
    ck_assert_msg(line_has(out, "3 threads", "3.0 GiB total"), "%s", out);
}
END_TEST

/* Run cmd with output captured, in a child that cannot raise
 * CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH again: root's capabilities are
 * recomputed at exec from the bounding set, so they leave that set there.
 * Returns the exit code; 77 when `probe_dir` could still be listed (the
 * caller says skipped). */
static int run_without_dac(const char *cmd, const char *probe_dir, char *buf, size_t len)
{
    char file[4096];
    snprintf(file, sizeof file, "%s", scratch("nodac.out"));
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0); /* EPERM without CAP_SETPCAP: */
        prctl(PR_CAPBSET_DROP, CAP_DAC_READ_SEARCH, 0, 0, 0); /* then we had none anyway */
        char script[16384];
        snprintf(script, sizeof script, "if ls '%s' >/dev/null 2>&1; then exit 77; fi; %s >'%s' 2>&1",
                 probe_dir, cmd, file);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    size_t n = 0;
    char *data = rc == 77 ? NULL : hc_test_read_file(file, &n);
    snprintf(buf, len, "%s", data ? data : "");
    free(data);
    return rc;
}

START_TEST(test_cli_unreadable_dir)
{
    make_dir(scratch("locked"));
    copy_file(STUB("good"), scratch("locked/libhc-good.so"));
    ck_assert_int_eq(chmod(scratch("locked"), 0), 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "HOTCOLD_PLUGIN_PATH='%s' '%s' devices", scratch("locked"), HC_CLI);
    int rc = run_without_dac(cmd, scratch("locked"), out, sizeof out);
    unlock_folder();
    if (rc == 77) {
        printf("test_cli_unreadable_dir: skipped: cannot make a folder unreadable to a child\n");
        return;
    }
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(line_has(out, "1. ", "/locked  ($HOTCOLD_PLUGIN_PATH)"), "%s", out);
    ck_assert_msg(line_has(out, "why:", "cannot read the folder: Permission denied"), "%s", out);
}
END_TEST

/* Did a stub's init() run since the log was cleared?  ($HC_STUB_INIT_LOG) */
static int stub_inits(const char *log_path, const char *name)
{
    size_t n = 0;
    char *text = hc_test_read_file(log_path, &n);
    int found = text && line_has(text, name, "");
    free(text);
    return found;
}

START_TEST(test_cli_tools_init_no_gpu_plugin)
{
    /* Issue 12 item 9: the tools that need no GPU must not initialise a GPU
     * plugin (on the Vulkan plugin: create an instance).  The stub "good"
     * stands for one; every stub's init() writes to $HC_STUB_INIT_LOG. */
    const char *log_path = scratch("inits.log");
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", HC_PLUGIN_BUILD_DIR, STUB("good"));
    setenv("HOTCOLD_PLUGIN_PATH", path, 1);
    setenv("HC_STUB_INIT_LOG", log_path, 1);
    const char *relu = HC_MODELS_DIR "/relu2M.gguf";
    const char *text = HC_TEST_DATA "/corpus/tinystories_valid.txt";
    char cmds[5][8192];
    snprintf(cmds[0], sizeof cmds[0], "'%s' quantize '%s' '%s' q8_0", HC_CLI,
             HC_MODELS_DIR "/stories260K.gguf", scratch("q8.gguf"));
    snprintf(cmds[1], sizeof cmds[1],
             "'%s' mkmodel -o '%s' --n-embd 64 --n-ff 128 --n-layer 1 --n-head 2 --n-vocab 300",
             HC_CLI, scratch("mk.gguf"));
    snprintf(cmds[2], sizeof cmds[2], "'%s' profile -m '%s' --text '%s' --max-tokens 64 -q -o '%s'",
             HC_CLI, relu, text, scratch("act.gguf"));
    snprintf(cmds[3], sizeof cmds[3],
             "'%s' train-predictor -m '%s' --text '%s' --max-samples 128 --max-heldout 64 "
             "--epochs 1 --rank 16 -q -o '%s'",
             HC_CLI, relu, text, scratch("pred.gguf"));
    snprintf(cmds[4], sizeof cmds[4], "'%s' run -m '%s' -n 2 -p Once", HC_CLI, relu);
    for (int i = 0; i < 5; i++) {
        unlink(log_path);
        char cmd[8300];
        snprintf(cmd, sizeof cmd, "%.8191s 2>&1", cmds[i]);
        int rc = run(cmd, out, sizeof out);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", cmds[i], rc, out);
        ck_assert_msg(!stub_inits(log_path, "good"), "%s initialised the plugin 'good'", cmds[i]);
    }
    /* Control: the stub is on the path, and `devices` (which lists every
     * plugin) does initialise it. */
    unlink(log_path);
    snprintf(path, sizeof path, "'%s' devices 2>&1", HC_CLI);
    ck_assert_int_eq(run(path, out, sizeof out), 0);
    ck_assert_msg(stub_inits(log_path, "good"), "devices did not initialise 'good':\n%s", out);
    ck_assert_msg(line_has(out, "loaded", "/libhc-good.so"), "%s", out);
    unsetenv("HC_STUB_INIT_LOG");
}
END_TEST

START_TEST(test_cli_warns_software_only)
{
    /* The stub "good" reports two HC_DEVICE_SOFT devices: with only it and
     * the cpu plugin, the only "GPU" is a software rasteriser. */
    setenv("HOTCOLD_PLUGIN_PATH", HC_STUB_DIR, 1);
    setenv("HOTCOLD_PLUGINS", "cpu,good", 1);
    ck_assert_int_eq(run(HC_CLI " devices 2>&1", out, sizeof out), 0);
    ck_assert_msg(line_has(out, "good:0", "stub good device 0"), "%s", out);
    ck_assert_msg(line_has(out, "software rasteriser (runs on the CPU)", "3.0 GiB total"), "%s",
                  out);
    ck_assert_msg(line_has(out, "warning: the only GPU device is a software rasteriser: good:0",
                           "(stub good device 0)"),
                  "%s", out);
    /* No software device, no warning. */
    setenv("HOTCOLD_PLUGINS", "cpu", 1);
    ck_assert_int_eq(run(HC_CLI " devices 2>&1", out, sizeof out), 0);
    ck_assert_msg(!strstr(out, "software rasteriser"), "%s", out);
    unsetenv("HOTCOLD_PLUGINS");
}
END_TEST

START_TEST(test_cli_options)
{
    ck_assert_int_eq(run(HC_CLI " devices --help 2>&1", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: hotcold devices"));
    ck_assert_int_eq(run(HC_CLI " devices -t many 2>&1", out, sizeof out), 2);
    /* -t takes what run and bench take: 1..1024 (0 was accepted here). */
    static const char *const cmds[] = {"devices", "run", "bench"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, HC_CLI " %s -t 0 2>&1", cmds[i]);
        ck_assert_msg(run(cmd, out, sizeof out) == 2, "%s -t 0: %s", cmds[i], out);
        ck_assert_msg(strstr(out, "bad value '0' for --threads"), "%s -t 0: %s", cmds[i], out);
        snprintf(cmd, sizeof cmd, HC_CLI " %s -t 1025 2>&1", cmds[i]);
        ck_assert_msg(run(cmd, out, sizeof out) == 2, "%s -t 1025: %s", cmds[i], out);
    }
    ck_assert_int_eq(run(HC_CLI " devices -t 1024 2>&1", out, sizeof out), 0);
    ck_assert_int_eq(run(HC_CLI " devices --bogus 2>&1", out, sizeof out), 2);
    ck_assert_int_eq(run(HC_CLI " devices extra 2>&1", out, sizeof out), 2);
}
END_TEST

static int dir_has_plugins(const char *dir)
{
    char f[32], v[32];
    int n = 0;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -1 '%s' 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    char line[512];
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        n += hc_plugin_parse_name(line, f, sizeof f, v, sizeof v) == 0;
    }
    if (p)
        pclose(p);
    return n;
}

static void count_plugins_in(void *user, const char *entry, const char *origin)
{
    (void)origin;
    *(int *)user += dir_has_plugins(entry);
}

START_TEST(test_cli_no_plugins)
{
    /* A copy of the command outside the build tree, with an empty plugin
     * path, finds nothing (unless plugins are installed system-wide). */
    make_dir(scratch("cli"));
    make_dir(scratch("cli/bin"));
    make_dir(scratch("cli/empty"));
    copy_file(HC_CLI, scratch("cli/bin/hotcold"));
    ck_assert_int_eq(chmod(scratch("cli/bin/hotcold"), 0755), 0);

    hc_loader_options o = {.plugin_path = scratch("cli/empty"), .exe_dir = scratch("cli/bin"),
                           .use_default_dirs = 1};
    int installed = 0;
    hc_loader_search_path(&o, count_plugins_in, &installed);
    if (installed) {
        printf("test_cli_no_plugins: %d plugin(s) installed system-wide, "
               "'no plugins' message not checked\n", installed);
        return;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "HOTCOLD_PLUGIN_PATH='%s' '%s' devices 2>&1", scratch("cli/empty"),
             scratch("cli/bin/hotcold"));
    ck_assert_int_eq(run(cmd, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "no plugins found") && strstr(out, "HOTCOLD_PLUGIN_PATH="),
                  "%s", out);
    ck_assert_msg(line_has(out, "devices: 0", ""), "%s", out);
}
END_TEST

static Suite *loader_suite(void)
{
    Suite *s = suite_create("loader");
    TCase *t = tcase_create("loader");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_parse_name);
    tcase_add_test(t, test_good_plugin);
    tcase_add_test(t, test_wrong_major);
    tcase_add_test(t, test_cut_table);
    tcase_add_test(t, test_table_too_small);
    tcase_add_test(t, test_probe_zero);
    tcase_add_test(t, test_missing_entry_symbol);
    tcase_add_test(t, test_entry_returns_null);
    tcase_add_test(t, test_init_fails);
    tcase_add_test(t, test_required_entry_null);
    tcase_add_test(t, test_family_mismatch);
    tcase_add_test(t, test_zero_devices);
    tcase_add_test(t, test_not_elf);
    tcase_add_test(t, test_dlopen_fails);
    tcase_add_test(t, test_truncated_elf);
    tcase_add_test(t, test_corrupt_elf_headers);
    tcase_add_test(t, test_non_matching_names_ignored);
    tcase_add_test(t, test_missing_path_entry);
    tcase_add_test(t, test_two_variants);
    tcase_add_test(t, test_best_variant_init_fails);
    tcase_add_test(t, test_select);
    tcase_add_test(t, test_select_matches_nothing);
    tcase_add_test(t, test_unreadable_dir);
    tcase_add_test(t, test_path_file_and_dir);
    tcase_add_test(t, test_duplicates);
    tcase_add_test(t, test_whole_stub_dir);
    tcase_add_test(t, test_search_path);
    tcase_add_test(t, test_engine_devices);
    tcase_add_test(t, test_engine_params);
    tcase_add_test(t, test_engine_inits_lazily);
    tcase_add_test(t, test_example_plugin);
    suite_add_tcase(s, t);

    TCase *vk = tcase_create("vulkan");
    tcase_add_checked_fixture(vk, setup, teardown);
    tcase_set_timeout(vk, 60);
    tcase_add_test(vk, test_vulkan_driver_stays_mapped);
    suite_add_tcase(s, vk);

    TCase *cli = tcase_create("cli");
    tcase_add_checked_fixture(cli, setup, teardown);
    tcase_set_timeout(cli, 60);
    tcase_add_test(cli, test_cli_explains_stubs);
    tcase_add_test(cli, test_cli_options);
    tcase_add_test(cli, test_cli_unreadable_dir);
    tcase_add_test(cli, test_cli_warns_software_only);
    tcase_add_test(cli, test_cli_tools_init_no_gpu_plugin);
    tcase_add_test(cli, test_cli_no_plugins);
    /* Needs the CPU plugin (plugins/cpu-avx2) in the build's plugin dir. */
    tcase_add_test(cli, test_cli_lists_cpu_plugin);
    suite_add_tcase(s, cli);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(loader_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

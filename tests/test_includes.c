/*
 * The source tree's shape, checked: what may include what, and what the
 * shared library exports.
 *
 *  - tools/ use the public headers (include/hotcold/) and their own, never
 *    a core-internal one: the command is built as any program against
 *    libhotcold would be;
 *  - a test not named WHITEBOX in its tests/<suite>.cmake entry (and the helpers
 *    every test links) use public headers only;
 *  - libhotcold.so exports exactly the HC_API functions of the public
 *    headers (everything else is built hidden).
 * A violation names the file and the include (or symbol).  That core/ has
 * no include circle is tests/include_cycles.sh's check (module level).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"

#define MAX_FILES 512
#define MAX_INCLUDES 64

/* ---- reading sources ---------------------------------------------------- */

typedef struct src {
    char path[512];         /* relative to the source tree */
    char inc[MAX_INCLUDES][128];
    int n_inc;
} src;

static const char *root(const char *rel)
{
    return hc_test_path(HC_SOURCE_DIR, rel);
}

static int exists(const char *rel)
{
    struct stat st;
    return stat(root(rel), &st) == 0;
}

/* The quoted includes of one file. */
static void read_src(const char *rel, src *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", rel);
    FILE *f = fopen(root(rel), "r");
    ck_assert_msg(f != NULL, "cannot read %s", rel);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "#include \"", 10) != 0)
            continue;
        const char *q = strchr(p + 10, '"');
        if (!q || s->n_inc == MAX_INCLUDES)
            continue;
        snprintf(s->inc[s->n_inc++], sizeof s->inc[0], "%.*s", (int)(q - (p + 10)), p + 10);
    }
    fclose(f);
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Every .c/.h file below `dir` (relative), recursively, into v. */
static int list_sources(const char *dir, src *v, int n)
{
    DIR *d = opendir(root(dir));
    ck_assert_msg(d != NULL, "cannot list %s", dir);
    struct dirent *de;
    char sub[512];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(root(sub), &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            n = list_sources(sub, v, n);
        } else if (has_suffix(de->d_name, ".c") || has_suffix(de->d_name, ".h")) {
            ck_assert_int_lt(n, MAX_FILES);
            read_src(sub, &v[n++]);
        }
    }
    closedir(d);
    return n;
}

/* An include a program outside core/ may use: a public header, or a file
 * beside the including one. */
static int allowed_outside_core(const src *s, const char *inc)
{
    if (strncmp(inc, "hotcold/", 8) == 0 && exists(hc_test_path("include", inc)))
        return 1;
    char dir[512], rel[700];
    snprintf(dir, sizeof dir, "%s", s->path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    snprintf(rel, sizeof rel, "%s/%s", dir, inc);
    return strchr(inc, '/') == NULL && exists(rel);
}

START_TEST(tools_use_public_headers)
{
    static src v[MAX_FILES];
    int n = list_sources("tools", v, 0), bad = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < v[i].n_inc; k++)
            if (!allowed_outside_core(&v[i], v[i].inc[k])) {
                printf("%s includes \"%s\": a core-internal header (tools use include/hotcold/)\n",
                       v[i].path, v[i].inc[k]);
                bad++;
            }
    fflush(stdout); /* the lines above, before Check ends the case */
    ck_assert_msg(bad == 0, "%d include(s) of core-internal headers under tools/", bad);
}
END_TEST

/* ---- tests --------------------------------------------------------------- */

/* The suites the tests/<suite>.cmake files declare: name, WHITEBOX or not. */
typedef struct suite_decl {
    char name[64];
    int whitebox;
} suite_decl;

static int read_suites(suite_decl *v, int max)
{
    DIR *d = opendir(root("tests"));
    ck_assert(d != NULL);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)) != NULL) {
        if (!has_suffix(de->d_name, ".cmake"))
            continue;
        char rel[300], line[1024];
        snprintf(rel, sizeof rel, "tests/%s", de->d_name);
        FILE *f = fopen(root(rel), "r");
        ck_assert(f != NULL);
        while (fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "hc_add_check_test(");
            if (!p || n == max)
                continue;
            p += strlen("hc_add_check_test(");
            size_t len = strcspn(p, " )\n");
            snprintf(v[n].name, sizeof v[n].name, "%.*s", (int)len, p);
            v[n].whitebox = strstr(p + len, " WHITEBOX") == p + len;
            n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

static int check_public_only(const char *rel)
{
    src s;
    int bad = 0;
    read_src(rel, &s);
    for (int k = 0; k < s.n_inc; k++)
        if (!allowed_outside_core(&s, s.inc[k])) {
            printf("%s includes \"%s\": only a WHITEBOX suite may (tests/<suite>.cmake)\n", rel,
                   s.inc[k]);
            bad++;
        }
    return bad;
}

START_TEST(blackbox_tests_use_public_headers)
{
    suite_decl v[64];
    int n = read_suites(v, 64), bad = 0, blackbox = 0;
    ck_assert_int_gt(n, 10); /* the parse found the suites */
    for (int i = 0; i < n; i++) {
        char rel[4400];
        snprintf(rel, sizeof rel, "tests/%s.c", v[i].name);
        if (v[i].whitebox || !exists(rel))
            continue;
        blackbox++;
        bad += check_public_only(rel);
    }
    /* Linked into every suite, black-box ones too. */
    bad += check_public_only("tests/test_util.c") + check_public_only("tests/test_util.h");
    fflush(stdout);
    ck_assert_int_gt(blackbox, 0);
    ck_assert_msg(bad == 0, "%d internal include(s) in black-box suites", bad);
}
END_TEST

/* ---- exports -------------------------------------------------------------- */

static int in_list(char (*list)[256], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

/* The HC_API function names of the public headers. */
static int declared_api(char (*out)[256], int max)
{
    static const char *const headers[] = {"include/hotcold/hotcold.h",
                                          "include/hotcold/toolchain.h",
                                          "include/hotcold/diag.h"};
    int n = 0;
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++) {
        FILE *f = fopen(root(headers[h]), "r");
        ck_assert_msg(f != NULL, "%s", headers[h]);
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "HC_API ", 7) != 0)
                continue;
            char *paren = strchr(line, '(');
            if (!paren)
                continue;
            char *end = paren;
            while (end > line && (end[-1] == '_' || (end[-1] >= 'a' && end[-1] <= 'z') ||
                                  (end[-1] >= '0' && end[-1] <= '9')))
                end--;
            ck_assert_int_lt(n, max);
            snprintf(out[n++], sizeof out[0], "%.*s", (int)(paren - end), end);
        }
        fclose(f);
    }
    return n;
}

START_TEST(shared_library_exports_the_public_api)
{
    static char declared[512][256], exported[512][256];
    const int n_decl = declared_api(declared, 512);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' 2>&1", HC_SHARED_LIB);
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    char line[512];
    int n_exp = 0, bad = 0;
    while (fgets(line, sizeof line, p)) {
        char addr[64], kind[8], name[256];
        if (sscanf(line, "%63s %7s %255s", addr, kind, name) != 3)
            continue;
        if (strchr("TtDdBbRrVvWw", kind[0]) == NULL)
            continue;
        ck_assert_int_lt(n_exp, 512);
        snprintf(exported[n_exp++], sizeof exported[0], "%s", name);
        if (!in_list(declared, n_decl, name)) {
            printf("libhotcold.so exports %s (%s), which no public header declares HC_API\n",
                   name, kind);
            bad++;
        }
    }
    ck_assert_int_eq(pclose(p), 0);
    for (int i = 0; i < n_decl; i++)
        if (!in_list(exported, n_exp, declared[i])) {
            printf("%s is declared HC_API but libhotcold.so does not export it\n", declared[i]);
            bad++;
        }
    fflush(stdout);
    ck_assert_int_gt(n_decl, 50);
    ck_assert_msg(bad == 0, "%d symbol(s) differ between the public headers and the library",
                  bad);
}
END_TEST

static Suite *includes_suite(void)
{
    Suite *s = suite_create("includes");
    TCase *tc = tcase_create("tree");
    tcase_add_test(tc, tools_use_public_headers);
    tcase_add_test(tc, blackbox_tests_use_public_headers);
    tcase_add_test(tc, shared_library_exports_the_public_api);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(includes_suite());
    srunner_run_all(sr, CK_VERBOSE);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

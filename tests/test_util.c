#include "test_util.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *hc_test_path(const char *dir, const char *name)
{
    static char bufs[8][4096];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

char *hc_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto out;
    buf = malloc((size_t)n + 1);
    if (!buf)
        goto out;
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = 0;
    if (len)
        *len = (size_t)n;
out:
    fclose(f);
    return buf;
}

json_object *hc_test_load_json(const char *path)
{
    return json_object_from_file(path);
}

int hc_test_json_ints(json_object *arr, int32_t *out, int max)
{
    int n = (int)json_object_array_length(arr);
    for (int i = 0; i < n && i < max; i++)
        out[i] = (int32_t)json_object_get_int(json_object_array_get_idx(arr, (size_t)i));
    return n;
}

static char tmp_dir[256];
static pid_t tmp_owner;

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Only the process that made the directory removes it: Check forks a child
 * per test, and each child that asks gets (and cleans) its own. */
static void remove_tmpdir(void)
{
    if (tmp_dir[0] && tmp_owner == getpid())
        nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *hc_test_tmpdir(void)
{
    if (!tmp_dir[0] || tmp_owner != getpid()) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp_dir, sizeof tmp_dir, "%s/hotcold-test-%ld", base && *base ? base : "/tmp",
                 (long)getpid());
        mkdir(tmp_dir, 0700);
        if (!tmp_owner)
            atexit(remove_tmpdir);
        tmp_owner = getpid();
    }
    return tmp_dir;
}

void hc_test_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("skipped: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    fflush(stdout); /* Check may end a forked case with _exit */
    va_end(ap);
}

int hc_test_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

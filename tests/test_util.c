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

/* ---- an independent GGUF walker (little-endian, v2/v3 layouts alike) ---- */
typedef struct raw_walk {
    const uint8_t *p;
    size_t len, pos;
} raw_walk;

static int raw_take(raw_walk *w, size_t n, const uint8_t **out)
{
    if (n > w->len - w->pos)
        return -1;
    *out = w->p + w->pos;
    w->pos += n;
    return 0;
}

static int raw_u64(raw_walk *w, uint64_t *v)
{
    const uint8_t *b;
    if (raw_take(w, 8, &b))
        return -1;
    *v = 0;
    for (int i = 7; i >= 0; i--)
        *v = *v << 8 | b[i];
    return 0;
}

static int raw_u32(raw_walk *w, uint32_t *v)
{
    const uint8_t *b;
    if (raw_take(w, 4, &b))
        return -1;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 0;
}

static int raw_skip_str(raw_walk *w)
{
    uint64_t n;
    const uint8_t *b;
    return raw_u64(w, &n) || n > w->len || raw_take(w, (size_t)n, &b) ? -1 : 0;
}

/* Skip one metadata value of GGUF value type t (the spec's numbering). */
static int raw_skip_value(raw_walk *w, uint32_t t, int depth)
{
    static const uint8_t size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    const uint8_t *b;
    if (t == 8)
        return raw_skip_str(w);
    if (t == 9) {
        uint32_t at;
        uint64_t n;
        if (depth || raw_u32(w, &at) || raw_u64(w, &n))
            return -1;
        for (uint64_t i = 0; i < n; i++)
            if (raw_skip_value(w, at, 1))
                return -1;
        return 0;
    }
    return t < 13 && size[t] ? raw_take(w, size[t], &b) : -1;
}

/* Visit every tensor info of the file at `path`: fn(name, name_len, type,
 * user) returns nonzero to stop.  0 when walked (or stopped), -1 if not. */
typedef int (*raw_tensor_fn)(const uint8_t *name, size_t len, uint32_t type, void *user);

static int raw_tensors(const char *path, char *magic, raw_tensor_fn fn, void *user)
{
    size_t len;
    char *file = hc_test_read_file(path, &len);
    raw_walk w = {(const uint8_t *)file, len, 0};
    const uint8_t *b;
    uint32_t ver;
    uint64_t nt, nkv;
    int rc = -1;
    if (!file || raw_take(&w, 4, &b) || raw_u32(&w, &ver) || raw_u64(&w, &nt) ||
        raw_u64(&w, &nkv))
        goto out;
    if (magic) {
        memcpy(magic, b, 4);
        magic[4] = 0;
    }
    for (uint64_t i = 0; i < nkv; i++) {
        uint32_t t;
        if (raw_skip_str(&w) || raw_u32(&w, &t) || raw_skip_value(&w, t, 0))
            goto out;
    }
    for (uint64_t i = 0; i < nt; i++) {
        uint64_t n, ne, off;
        uint32_t nd, t;
        const uint8_t *s;
        if (raw_u64(&w, &n) || n > len || raw_take(&w, (size_t)n, &s) || raw_u32(&w, &nd) ||
            nd > 4)
            goto out;
        for (uint32_t d = 0; d < nd; d++)
            if (raw_u64(&w, &ne))
                goto out;
        if (raw_u32(&w, &t) || raw_u64(&w, &off))
            goto out;
        if (fn(s, (size_t)n, t, user))
            break;
    }
    rc = 0;
out:
    free(file);
    return rc;
}

typedef struct find_type {
    const char *name;
    uint32_t type;
    int found;
} find_type;

static int match_type(const uint8_t *name, size_t len, uint32_t type, void *user)
{
    find_type *f = user;
    if (len != strlen(f->name) || memcmp(name, f->name, len))
        return 0;
    f->type = type;
    f->found = 1;
    return 1;
}

int hc_test_raw_tensor_type(const char *path, const char *name, uint32_t *type, char *magic)
{
    find_type f = {name, 0, 0};
    if (raw_tensors(path, magic, match_type, &f) || !f.found)
        return -1;
    *type = f.type;
    return 0;
}

/* PowerInfer's llama/bamboo tensors (llama.cpp, llm_load_sparse_model_tensors). */
static int powerinfer_knows(const char *name)
{
    static const char *const global[] = {"token_embd.weight", "output_norm.weight",
                                         "output.weight"};
    static const char *const layer[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight",
                                        "attn_v.weight", "attn_output.weight",
                                        "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
                                        "ffn_down_t.weight", "fc1.weight", "fc2.weight"};
    for (size_t i = 0; i < sizeof global / sizeof global[0]; i++)
        if (!strcmp(name, global[i]))
            return 1;
    int il, end = 0;
    if (sscanf(name, "blk.%d.%n", &il, &end) != 1 || !end)
        return 0;
    for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++)
        if (!strcmp(name + end, layer[i]))
            return 1;
    return 0;
}

static int first_unknown(const uint8_t *name, size_t len, uint32_t type, void *user)
{
    char *out = user, buf[300];
    (void)type;
    snprintf(buf, sizeof buf, "%.*s", (int)len, (const char *)name);
    if (powerinfer_knows(buf))
        return 0;
    snprintf(out, 300, "%s", buf);
    return 1;
}

const char *hc_test_tensor_unknown_to_powerinfer(const char *path)
{
    static char name[300];
    name[0] = 0;
    return raw_tensors(path, NULL, first_unknown, name) ? NULL : name;
}

/*
 * libFuzzer target for the GGUF reader: parse arbitrary bytes with
 * hc_gguf_open_memory() and, if they open, walk every key/value and tensor
 * through the public getters, checking that everything the reader hands out
 * lies inside the input.  A violated invariant traps (a finding).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (!(c))                                                                              \
            __builtin_trap();                                                                  \
    } while (0)

static const uint8_t *g_lo, *g_hi;

static void in_input(const void *p, uint64_t n)
{
    const uint8_t *b = p;
    CHECK(b >= g_lo && b <= g_hi && n <= (uint64_t)(g_hi - b));
}

static unsigned elem_size(uint32_t t)
{
    static const unsigned sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? sz[t] : 0;
}

static volatile uint64_t sink;

static void walk_kv(const hc_gguf *g, uint64_t i)
{
    const hc_gguf_kv *kv = &g->kv[i];
    uint32_t u, et;
    int64_t s;
    float f;
    int b;
    const char *str;
    uint64_t len, n;
    const void *d;
    char buf[8];

    CHECK(kv->key && kv->key[0]);
    CHECK(hc_gguf_find_key(g, kv->key) == (int64_t)i);
    if (!hc_gguf_get_u32(g, kv->key, &u))
        sink += u;
    if (!hc_gguf_get_i64(g, kv->key, &s))
        sink += (uint64_t)s;
    if (!hc_gguf_get_f32(g, kv->key, &f))
        sink += f == f;
    if (!hc_gguf_get_bool(g, kv->key, &b))
        sink += (uint64_t)b;
    if (!hc_gguf_get_str(g, kv->key, &str, &len)) {
        in_input(str, len);
        CHECK(hc_gguf_get_strbuf(g, kv->key, buf, sizeof buf) == 0);
        /* Values may hold NUL bytes: compare bytes, not strlen(). */
        size_t k = len < sizeof buf - 1 ? (size_t)len : sizeof buf - 1;
        CHECK(buf[k] == 0 && memcmp(buf, str, k) == 0);
    }
    if (!hc_gguf_get_arr(g, kv->key, &et, &n, &d)) {
        CHECK(et <= HC_GGUF_F64 && et != HC_GGUF_ARRAY);
        if (et == HC_GGUF_STRING) {
            for (uint64_t j = 0; j < n; j++) {
                const char *e = hc_gguf_arr_str(kv, j, &len);
                CHECK(e != NULL);
                in_input(e, len);
                if (len)
                    sink += (uint8_t)e[len - 1];
            }
            CHECK(hc_gguf_arr_str(kv, n, &len) == NULL);
        } else {
            in_input(d, n * elem_size(et));
        }
    } else if (kv->type != HC_GGUF_STRING) {
        in_input(kv->data, elem_size(kv->type));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    hc_gguf *g = hc_gguf_open_memory(data, size, err, sizeof err);
    if (!g) {
        CHECK(err[0] != 0 && strchr(err, '\n') == NULL);
        return 0;
    }
    g_lo = data;
    g_hi = data + size;
    CHECK(g->alignment && !(g->alignment & (g->alignment - 1)));
    CHECK(g->version == 2 || g->version == 3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        walk_kv(g, i);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        CHECK(hc_gguf_find_tensor(g, t->name) == t);
        CHECK(t->n_dims >= 1 && t->n_dims <= HC_GGUF_MAX_DIMS);
        CHECK(hc_ggml_block_size(t->type) != 0);
        CHECK(t->offset % g->alignment == 0);
        in_input(t->data, t->n_bytes);
        if (t->n_bytes)
            sink += ((const uint8_t *)t->data)[t->n_bytes - 1];
        sink += strlen(hc_ggml_type_name(t->type));
    }
    hc_gguf_close(g);
    return 0;
}

/*
 * libFuzzer target for the torch .pt reader (core/format/torch_pt.c).
 *
 * Two ways to read an input, chosen by its first byte:
 *  - 0xFF: the rest is a pickle, wrapped here into a valid torch zip (t/data.pkl,
 *    t/version, storages t/data/0..2), so that mutations which change the pickle's length
 *    still reach the interpreter instead of breaking the zip's offsets;
 *  - anything else: the whole input is the file (zip archives start "PK", legacy
 *    streams 0x80).
 * If the reader fails, its message must be one line naming the input; if it succeeds, the
 * tensor must be self-consistent.  A violated invariant traps (a finding).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/torch_pt.h"
#include "hotcold/hotcold.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (!(c))                                                                              \
            __builtin_trap();                                                                  \
    } while (0)

#define STORAGE_BYTES 4096
#define N_STORAGES 3

static volatile double sink;

static uint8_t *put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
    return put16(put16(p, (uint16_t)v), (uint16_t)(v >> 16));
}

/* A stored-entry zip of the given records (no zip64: all small). */
static uint8_t *wrap(const uint8_t *pkl, size_t plen, size_t *out_len)
{
    static uint8_t storage[STORAGE_BYTES];
    const char *names[2 + N_STORAGES] = {"t/data.pkl", "t/version", "t/data/0", "t/data/1",
                                         "t/data/2"};
    const void *body[2 + N_STORAGES] = {pkl, "3\n", storage, storage, storage};
    size_t blen[2 + N_STORAGES] = {plen, 2, STORAGE_BYTES, STORAGE_BYTES, STORAGE_BYTES};
    uint32_t lho[2 + N_STORAGES];
    const int n = 2 + N_STORAGES;
    size_t cap = 22, cd_off;
    uint8_t *buf, *p;

    for (size_t i = 0; i < STORAGE_BYTES; i++)
        storage[i] = (uint8_t)(i * 37 + 11); /* every dtype sees varied bits */
    for (int i = 0; i < n; i++)
        cap += 30 + 46 + 2 * strlen(names[i]) + blen[i];
    buf = malloc(cap);
    if (!buf)
        return NULL;
    p = buf;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        lho[i] = (uint32_t)(p - buf);
        p = put32(p, 0x04034b50);
        p = put16(p, 20);
        p = put16(p, 0);
        p = put16(p, 0);
        p = put32(p, 0);
        p = put32(p, 0);
        p = put32(p, (uint32_t)blen[i]);
        p = put32(p, (uint32_t)blen[i]);
        p = put16(p, (uint16_t)nl);
        p = put16(p, 0);
        memcpy(p, names[i], nl);
        p += nl;
        memcpy(p, body[i], blen[i]);
        p += blen[i];
    }
    cd_off = (size_t)(p - buf);
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        p = put32(p, 0x02014b50);
        p = put16(p, 20);
        p = put16(p, 20);
        p = put16(p, 0);
        p = put16(p, 0);
        p = put32(p, 0);
        p = put32(p, 0);
        p = put32(p, (uint32_t)blen[i]);
        p = put32(p, (uint32_t)blen[i]);
        p = put16(p, (uint16_t)nl);
        p = put16(p, 0);
        p = put16(p, 0);
        p = put16(p, 0);
        p = put16(p, 0);
        p = put32(p, 0);
        p = put32(p, lho[i]);
        memcpy(p, names[i], nl);
        p += nl;
    }
    {
        size_t cd_size = (size_t)(p - buf) - cd_off;
        p = put32(p, 0x06054b50);
        p = put16(p, 0);
        p = put16(p, 0);
        p = put16(p, (uint16_t)n);
        p = put16(p, (uint16_t)n);
        p = put32(p, (uint32_t)cd_size);
        p = put32(p, (uint32_t)cd_off);
        p = put16(p, 0);
    }
    *out_len = (size_t)(p - buf);
    return buf;
}

static int is_float(hc_pt_dtype d)
{
    return d == HC_PT_F16 || d == HC_PT_BF16 || d == HC_PT_F32 || d == HC_PT_F64;
}

static void check_result(int rc, hc_pt_tensor *t)
{
    if (rc) {
        const char *e = hc_last_error();
        CHECK(strncmp(e, "fuzz: ", 6) == 0 && e[6] != 0);
        CHECK(strchr(e, '\n') == NULL);
        CHECK(t->f64 == NULL && t->i64 == NULL && t->numel == 0);
        return;
    }
    int64_t numel = 1;
    CHECK(t->dtype != HC_PT_INVALID && hc_pt_dtype_size(t->dtype) != 0);
    CHECK(t->n_dims >= 0 && t->n_dims <= HC_PT_MAX_DIMS);
    for (int d = 0; d < t->n_dims; d++) {
        CHECK(t->shape[d] >= 0);
        numel *= t->shape[d];
    }
    CHECK(numel == t->numel);
    CHECK(t->storage_offset >= 0);
    CHECK(t->f64 != NULL);
    CHECK(is_float(t->dtype) ? t->i64 == NULL : t->i64 != NULL);
    for (int64_t k = 0; k < t->numel; k++) {
        sink += t->f64[k];
        if (t->i64)
            CHECK(t->f64[k] == (double)t->i64[k]);
    }
    hc_pt_tensor_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hc_pt_tensor t;
    if (size >= 1 && data[0] == 0xFF) {
        size_t len = 0;
        uint8_t *z = wrap(data + 1, size - 1, &len);
        if (!z)
            return 0;
        check_result(hc_pt_read_memory(z, len, "fuzz", &t), &t);
        free(z);
        return 0;
    }
    check_result(hc_pt_read_memory(data, size, "fuzz", &t), &t);
    return 0;
}

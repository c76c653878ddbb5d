/* Activation counts as metadata arrays or tensors (act_counts.h). */
#include "format/act_counts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int hc_act_counts_find(const hc_gguf *g, int il, const void **data, uint64_t *n, char *where,
                       size_t where_len)
{
    char key[96], name[64];
    uint32_t et;
    snprintf(key, sizeof key, HC_ACT_KEY_COUNT_FMT, il);
    if (hc_gguf_find_key(g, key) >= 0) {
        if (hc_gguf_get_arr(g, key, &et, n, data) || et != HC_GGUF_I32) {
            hc_set_error("key %s is not an array of i32", key);
            return -1;
        }
        if (where)
            snprintf(where, where_len, "key %s", key);
        return 1;
    }
    snprintf(name, sizeof name, HC_ACT_TENSOR_FMT, il);
    const hc_gguf_tensor *t = hc_gguf_find_tensor(g, name);
    if (!t)
        return 0;
    if (t->type != HC_GGML_TYPE_I32 || t->n_dims != 1) {
        hc_set_error("tensor %s is %s with %" PRIu32 " dims, expected an i32 vector", name,
                     hc_ggml_type_name(t->type), t->n_dims);
        return -1;
    }
    *data = t->data;
    *n = t->ne[0];
    if (where)
        snprintf(where, where_len, "tensor %s", name);
    return 1;
}

int hc_act_counts_is_tensor(const char *name)
{
    int il, end = 0;
    return sscanf(name, "blk.%d.ffn_act_count%n", &il, &end) == 1 && end > 0 && !name[end] &&
           il >= 0;
}

int hc_act_counts_put(hc_gguf_writer *w, int il, const int32_t *counts, uint64_t n)
{
    char key[96];
    snprintf(key, sizeof key, HC_ACT_KEY_COUNT_FMT, il);
    return hc_gguf_writer_set_arr(w, key, HC_GGUF_I32, n, counts);
}

int hc_act_counts_carry(hc_gguf_writer *w, const hc_gguf *g)
{
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const hc_gguf_tensor *t = &g->tensors[i];
        char key[96];
        int il;
        if (!hc_act_counts_is_tensor(t->name) || sscanf(t->name, "blk.%d.", &il) != 1)
            continue;
        snprintf(key, sizeof key, HC_ACT_KEY_COUNT_FMT, il);
        if (hc_gguf_find_key(g, key) >= 0)
            continue;
        if (t->type != HC_GGML_TYPE_I32 || t->n_dims != 1) {
            hc_set_error("tensor %s is %s with %" PRIu32 " dims, expected an i32 vector",
                         t->name, hc_ggml_type_name(t->type), t->n_dims);
            return -1;
        }
        /* The tensor's bytes are little-endian int32, as the array's. */
        if (hc_gguf_writer_set_arr(w, key, HC_GGUF_I32, t->ne[0], t->data))
            return -1;
    }
    return 0;
}

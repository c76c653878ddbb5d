/* Activation frequencies for the placement solver (placement_stats.h). */
#include "runtime/placement_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/act_counts.h"
#include "format/torch_pt.h"
#include "hotcold/hotcold.h"
#include "util/log.h"

static int check_shape(const char *who, int n_layer, int64_t n_ff, float **freq_out)
{
    if (!freq_out) {
        hc_set_error("%s: freq_out is NULL", who);
        return -1;
    }
    *freq_out = NULL;
    if (n_layer <= 0 || n_ff <= 0 ||
        (uint64_t)n_layer * (uint64_t)n_ff > SIZE_MAX / sizeof(float)) {
        hc_set_error("%s: bad shape %d layers x %" PRId64 " neurons", who, n_layer, n_ff);
        return -1;
    }
    return 0;
}

int hc_place_freq_from_gguf(const hc_gguf *g, int n_layer, int64_t n_ff, float **freq_out)
{
    char where[256];
    float *freq = NULL;
    int present = 0;
    uint32_t blocks;
    const void *data;
    uint64_t n;
    if (check_shape("activation counts", n_layer, n_ff, freq_out))
        return -1;
    if (!g) {
        hc_set_error("activation counts: no GGUF");
        return -1;
    }
    for (int l = 0; l < n_layer; l++) {
        int found = hc_act_counts_find(g, l, &data, &n, NULL, 0);
        if (found < 0) {
            snprintf(where, sizeof where, "%s", hc_last_error());
            hc_set_error("activation counts: %s", where);
            return -1;
        }
        present += found;
    }
    if (!present)
        return 0; /* no statistics: not an error, the solver copes */
    /* A side file says how many layers it profiled; a different model's
     * file would otherwise pass whenever it has at least as many. */
    if (!hc_gguf_get_u32(g, HC_ACT_KEY_BLOCKS, &blocks) && (int64_t)blocks != n_layer) {
        hc_set_error("activation counts: %s is %" PRIu32 ", the model has %d layers",
                     HC_ACT_KEY_BLOCKS, blocks, n_layer);
        return -1;
    }
    freq = malloc((size_t)n_layer * (size_t)n_ff * sizeof *freq);
    if (!freq) {
        hc_set_error("activation counts: out of memory");
        return -1;
    }
    for (int l = 0; l < n_layer; l++) {
        if (hc_act_counts_find(g, l, &data, &n, where, sizeof where) != 1) {
            hc_set_error("activation counts: tensor " HC_ACT_TENSOR_FMT
                         " is missing, and so is key " HC_ACT_KEY_COUNT_FMT
                         " (%d of %d layers have counts)",
                         l, l, present, n_layer);
            goto fail;
        }
        if (n != (uint64_t)n_ff) {
            hc_set_error("activation counts: %s has %" PRIu64 " entries, expected %" PRId64
                         " (the model's n_ff)",
                         where, n, n_ff);
            goto fail;
        }
        const uint8_t *src = data;
        float *dst = freq + (size_t)l * (size_t)n_ff;
        for (int64_t r = 0; r < n_ff; r++) {
            int32_t v;
            memcpy(&v, src + 4 * (size_t)r, 4);
            if (v < 0) {
                hc_set_error("activation counts: %s[%" PRId64 "] = %" PRId32 " is negative",
                             where, r, v);
                goto fail;
            }
            dst[r] = (float)v;
        }
    }
    *freq_out = freq;
    return 0;
fail:
    free(freq);
    return -1;
}

int hc_place_freq_from_activation_dir(const char *dir, int n_layer, int64_t n_ff,
                                      float **freq_out)
{
    hc_pt_activation a;
    float *freq = NULL;
    if (check_shape("activation dir", n_layer, n_ff, freq_out))
        return -1;
    if (!dir) {
        hc_set_error("activation dir: path is NULL");
        return -1;
    }
    /* The reader checks every file and the shape we pass, and names the
     * file at fault; nothing is left to validate here. */
    if (hc_pt_read_activation_dir(dir, n_layer, n_ff, &a))
        return -1;
    size_t n = (size_t)n_layer * (size_t)n_ff;
    freq = malloc(n * sizeof *freq);
    if (!freq) {
        hc_set_error("%s: out of memory", dir);
        hc_pt_activation_free(&a);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        freq[i] = (float)a.counts[i];
    hc_pt_activation_free(&a);
    *freq_out = freq;
    return 0;
}

/*
 * Writes small valid GGUF files into a directory, as fuzzing seeds: every
 * metadata type, several tensor types and shapes, both magics, version 2,
 * a non-default alignment, an empty file.  Valid seeds let the fuzzer start
 * from inputs that reach the tensor-info and data checks.
 */
#include <stdio.h>
#include <string.h>

#include "format/gguf.h"

static int write_one(const char *dir, const char *name, const char *magic, uint32_t version,
                     uint32_t alignment, int variant)
{
    char path[4096], err[512];
    static const uint8_t zeros[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    hc_gguf_writer *w = hc_gguf_writer_new(magic, version, alignment);
    if (!w)
        return -1;
    uint8_t u8 = 7;
    int8_t i8 = -7;
    uint16_t u16 = 700;
    int16_t i16 = -700;
    int32_t i32 = -70000;
    uint8_t bo = 1;
    uint64_t u64 = 1ull << 40;
    int64_t i64 = -(1ll << 40);
    double f64 = 0.125;
    hc_gguf_writer_set_str(w, "general.architecture", "llama");
    hc_gguf_writer_set_u32(w, "llama.embedding_length", 32);
    hc_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (variant > 0) {
        hc_gguf_writer_set_scalar(w, "t.u8", HC_GGUF_U8, &u8);
        hc_gguf_writer_set_scalar(w, "t.i8", HC_GGUF_I8, &i8);
        hc_gguf_writer_set_scalar(w, "t.u16", HC_GGUF_U16, &u16);
        hc_gguf_writer_set_scalar(w, "t.i16", HC_GGUF_I16, &i16);
        hc_gguf_writer_set_scalar(w, "t.i32", HC_GGUF_I32, &i32);
        hc_gguf_writer_set_scalar(w, "t.bool", HC_GGUF_BOOL, &bo);
        hc_gguf_writer_set_scalar(w, "t.u64", HC_GGUF_U64, &u64);
        hc_gguf_writer_set_scalar(w, "t.i64", HC_GGUF_I64, &i64);
        hc_gguf_writer_set_scalar(w, "t.f64", HC_GGUF_F64, &f64);
        const char *toks[4] = {"<unk>", "<s>", "</s>", "a"};
        float scores[4] = {0, 0, 0, -1.5f};
        int32_t types[4] = {2, 3, 3, 1};
        hc_gguf_writer_set_str_arr(w, "tokenizer.ggml.tokens", 4, toks);
        hc_gguf_writer_set_arr(w, "tokenizer.ggml.scores", HC_GGUF_F32, 4, scores);
        hc_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", HC_GGUF_I32, 4, types);
    }
    static const struct {
        const char *name;
        uint32_t n_dims;
        uint64_t ne[4];
        uint32_t type;
    } ts[] = {
        {"token_embd.weight", 2, {32, 4, 1, 1}, 0},
        {"output_norm.weight", 1, {32, 1, 1, 1}, 0},
        {"blk.0.attn_q.weight", 2, {32, 2, 1, 1}, 1},
        {"blk.0.ffn_up.weight", 2, {64, 2, 1, 1}, 8},
        {"blk.0.ffn_down_t.weight", 3, {32, 1, 2, 1}, 2},
        {"blk.0.fc1.weight", 4, {256, 1, 1, 1}, 12},
    };
    int nt = variant == 0 ? 2 : variant == 1 ? 6 : 0;
    for (int i = 0; i < nt; i++)
        hc_gguf_writer_add_tensor(w, ts[i].name, ts[i].n_dims, ts[i].ne, ts[i].type);
    int rc = hc_gguf_writer_begin(w, path, err, sizeof err);
    for (int i = 0; i < nt && !rc; i++) {
        uint64_t n = ts[i].ne[0] / hc_ggml_block_size(ts[i].type) * hc_ggml_type_size(ts[i].type) *
                     ts[i].ne[1] * ts[i].ne[2] * ts[i].ne[3];
        rc = hc_gguf_writer_write_data(w, zeros, n, err, sizeof err);
    }
    if (!rc)
        rc = hc_gguf_writer_finish(w, err, sizeof err);
    if (rc)
        fprintf(stderr, "make_seeds: %s\n", err);
    hc_gguf_writer_free(w);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    int rc = 0;
    rc |= write_one(argv[1], "small-gguf-v3.gguf", "GGUF", 3, 32, 0);
    rc |= write_one(argv[1], "all-types-pwri.gguf", "PWRI", 3, 32, 1);
    rc |= write_one(argv[1], "all-types-v2-align64.gguf", "GGUF", 2, 64, 1);
    rc |= write_one(argv[1], "vocab-only.gguf", "GGUF", 3, 32, 2);
    return rc ? 1 : 0;
}

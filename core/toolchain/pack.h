/*
 * Packing a PowerInfer (PWRI) model from a GGUF model, a predictor side file
 * and, optionally, an activation profile (formats in train_predictor.h and
 * profile.h), in the layout of PowerInfer's *.powerinfer.gguf files.
 *
 * The output:
 *   - magic "PWRI", GGUF version 3, the input's alignment;
 *   - every key of the input, plus powerinfer.sparse_threshold (f32), the
 *     predictor's held-out recall/precision arrays, and, with a profile,
 *     hotcold.activation.n_tokens; <arch>.ffn_act is kept as the input has
 *     it (a PWRI llama without it means ReGLU; a plain llama without it is
 *     SwiGLU, which has no exact zeros to exploit: that is an error); the
 *     profile's (or else the input's own) activation counts as the metadata
 *     arrays of act_counts.h, not as tensors, so PowerInfer loads the file;
 *   - every tensor of the input in its order, except that
 *     blk.{i}.ffn_down.weight ([n_ff, n_embd]) becomes
 *     blk.{i}.ffn_down_t.weight ([n_embd, n_ff]: row r = what neuron r adds),
 *     followed by blk.{i}.fc1.weight, blk.{i}.fc2.weight (F32, from the
 *     predictor); counts tensors (blk.{i}.ffn_act_count) are left out.
 *     An input that is already PWRI keeps its ffn_down_t; its old predictors
 *     (and, given a new profile, its old counts) are replaced.
 * The transpose: F32 and F16 exactly (bit for bit); Q8_0 / Q4_0 are
 * dequantized, transposed and quantized again to the same type when n_embd is
 * a multiple of 32 (else F16) — lossy: each row gets new block scales.
 * The transpose streams in strips of columns, so memory stays bounded
 * (about 64 MiB) whatever the model's size; everything else is copied
 * straight from the memory-mapped inputs.
 */
#ifndef HC_CORE_PACK_H
#define HC_CORE_PACK_H

#include <stddef.h>
#include <stdint.h>

typedef struct hc_pack_params {
    size_t size;
    const char *model;     /* input GGUF (or PWRI) model */
    const char *predictor; /* predictor side file (hotcold train-predictor) */
    const char *profile;   /* activation profile (hotcold profile), or NULL */
    const char *out;       /* written by core/format/output_file.h's rules: complete or not at all */
    float threshold;       /* NAN: the predictor file's powerinfer.sparse_threshold */
    /* Called after each output tensor (done = 1..total); may be NULL. */
    void (*progress)(void *user, int done, int total, const char *tensor);
    void *user;
} hc_pack_params;

typedef struct hc_pack_report {
    int n_layer, n_embd, n_ff;
    uint32_t down_in_type, down_out_type; /* ggml type ids */
    int down_lossy;                       /* quantized down was requantized */
    int down_was_transposed;              /* 0: the input already held ffn_down_t */
    float threshold;
    int has_profile;
    int n_tensors;
} hc_pack_report;

hc_pack_params hc_pack_default_params(void);
/* 0, or -1 with hc_last_error() set (no output file is left behind).
 * `report` may be NULL. */
int hc_pack_file(const hc_pack_params *params, hc_pack_report *report);

#endif /* HC_CORE_PACK_H */

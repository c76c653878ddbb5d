/*
 * Reader for tensors saved with torch.save() — internal to libhotcold.
 *
 * PowerInfer ships per-layer activation statistics as activation/activation_<i>.pt, each a
 * torch-saved 1-D tensor of n_ff per-neuron counts.  This reads them without Python:
 *
 *  - the zip format of torch >= 1.6 (stored entries, zip64 records; a deflated entry is
 *    reported, not inflated: torch never compresses), holding <name>/data.pkl,
 *    <name>/data/<key> raw little-endian storages, <name>/version and maybe byteorder;
 *  - the legacy stream format (_use_new_zipfile_serialization=False): pickles followed by
 *    the raw storages.
 *
 * The pickle is run by a small interpreter that knows only the opcodes and callables torch
 * emits for a tensor (torch._utils._rebuild_tensor_v2/_v3, _rebuild_parameter,
 * collections.OrderedDict); anything else is an error, so a .pt file can never run code.
 * Every length, count and offset is checked before use: malformed input gives a one-line
 * error (hc_last_error()) naming the file and the fault, never a crash.
 */
#ifndef HC_CORE_TORCH_PT_H
#define HC_CORE_TORCH_PT_H

#include <stddef.h>
#include <stdint.h>

typedef enum hc_pt_dtype {
    HC_PT_INVALID = 0,
    HC_PT_BOOL,
    HC_PT_U8,
    HC_PT_I8,
    HC_PT_I16,
    HC_PT_I32,
    HC_PT_I64,
    HC_PT_F16,
    HC_PT_BF16,
    HC_PT_F32,
    HC_PT_F64
} hc_pt_dtype;

#define HC_PT_MAX_DIMS 8

typedef struct hc_pt_tensor {
    hc_pt_dtype dtype;
    int n_dims;                      /* 0 for a scalar */
    int64_t shape[HC_PT_MAX_DIMS];
    int64_t numel;                   /* product of shape (1 for a scalar) */
    int64_t storage_offset;          /* as torch reports it; informational */
    /* The values in row-major (C) order of the logical tensor, whatever its strides. */
    double *f64;                     /* every dtype (int64 beyond 2^53 rounds: use i64) */
    int64_t *i64;                    /* exact values for bool and integer dtypes; NULL for
                                      * floating ones */
    int legacy;                      /* came from the pre-1.6 stream format */
} hc_pt_tensor;

/* "int64", "float16", ... ("invalid" for anything else). */
const char *hc_pt_dtype_name(hc_pt_dtype dtype);
/* Bytes per element, 0 for HC_PT_INVALID. */
size_t hc_pt_dtype_size(hc_pt_dtype dtype);

/* Read the tensor a .pt file holds, any shape.  0 on success; -1 with hc_last_error() set
 * ("<path>: <what is wrong>") on failure, *out then zeroed.  Free with hc_pt_tensor_free. */
int hc_pt_read(const char *path, hc_pt_tensor *out);
/* Same, but a tensor that is not 1-D is an error (2-D, scalars): activation statistics
 * are 1-D, and silently flattening a [n_layer, n_ff] matrix would hide a wrong file. */
int hc_pt_read_1d(const char *path, hc_pt_tensor *out);
/* Parse a buffer (tests, fuzzing); `name` prefixes error messages. */
int hc_pt_read_memory(const void *buf, size_t len, const char *name, hc_pt_tensor *out);
void hc_pt_tensor_free(hc_pt_tensor *t);

/* PowerInfer's activation/ directory: activation_<i>.pt for layers 0..L-1. */
typedef struct hc_pt_activation {
    int n_layer;
    int64_t n_ff;
    double *counts;   /* [n_layer * n_ff], layer-major: counts[i * n_ff + r] */
    int whole;        /* 1 if every value is a whole number (counts, not frequencies) */
} hc_pt_activation;

/* Read dir/activation_<i>.pt.  Files are matched by their layer NUMBER (PowerInfer's own
 * exporter sorts the names as text, so activation_10 lands before activation_2; we do
 * not), other names are ignored.  The layers must be exactly 0..L-1: a gap, a duplicate
 * (activation_1.pt next to activation_01.pt), a layer beyond n_layer, a tensor that is not
 * 1-D, of the wrong length, or holding a negative or non-finite value is an error naming
 * the file.  n_layer <= 0: take L from the files; n_ff <= 0: take it from layer 0.
 * 0 on success (free with hc_pt_activation_free), -1 with hc_last_error() set. */
int hc_pt_read_activation_dir(const char *dir, int n_layer, int64_t n_ff,
                              hc_pt_activation *out);
void hc_pt_activation_free(hc_pt_activation *a);

#endif /* HC_CORE_TORCH_PT_H */

/*
 * Model conversion: rewrite a GGUF file's weights in another type.
 *
 * Rules: the output keeps the input's magic (GGUF or PWRI), version,
 * alignment and every key, with general.file_type set to llama.cpp's value
 * for the target (0 ALL_F32, 1 MOSTLY_F16, 2 MOSTLY_Q4_0, 7 MOSTLY_Q8_0,
 * 18 MOSTLY_Q6_K).
 * Tensors named "*.weight":
 *   1-D          -> F32;
 *   2-D and more -> the target type (output.weight: the output type, which
 *                   hc_quantize_file_mixed may set apart); for Q6_K only
 *                   when ne0 is a multiple of 256, otherwise Q8_0 (as
 *                   PowerInfer's quantize does), and never for a PWRI
 *                   *.ffn_down_t.weight (Q8_0: the engine sums its rows
 *                   with axpy_rows, which has no Q6_K kernel); for
 *                   Q8_0/Q4_0 only when ne0 is a multiple of 32, otherwise
 *                   F16.  Each fallback is logged as a warning.
 * Other tensors are copied unchanged, except that a PWRI input's activation
 * counts tensors become metadata arrays (act_counts.h).  A tensor that must
 * be converted has to be F32, F16, Q8_0, Q4_0 or Q6_K; anything else is an
 * error.  Tensors already in their output type are copied bit for bit.
 * PowerInfer's `quantize ... Q4_0` is hc_quantize_file_mixed(.., Q4_0, Q6_K,
 * ..): every 2-D weight Q4_0 but output.weight Q6_K.
 * The conversion streams tensor by tensor (the input is memory-mapped, the
 * output written through hc_gguf_writer, core/format/output_file.h's rules), so a
 * failure leaves no output file.
 */
#ifndef HC_CORE_QUANTIZE_H
#define HC_CORE_QUANTIZE_H

#include "hotcold/plugin.h" /* hc_type */

/* llama.cpp's general.file_type for an all-`type` model; -1 if none. */
int hc_quantize_file_type(hc_type type);

/* Convert `in` to `out` (type: F32, F16, Q8_0, Q4_0 or Q6_K).  `progress`,
 * if not NULL, is called after each tensor with done = 1..total.  Returns
 * 0, or -1 with a one-line message in hc_last_error(). */
int hc_quantize_file(const char *in, const char *out, hc_type type,
                     void (*progress)(void *user, int done, int total, const char *tensor),
                     void *user);

/* The same with output.weight (the output head) in `output_type` instead
 * of `type`; general.file_type follows `type`.  A file without
 * output.weight (tied head) gets a warning that output_type applied to
 * nothing. */
int hc_quantize_file_mixed(const char *in, const char *out, hc_type type, hc_type output_type,
                           void (*progress)(void *user, int done, int total, const char *tensor),
                           void *user);

#endif /* HC_CORE_QUANTIZE_H */

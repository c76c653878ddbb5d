/*
 * Pieces of the placement solver shared by placement.c (solve) and
 * placement_gpuidx.c (load a saved split): both fill the non-neuron items
 * the same way and account bytes and `served` the same way, so a reused
 * split and a solved one can never disagree on anything but the neurons.
 * Internal to libhotcold.
 */
#ifndef HC_CORE_PLACEMENT_INTERNAL_H
#define HC_CORE_PLACEMENT_INTERNAL_H

#include <stdint.h>

#include "runtime/placement.h"

/* Validate a solver input (shape, sizes, frequencies, byte totals); `who`
 * prefixes the message.  0, or -1 with hc_last_error() set. */
int hc_place_check_in(const hc_place_in *in, const char *who);

/* The group size in->group resolves to (the default rule of placement.h). */
int hc_place_group_size(const hc_place_in *in);

/* The argument checks of every solver entry point, then an empty plan
 * (hc_place_alloc); *out is set to NULL first.  NULL with the error set. */
hc_plan *hc_place_begin(const hc_place_in *in, hc_plan **out);

/* A plan for in's shape: layers and every on_gpu[] allocated and zeroed,
 * n_layer / n_ff / group / budget set.  NULL with hc_last_error() set. */
hc_plan *hc_place_alloc(const hc_place_in *in);

/* PowerInfer's fill of the non-neuron items (attention, predictors,
 * ffn_norm, output, KV) into p under in->budget; returns the bytes left
 * for neurons. */
uint64_t hc_place_fill_items(const hc_place_in *in, hc_plan *p);

/* From every layer's on_gpu[]: n_hot, hot[] (ascending), served, and the
 * bytes on each side, per layer and in total.  0 or -1 (no memory). */
int hc_place_finish(const hc_place_in *in, hc_plan *p);

#endif /* HC_CORE_PLACEMENT_INTERNAL_H */

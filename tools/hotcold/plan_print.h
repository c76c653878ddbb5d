/* `hotcold run --print-plan`: the placement plan as a table. */
#ifndef HC_TOOL_PLAN_PRINT_H
#define HC_TOOL_PLAN_PRINT_H

#include <stdio.h>

#include "runtime/placement.h"

/* Per layer: where attention, predictor, ffn_norm and KV sit, the hot
 * neurons on the GPU (count of n_ff and %), the share of the layer's
 * activations they serve, and the layer's bytes on each side; then the
 * totals, the budget, the output head and where the neuron split came
 * from.  gpu_label names the GPU ("Vulkan: RTX 4090"); NULL = "GPU". */
void hc_tool_print_plan(FILE *f, const hc_plan *p, const char *gpu_label);

#endif

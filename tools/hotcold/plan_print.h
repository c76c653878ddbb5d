/* `hotcold run --print-plan`: the placement plan as a table. */
#ifndef HC_TOOL_PLAN_PRINT_H
#define HC_TOOL_PLAN_PRINT_H

#include <stdio.h>

#include "hotcold/hotcold.h"

/* Per layer: where attention, predictor, ffn_norm and KV sit, the hot
 * neurons on the GPU (count of n_ff and %), the share of the layer's
 * activations they serve, and the layer's bytes on each side; then the
 * totals, the budget, the output head and where the neuron split came
 * from.  split is the hc_split_mode it was made with (its title says
 * which).  gpu_label names the GPU ("Vulkan: RTX 4090"); NULL = "GPU". */
void hc_tool_print_plan(FILE *f, const hc_plan_info *p, const hc_plan_layer_info *layers,
                        int split, const char *gpu_label);

/* The same for a model (hc_model_plan_info); says so when it has no GPU. */
void hc_tool_print_model_plan(FILE *f, const hc_model *m, const char *gpu_label);

#endif

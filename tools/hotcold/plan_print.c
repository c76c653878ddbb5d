/* The placement plan as a table (plan_print.h). */
#include "plan_print.h"

#include <inttypes.h>
#include <stdlib.h>

#define MIB (1024.0 * 1024.0)

static const char *side(int on_gpu)
{
    return on_gpu ? "GPU" : "cpu";
}

static double pct(double num, double den)
{
    return den > 0 ? 100.0 * num / den : 0.0;
}

void hc_tool_print_plan(FILE *f, const hc_plan_info *p, const hc_plan_layer_info *layers,
                        int split, const char *gpu_label)
{
    const char *gpu = gpu_label && *gpu_label ? gpu_label : "GPU";
    if (!p || !layers) {
        fprintf(f, "placement: no plan\n");
        return;
    }
    if (split == HC_SPLIT_LAYERS)
        fprintf(f, "placement on %s: split layers (whole layers from layer 0), budget %.2f MiB\n",
                gpu, (double)p->budget / MIB);
    else
        fprintf(f, "placement on %s: split neurons (hot neurons first), budget %.2f MiB, neuron "
                   "groups of %d\n", gpu, (double)p->budget / MIB, p->group);
    /* Lower-case "cpu" so the GPU items stand out in a long table. */
    fprintf(f, "%5s %-4s %-4s %-4s %-4s %15s %6s %7s %10s %10s\n", "layer", "attn", "pred",
            "norm", "kv", "hot/n_ff   ", "hot", "served", "GPU MiB", "CPU MiB");
    int64_t hot = 0;
    for (int l = 0; l < p->n_layer; l++) {
        const hc_plan_layer_info *pl = &layers[l];
        hot += pl->n_hot;
        fprintf(f,
                "%5d %-4s %-4s %-4s %-4s %7" PRId64 "/%-7" PRId64
                " %5.1f%% %6.1f%% %10.2f %10.2f\n",
                l, side(pl->attn), side(pl->pred), side(pl->ffn_norm), side(pl->kv), pl->n_hot,
                p->n_ff, pct((double)pl->n_hot, (double)p->n_ff), 100.0 * pl->served,
                (double)pl->gpu_bytes / MIB, (double)pl->cpu_bytes / MIB);
    }
    double all = (double)p->n_ff * p->n_layer;
    fprintf(f, "total: GPU %.2f MiB (%.1f%% of the budget), CPU %.2f MiB; output head on %s\n",
            (double)p->gpu_bytes / MIB, pct((double)p->gpu_bytes, (double)p->budget),
            (double)p->cpu_bytes / MIB, p->output_on_gpu ? "GPU" : "CPU");
    fprintf(f, "hot neurons on the GPU: %" PRId64 " of %.0f (%.1f%%), serving %.1f%% of "
               "activations (mean over layers); %s\n",
            hot, all, pct((double)hot, all), 100.0 * p->served,
            split == HC_SPLIT_LAYERS ? "no neuron split (whole layers)"
            : p->from_file           ? "split from the gpuidx file"
                                     : "split solved now");
}

void hc_tool_print_model_plan(FILE *f, const hc_model *m, const char *gpu_label)
{
    hc_plan_info p;
    if (hc_model_plan_info(m, &p) != 0) {
        fprintf(f, "plan: everything on the CPU (no --device GPU given)\n");
        return;
    }
    hc_plan_layer_info *layers = calloc((size_t)p.n_layer, sizeof *layers);
    for (int l = 0; layers && l < p.n_layer; l++)
        hc_model_plan_layer(m, l, &layers[l]);
    hc_tool_print_plan(f, &p, layers, hc_model_split(m), gpu_label);
    free(layers);
}

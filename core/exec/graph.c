/*
 * Decode passes captured once and replayed (ABI 1.3 capture: CUDA graphs).
 *
 * A one-token pass of a model wholly on the GPU, whose every layer chooses
 * its rows there (or computes all of them), issues the same work every
 * token: its arguments are buffer places, and what changes - the token's
 * embedding row and position, the KV rows' positions (scatter_rows), the
 * layers' counts - lives in memory.  So the first such pass is captured
 * instead of run, and every pass, that one included, launches the graph:
 * the host writes the token's row and position into pinned memory,
 * launches, and waits once, for the logits.
 *
 * A wait the pass would make (an op falling back, a host selection) fails
 * the capture: that pass is issued as usual, and the context stops trying.
 */
#include <stdlib.h>
#include <string.h>

#include "exec/context.h"
#include "util/log.h"

/* Would this pass run on the GPU alone, with no wait before its end? */
static int capturable(const hc_context *c, int n, const float *logits)
{
    const hc_model *m = c->m;
    const hc_hparams *hp = &m->hp;
    if (c->no_graphs || n != 1 || !logits || !m->has_gpu || !m->output_gpu ||
        c->sparse_check || c->observer || !hc_dev_can_capture(&c->gpu) ||
        !hc_dev_uses(&c->gpu, HC_OP_SCATTER_ROWS) ||
        (hp->sparse != HC_SPARSE_OFF && !hc_dev_selects_on_device(&c->gpu)))
        return 0;
    for (int il = 0; il < hp->n_layer; il++) {
        const hc_layer *l = &m->layers[il];
        if (!l->attn_gpu || l->n_hot != hp->n_ff ||
            (hp->sparse == HC_SPARSE_PREDICTOR && !l->pred_gpu))
            return 0;
    }
    return 1;
}

/* The statistics a pass adds on the host: after - before, per field. */
static void stats_delta(hc_context *c, const hc_context_run_stats *before,
                        const struct hc_sparse_layer_acc *acc_before)
{
    c->graph_run = (hc_context_run_stats){0};
    c->graph_run.gpu_rows = c->run.gpu_rows - before->gpu_rows;
    c->graph_run.cpu_rows = c->run.cpu_rows - before->cpu_rows;
    c->graph_run.bytes_moved = c->run.bytes_moved - before->bytes_moved;
    for (int il = 0; il < c->m->hp.n_layer; il++) {
        c->graph_acc[il].forwards = c->acc[il].forwards - acc_before[il].forwards;
        c->graph_acc[il].computed = c->acc[il].computed - acc_before[il].computed;
    }
}

/* Capture the pass (not run): 0 with c->graph set, 1 when it cannot be
 * captured (the context then issues its passes), -1 on error.  What the
 * issue added to the statistics is kept for the replays and taken back
 * (the launch counts it). */
static int capture(hc_context *c, const int32_t *tokens, int n, float *logits)
{
    hc_dev *g = &c->gpu;
    const int n_layer = c->m->hp.n_layer;
    const hc_context_run_stats before = c->run;
    const size_t acc_bytes = (size_t)n_layer * sizeof *c->acc;
    struct hc_sparse_layer_acc *acc_before = malloc(acc_bytes);
    if (!acc_before) {
        hc_set_error("out of memory");
        return -1;
    }
    memcpy(acc_before, c->acc, acc_bytes);
    int rc = hc_dev_capture_begin(g);
    if (rc != 0) {
        c->no_graphs = rc > 0;
        goto out;
    }
    const int failed = c->m->arch->forward(c, c->m, tokens, n, logits);
    hc_graph *gr = hc_dev_capture_end(g);
    if (failed || !gr) {
        HC_DEBUG("%s: the decode pass could not be captured (%s); issuing every pass",
                 g->label, hc_last_error());
        hc_dev_graph_free(g, gr);
        c->no_graphs = 1;
        rc = 1;
    } else {
        c->graph = gr;
        c->graph_x_on = c->x_on;
        memcpy(c->graph_counted, c->counted, (size_t)n_layer);
        stats_delta(c, &before, acc_before);
    }
    c->run = before;
    memcpy(c->acc, acc_before, acc_bytes);
    memset(c->counted, 0, (size_t)n_layer);
out:
    free(acc_before);
    return rc;
}

int hc_graph_forward(hc_context *c, const int32_t *tokens, int n, float *logits)
{
    if (!capturable(c, n, logits))
        return 1;
    if (!c->graph) {
        /* A bad token is the issued pass's error to report. */
        if (tokens[0] < 0 || tokens[0] >= c->m->hp.n_vocab)
            return 1;
        const int rc = capture(c, tokens, n, logits);
        if (rc != 0)
            return rc;
        /* capture() embedded this token already. */
    } else if (hc_embed_host(c, c->graph_emb, tokens, n)) {
        return -1;
    }
    hc_dev *g = &c->gpu;
    if (hc_dev_graph_launch(g, c->graph) || hc_dev_sync(g))
        return -1;
    c->x_on = c->graph_x_on;
    c->run.gpu_rows += c->graph_run.gpu_rows;
    c->run.cpu_rows += c->graph_run.cpu_rows;
    c->run.bytes_moved += c->graph_run.bytes_moved;
    c->run.graph_passes++;
    for (int il = 0; il < c->m->hp.n_layer; il++) {
        c->acc[il].forwards += c->graph_acc[il].forwards;
        c->acc[il].computed += c->graph_acc[il].computed;
    }
    memcpy(c->counted, c->graph_counted, (size_t)c->m->hp.n_layer);
    hc_sparse_settle(c);
    memcpy(logits, c->host_logits, (size_t)c->m->hp.n_vocab * sizeof *logits);
    return 0;
}

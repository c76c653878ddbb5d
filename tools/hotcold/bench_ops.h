/* `hotcold bench --ops`: the weight ops of a device plugin, one at a time,
 * against the measured memory bandwidth (bench_ops.c). */
#ifndef HC_TOOL_BENCH_OPS_H
#define HC_TOOL_BENCH_OPS_H

#include <stdint.h>

/* 1 when argv asks for the op benchmark (contains "--ops"). */
int hc_bench_ops_wanted(int argc, char **argv);
/* The whole `hotcold bench --ops ...` command; returns the exit status. */
int hc_bench_ops(int argc, char **argv);

struct hc_diag;
/* Seconds per decode attention call (one token over ctx positions of an
 * F32 cache) on copies of the cache filling set_bytes: the best of `reps`
 * means over at least min_s; -2 when the device has no attention, -1 on
 * failure (printed).  bench_attention.c. */
double hc_bench_attention(struct hc_diag *d, int n_head, int n_head_kv, int head_dim, int ctx,
                          uint64_t set_bytes, int reps, double min_s);

#endif

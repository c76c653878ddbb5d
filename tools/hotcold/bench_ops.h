/* `hotcold bench --ops`: the weight ops of a device plugin, one at a time,
 * against the measured memory bandwidth (bench_ops.c). */
#ifndef HC_TOOL_BENCH_OPS_H
#define HC_TOOL_BENCH_OPS_H

/* 1 when argv asks for the op benchmark (contains "--ops"). */
int hc_bench_ops_wanted(int argc, char **argv);
/* The whole `hotcold bench --ops ...` command; returns the exit status. */
int hc_bench_ops(int argc, char **argv);

#endif

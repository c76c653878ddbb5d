/*
 * The generator's threads: a pool that runs numbered tasks, and a ring of
 * output slots written strictly in sequence by the calling thread, so the
 * file is written in order (any output: pipes too) while the workers go on
 * generating.  Which thread runs a task never matters: a task's result
 * depends only on its number.
 */
#ifndef HC_CORE_MKMODEL_POOL_H
#define HC_CORE_MKMODEL_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct hc_mk_slot {
    uint8_t *data;   /* slot_bytes of room */
    uint64_t bytes;  /* what the task put there */
    const void *tag; /* the task's note for the writer (mkmodel: the tensor) */
} hc_mk_slot;

/* Task `task` of a run, on thread `tid` (0 = the caller, < n_threads);
 * `slot` is its output slot in an ordered run, NULL otherwise. */
typedef void (*hc_mk_task_fn)(void *ctx, int64_t task, int tid, hc_mk_slot *slot);
/* Writes one filled slot; nonzero stops everything (the run returns -1). */
typedef int (*hc_mk_write_fn)(void *user, const hc_mk_slot *slot);

typedef struct hc_mk_pool hc_mk_pool;

/* n_threads in all, the caller included; a thread that cannot be started
 * leaves its share to the others.  NULL: out of memory. */
hc_mk_pool *hc_mk_pool_new(int n_threads, size_t slot_bytes, hc_mk_write_fn write, void *user);
void hc_mk_pool_free(hc_mk_pool *p);
int hc_mk_pool_threads(const hc_mk_pool *p);

/* Runs tasks 0..n_tasks-1 and returns when all have run.  Tasks from
 * first_ordered on each fill the next slot of the sequence, written after
 * every earlier slot; the writing may still be under way on return.  Tasks
 * before first_ordered get no slot.  The caller writes slots and runs
 * tasks while it waits.  -1 once a write has failed. */
int hc_mk_pool_run(hc_mk_pool *p, hc_mk_task_fn fn, void *ctx, int64_t n_tasks,
                   int64_t first_ordered);
/* Writes every queued slot. */
int hc_mk_pool_flush(hc_mk_pool *p);

#endif /* HC_CORE_MKMODEL_POOL_H */

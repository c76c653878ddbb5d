/*
 * mkmodel_pool.h: one mutex guards the run and the ring.  Tasks take
 * hundreds of microseconds, so the lock is cold; the caller is a worker
 * too, and writes a slot whenever the next one in sequence is ready.
 * Slots per thread: enough that a worker rarely waits for the writer.
 */
#include "mkmodel_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS_PER_THREAD 4

typedef struct worker {
    struct hc_mk_pool *p;
    int tid;
} worker;

struct hc_mk_pool {
    pthread_mutex_t mu;
    pthread_cond_t work;  /* workers: a task may have become claimable */
    pthread_cond_t ready; /* caller: a slot was filled or a task ended */
    int n_threads, n_started, inited, quit, failed;
    hc_mk_write_fn write;
    void *user;
    /* the ring */
    hc_mk_slot *slot;
    uint64_t *filled; /* seq + 1 once slot seq % n_slots holds seq */
    uint64_t n_slots, seq_next, written;
    /* the run under way (fn == NULL: none) */
    hc_mk_task_fn fn;
    void *ctx;
    int64_t n_tasks, next, done, first_ordered;
    uint64_t seq0; /* the sequence number of task first_ordered's slot */
    pthread_t *th;
    worker *wk;
};

static int claimable(const hc_mk_pool *p)
{
    return p->fn && p->next < p->n_tasks &&
           (p->next < p->first_ordered ||
            p->seq0 + (uint64_t)(p->next - p->first_ordered) < p->written + p->n_slots);
}

/* With the lock held: runs the next task (unlocked meanwhile). */
static void run_one(hc_mk_pool *p, int tid)
{
    int64_t c = p->next++;
    int ordered = c >= p->first_ordered;
    uint64_t seq = ordered ? p->seq0 + (uint64_t)(c - p->first_ordered) : 0;
    hc_mk_task_fn fn = p->fn;
    void *ctx = p->ctx;
    hc_mk_slot *sl = ordered ? &p->slot[seq % p->n_slots] : NULL;
    pthread_mutex_unlock(&p->mu);
    fn(ctx, c, tid, sl);
    pthread_mutex_lock(&p->mu);
    if (ordered)
        p->filled[seq % p->n_slots] = seq + 1;
    p->done++;
    pthread_cond_signal(&p->ready);
}

/* With the lock held: writes the next slot if it is ready; 1 if it did. */
static int write_one(hc_mk_pool *p)
{
    uint64_t i = p->written % p->n_slots;
    if (p->failed || p->written >= p->seq_next || p->filled[i] != p->written + 1)
        return 0;
    pthread_mutex_unlock(&p->mu);
    int rc = p->write(p->user, &p->slot[i]);
    pthread_mutex_lock(&p->mu);
    p->filled[i] = 0;
    p->written++;
    if (rc) {
        p->failed = 1;
        p->n_tasks = p->next; /* claim nothing more; the running tasks end */
    }
    pthread_cond_broadcast(&p->work);
    return 1;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    hc_mk_pool *p = w->p;
    pthread_mutex_lock(&p->mu);
    while (!p->quit) {
        if (claimable(p))
            run_one(p, w->tid);
        else
            pthread_cond_wait(&p->work, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

hc_mk_pool *hc_mk_pool_new(int n_threads, size_t slot_bytes, hc_mk_write_fn write, void *user)
{
    hc_mk_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n_threads = n_threads < 1 ? 1 : n_threads;
    p->write = write;
    p->user = user;
    p->n_slots = (uint64_t)p->n_threads * SLOTS_PER_THREAD;
    p->slot = calloc(p->n_slots, sizeof *p->slot);
    p->filled = calloc(p->n_slots, sizeof *p->filled);
    p->th = calloc((size_t)p->n_threads, sizeof *p->th);
    p->wk = calloc((size_t)p->n_threads, sizeof *p->wk);
    int ok = p->slot && p->filled && p->th && p->wk;
    for (uint64_t i = 0; ok && i < p->n_slots; i++)
        ok = (p->slot[i].data = malloc(slot_bytes ? slot_bytes : 1)) != NULL;
    if (!ok || pthread_mutex_init(&p->mu, NULL)) {
        hc_mk_pool_free(p);
        return NULL;
    }
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->ready, NULL);
    p->inited = 1;
    int started = 0;
    for (int i = 1; i < p->n_threads; i++) {
        p->wk[started] = (worker){p, i};
        if (pthread_create(&p->th[started], NULL, worker_main, &p->wk[started]) == 0)
            started++;
    }
    p->n_started = started;
    return p;
}

void hc_mk_pool_free(hc_mk_pool *p)
{
    if (!p)
        return;
    if (p->inited) {
        pthread_mutex_lock(&p->mu);
        p->quit = 1;
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->n_started; i++)
            pthread_join(p->th[i], NULL);
        pthread_cond_destroy(&p->work);
        pthread_cond_destroy(&p->ready);
        pthread_mutex_destroy(&p->mu);
    }
    for (uint64_t i = 0; p->slot && i < p->n_slots; i++)
        free(p->slot[i].data);
    free(p->slot);
    free(p->filled);
    free(p->th);
    free(p->wk);
    free(p);
}

int hc_mk_pool_threads(const hc_mk_pool *p)
{
    return p->n_threads;
}

int hc_mk_pool_run(hc_mk_pool *p, hc_mk_task_fn fn, void *ctx, int64_t n_tasks,
                   int64_t first_ordered)
{
    pthread_mutex_lock(&p->mu);
    if (!p->failed && n_tasks > 0) {
        p->fn = fn;
        p->ctx = ctx;
        p->n_tasks = n_tasks;
        p->next = p->done = 0;
        p->first_ordered = first_ordered < n_tasks ? first_ordered : n_tasks;
        p->seq0 = p->seq_next;
        p->seq_next += (uint64_t)(n_tasks - p->first_ordered);
        pthread_cond_broadcast(&p->work);
        while (p->done < p->n_tasks) {
            if (write_one(p))
                continue;
            if (claimable(p))
                run_one(p, 0);
            else
                pthread_cond_wait(&p->ready, &p->mu);
        }
        p->fn = NULL;
    }
    int rc = p->failed ? -1 : 0;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int hc_mk_pool_flush(hc_mk_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (!p->failed && p->written < p->seq_next)
        write_one(p);
    int rc = p->failed ? -1 : 0;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/*
 * A persistent pthread pool for the kernels.
 *
 * Decode issues many small ops back to back, so waking threads through the
 * kernel for each one would cost more than the op.  Workers therefore spin
 * on the job word for a short while after each job and only then sleep on
 * a condition variable.
 *
 * A job is split into nth parts, fn(arg, part, nth), exactly as a static
 * split would cut it, but the parts are CLAIMED: the caller and the workers
 * take the next unclaimed part until none is left.  What a part computes
 * does not depend on which thread runs it, so results are those of the
 * static split; but a worker that has lost its core (another process on a
 * small machine, an interrupt) no longer holds the whole op up: the caller
 * runs the part it has not started.  Only parts that were claimed are
 * waited for.
 *
 * The job word packs (generation << 32 | parts << 16 | next part): a claim
 * is a compare-and-swap on it, and fn/arg are read only after a claim
 * succeeded, when they are certainly the claimed job's (they only change
 * after all of a job's parts are done, which cannot happen while the part
 * just claimed is not).  Jobs are serialised by the caller (ctx->lock).  All shared
 * state is in C11 atomics with sequential consistency, which the sleep/wake
 * handshakes below rely on.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu_plugin.h"

/* About 0.1-0.5 ms of spinning: longer than the gap between two ops of one
 * token, much shorter than the gap between tokens of an idle server. */
#define POOL_SPIN 20000
/* Parts of one job: the job word has 16 bits for them. */
#define POOL_MAX_PARTS 0xffff

struct hc_cpu_pool {
    int n_threads;                 /* caller included */
    int n_started;                 /* workers actually running */
    pthread_t *threads;

    hc_cpu_task_fn fn;             /* the job: written before the job word moves */
    void *arg;

    _Atomic uint64_t job;          /* generation << 32 | parts << 16 | next part */
    atomic_int parts_done;         /* parts of the current job finished */
    atomic_int n_sleeping;         /* workers blocked on wake */
    atomic_int caller_sleeping;
    atomic_int stop;

    pthread_mutex_t mtx;
    pthread_cond_t wake, done;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    sched_yield();
#endif
}

static inline uint32_t job_gen(uint64_t j)
{
    return (uint32_t)(j >> 32);
}

static inline int job_parts(uint64_t j)
{
    return (int)((j >> 16) & 0xffff);
}

static inline int job_next(uint64_t j)
{
    return (int)(j & 0xffff);
}

/* Claims and runs parts of the job of generation `gen` until none is left.
 * Returns without doing anything if that job is over. */
static void run_parts(hc_cpu_pool *p, uint32_t gen)
{
    uint64_t j = atomic_load(&p->job);
    for (;;) {
        const int n = job_parts(j), part = job_next(j);
        if (job_gen(j) != gen || part >= n)
            return;
        if (!atomic_compare_exchange_weak(&p->job, &j, j + 1))
            continue; /* j now holds the current word */
        p->fn(p->arg, part, n);
        if (atomic_fetch_add(&p->parts_done, 1) + 1 == n && atomic_load(&p->caller_sleeping)) {
            pthread_mutex_lock(&p->mtx);
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->mtx);
        }
        j = atomic_load(&p->job);
    }
}

/* Waits until the job generation differs from `seen` (or stop). */
static uint32_t wait_for_job(hc_cpu_pool *p, uint32_t seen)
{
    uint32_t g;

    for (int i = 0; i < POOL_SPIN; i++) {
        g = job_gen(atomic_load(&p->job));
        if (g != seen || atomic_load(&p->stop))
            return g;
        cpu_relax();
    }
    /* Announce the sleep before re-checking: the publisher moves the job
     * word and then reads n_sleeping, so one side always sees the other. */
    pthread_mutex_lock(&p->mtx);
    atomic_fetch_add(&p->n_sleeping, 1);
    while ((g = job_gen(atomic_load(&p->job))) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->mtx);
    atomic_fetch_sub(&p->n_sleeping, 1);
    pthread_mutex_unlock(&p->mtx);
    return g;
}

static void *worker_main(void *arg)
{
    hc_cpu_pool *p = arg;
    /* 0, not the current value: a worker that starts late must still look
     * at a job that may already have been published (generation 0 is never
     * a job's). */
    uint32_t seen = 0;

    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stop))
            break;
        run_parts(p, seen);
    }
    return NULL;
}

void hc_cpu_pool_destroy(hc_cpu_pool *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->mtx);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mtx);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mtx);
    free(p->threads);
    free(p);
}

hc_status hc_cpu_pool_create(int n_threads, hc_cpu_pool **out)
{
    hc_status st = HC_E_NOMEM;
    hc_cpu_pool *p = NULL;

    *out = NULL;
    if (n_threads < 1 || n_threads > HC_CPU_MAX_THREADS)
        return HC_E_INVALID;
    p = calloc(1, sizeof *p);
    if (!p)
        goto out;
    p->n_threads = n_threads;
    atomic_init(&p->job, 0);
    atomic_init(&p->parts_done, 0);
    atomic_init(&p->n_sleeping, 0);
    atomic_init(&p->caller_sleeping, 0);
    atomic_init(&p->stop, 0);
    pthread_mutex_init(&p->mtx, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads)
            goto out;
    }
    for (int i = 1; i < n_threads; i++) {
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, p) != 0) {
            st = HC_E_INTERNAL;
            goto out;
        }
        p->n_started++;
    }
    *out = p;
    p = NULL;
    st = HC_OK;
out:
    hc_cpu_pool_destroy(p);
    return st;
}

int hc_cpu_pool_size(const hc_cpu_pool *p)
{
    return p ? p->n_threads : 1;
}

void hc_cpu_pool_run(hc_cpu_pool *p, hc_cpu_task_fn fn, void *arg, int nth)
{
    hc_cpu_pool_run_parts(p, fn, arg, nth < p->n_threads ? nth : p->n_threads);
}

void hc_cpu_pool_run_parts(hc_cpu_pool *p, hc_cpu_task_fn fn, void *arg, int nth)
{
    if (nth > POOL_MAX_PARTS)
        nth = POOL_MAX_PARTS;
    if (nth <= 1) {
        fn(arg, 0, 1);
        return;
    }
    if (p->n_threads == 1) {
        for (int part = 0; part < nth; part++)
            fn(arg, part, nth);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->parts_done, 0);
    /* A new generation (never 0, the workers' initial "seen") at part 0. */
    uint32_t gen = job_gen(atomic_load(&p->job)) + 1;
    if (gen == 0)
        gen = 1;
    atomic_store(&p->job, (uint64_t)gen << 32 | (uint64_t)nth << 16);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mtx);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mtx);
    }
    run_parts(p, gen);
    /* Every part is claimed; wait for those other threads are running. */
    for (int i = 0; i < POOL_SPIN && atomic_load(&p->parts_done) < nth; i++)
        cpu_relax();
    if (atomic_load(&p->parts_done) < nth) {
        pthread_mutex_lock(&p->mtx);
        atomic_store(&p->caller_sleeping, 1);
        while (atomic_load(&p->parts_done) < nth)
            pthread_cond_wait(&p->done, &p->mtx);
        atomic_store(&p->caller_sleeping, 0);
        pthread_mutex_unlock(&p->mtx);
    }
}

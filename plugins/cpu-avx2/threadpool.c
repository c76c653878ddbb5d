/*
 * A persistent pthread pool for the kernels.
 *
 * Decode issues many small ops back to back, so waking threads through the
 * kernel for each one would cost more than the op.  Workers therefore spin
 * on a generation counter for a short while after each job and only then
 * sleep on a condition variable; the caller takes part 0 of every job.
 *
 * Jobs are serialised by the caller (ctx->lock), so one job is in flight at
 * a time.  All shared state is in C11 atomics with sequential consistency,
 * which the sleep/wake handshake below relies on.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu_plugin.h"

/* About 0.1-0.5 ms of spinning: longer than the gap between two ops of one
 * token, much shorter than the gap between tokens of an idle server. */
#define POOL_SPIN 20000

struct hc_cpu_pool {
    int n_threads;                 /* caller included */
    int n_started;                 /* workers actually running */
    pthread_t *threads;
    struct worker { hc_cpu_pool *pool; int index; } *workers;

    hc_cpu_task_fn fn;             /* the job: written before gen moves */
    void *arg;
    int n_active;

    atomic_uint gen;               /* bumped once per job */
    atomic_int remaining;          /* workers yet to finish this job */
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

/* Waits until the generation differs from `seen` (or stop). */
static unsigned int wait_for_job(hc_cpu_pool *p, unsigned int seen)
{
    unsigned int g;

    for (int i = 0; i < POOL_SPIN; i++) {
        g = atomic_load(&p->gen);
        if (g != seen || atomic_load(&p->stop))
            return g;
        cpu_relax();
    }
    /* Announce the sleep before re-checking gen: the publisher bumps gen and
     * then reads n_sleeping, so one of the two sides always sees the other. */
    pthread_mutex_lock(&p->mtx);
    atomic_fetch_add(&p->n_sleeping, 1);
    while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->mtx);
    atomic_fetch_sub(&p->n_sleeping, 1);
    pthread_mutex_unlock(&p->mtx);
    return g;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    hc_cpu_pool *p = w->pool;
    /* 0, not the current value: a worker that starts late must still see
     * the job that may already have been published (gen starts at 0 and
     * no job can complete without this worker). */
    unsigned int seen = 0;

    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stop))
            break;
        if (w->index < p->n_active)
            p->fn(p->arg, w->index, p->n_active);
        if (atomic_fetch_sub(&p->remaining, 1) == 1 && atomic_load(&p->caller_sleeping)) {
            pthread_mutex_lock(&p->mtx);
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->mtx);
        }
    }
    return NULL;
}

void hc_cpu_pool_destroy(hc_cpu_pool *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
    pthread_mutex_lock(&p->mtx);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mtx);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mtx);
    free(p->workers);
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
    atomic_init(&p->gen, 0);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->n_sleeping, 0);
    atomic_init(&p->caller_sleeping, 0);
    atomic_init(&p->stop, 0);
    pthread_mutex_init(&p->mtx, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->threads || !p->workers)
            goto out;
    }
    for (int i = 1; i < n_threads; i++) {
        p->workers[i - 1] = (struct worker){p, i};
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, &p->workers[i - 1]) != 0) {
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
    if (nth > p->n_threads)
        nth = p->n_threads;
    if (nth <= 1 || p->n_threads == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n_active = nth;
    atomic_store(&p->remaining, p->n_threads - 1);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mtx);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mtx);
    }
    fn(arg, 0, nth);
    for (int i = 0; i < POOL_SPIN && atomic_load(&p->remaining) > 0; i++)
        cpu_relax();
    if (atomic_load(&p->remaining) > 0) {
        pthread_mutex_lock(&p->mtx);
        atomic_store(&p->caller_sleeping, 1);
        while (atomic_load(&p->remaining) > 0)
            pthread_cond_wait(&p->done, &p->mtx);
        atomic_store(&p->caller_sleeping, 0);
        pthread_mutex_unlock(&p->mtx);
    }
}

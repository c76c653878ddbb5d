/*
 * Host memory read bandwidth: the denominator of every CPU decode figure.
 * Threads each stream through their own contiguous slice with several
 * independent accumulators (so the loop is bound by memory, not by a
 * dependency chain); the sums are returned so the reads cannot be elided.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hotcold/hotcold.h"
#include "log.h"

typedef struct slice {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} slice;

static void *read_slice(void *arg)
{
    slice *s = arg;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t i = 0;
    for (; i + 8 <= s->n; i += 8) {
        a0 += s->p[i + 0];
        a1 += s->p[i + 1];
        a2 += s->p[i + 2];
        a3 += s->p[i + 3];
        a4 += s->p[i + 4];
        a5 += s->p[i + 5];
        a6 += s->p[i + 6];
        a7 += s->p[i + 7];
    }
    for (; i < s->n; i++)
        a0 += s->p[i];
    s->sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double hc_host_read_bandwidth(int n_threads, uint64_t bytes, int reps)
{
    double best = -1.0;
    if (n_threads < 1)
        n_threads = 1;
    if (n_threads > 256)
        n_threads = 256;
    if (bytes == 0)
        bytes = 512ull << 20;
    if (reps < 1)
        reps = 1;
    size_t n = (size_t)(bytes / sizeof(uint64_t));
    uint64_t *mem = NULL;
    slice *sl = calloc((size_t)n_threads, sizeof *sl);
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    if (!sl || !th || posix_memalign((void **)&mem, 64, n * sizeof *mem)) {
        hc_set_error("bandwidth probe: cannot allocate %llu bytes", (unsigned long long)bytes);
        goto out;
    }
    /* Touch every page first so the timed passes measure reads, not faults. */
    memset(mem, 1, n * sizeof *mem);
    for (int r = 0; r < reps; r++) {
        size_t per = n / (size_t)n_threads;
        double t0 = now_s();
        int started = 0;
        for (int t = 0; t < n_threads; t++) {
            sl[t].p = mem + (size_t)t * per;
            sl[t].n = t == n_threads - 1 ? n - (size_t)t * per : per;
            if (t == 0)
                continue; /* the calling thread reads slice 0 itself */
            if (pthread_create(&th[t], NULL, read_slice, &sl[t]) != 0)
                break;
            started = t;
        }
        read_slice(&sl[0]);
        for (int t = 1; t <= started; t++)
            pthread_join(th[t], NULL);
        double dt = now_s() - t0;
        if (started != n_threads - 1) {
            hc_set_error("bandwidth probe: cannot start %d threads", n_threads);
            best = -1.0;
            goto out;
        }
        double bw = (double)(n * sizeof *mem) / dt;
        if (bw > best)
            best = bw;
    }
    /* Keep the sums observable. */
    if (sl[0].sum == 42)
        HC_DEBUG("bandwidth probe checksum hit 42");
out:
    free(mem);
    free(sl);
    free(th);
    return best;
}

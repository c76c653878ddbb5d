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
#include "util/clock.h"
#include "util/hugemem.h"
#include "util/log.h"

typedef struct slice {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
} slice;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HC_HAVE_AVX2_READ 1
/* 256-bit loads: a scalar or SSE2 loop cannot keep a modern core's load
 * ports busy enough to reach DRAM bandwidth from one thread, and the kernels
 * being measured against this floor do use AVX2.  Selected at run time, so
 * the core itself stays free of ISA flags. */
__attribute__((target("avx2"))) static uint64_t read_avx2(const uint64_t *p, size_t n)
{
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(p + i + 4)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(p + i + 8)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(p + i + 12)));
    }
    a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    uint64_t lanes[4], sum = 0;
    _mm256_storeu_si256((__m256i *)lanes, a0);
    for (; i < n; i++)
        sum += p[i];
    return sum + lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

static void *read_slice(void *arg)
{
    slice *s = arg;
#ifdef HC_HAVE_AVX2_READ
    /* Slices start 64-byte aligned: the buffer is, and slice lengths are
     * rounded to whole cache lines by the caller. */
    if (__builtin_cpu_supports("avx2")) {
        s->sum = read_avx2(s->p, s->n);
        return NULL;
    }
#endif
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
    uint64_t *mem = NULL, mem_len = 0;
    slice *sl = calloc((size_t)n_threads, sizeof *sl);
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    /* The same kind of memory the weights get (hugemem.h): 2 MiB pages where
     * the kernel has them, so the floor is not lowered by TLB misses the
     * decode itself does not pay. */
    if (!sl || !th || !(mem = hc_huge_alloc(n * sizeof *mem, &mem_len))) {
        hc_set_error("bandwidth probe: cannot allocate %llu bytes", (unsigned long long)bytes);
        goto out;
    }
    /* Touch every page first so the timed passes measure reads, not faults. */
    memset(mem, 1, n * sizeof *mem);
    for (int r = 0; r < reps; r++) {
        size_t per = n / (size_t)n_threads / 8 * 8; /* whole 64-byte lines */
        double t0 = hc_time_s();
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
        double dt = hc_time_s() - t0;
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
    hc_huge_free(mem, mem_len);
    free(sl);
    free(th);
    return best;
}

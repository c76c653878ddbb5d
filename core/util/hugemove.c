/* A mapped file moved into huge pages in the background: see hugemove.h. */
#include "util/hugemove.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE (2ull << 20)
#define PIECE (64ull << 20) /* moved at a time: the extra memory a move holds */

struct hc_huge_move {
    int fd;
    uint8_t *raw;      /* the reserved range: raw_len bytes */
    uint64_t raw_len;
    uint8_t *base;     /* 2 MiB aligned, inside raw */
    uint64_t size;     /* the file's bytes */
    uint64_t span;     /* size rounded up to 2 MiB: what moves */
    pthread_t thread;
    int started;
    pid_t pid;         /* the process the thread runs in (a fork's child has none) */
    atomic_int stop;
    atomic_uint_fast64_t moved;
    atomic_int finished;
    atomic_int error;
};

/* n bytes of anonymous memory, 2 MiB aligned, advised for huge pages. */
static uint8_t *aligned_anon(uint64_t n)
{
    uint8_t *r = mmap(NULL, (size_t)(n + HUGE_PAGE), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        return NULL;
    uint8_t *a = (uint8_t *)(((uintptr_t)r + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (a > r)
        munmap(r, (size_t)(a - r));
    if (r + n + HUGE_PAGE > a + n)
        munmap(a + n, (size_t)(r + n + HUGE_PAGE - (a + n)));
#ifdef MADV_HUGEPAGE
    (void)madvise(a, (size_t)n, MADV_HUGEPAGE);
#endif
    return a;
}

/* Piece [off, off + n) of the span: read, made read-only, put in place.
 * 0 or an errno. */
static int move_piece(hc_huge_move *mv, uint64_t off, uint64_t n)
{
    uint8_t *a = aligned_anon(n);
    if (!a)
        return errno ? errno : ENOMEM;
    /* The span's last piece reaches past the file's end: zeros there, as
     * the file's last page reads past its end. */
    const uint64_t len = off + n <= mv->size ? n : mv->size - off;
    for (uint64_t done = 0; done < len;) {
        ssize_t r = pread(mv->fd, a + done, (size_t)(len - done), (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || atomic_load(&mv->stop)) {
            const int e = r < 0 ? errno : r == 0 ? EIO : ECANCELED;
            munmap(a, (size_t)n);
            return e;
        }
        done += (uint64_t)r;
    }
    if (mprotect(a, (size_t)n, PROT_READ) != 0 ||
        mremap(a, (size_t)n, (size_t)n, MREMAP_MAYMOVE | MREMAP_FIXED, mv->base + off) ==
            MAP_FAILED) {
        const int e = errno;
        munmap(a, (size_t)n);
        return e;
    }
    return 0;
}

static void *mover(void *arg)
{
    hc_huge_move *mv = arg;
    int e = 0;
#ifdef SCHED_IDLE
    /* Only on a core nothing else wants: the model's own threads (a
     * prompt, a token) go first, and the move fills the gaps. */
    const struct sched_param idle = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
#endif
    for (uint64_t off = 0; off < mv->span && !e; off += PIECE) {
        if (atomic_load(&mv->stop)) {
            e = ECANCELED;
            break;
        }
        const uint64_t n = mv->span - off < PIECE ? mv->span - off : PIECE;
        if (!(e = move_piece(mv, off, n)))
            atomic_fetch_add(&mv->moved, n);
    }
    atomic_store(&mv->error, e);
    atomic_store(&mv->finished, 1);
    return NULL;
}

hc_huge_move *hc_huge_move_start(int fd, uint64_t size, const uint8_t **base)
{
    hc_huge_move *mv = calloc(1, sizeof *mv);
    if (!mv) {
        errno = ENOMEM;
        return NULL;
    }
    mv->fd = -1;
    mv->size = size;
    mv->span = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    mv->raw_len = mv->span + HUGE_PAGE;
    /* Reserve the range (no memory behind it), then put the file in it at
     * the first 2 MiB boundary. */
    mv->raw = mmap(NULL, (size_t)mv->raw_len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mv->raw == MAP_FAILED) {
        free(mv);
        return NULL;
    }
    mv->base = (uint8_t *)(((uintptr_t)mv->raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (mmap(mv->base, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED ||
        (mv->fd = dup(fd)) < 0) {
        const int e = errno;
        munmap(mv->raw, (size_t)mv->raw_len);
        free(mv);
        errno = e;
        return NULL;
    }
    *base = mv->base;
    mv->pid = getpid();
    const int e = pthread_create(&mv->thread, NULL, mover, mv);
    if (e) {
        atomic_store(&mv->error, e);
        atomic_store(&mv->finished, 1);
    } else {
        mv->started = 1;
    }
    return mv;
}

uint64_t hc_huge_move_state(hc_huge_move *mv, int *finished, int *error)
{
    *finished = atomic_load(&mv->finished);
    *error = *finished ? atomic_load(&mv->error) : 0;
    return atomic_load(&mv->moved);
}

void hc_huge_move_wait(hc_huge_move *mv)
{
    if (mv->started && mv->pid != getpid()) {
        /* A child forked while the thread ran: the thread is not here, and
         * what it had moved by then is what this process has. */
        mv->started = 0;
        if (!atomic_load(&mv->finished)) {
            atomic_store(&mv->error, ECANCELED);
            atomic_store(&mv->finished, 1);
        }
    }
    if (mv->started) {
        pthread_join(mv->thread, NULL);
        mv->started = 0;
    }
}

void hc_huge_move_end(hc_huge_move *mv)
{
    if (!mv)
        return;
    atomic_store(&mv->stop, 1);
    hc_huge_move_wait(mv);
    close(mv->fd);
    /* The file's pages, the moved ones and the reserve around them. */
    munmap(mv->raw, (size_t)mv->raw_len);
    free(mv);
}

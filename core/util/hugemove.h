/*
 * A file mapped now and moved into huge pages in the background: the first
 * token does not wait for the whole file to be read (hugemem.h says why
 * resident huge pages matter to decode), and decode still ends up on them.
 *
 * The file is mapped read-only at a 2 MiB-aligned address.  A thread then
 * reads it, 64 MiB at a time, into anonymous memory advised for huge pages
 * and mremap()s each piece over the file's pages at the same addresses.
 * The bytes at every address are the file's before, during and after a
 * move (mremap swaps the pages under the address space's lock), so readers
 * need no coordination; they only read faster once a piece has moved.  The
 * thread runs at SCHED_IDLE: on cores the model's threads leave free, so a
 * prompt is not slowed by it (measured: with normal priority a first
 * prompt on 2 cores took 1.5-2x as long).
 */
#ifndef HC_HUGEMOVE_H
#define HC_HUGEMOVE_H

#include <stdint.h>

typedef struct hc_huge_move hc_huge_move;

/* Maps `size` bytes of fd (kept open by the move: the caller may close
 * its own) at *base and starts the thread.  NULL with errno set when
 * nothing could be mapped; when only the thread could not start, the
 * mapping stays (hc_huge_move_state says why nothing moves). */
hc_huge_move *hc_huge_move_start(int fd, uint64_t size, const uint8_t **base);

/* Bytes moved so far; *finished 1 once the thread has ended, and then
 * *error 0 (all moved) or the errno that stopped it (the rest stays the
 * file's pages, which read the same). */
uint64_t hc_huge_move_state(hc_huge_move *mv, int *finished, int *error);

/* Waits for the thread to end. */
void hc_huge_move_wait(hc_huge_move *mv);

/* Stops the thread if it still runs, unmaps everything, frees mv. */
void hc_huge_move_end(hc_huge_move *mv);

#endif /* HC_HUGEMOVE_H */

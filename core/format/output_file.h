/*
 * Where a written file goes — internal to libhotcold.
 *
 * Every file hotcold writes (models, side files, the GPU index) goes through
 * these rules, so that a writer never replaces what it was not pointed at:
 *   1. OUT that is a symbolic link: the file it names is the target (the
 *      link stays a link); a link to a missing file is an error.
 *   2. A directory, socket or other special file: an error.
 *   3. A character or block device, or a FIFO: written in place, directly
 *      (`quantize m.gguf /dev/null q8_0` works, `/dev/full` fails with
 *      ENOSPC); there is nothing to rename over.  A FIFO that no process
 *      reads is an error, not a wait.
 *   4. A regular file that exists: replaced only when `replace` is set (the
 *      tools' --force); it is written to a temporary file beside it and
 *      renamed over it once complete, keeping its permission bits.
 *   5. A file that does not exist: created the same way (temporary file,
 *      then rename), so a failure never leaves a partial file under OUT.
 * The temporary file is "<target>.tmp" (or "<target>.tmp.<pid>.<n>" when
 * that exists), always created new (O_EXCL): an existing file of that name,
 * or a link there, is never written through or removed.
 */
#ifndef HC_CORE_OUTPUT_FILE_H
#define HC_CORE_OUTPUT_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "hotcold/toolchain.h" /* hc_output_check */

typedef struct hc_output_file {
    char *target; /* the file that gets the data: OUT, or what its link names */
    char *tmp;    /* the temporary file renamed over target; NULL: target is written directly */
    FILE *f;      /* NULL when closed */
    uint64_t written, kicked; /* bytes written; bytes whose writeback has been started */
} hc_output_file;

/* hc_output_check(path, replace), whether the rules let `path` be written,
 * is public (hotcold/toolchain.h): tools check it before long work, and
 * hc_output_open() applies the same rules. */

/* Open `path` for writing under the rules.  0 and o->f open (fully
 * buffered), or -1 with hc_last_error() set and nothing created. */
int hc_output_open(hc_output_file *o, const char *path, int replace);

/* Finish: flush to disk (regular files), close, rename into place.  0, or
 * -1 with hc_last_error() set and the temporary file removed. */
int hc_output_commit(hc_output_file *o);

/* A writer wrote n more bytes to o->f.  For a temporary file, every 64 MiB
 * this starts the kernel writing them to disk (Linux: sync_file_range,
 * without waiting), so the fsync at commit finds little left: a file
 * written faster than the disk no longer waits for all of itself at the
 * end. */
void hc_output_wrote(hc_output_file *o, uint64_t n);

/* Give up: close and remove the temporary file.  Safe on a zeroed record
 * and after hc_output_commit(). */
void hc_output_abandon(hc_output_file *o);

#endif /* HC_CORE_OUTPUT_FILE_H */

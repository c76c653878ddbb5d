/* Where a written file goes; the rules are in output_file.h. */
#include "format/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

enum { TARGET_NEW, TARGET_REGULAR, TARGET_DIRECT };

/* Apply rules 1-5 to `path`: the kind of target, its resolved name (malloc'd)
 * and, for an existing regular file, its permission bits. */
static int classify(const char *path, int replace, char **target, int *kind, mode_t *mode)
{
    struct stat st;
    int rc = -1;
    *target = NULL;
    if (!path || !*path) {
        hc_set_error("output: no file name given");
        return -1;
    }
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT) {
            hc_set_error("%s: cannot write there: %s", path, strerror(errno));
            return -1;
        }
        *kind = TARGET_NEW;
        if (!(*target = strdup(path))) {
            hc_set_error("%s: out of memory", path);
            return -1;
        }
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        if (!(*target = realpath(path, NULL))) {
            hc_set_error("%s: a symbolic link to %s (%s); name the file itself", path,
                         errno == ENOENT ? "a missing file" : "a file that cannot be resolved",
                         strerror(errno));
            return -1;
        }
        if (stat(*target, &st) != 0) {
            hc_set_error("%s: cannot write through the link to %s: %s", path, *target,
                         strerror(errno));
            goto out;
        }
    } else if (!(*target = strdup(path))) {
        hc_set_error("%s: out of memory", path);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        hc_set_error("%s is a directory; give a file name", path);
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
        *kind = TARGET_DIRECT;
        rc = 0;
    } else if (!S_ISREG(st.st_mode)) {
        hc_set_error("%s is not a regular file, device or FIFO; refusing to write there", path);
    } else if (!replace) {
        hc_set_error("%s already exists (--force replaces it)", path);
    } else {
        *kind = TARGET_REGULAR;
        *mode = st.st_mode & 07777;
        rc = 0;
    }
out:
    if (rc != 0) {
        free(*target);
        *target = NULL;
    }
    return rc;
}

int hc_output_check(const char *path, int replace)
{
    char *target;
    int kind;
    mode_t mode;
    if (classify(path, replace, &target, &kind, &mode) != 0)
        return -1;
    free(target);
    return 0;
}

/* A new temporary file beside `target`, never one that exists (O_EXCL), and
 * never through a link (O_NOFOLLOW). */
static int create_tmp(hc_output_file *o, mode_t mode)
{
    size_t len = strlen(o->target) + 48;
    o->tmp = malloc(len);
    if (!o->tmp) {
        hc_set_error("%s: out of memory", o->target);
        return -1;
    }
    for (unsigned n = 0; n < 16; n++) {
        if (n == 0)
            snprintf(o->tmp, len, "%s.tmp", o->target);
        else
            snprintf(o->tmp, len, "%s.tmp.%ld.%u", o->target, (long)getpid(), n);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            hc_set_error("%s: cannot create: %s", o->tmp, strerror(errno));
            break;
        }
    }
    if (errno == EEXIST)
        hc_set_error("%s: cannot create a temporary file beside it (%s.tmp and 15 others exist)",
                     o->target, o->target);
    free(o->tmp);
    o->tmp = NULL;
    return -1;
}

int hc_output_open(hc_output_file *o, const char *path, int replace)
{
    int kind, fd = -1;
    mode_t mode = 0666; /* new files: as the umask allows, like any tool's output */
    memset(o, 0, sizeof *o);
    if (classify(path, replace, &o->target, &kind, &mode) != 0)
        return -1;
    if (kind == TARGET_DIRECT) {
        /* A device or FIFO: no O_TRUNC or O_CREAT, nothing to replace.
         * O_NONBLOCK makes a FIFO nobody reads fail (ENXIO) instead of
         * waiting for a reader; the writes themselves then block as usual. */
        fd = open(o->target, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            hc_set_error("%s: cannot open for writing: %s", path,
                         errno == ENXIO ? "a FIFO that no process reads" : strerror(errno));
        else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
            hc_set_error("%s: %s", path, strerror(errno));
            close(fd);
            fd = -1;
        }
    } else {
        fd = create_tmp(o, mode);
        /* The umask narrowed the mode at creation; a replaced file keeps its own. */
        if (fd >= 0 && kind == TARGET_REGULAR && fchmod(fd, mode) != 0)
            HC_DEBUG("%s: cannot keep the mode of %s: %s", o->tmp, o->target, strerror(errno));
    }
    if (fd >= 0 && !(o->f = fdopen(fd, "wb"))) {
        hc_set_error("%s: %s", path, strerror(errno));
        close(fd);
    }
    if (!o->f) {
        hc_output_abandon(o);
        return -1;
    }
    setvbuf(o->f, NULL, _IOFBF, 1 << 20);
    return 0;
}

#define WRITEBACK_STEP (64u << 20)

void hc_output_wrote(hc_output_file *o, uint64_t n)
{
    o->written += n;
    if (!o->tmp || !o->f || o->written - o->kicked < WRITEBACK_STEP)
        return;
#ifdef SYNC_FILE_RANGE_WRITE
    /* A failure here only loses the head start; write errors still show at
     * commit (ferror, fsync). */
    if (fflush(o->f) == 0)
        (void)sync_file_range(fileno(o->f), (off_t)o->kicked, (off_t)(o->written - o->kicked),
                              SYNC_FILE_RANGE_WRITE);
#endif
    o->kicked = o->written;
}

int hc_output_commit(hc_output_file *o)
{
    FILE *f = o->f;
    o->f = NULL;
    int bad = !f || fflush(f) != 0 || ferror(f);
    int e = errno;
    /* fsync only where a rename follows: devices and FIFOs may refuse it. */
    if (!bad && o->tmp && fsync(fileno(f)) != 0) {
        bad = 1;
        e = errno;
    }
    if (f && fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        hc_set_error("%s: write failed: %s", o->tmp ? o->tmp : o->target, strerror(e));
    } else if (o->tmp && rename(o->tmp, o->target) != 0) {
        bad = 1;
        hc_set_error("%s: cannot rename %s into place: %s", o->target, o->tmp, strerror(errno));
    } else {
        free(o->tmp);
        o->tmp = NULL; /* renamed: nothing left to remove */
    }
    hc_output_abandon(o);
    return bad ? -1 : 0;
}

void hc_output_abandon(hc_output_file *o)
{
    if (o->f)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->target);
    memset(o, 0, sizeof *o);
}

/*
 * ELF header checks before dlopen(); the rules are in elf_check.h.  Field
 * meanings are the System V ABI's (gABI "ELF Header", "Program Header",
 * "Sections"), as <elf.h> spells them.
 */
#include "runtime/elf_check.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h> /* ElfW(): the Elf32_ or Elf64_ types of this process */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

#if __SIZEOF_POINTER__ == 8
#define HOST_CLASS ELFCLASS64
#else
#define HOST_CLASS ELFCLASS32
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

/* e_machine of the code this file was compiled into; 0 = unknown here, and
 * then the machine is left to dlopen(), which checks it without mapping. */
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#elif defined(__s390x__)
#define HOST_MACHINE EM_S390
#else
#define HOST_MACHINE 0
#endif

static int fail(char *why, size_t len, const char *fmt, ...) HC_PRINTF(3, 4);
static int fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *machine_name(unsigned m)
{
    switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_386: return "i386";
    case EM_AARCH64: return "AArch64";
    case EM_ARM: return "ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "PowerPC64";
    case EM_S390: return "s390";
    }
    return "another machine";
}

static const char *type_name(unsigned t)
{
    switch (t) {
    case ET_NONE: return "ET_NONE";
    case ET_REL: return "ET_REL, an object file";
    case ET_EXEC: return "ET_EXEC, an executable";
    case ET_CORE: return "ET_CORE, a core dump";
    }
    return "unknown";
}

static const char *segment_name(uint32_t t)
{
    switch (t) {
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_PHDR: return "PT_PHDR";
    case PT_TLS: return "PT_TLS";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
#ifdef PT_GNU_PROPERTY
    case PT_GNU_PROPERTY: return "PT_GNU_PROPERTY";
#endif
    }
    return "segment";
}

/* [off, off + count * size) inside a file of file_size bytes, without
 * overflow?  The end is returned for the message. */
static int table_fits(uint64_t off, uint64_t count, uint64_t size, uint64_t file_size,
                      uint64_t *end)
{
    if (size && count > UINT64_MAX / size) {
        *end = UINT64_MAX;
        return 0;
    }
    uint64_t bytes = count * size;
    if (off > UINT64_MAX - bytes) {
        *end = UINT64_MAX;
        return 0;
    }
    *end = off + bytes;
    return *end <= file_size;
}

/* Exactly n bytes at off, or -1 (short read or error; why says which). */
static int read_at(int fd, void *buf, size_t n, uint64_t off, const char *what, char *why,
                   size_t len)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return fail(why, len, "cannot read its %s: %s", what, strerror(errno));
        if (r == 0)
            return fail(why, len, "truncated ELF file: it ends inside its %s", what);
        got += (size_t)r;
    }
    return 0;
}

/* e_ident: `got` is how many of its EI_NIDENT bytes the file has. */
static int check_ident(const unsigned char *id, uint64_t got, char *why, size_t len)
{
    if (got < SELFMAG || memcmp(id, ELFMAG, SELFMAG) != 0)
        return fail(why, len, "not an ELF file (it does not start with \\177ELF)");
    if (got < EI_NIDENT)
        return fail(why, len, "truncated ELF file: %" PRIu64 " bytes", got);
    if (id[EI_CLASS] != HOST_CLASS)
        return fail(why, len, "wrong ELF class: a %s file, this process is %s",
                    id[EI_CLASS] == ELFCLASS32   ? "32-bit"
                    : id[EI_CLASS] == ELFCLASS64 ? "64-bit"
                                                 : "corrupt (unknown class)",
                    HOST_CLASS == ELFCLASS64 ? "64-bit" : "32-bit");
    if (id[EI_DATA] != HOST_DATA)
        return fail(why, len, "wrong byte order: the file is %s, this process is %s",
                    id[EI_DATA] == ELFDATA2LSB   ? "little-endian"
                    : id[EI_DATA] == ELFDATA2MSB ? "big-endian"
                                                 : "corrupt (unknown byte order)",
                    HOST_DATA == ELFDATA2LSB ? "little-endian" : "big-endian");
    if (id[EI_VERSION] != EV_CURRENT)
        return fail(why, len, "corrupt ELF header: version %u, expected %u", id[EI_VERSION],
                    EV_CURRENT);
    return 0;
}

static int check_header(const ElfW(Ehdr) *eh, uint64_t file_size, char *why, size_t len)
{
    if (eh->e_type != ET_DYN)
        return fail(why, len, "ELF type %u (%s): a plugin must be a shared object (ET_DYN)",
                    eh->e_type, type_name(eh->e_type));
    if (HOST_MACHINE && eh->e_machine != HOST_MACHINE)
        return fail(why, len, "built for ELF machine %u (%s), this process runs on %u (%s)",
                    eh->e_machine, machine_name(eh->e_machine), HOST_MACHINE,
                    machine_name(HOST_MACHINE));
    if (eh->e_ehsize < sizeof(ElfW(Ehdr)))
        return fail(why, len, "corrupt ELF header: e_ehsize %u, expected at least %zu",
                    eh->e_ehsize, sizeof(ElfW(Ehdr)));
    if (eh->e_phentsize != sizeof(ElfW(Phdr)))
        return fail(why, len, "corrupt ELF header: program header entries of %u bytes, expected %zu",
                    eh->e_phentsize, sizeof(ElfW(Phdr)));
    /* PN_XNUM (an extended count in section 0) is for core files only. */
    if (eh->e_phnum == 0 || eh->e_phnum == PN_XNUM)
        return fail(why, len, "corrupt ELF header: %u program headers", eh->e_phnum);
    uint64_t end;
    if (!table_fits(eh->e_phoff, eh->e_phnum, eh->e_phentsize, file_size, &end))
        return fail(why, len,
                    "truncated ELF file: its program header table needs bytes %" PRIu64
                    "..%" PRIu64 ", the file has %" PRIu64,
                    (uint64_t)eh->e_phoff, end, file_size);
    return 0;
}

/* The section header table, when there is one.  e_shnum 0 with a table
 * means the count is in section 0's sh_size (gABI "Sections"). */
static int check_sections(int fd, const ElfW(Ehdr) *eh, uint64_t file_size, char *why,
                          size_t len)
{
    if (eh->e_shoff == 0)
        return 0;
    if (eh->e_shentsize != sizeof(ElfW(Shdr)))
        return fail(why, len, "corrupt ELF header: section header entries of %u bytes, expected %zu",
                    eh->e_shentsize, sizeof(ElfW(Shdr)));
    uint64_t count = eh->e_shnum, end;
    if (count == 0) {
        ElfW(Shdr) sh0;
        if (!table_fits(eh->e_shoff, 1, sizeof sh0, file_size, &end))
            return fail(why, len,
                        "truncated ELF file: its section header table needs bytes %" PRIu64
                        "..%" PRIu64 ", the file has %" PRIu64,
                        (uint64_t)eh->e_shoff, end, file_size);
        if (read_at(fd, &sh0, sizeof sh0, eh->e_shoff, "section header table", why, len) != 0)
            return -1;
        count = sh0.sh_size;
    }
    if (!table_fits(eh->e_shoff, count, eh->e_shentsize, file_size, &end))
        return fail(why, len,
                    "truncated ELF file: its section header table needs bytes %" PRIu64
                    "..%" PRIu64 ", the file has %" PRIu64,
                    (uint64_t)eh->e_shoff, end, file_size);
    return 0;
}

static int check_segments(int fd, const ElfW(Ehdr) *eh, uint64_t file_size, char *why,
                          size_t len)
{
    int n_load = 0, n_dynamic = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        ElfW(Phdr) ph;
        if (read_at(fd, &ph, sizeof ph, eh->e_phoff + (uint64_t)i * eh->e_phentsize,
                    "program header table", why, len) != 0)
            return -1;
        n_load += ph.p_type == PT_LOAD;
        n_dynamic += ph.p_type == PT_DYNAMIC;
        if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
            return fail(why, len,
                        "corrupt ELF file: PT_LOAD segment %u has %" PRIu64
                        " file bytes but only %" PRIu64 " bytes in memory",
                        i, (uint64_t)ph.p_filesz, (uint64_t)ph.p_memsz);
        uint64_t end;
        if (ph.p_filesz > 0 && !table_fits(ph.p_offset, 1, ph.p_filesz, file_size, &end))
            return fail(why, len,
                        "truncated ELF file: %s segment %u needs file bytes %" PRIu64 "..%" PRIu64
                        ", the file has %" PRIu64,
                        segment_name(ph.p_type), i, (uint64_t)ph.p_offset, end, file_size);
    }
    if (n_load == 0)
        return fail(why, len, "corrupt ELF file: no PT_LOAD segment");
    if (n_dynamic == 0)
        return fail(why, len, "not a shared library: no PT_DYNAMIC segment");
    return 0;
}

int hc_elf_check(const char *path, char *why, size_t why_len)
{
    int rc = -1;
    /* O_NONBLOCK: should a FIFO have taken the file's place, do not wait. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        fail(why, why_len, "cannot open: %s", strerror(errno));
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fail(why, why_len, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(why, why_len, "not a regular file");
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    unsigned char ident[EI_NIDENT] = {0};
    ssize_t got = pread(fd, ident, sizeof ident, 0);
    if (got < 0) {
        fail(why, why_len, "cannot read: %s", strerror(errno));
        goto out;
    }
    if (check_ident(ident, (uint64_t)got, why, why_len) != 0)
        goto out;
    ElfW(Ehdr) eh;
    if (size < sizeof eh) {
        fail(why, why_len, "truncated ELF file: %" PRIu64 " bytes, less than its ELF header (%zu)",
             size, sizeof eh);
        goto out;
    }
    if (read_at(fd, &eh, sizeof eh, 0, "ELF header", why, why_len) != 0 ||
        check_header(&eh, size, why, why_len) != 0 ||
        check_segments(fd, &eh, size, why, why_len) != 0 ||
        check_sections(fd, &eh, size, why, why_len) != 0)
        goto out;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

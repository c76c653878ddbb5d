/*
 * A plugin file checked against its own ELF headers before dlopen().
 *
 * dlopen() maps every PT_LOAD segment for the size its program header
 * claims; when the file is shorter (a truncated copy, an interrupted
 * install) the first touch of the missing pages raises SIGBUS inside the
 * dynamic loader, and the whole process dies.  So the loader reads the
 * headers first, with pread() (nothing mapped), and turns what would crash
 * into a reason.
 */
#ifndef HC_CORE_ELF_CHECK_H
#define HC_CORE_ELF_CHECK_H

#include <stddef.h>

/* 0 if `path` is a shared object dlopen() can map in this process: an ELF
 * file of this process's class (32/64-bit), byte order and machine, of type
 * ET_DYN, whose ELF header, program header table, section header table
 * (when it has one) and every segment's file bytes lie inside the file, with
 * at least one PT_LOAD segment and a PT_DYNAMIC one.  -1 otherwise, with a
 * one-line reason in why ("truncated ELF file: ...", "not an ELF file", ...).
 * The file may still change between this check and dlopen(); the check is
 * against accidents, not against an adversary racing the loader. */
int hc_elf_check(const char *path, char *why, size_t why_len);

#endif /* HC_CORE_ELF_CHECK_H */

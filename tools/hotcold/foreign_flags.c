/*
 * Flags of llama.cpp's (and PowerInfer's) `main` and `llama-bench` that
 * users type from habit.  getopt would read "-ngl 99" as "-n gl" and
 * complain about a value; naming the flag, and hotcold's way to do the same
 * where there is one, is what the user needs.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tool_util.h"

typedef struct foreign_flag {
    const char *names; /* the spellings, space-separated */
    const char *instead;
} foreign_flag;

static const foreign_flag flags[] = {
    {"-ngl --n-gpu-layers --gpu-layers",
     "--split layers --vram-budget GiB (with --device vulkan or cuda: whole layers from layer "
     "0 while they fit the budget)"},
    {"-mg --main-gpu", "--device vulkan:N (see hotcold devices)"},
    {"-ts --tensor-split -sm --split-mode", "no equivalent: hotcold uses one GPU"},
    {"-fa --flash-attn", "no equivalent: hotcold's decode attention is always fused"},
    {"-cnv --conversation -i --interactive -ins --instruct -sys --system-prompt",
     "no equivalent yet: hotcold run generates from -p/-f; a chat command is planned"},
    {"-r --reverse-prompt", "no equivalent yet (generation stops at end of sequence or -n)"},
    {"-ctk --cache-type-k -ctv --cache-type-v", "no equivalent: the KV cache is f32"},
    {"-ub --ubatch-size", "-b/--batch-size (prompt tokens per forward pass)"},
    {"-tb --threads-batch", "-t/--threads (the same threads run prompt and decode)"},
    {"-co --color", "no equivalent"},
    {"-e --escape", "no equivalent: -p takes the text as given, -f reads a file"},
    {"--mlock", "--no-mmap (read the weights into memory backed by 2 MiB pages)"},
    {"-hf --hf-repo -hff --hf-file -mu --model-url", "no equivalent: download the file and give -m"},
    {"-nkvo --no-kv-offload", "no equivalent: the KV cache sits with its layer's attention"},
    {"--numa", "no equivalent"},
    {"--log-disable", "no equivalent: hotcold logs warnings only (-v for more)"},
};

static int has_name(const char *names, const char *arg, size_t len)
{
    for (const char *p = names; *p;) {
        const char *end = strchrnul(p, ' ');
        if ((size_t)(end - p) == len && !strncmp(p, arg, len))
            return 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* Does this argument of the command's own take the next one as its value? */
static int takes_value(const char *a, const char *shortopts, const struct option *longopts)
{
    if (a[1] == '-') {
        if (strchr(a, '='))
            return 0;
        for (const struct option *o = longopts; o->name; o++)
            if (!strcmp(a + 2, o->name))
                return o->has_arg == required_argument;
        return 0;
    }
    /* "-n" takes a value; "-n64" carries it; "-vn" ends in an option that takes one. */
    for (const char *c = a + 1; *c; c++) {
        const char *d = strchr(shortopts, *c);
        if (!d)
            return 0;
        if (d[1] == ':')
            return c[1] == 0;
    }
    return 0;
}

static int is_own(const char *a, size_t len, const char *shortopts,
                  const struct option *longopts)
{
    if (a[1] == '-') {
        for (const struct option *o = longopts; o->name; o++)
            if (strlen(o->name) == len - 2 && !strncmp(a + 2, o->name, len - 2))
                return 1;
        return 0;
    }
    return len == 2 && strchr(shortopts, a[1]) != NULL;
}

int hc_tool_reject_foreign_flags(const char *cmd, int argc, char **argv, const char *shortopts,
                                 const struct option *longopts)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break; /* everything after it is an operand */
        if (a[0] != '-' || !a[1])
            continue;
        size_t len = strcspn(a, "="); /* --flash-attn=on */
        if (is_own(a, len, shortopts, longopts)) {
            i += takes_value(a, shortopts, longopts); /* "-p -fa" is a prompt */
            continue;
        }
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
            if (has_name(flags[k].names, a, len)) {
                fprintf(stderr, "hotcold %s: %.*s is a llama.cpp flag; instead: %s\n", cmd,
                        (int)len, a, flags[k].instead);
                return -1;
            }
        }
        i += takes_value(a, shortopts, longopts);
    }
    return 0;
}

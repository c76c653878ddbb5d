/*
 * `hotcold quantize IN OUT TYPE`: rewrite a model's weights as f16, q8_0,
 * q4_0 or q6_k, optionally the output head in another type (rules in
 * core/toolchain/quantize.h), with progress on stderr.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "hotcold/hotcold.h"
#include "hotcold/toolchain.h"
#include "tool_util.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotcold quantize [options] IN OUT TYPE\n"
            "\n"
            "Rewrite the weights of the GGUF model IN into OUT.  TYPE is one of:\n"
            "  f16    2-D weights as f16\n"
            "  q8_0   2-D weights as q8_0 (8-bit, blocks of 32)\n"
            "  q4_0   2-D weights as q4_0 (4-bit, blocks of 32)\n"
            "  q6_k   2-D weights as q6_k (6-bit, blocks of 256)\n"
            "\n"
            "1-D tensors (norms) are stored as f32; a 2-D weight whose rows are not a\n"
            "multiple of 32 long is stored as f16.  Where q6_k is asked for, a weight\n"
            "whose rows are not a multiple of 256 long, and a PowerInfer model's\n"
            "ffn_down_t (hotcold has no q6_k kernel for it), are stored as q8_0.  The\n"
            "input may be f32, f16, q8_0, q4_0 or q6_k.  Every key is kept\n"
            "(general.file_type is set from TYPE), and so is the file's magic: a\n"
            "PowerInfer (PWRI) model stays one.  OUT appears only when complete; an\n"
            "existing OUT is kept unless --force (a link is written through, a device\n"
            "such as /dev/null written in place).\n"
            "\n"
            "      --output-tensor-type T\n"
            "                output.weight (the output head) as T (f32 or a TYPE)\n"
            "                instead of TYPE.\n"
            "                'q4_0 --output-tensor-type q6_k' follows the rules of\n"
            "                PowerInfer's 'quantize IN OUT Q4_0', which made its\n"
            "                published *.q4.powerinfer.gguf files\n"
            "      --force   replace OUT if it exists (it may be IN itself)\n"
            "  -q, --quiet   no progress\n"
            "  -h, --help    this text\n");
}

typedef struct progress_state {
    int tty;
    int quiet;
} progress_state;

static void on_progress(void *user, int done, int total, const char *tensor)
{
    const progress_state *ps = user;
    if (ps->quiet)
        return;
    if (ps->tty)
        fprintf(stderr, "\r\033[K[%d/%d] %s%s", done, total, tensor, done == total ? "\n" : "");
    else
        fprintf(stderr, "[%d/%d] %s\n", done, total, tensor);
}

static int parse_type(const char *s, hc_type *t)
{
    static const struct {
        const char *name;
        hc_type type;
    } k[] = {{"f16", HC_TYPE_F16},
             {"q8_0", HC_TYPE_Q8_0},
             {"q4_0", HC_TYPE_Q4_0},
             {"q6_k", HC_TYPE_Q6_K}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcasecmp(s, k[i].name)) {
            *t = k[i].type;
            return 1;
        }
    return 0;
}

static double file_mib(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_size / (1024.0 * 1024.0) : 0.0;
}

int hc_cmd_quantize(int argc, char **argv)
{
    const char *pos[3];
    const char *output_type = NULL;
    int n_pos = 0, force = 0;
    progress_state ps = {.tty = isatty(fileno(stderr))};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            ps.quiet = 1;
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (!strcmp(a, "--output-tensor-type")) {
            if (i + 1 == argc) {
                fprintf(stderr, "hotcold quantize: --output-tensor-type needs a TYPE\n");
                return 2;
            }
            output_type = argv[++i];
        } else if (!strncmp(a, "--output-tensor-type=", 21)) {
            output_type = a + 21;
        } else if (!strcmp(a, "--")) {
            for (i++; i < argc; i++) {
                if (n_pos == 3)
                    goto too_many;
                pos[n_pos++] = argv[i];
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "hotcold quantize: unknown option '%s'\n\n", a);
            usage(stderr);
            return 2;
        } else {
            if (n_pos == 3)
                goto too_many;
            pos[n_pos++] = a;
        }
    }
    if (n_pos != 3) {
        fprintf(stderr, "hotcold quantize: expected IN OUT TYPE, got %d argument%s\n\n", n_pos,
                n_pos == 1 ? "" : "s");
        usage(stderr);
        return 2;
    }
    hc_type type, head;
    if (!parse_type(pos[2], &type)) {
        fprintf(stderr, "hotcold quantize: unknown TYPE '%s' (use f16, q8_0, q4_0 or q6_k)\n",
                pos[2]);
        return 2;
    }
    head = type;
    if (output_type && strcasecmp(output_type, "f32") == 0)
        head = HC_TYPE_F32; /* the head decoded, e.g. to compare with its quantized form */
    else if (output_type && !parse_type(output_type, &head)) {
        fprintf(stderr,
                "hotcold quantize: unknown --output-tensor-type '%s' (use f32, f16, q8_0, q4_0 "
                "or q6_k)\n",
                output_type);
        return 2;
    }
    if (hc_tool_check_output("quantize", pos[1], force))
        return 1;
    double t0 = hc_tool_time_s();
    if (hc_quantize_file_mixed(pos[0], pos[1], type, head, on_progress, &ps) != 0) {
        fprintf(stderr, "hotcold quantize: %s\n", hc_last_error());
        return 1;
    }
    if (!ps.quiet)
        fprintf(stderr, "hotcold quantize: wrote %s (%s): %.2f MiB -> %.2f MiB in %.2f s\n",
                pos[1], pos[2], file_mib(pos[0]), file_mib(pos[1]), hc_tool_time_s() - t0);
    return 0;
too_many:
    fprintf(stderr, "hotcold quantize: too many arguments (expected IN OUT TYPE)\n\n");
    usage(stderr);
    return 2;
}

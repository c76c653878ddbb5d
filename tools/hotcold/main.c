/* `hotcold` — dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hotcold/hotcold.h"

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", hc_cmd_run, "generate text from a model (default: the model in models/)"},
    {"devices", hc_cmd_devices, "list plugins found, rejected (why) and devices"},
    {"bench", hc_cmd_bench, "prompt/decode speed against the measured memory-bandwidth floor"},
    {"quantize", hc_cmd_quantize, "convert a model's weights: hotcold quantize IN OUT f16|q8_0|q4_0"},
    {"profile", hc_cmd_profile, "count how often each FFN neuron fires over a corpus"},
    {"train-predictor", hc_cmd_train_predictor, "train PowerInfer activation predictors (fc1/fc2)"},
    {"pack", hc_cmd_pack, "write a PowerInfer (PWRI) model: down transposed, predictors, stats"},
    {"perplexity", hc_cmd_perplexity, "perplexity on a text as llama.cpp computes it; KL vs a base"},
    {"mkmodel", hc_cmd_mkmodel, "write a synthetic sparse (PWRI) benchmark model of any shape"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: hotcold <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'hotcold <command> --help' (or 'hotcold help <command>') describes a "
               "command's options.\n"
               "hotcold %s\n", HOTCOLD_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "help") && argc > 2) {
        /* "hotcold help run" is "hotcold run --help" */
        char help_flag[] = "--help";
        char *sub[] = {argv[2], help_flag, NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name))
                return commands[i].fn(2, sub);
        fprintf(stderr, "hotcold: no command '%s' to describe\n\n", argv[2]);
        usage(stderr);
        return 2;
    }
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("hotcold %s\n", HOTCOLD_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(name, commands[i].name)) {
            /* getopt names argv[0] in its own messages: "hotcold run: ...". */
            static char prog[64];
            snprintf(prog, sizeof prog, "hotcold %s", name);
            argv[1] = prog;
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "hotcold: unknown command '%s'\n\n", name);
    usage(stderr);
    return 2;
}

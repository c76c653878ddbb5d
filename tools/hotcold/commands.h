/* The `hotcold` subcommands: each lives in its own cmd_<name>.c. */
#ifndef HC_TOOL_COMMANDS_H
#define HC_TOOL_COMMANDS_H

int hc_cmd_run(int argc, char **argv);
int hc_cmd_devices(int argc, char **argv);
int hc_cmd_quantize(int argc, char **argv);
int hc_cmd_bench(int argc, char **argv);
int hc_cmd_mkmodel(int argc, char **argv);
int hc_cmd_profile(int argc, char **argv);
int hc_cmd_train_predictor(int argc, char **argv);
int hc_cmd_pack(int argc, char **argv);
int hc_cmd_perplexity(int argc, char **argv);

#endif

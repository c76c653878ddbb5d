/* Running the `hotcold` command from a Check suite, as a user runs it. */
#ifndef HC_TEST_CLI_UTIL_H
#define HC_TEST_CLI_UTIL_H

typedef struct cli_result {
    int status; /* exit code; -1 if it did not exit normally (a signal) */
    char *out;
    char *err;
} cli_result;

/* `hotcold <args>` through the shell, stdout and stderr captured. */
void cli(cli_result *r, const char *args);
void cli_free(cli_result *r);

#endif

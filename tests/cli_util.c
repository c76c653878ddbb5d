#include "cli_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "test_util.h"

void cli(cli_result *r, const char *args)
{
    const char *dir = hc_test_tmpdir();
    char cmd[8192];
    char out_path[512], err_path[512];
    snprintf(out_path, sizeof out_path, "%s/cli.out", dir);
    snprintf(err_path, sizeof err_path, "%s/cli.err", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", HC_CLI, args, out_path, err_path);
    int st = system(cmd);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r->out = hc_test_read_file(out_path, NULL);
    r->err = hc_test_read_file(err_path, NULL);
    ck_assert(r->out && r->err);
}

void cli_free(cli_result *r)
{
    free(r->out);
    free(r->err);
}

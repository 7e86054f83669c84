/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SLUICE_RUN_H
#define SLUICE_RUN_H

/* `sluice run [OPTIONS] -- CMD [ARGS...]`; argv[0] is "run".  Returns the
 * process exit status: CMD's, or 2 for usage/environment errors. */
int cmd_run(int argc, char **argv);

#endif

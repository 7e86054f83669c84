/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_policy.h - `sluice policy check|diff` (docs/policy.md). */
#ifndef SLUICE_CMD_POLICY_H
#define SLUICE_CMD_POLICY_H

/*
 * `sluice policy SUBCOMMAND ...`; argv[0] is "policy".
 *   check [--json] [--relays FILE] FILE...   exit 0 clean, 1 warnings, 2 errors
 *   diff  [--json] OLD NEW                   exit 0 no change, 1 changes, 2 errors
 * Errors are printed as "file:line:column: message" on stderr.
 */
int cmd_policy(int argc, char **argv);

#endif

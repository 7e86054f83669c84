/* SPDX-License-Identifier: BSD-2-Clause */
/* cmd_sign.h - `sluice policy sign|verify` (docs/policy.md "Change control"). */
#ifndef SLUICE_CMD_SIGN_H
#define SLUICE_CMD_SIGN_H

/*
 * argv[0] is "sign" or "verify".
 *   sign --key KEY POLICY...                 writes POLICY.sig; exit 0, or 2 on any error
 *   verify --allowed-signers FILE POLICY...  exit 0 all verify, 2 otherwise
 */
int cmd_policy_sign(int argc, char **argv);

#endif

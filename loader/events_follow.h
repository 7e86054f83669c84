/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * events_follow.h - the client of `sluice events --follow`: asks the daemon
 * over its control socket to follow (daemon_follow.h) and copies the lines
 * it streams to stdout as they come.
 */
#ifndef SLUICE_EVENTS_FOLLOW_H
#define SLUICE_EVENTS_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Follow the daemon's lines at $SLUICE_CONTROL_SOCK (default
 * SLUICE_CONTROL_SOCK): of sandbox `sandbox` (NULL: every line, root
 * only), from event.sequence `since` when has_since (needs sandbox), else
 * from now on.  ocsf: each line converted to OCSF (ocsf.h) before printing.
 * Runs until the daemon ends the stream (exit 1: it stopped, or dropped
 * this follower as too slow; its log says which) or stdout goes away
 * (exit 0).  A refusal or no daemon: the message on stderr, exit 2.
 */
int sluice_events_follow(const char *sandbox, bool has_since, uint64_t since, bool ocsf);

#endif

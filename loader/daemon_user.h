/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon_user.h - the daemon's users who are not root: members of its user
 * group (`--user-group`, default `sluice` when that group exists) reach the
 * control socket (0660 root:GROUP, the state directory 0710) and may run a
 * command in a sandbox of their own with a policy of the admin's, by name,
 * see their own sandboxes and stop them; nothing else.  The command runs as
 * the caller (SO_PEERCRED), never as root, without the user group and with
 * no_new_privs, in <cgroup2>/sluice/NAME, filtered before its first
 * instruction.  Wire format: docs/daemon.md.
 */
#ifndef SLUICE_DAEMON_USER_H
#define SLUICE_DAEMON_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "ctlsrv.h"

/* What this part asks of the daemon (daemon.c). */
struct daemon_user_ops {
	json_object *(*attach)(json_object *req);  /* attach a cgroup: the answer, caller owns it */
	json_object *(*detach)(json_object *req);  /* detach {"name"}: the answer, caller owns it */
	json_object *(*status)(json_object *req);  /* status: the answer, caller owns it */
	/* one lifecycle line: sandbox NULL for a daemon-wide one */
	void (*emit)(const char *sandbox, const char *action, const char *message);
	/* is the cgroup at path (absolute, under the cgroup2 mount) in one of
	 * the daemon's sandboxes (itself or below one)? */
	bool (*in_sandbox)(const char *path);
};

/*
 * Open the control socket at sock_path (bound, listening) and the state
 * directory to members of `group`: chown root:GROUP, 0660 and 0710, and let
 * them connect (ctlsrv_allow_group).  group NULL or "": root only.  A group
 * that does not exist is an error when `required` (given with
 * --user-group), else root only.  Returns 0, or -1 with msg.
 */
int daemon_user_setup(const char *group, bool required, const char *state_dir, const char *sock_path, char *msg,
		      size_t msglen);

/* Is req one of this part's: "run", "stop", or "detach" of a sandbox a
 * user runs (root's detach of it stops the command too: never unfiltered)? */
bool daemon_user_handles(json_object *req);

/*
 * Answer req from peer: a user's (peer->uid != 0) every request, root's
 * when daemon_user_handles().  "run" takes the four descriptors of the
 * request (stdin, stdout, stderr, the status pipe).  Returns the answer
 * (caller owns it).
 */
json_object *daemon_user_request(json_object *req, struct ctlsrv_peer *peer, const struct daemon_user_ops *ops);

/*
 * May peer follow the lines of `sandbox` (NULL: every line; daemon_follow.h)?
 * Root may.  A member of the user group: only a sandbox it runs, and not
 * from inside any sandbox (nothing there speaks for its user).  Returns 0,
 * or -1 with msg (the refusal, for the client).
 */
int daemon_user_may_follow(const struct ctlsrv_peer *peer, const char *sandbox, const struct daemon_user_ops *ops,
			   char *msg, size_t msglen);

/*
 * A child of the daemon ended (waitpid status): if it was a user's command,
 * tell the client ("exit N" / "signal N" on its status pipe), kill what is
 * left in its cgroup, remove the cgroup, then detach its sandbox.  Returns
 * true when pid was one.
 */
bool daemon_user_reaped(pid_t pid, int status, const struct daemon_user_ops *ops);

#endif

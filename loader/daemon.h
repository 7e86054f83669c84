/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * daemon.h - `sluice daemon` and its clients (`attach`, `detach`, `status`,
 * `reload`, `events`).  The daemon holds the BPF objects, proxies and
 * resolvers of every attached sandbox; clients talk to it over a unix
 * socket (root, and members of its user group for their own runs:
 * daemon_user.h; SO_PEERCRED checked), one JSON request line and one JSON
 * response line per connection.  Wire format: docs/daemon.md.
 */
#ifndef SLUICE_DAEMON_H
#define SLUICE_DAEMON_H

#include <stddef.h>

#define SLUICE_STATE_DIR "/run/sluice"
#define SLUICE_CONTROL_SOCK SLUICE_STATE_DIR "/control.sock"

/* Each takes argv with argv[0] the command name; returns the exit status
 * (0 ok, 1 findings, 2 usage or environment error). */
int cmd_daemon(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_reload(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_oci_hook(int argc, char **argv);

struct json_object;

/*
 * Send one request `req` (consumed) to the daemon's control socket
 * ($SLUICE_CONTROL_SOCK, default SLUICE_CONTROL_SOCK) and return its parsed
 * answer (caller owns it), or NULL with a message on stderr (no daemon, a
 * malformed answer).  Blocks until the daemon answers.
 */
struct json_object *sluice_ctl_call(struct json_object *req);

/* The same, with the descriptors fds[0..n_fds) sent along (SCM_RIGHTS, at
 * most SLUICE_CTL_MAX_FDS; the caller keeps and closes its copies). */
struct json_object *sluice_ctl_call_fds(struct json_object *req, const int *fds, size_t n_fds);

/* Send `len` bytes of `line` on the connected socket fd, the descriptors
 * fds[0..n) with its first part (SCM_RIGHTS).  0, or -1 with errno. */
int sluice_ctl_send(int fd, const char *line, size_t len, const int *fds, size_t n);

#endif

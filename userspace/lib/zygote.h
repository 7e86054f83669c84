/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zygote.h - sluice-proxy and sluice-resolver started once per daemon and
 * forked for each sandbox (issue 19: a thousand sandboxes per host).
 *
 * Each child the daemon exec'd relocated its own copy of every library's
 * data (OpenSSL alone: about 460 KiB a process, 0.9 GiB at a thousand
 * sandboxes).  A zygote is the binary exec'd once, clean (no policy, no
 * secret, no socket but its control socket), that forks a child for each
 * request: the children share those pages with it until they write them.
 *
 * The daemon (loader/children.c) is a child subreaper; the zygote forks an
 * intermediate that forks the child and exits, so the child becomes the
 * daemon's own (waitpid, SIGCHLD and kill as for an exec'd one), and only
 * then sets PR_SET_PDEATHSIG: when the daemon dies, its children die.
 *
 * Wire (SOCK_SEQPACKET, one message each way):
 *   request: struct sluice_zygote_req, then the child's argv, each string
 *            NUL-terminated, back to back; SCM_RIGHTS: n_fds descriptors,
 *            the i-th to become descriptor target[i] in the child, then
 *            the read end of a go-ahead pipe;
 *   reply:   int32_t, the child's pid (> 0) or -errno (-EMFILE: a target
 *            at or above the zygote's RLIMIT_NOFILE; -EPROTO: another
 *            layout, SLUICE_ZYGOTE_MAGIC).
 * The child runs only once the daemon, holding its pid, writes one byte
 * to the go-ahead pipe; at EOF (the daemon gave up on the request: a
 * timeout, a signal) it exits, so no child the daemon does not know of
 * ever serves a sandbox.
 */
#ifndef SLUICE_ZYGOTE_H
#define SLUICE_ZYGOTE_H

#include <stdint.h>

/* The request's layout: any change to struct sluice_zygote_req or to the
 * wire takes another value, so that a daemon and a zygote of different
 * builds (an old daemon execs the upgraded binary as its zygote) get
 * -EPROTO, and the daemon execs the child instead. */
#define SLUICE_ZYGOTE_MAGIC   0x7a796731u  /* "zyg1" */
#define SLUICE_ZYGOTE_FDS_MAX 16
#define SLUICE_ZYGOTE_MSG_MAX 32768        /* request bytes, argv included */
#define SLUICE_ZYGOTE_ARGV_MAX 128
/* The zygote's own command line is padded to this many bytes, so that
 * each child's can be written over it (ps shows the child's options). */
#define SLUICE_ZYGOTE_TITLE   4096

struct sluice_zygote_req {
	uint32_t magic;
	uint32_t n_fds;
	int32_t target[SLUICE_ZYGOTE_FDS_MAX];
};

/*
 * Called first in main().  Unless the command line is
 * `BIN --zygote FD PAD`, returns 0 and changes nothing.  Otherwise serves
 * the requests of control socket FD: the zygote itself never returns (it
 * exits 0 when the daemon closes the socket); each child returns 1 with
 * *argc and *argv its request's command line (static storage), its
 * descriptors 0-2 and the targets and no other (the control socket
 * closed), its parent the daemon and PR_SET_PDEATHSIG(SIGKILL) set.
 */
int sluice_zygote_serve(int *argc, char ***argv);

#endif

#!/usr/bin/env bash
# make check-fresh: the README's two commands on a fresh, minimal Debian 12.
#
# debootstrap a minbase bookworm root (from the Debian mirror apt is
# configured with, or $SLUICE_MIRROR), copy `git archive HEAD` into /src,
# bind /proc, /sys (with the cgroup and bpffs mounts under it) and /dev,
# give it its own /run and /tmp, then in a chroot run exactly
#     make deps && make && make demo
#     make test
# (after `apt-get install make`, which the README asks for first)
# and remove everything it made (mounts, processes, the root), also on
# failure.  It runs in a private mount namespace: its mounts never show on
# the host.  Prints how long each step took.  Needs root and the network to
# the mirror.  `make test` in the root takes the host's suite lock
# ($SLUICE_SUITE_LOCK, default /tmp/sluice-suite.lock): do not run
# check-fresh itself under that lock.  SLUICE_FRESH_QUICK=1 stops after the
# first command (make deps && make && make demo): what CI runs, the suite
# itself running on the CI machine already.
set -euo pipefail

cd "$(dirname "$0")/../.."
. tests/fresh/lib.sh
fresh_what=check-fresh
[ "$(id -u)" = 0 ] || { echo "check-fresh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check-fresh: debootstrap missing (apt-get install debootstrap)" >&2; exit 2; }
git rev-parse --verify -q HEAD >/dev/null || { echo "check-fresh: not a git checkout with a HEAD" >&2; exit 2; }
fresh_private_ns "$0" "$@"

mirror=$(fresh_mirror) || { echo "check-fresh: no Debian mirror in /etc/apt/sources.list*; set SLUICE_MIRROR" >&2; exit 2; }
lock=${SLUICE_SUITE_LOCK:-/tmp/sluice-suite.lock}

fresh_make_root
root=$fresh_root
log=${SLUICE_FRESH_LOG:-$root.log}

cleanup() {
	local rc=$?
	set +e
	fresh_cleanup || rc=1
	# the step log is kept only when a step failed (its tail was shown)
	if [ $rc = 0 ] && [ -z "${SLUICE_FRESH_LOG:-}" ]; then rm -f "$log"; else echo "check-fresh: log $log" >&2; fi
	exit $rc
}
trap cleanup EXIT INT TERM

in_root() { fresh_in_root "$root" "$1"; }

t_start=$(date +%s)
echo "check-fresh: root $root, mirror $mirror"
quiet() { "$@" > "$log" 2>&1 || { tail -n 30 "$log"; return 1; }; }
fresh_step "debootstrap bookworm (minbase)" quiet debootstrap --variant=minbase bookworm "$root" "$mirror"
mkdir -p "$root/src"
git archive HEAD | tar -x -C "$root/src"
fresh_mount_root

export root
# the one thing the README asks for before its commands: make itself (a
# minimal Debian has no make; `make deps` installs everything else)
fresh_step "apt-get install make" in_root "apt-get update -q > /dev/null && apt-get install -y -q --no-install-recommends make > /dev/null"
fresh_step "make deps && make && make demo" in_root "make deps && make && make demo"
if [ "${SLUICE_FRESH_QUICK:-}" = 1 ]; then
	echo "check-fresh: SLUICE_FRESH_QUICK=1: make test left out"
else
	fresh_step "make test" flock "$lock" bash -c ". tests/fresh/lib.sh; fresh_in_root '$root' 'make test'"
fi
echo "check-fresh: passed in $(($(date +%s) - t_start)) s"

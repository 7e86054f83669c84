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
# check-fresh itself under that lock.
set -euo pipefail

cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "check-fresh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check-fresh: debootstrap missing (apt-get install debootstrap)" >&2; exit 2; }
git rev-parse --verify -q HEAD >/dev/null || { echo "check-fresh: not a git checkout with a HEAD" >&2; exit 2; }
# every mount of the fresh root in a mount namespace of our own: the host's
# /proc/mounts never shows a second cgroup2 or bpffs mount (which other runs'
# tests would find), and whatever is left is gone with the namespace
if [ -z "${SLUICE_FRESH_NS:-}" ]; then
	SLUICE_FRESH_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi

mirror=${SLUICE_MIRROR:-}
if [ -z "$mirror" ]; then
	mirror=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null || true)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
	mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list)
fi
[ -n "$mirror" ] || { echo "check-fresh: no Debian mirror in /etc/apt/sources.list*; set SLUICE_MIRROR" >&2; exit 2; }
lock=${SLUICE_SUITE_LOCK:-/tmp/sluice-suite.lock}

root=$(mktemp -d /var/tmp/sluice-fresh.XXXXXX)
chmod 0755 "$root"   # a root directory others (apt's _apt, nobody) can enter
log=${SLUICE_FRESH_LOG:-$root.log}
mounted=()

cleanup() {
	local rc=$?
	set +e
	# processes still running in the root (a daemon, conmon, ...)
	for p in /proc/[0-9]*; do
		if [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ]; then kill -9 "${p#/proc/}" 2>/dev/null; fi
	done
	sleep 0.5
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}"
	done
	# anything the tests mounted under the root (netns files, ...)
	grep -o " $root[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
	if grep -q " $root" /proc/self/mounts; then
		echo "check-fresh: mounts left under $root, not removing it" >&2
		rc=1
	else
		rm -rf --one-file-system "$root"
	fi
	exit $rc
}
trap cleanup EXIT INT TERM

step() {
	local name=$1 t0
	shift
	t0=$(date +%s)
	echo "== check-fresh: $name"
	if "$@"; then
		echo "== check-fresh: $name: ok in $(($(date +%s) - t0)) s"
	else
		echo "== check-fresh: $name: FAILED after $(($(date +%s) - t0)) s"
		return 1
	fi
}

bind() {
	mount --rbind "$1" "$root$1"
	mount --make-rslave "$root$1"
	mounted+=("$root$1")
}

t_start=$(date +%s)
echo "check-fresh: root $root, mirror $mirror"
quiet() { "$@" > "$log" 2>&1 || { tail -n 30 "$log"; return 1; }; }
step "debootstrap bookworm (minbase)" quiet debootstrap --variant=minbase bookworm "$root" "$mirror"
mkdir -p "$root/src"
git archive HEAD | tar -x -C "$root/src"
# the root a mount point of its own: `ip netns exec` makes / a slave mount
# (mount --make-rslave /), which fails on a plain directory
mount --bind "$root" "$root" && mounted+=("$root")
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
bind /sys
bind /dev
mount -t tmpfs -o mode=0755 tmpfs "$root/run" && mounted+=("$root/run")
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp" && mounted+=("$root/tmp")

# Each command runs with the root as its mount namespace's root (pivot_root,
# then chroot to it), not in a plain chroot: the kernel refuses user
# namespaces to a chrooted process (unshare(2): EPERM), and the attack suite
# tries `unshare -Urn`.
in_root() {
	unshare -m --propagation private bash -c '
		cd "$0" && mkdir -p .oldroot && pivot_root . .oldroot &&
		exec chroot . /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root TERM=dumb LANG=C.UTF-8 /bin/bash -c "umount -l /.oldroot && rmdir /.oldroot && cd /src && $1"
	' "$root" "$1"
}
export root
# the one thing the README asks for before its commands: make itself (a
# minimal Debian has no make; `make deps` installs everything else)
step "apt-get install make" in_root "apt-get update -q > /dev/null && apt-get install -y -q --no-install-recommends make > /dev/null"
step "make deps && make && make demo" in_root "make deps && make && make demo"
step "make test" flock "$lock" bash -c "$(declare -f in_root); in_root 'make test'"
echo "check-fresh: passed in $(($(date +%s) - t_start)) s"

# shellcheck shell=bash
# tests/fresh/lib.sh - what make check-fresh (check-fresh.sh) and make
# check-deb (check-deb.sh) share: the Debian mirror, a debootstrapped
# bookworm root with /proc, /sys (cgroup and bpffs under it) and /dev bound
# in, commands run inside it, and its removal.  Sourced by bash scripts that
# run as root in a private mount namespace of their own (fresh_private_ns).

# the caller's name for its lines (fresh_step, fresh_lock): set it after sourcing
fresh_what=${fresh_what:-fresh}

# Re-exec the calling script in a mount namespace of its own: the root's
# mounts never show in the host's /proc/mounts (concurrent test runs would
# see a second cgroup2 or bpffs mount) and are gone with the namespace.
# Usage: fresh_private_ns "$0" "$@" (returns only inside the namespace).
fresh_private_ns() {
	if [ -z "${SLUICE_FRESH_NS:-}" ]; then
		SLUICE_FRESH_NS=1 exec unshare -m --propagation private bash "$@"
	fi
}

# Print the Debian mirror: $SLUICE_MIRROR, else the first .../debian URI in
# /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list.  Returns 1
# (nothing printed) when there is none.
fresh_mirror() {
	local m=${SLUICE_MIRROR:-}
	if [ -z "$m" ]; then
		m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' \
			/etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	fi
	if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
		m=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list)
	fi
	[ -n "$m" ] || return 1
	printf '%s\n' "$m"
}

# Does the mirror $1 answer for bookworm (its Release file, 20 s)?
fresh_mirror_reachable() {
	curl -fsS -o /dev/null --max-time 20 "${1%/}/dists/bookworm/Release"
}

# Debootstrap a minbase bookworm into the directory $1 (empty or missing)
# from the mirror $2.  dpkg there is told not to fsync (force-unsafe-io, in
# /etc/dpkg/dpkg.cfg.d/ before debootstrap unpacks anything, so its own
# dpkg and every later apt-get read it): the same files are installed, only
# the flush to disk is left out, which is most of dpkg's time on a loaded
# machine, and the root is thrown away afterwards anyway.  Prints what it
# does.
fresh_debootstrap() {
	mkdir -p "$1/etc/dpkg/dpkg.cfg.d"
	chmod 0755 "$1"
	echo force-unsafe-io > "$1/etc/dpkg/dpkg.cfg.d/sluice-fresh-unsafe-io"
	debootstrap --variant=minbase bookworm "$1" "$2"
	# man-db's trigger re-indexes every manual page after each install (a
	# minute and more of `make deps` on a loaded machine); `man` reads the
	# pages without the index
	echo 'man-db man-db/auto-update boolean false' | chroot "$1" debconf-set-selections
}

# Fill fresh_root: a copy of the root $SLUICE_FRESH_BASE debootstrapped
# before (tests/fresh/ci.sh makes one for check-fresh and check-deb: one
# debootstrap per run), else fresh_debootstrap from the mirror $1.  Output
# to stdout/stderr.
fresh_populate() {
	if [ -n "${SLUICE_FRESH_BASE:-}" ]; then
		cp -a "$SLUICE_FRESH_BASE/." "$fresh_root/"
	else
		fresh_debootstrap "$fresh_root" "$1"
	fi
}

# Take the host's suite lock ($SLUICE_SUITE_LOCK, default
# /tmp/sluice-suite.lock) on descriptor 9, waiting at most
# $SLUICE_FRESH_LOCK_WAIT seconds (default 600).  Whatever starts sandboxes
# in the root takes it: their cgroups and pins are the host's (the cgroup
# and bpffs mounts are bound in), and a concurrent suite on the host counts
# what appears there during its tests as left behind.  Returns 1 (says so)
# when the lock stays busy.  Released by fresh_unlock or at exit.
fresh_lock() {
	local lock=${SLUICE_SUITE_LOCK:-/tmp/sluice-suite.lock} wait=${SLUICE_FRESH_LOCK_WAIT:-600}
	exec 9> "$lock"
	echo "== $fresh_what: taking the suite lock $lock (at most $wait s)"
	if ! flock -w "$wait" 9; then
		echo "== $fresh_what: the suite lock $lock stayed busy for $wait s"
		exec 9>&-
		return 1
	fi
}
fresh_unlock() { exec 9>&-; }

fresh_mounted=()
fresh_root=

# Should the roots live in memory?  SLUICE_FRESH_TMPFS=1 yes, =0 no; unset:
# yes when the machine has 8 GiB available (a root after `make deps` and
# `make` is about 3 GB).  On a loaded disk dpkg's writes and removing the
# root afterwards take minutes; on a tmpfs seconds, and the unmount frees it.
fresh_use_tmpfs() {
	case ${SLUICE_FRESH_TMPFS:-} in
	1) return 0 ;;
	0) return 1 ;;
	esac
	[ "$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)" -ge $((8 * 1024 * 1024)) ]
}

# Make an empty directory $1.XXXXXX (0755: apt's _apt and nobody must be
# able to enter it), a tmpfs of at most $SLUICE_FRESH_TMPFS_SIZE (default
# 10g) when fresh_use_tmpfs says so, added to fresh_mounted; print its path.
# Call it in a private mount namespace (fresh_private_ns), not in $(...).
fresh_make_dir() {
	fresh_dir=$(mktemp -d "$1.XXXXXX")
	chmod 0755 "$fresh_dir"
	if fresh_use_tmpfs; then
		mount -t tmpfs -o "mode=0755,size=${SLUICE_FRESH_TMPFS_SIZE:-10g}" sluice-fresh "$fresh_dir"
		fresh_mounted+=("$fresh_dir")
	fi
}

# Make an empty root directory under /var/tmp into fresh_root (fresh_make_dir).
fresh_make_root() {
	fresh_make_dir /var/tmp/sluice-fresh
	fresh_root=$fresh_dir
}

fresh_bind() {
	mount --rbind "$1" "$fresh_root$1"
	mount --make-rslave "$fresh_root$1"
	fresh_mounted+=("$fresh_root$1")
}

# Bind what the root needs to run sluice: the root onto itself (`ip netns
# exec` makes / a slave mount, which fails on a plain directory), /proc,
# /sys (with the cgroup and bpffs mounts), /dev, its own /run and /tmp, the
# host's resolv.conf.
fresh_mount_root() {
	local r=$fresh_root
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	mount --bind "$r" "$r" && fresh_mounted+=("$r")
	mount -t proc proc "$r/proc" && fresh_mounted+=("$r/proc")
	fresh_bind /sys
	fresh_bind /dev
	mount -t tmpfs -o mode=0755 tmpfs "$r/run" && fresh_mounted+=("$r/run")
	mount -t tmpfs -o mode=1777 tmpfs "$r/tmp" && fresh_mounted+=("$r/tmp")
	# the .debs apt fetches, shared by the checks of one run (tests/fresh/ci.sh):
	# apt checks each against the mirror's signed index all the same
	if [ -n "${SLUICE_FRESH_APT_CACHE:-}" ]; then
		mkdir -p "$SLUICE_FRESH_APT_CACHE/partial" "$r/var/cache/apt/archives"
		mount --bind "$SLUICE_FRESH_APT_CACHE" "$r/var/cache/apt/archives" &&
			fresh_mounted+=("$r/var/cache/apt/archives")
	fi
}

# Kill what still runs in the root, unmount everything under it, remove it.
# Returns 1 (and keeps the root) when a mount cannot be removed.
fresh_cleanup() {
	local r=$fresh_root p i
	[ -n "$r" ] || return 0
	for p in /proc/[0-9]*; do
		if [ "$(readlink "$p/root" 2>/dev/null)" = "$r" ]; then kill -9 "${p#/proc/}" 2>/dev/null; fi
	done
	sleep 0.5
	for ((i = ${#fresh_mounted[@]} - 1; i >= 0; i--)); do
		umount -R "${fresh_mounted[i]}" 2>/dev/null || umount -R -l "${fresh_mounted[i]}"
	done
	# anything the commands mounted under the root (netns files, ...)
	grep -o " ${r}[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
	if grep -q " $r" /proc/self/mounts; then
		echo "fresh: mounts left under $r, not removing it" >&2
		return 1
	fi
	rm -rf --one-file-system "$r"
}

# Run the shell command $2 inside root $1, in /src if it exists (else /),
# with the root as its mount namespace's root (pivot_root, then chroot to
# it), not in a plain chroot: the kernel refuses user namespaces to a
# chrooted process (unshare(2): EPERM), and the attack suite and `sluice
# run`'s sandbox profile make them.  A clean environment.
fresh_in_root() {
	unshare -m --propagation private bash -c '
		cd "$0" && mkdir -p .oldroot && pivot_root . .oldroot &&
		exec chroot . /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
			/bin/bash -c "umount -l /.oldroot && rmdir /.oldroot && { cd /src 2>/dev/null || cd /; } && $1"
	' "$1" "$2"
}

# fresh_in_root in a network namespace of its own with only lo (up): for
# what starts sandboxes and containers.  The tests make every network they
# use themselves; podman's netavark, iptables and the worlds' veths then
# change that namespace, never the host's, and nothing can leave the
# machine.
fresh_in_root_offline() {
	unshare -n bash -c 'ip link set lo up && . tests/fresh/lib.sh && fresh_in_root "$0" "$1"' "$1" "$2"
}

# Run "$@" as a named step, saying how long it took.
fresh_step() {
	local name=$1 t0
	shift
	t0=$(date +%s)
	echo "== $fresh_what: $name"
	if "$@"; then
		echo "== $fresh_what: $name: ok in $(($(date +%s) - t0)) s"
	else
		echo "== $fresh_what: $name: FAILED after $(($(date +%s) - t0)) s"
		return 1
	fi
}

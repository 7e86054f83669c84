#!/usr/bin/env bash
# make check-deb: the built package on a fresh, minimal Debian 12.
#
#   tests/fresh/check-deb.sh build/deb/sluice_VERSION_ARCH.deb
#
# debootstraps a minbase bookworm root (the mirror apt is configured with,
# or $SLUICE_MIRROR), binds /proc, /sys (cgroup, bpffs) and /dev into it,
# then inside it (tests/fresh/lib.sh: pivoted, not a plain chroot):
#   - apt-get installs the .deb (its dependencies from the mirror), purges
#     it, and lists every file of the root: the baseline;
#   - dpkg -i the .deb again: every path `dpkg -L sluice` names exists; the
#     binaries report the version of userspace/lib/version.h (sluice -V,
#     -j -V, the helpers in /usr/libexec/sluice); the unit, man pages, bash
#     completion, relay list and example policies are where the FHS says and
#     the example policies check; `sluice run` of the default policy runs a
#     command (its status comes back) and, in a network namespace of its
#     own with no interface but lo, denies a connect to 192.0.2.1:80 in the
#     kernel (the egress-denied event says so; nothing can leave that
#     namespace whatever sluice decides);
#   - dpkg --purge: the root's files are exactly the baseline again (and
#     /etc/sluice is gone).
# Removes everything it made, also on failure.  Exit 0 passed, 1 failed,
# 2 usage or environment error, 77 skipped: the mirror cannot be reached,
# or the host's suite lock stayed busy for the `sluice run` (fresh_lock; the
# reason on stderr).  Needs root.  About 2-6 minutes, most of it
# debootstrap.  SLUICE_FRESH_BASE=DIR copies a root debootstrapped before
# instead (tests/fresh/ci.sh: one debootstrap for both checks), and
# SLUICE_FRESH_APT_CACHE=DIR is apt's download cache there.
set -euo pipefail

cd "$(dirname "$0")/../.."
. tests/fresh/lib.sh
fresh_what=check-deb
deb=${1:-}
[ -n "$deb" ] && [ -f "$deb" ] || { echo "check-deb: usage: $0 PATH/sluice_*.deb (make check-deb builds it)" >&2; exit 2; }
deb=$(realpath "$deb")
[ "$(id -u)" = 0 ] || { echo "check-deb: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check-deb: debootstrap missing (apt-get install debootstrap)" >&2; exit 2; }
version=$(sed -n 's/^#define SLUICE_VERSION "\(.*\)"$/\1/p' userspace/lib/version.h)
[ -n "$version" ] || { echo "check-deb: no SLUICE_VERSION in userspace/lib/version.h" >&2; exit 2; }
mirror=$(fresh_mirror) || { echo "check-deb: no Debian mirror in /etc/apt/sources.list*; set SLUICE_MIRROR" >&2; exit 2; }
if ! err=$(fresh_mirror_reachable "$mirror" 2>&1); then
	echo "check-deb: skipped: the Debian mirror $mirror cannot be reached ($err)" >&2
	exit 77
fi
fresh_private_ns "$0" "$@"

fresh_make_root
root=$fresh_root
log=${SLUICE_FRESH_LOG:-$root.log}
cleanup() {
	local rc=$?
	set +e
	fresh_cleanup || rc=1
	rm -f "$log" "$root.before" "$root.after"
	exit $rc
}
# on a signal, exit: the EXIT trap cleans up, once
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

in_root() { fresh_in_root "$root" "$1"; }
quiet() { "$@" > "$log" 2>&1 || { tail -n 40 "$log"; return 1; }; }
fail() { echo "check-deb: FAILED: $*" >&2; exit 1; }
# every file, link and directory of the root but what changes by itself
# (dpkg's and apt's own records and caches, logs, the mounts)
snapshot() {
	in_root "find / -xdev \\( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \
		-o -path /tmp -o -path /run -o -path /proc -o -path /sys -o -path /dev \\) -prune -o -print | LC_ALL=C sort"
}

t_start=$(date +%s)
echo "check-deb: $(basename "$deb") (sluice $version), root $root, mirror $mirror"
if [ -n "${SLUICE_FRESH_BASE:-}" ]; then
	fresh_step "copy the debootstrapped root $SLUICE_FRESH_BASE" fresh_populate "$mirror"
else
	fresh_step "debootstrap bookworm (minbase)" quiet fresh_populate "$mirror"
fi
fresh_mount_root
cp "$deb" "$root/tmp/sluice.deb"
fresh_step "apt-get install ./sluice.deb (and its dependencies)" quiet in_root \
	"apt-get update -q && apt-get install -y -q --no-install-recommends /tmp/sluice.deb"
fresh_step "dpkg --purge sluice: the baseline" quiet in_root "dpkg --purge sluice"
snapshot > "$root.before"
in_root "test ! -e /usr/bin/sluice" || fail "purge left /usr/bin/sluice"
fresh_step "dpkg -i sluice.deb" quiet in_root "dpkg -i /tmp/sluice.deb"

check_installed() {
	local files missing=0 f
	files=$(in_root "dpkg -L sluice")
	for f in /usr/bin/sluice /usr/libexec/sluice/sluice-proxy /usr/libexec/sluice/sluice-resolver \
		/lib/systemd/system/sluice.service /usr/share/sluice/relays.txt \
		/usr/share/sluice/policies/default-deny.yaml /usr/share/man/man8/sluice.8.gz \
		/usr/share/man/man5/sluice-policy.5.gz /usr/share/man/man7/sluice-events.7.gz \
		/usr/share/bash-completion/completions/sluice /etc/sluice/policies; do
		grep -qx "$f" <<< "$files" || { echo "dpkg -L sluice does not list $f"; missing=1; }
	done
	# every path the package lists is there
	in_root "dpkg -L sluice | while read -r f; do [ -e \"\$f\" ] || { echo \"listed, missing: \$f\"; exit 1; }; done" ||
		missing=1
	return $missing
}
fresh_step "dpkg -L sluice: the FHS layout, every listed path present" check_installed

check_binaries() {
	local out
	out=$(in_root "sluice -V") || { echo "sluice -V failed: $out"; return 1; }
	[ "$(head -n 1 <<< "$out")" = "sluice v$version" ] || { echo "sluice -V: $out"; return 1; }
	grep -q '^using libbpf v' <<< "$out" || { echo "sluice -V: $out"; return 1; }
	out=$(in_root "sluice -j -V")
	grep -q "\"sluice\":\"$version\"" <<< "$out" || { echo "sluice -j -V: $out"; return 1; }
	for h in sluice-proxy sluice-resolver; do
		out=$(in_root "/usr/libexec/sluice/$h -V") || { echo "$h -V failed: $out"; return 1; }
		[ "$(head -n 1 <<< "$out")" = "$h v$version" ] || { echo "$h -V: $out"; return 1; }
	done
	# the helpers are not user commands
	in_root "! command -v sluice-proxy" > /dev/null || { echo "sluice-proxy is on PATH"; return 1; }
	in_root "grep -qx 'ExecStart=/usr/bin/sluice daemon.*' /lib/systemd/system/sluice.service ||
		grep -q '^ExecStart=/usr/bin/sluice daemon' /lib/systemd/system/sluice.service" ||
		{ echo "the unit does not start /usr/bin/sluice daemon"; return 1; }
	# the examples check with the installed relay list (exit 0 clean, 1 lint warnings)
	out=$(in_root "sluice policy check /usr/share/sluice/policies/*.yaml 2>&1; echo rc=\$?")
	grep -qE '^rc=[01]$' <<< "$out" || { echo "policy check of the examples: $out"; return 1; }
	if grep -q 'cannot read the relay list' <<< "$out"; then echo "no relay list: $out"; return 1; fi
}
fresh_step "the binaries, the unit, the examples" check_binaries

check_run() {
	local name="pkgcheck-$$" out rc
	# the default policy (no --policy), the helpers from /usr/libexec/sluice
	set +e
	# in a directory of its own: the sandbox profile makes the workdir writable, never /
	out=$(in_root "mkdir -p /tmp/work && cd /tmp/work && sluice run --name $name -- sh -c 'exit 5'" 2>&1)
	rc=$?
	set -e
	[ $rc = 5 ] || { echo "sluice run -- sh -c 'exit 5': status $rc: $out"; return 1; }
	# a namespace with lo only (down): nothing can leave it; the kernel's
	# denial is what the event says
	set +e
	out=$(in_root "cd /tmp/work && touch /run/pkgcheck.netns && unshare --net=/run/pkgcheck.netns true &&
		sluice run --name $name --netns /run/pkgcheck.netns --events /tmp/events.jsonl -- \
			bash -c 'exec 3<>/dev/tcp/192.0.2.1/80' ; echo rc=\$?; cat /tmp/events.jsonl;
		umount /run/pkgcheck.netns" 2>&1)
	set -e
	grep -q '^rc=[1-9]' <<< "$out" || { echo "the connect was not refused: $out"; return 1; }
	grep '"event.action":"egress-denied"' <<< "$out" | grep -q '"destination.ip":"192.0.2.1"' ||
		{ echo "no egress-denied event for 192.0.2.1: $out"; return 1; }
	if [ -e "/sys/fs/bpf/sluice/$name" ]; then echo "sluice run left /sys/fs/bpf/sluice/$name"; return 1; fi
}
# sandboxes whose cgroups and pins are the host's: under the suite lock
if fresh_lock; then
	fresh_step "sluice run of the default policy from the installed paths" check_run
	fresh_unlock
else
	echo "check-deb: NOT RUN: sluice run from the installed paths (the suite lock stayed busy)"
	lock_skipped=1
fi

fresh_step "dpkg --purge sluice" quiet in_root "dpkg --purge sluice"
check_purged() {
	snapshot > "$root.after"
	if ! diff -u "$root.before" "$root.after" > "$log"; then
		echo "the purge left the root changed:"; head -n 40 "$log"; return 1
	fi
	in_root "test ! -e /etc/sluice && test ! -e /usr/libexec/sluice && test ! -e /usr/share/sluice" ||
		{ echo "the purge left /etc/sluice, /usr/libexec/sluice or /usr/share/sluice"; return 1; }
}
fresh_step "the purge leaves the root as before the install" check_purged
rm -f "$root.before" "$root.after"
if [ -n "${lock_skipped:-}" ]; then
	echo "check-deb: skipped: passed in $(($(date +%s) - t_start)) s WITHOUT the sluice run (the suite lock stayed busy)" >&2
	exit 77
fi
echo "check-deb: passed in $(($(date +%s) - t_start)) s"

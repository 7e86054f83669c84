#!/usr/bin/env bash
# make check-fresh: the README's two commands on a fresh, minimal Debian 12.
#
# debootstrap a minbase bookworm root (from the Debian mirror apt is
# configured with, or $SLUICE_MIRROR; $SLUICE_FRESH_BASE: a copy of a root
# debootstrapped before, tests/fresh/ci.sh), copy `git archive HEAD` into
# /src, bind /proc, /sys (with the cgroup and bpffs mounts under it) and
# /dev, give it its own /run and /tmp, then in a chroot run
#     apt-get install make        (what the README asks for first)
#     make deps && make
#     make demo
#     make test                   (SLUICE_FRESH_TESTS picks how much)
# and remove everything it made (mounts, processes, the root), also on
# failure.  It runs in a private mount namespace: its mounts never show on
# the host.  Prints how long each step took.  Needs root and the network to
# the mirror.
#
# SLUICE_FRESH_TESTS says what the README's second command runs:
#   full (default)  `make test` exactly: the whole suite, ~25 min more.
#   ci              `make test` narrowed to what the fresh root can show and
#                   the CI machine cannot: INTEGRATION_TESTS=$FRESH_CI_TESTS
#                   (below; $SLUICE_FRESH_CI_TESTS replaces the list) and
#                   FUZZ_BINS= (each fuzz target compiles the whole code
#                   base with ASan, minutes on a loaded machine: a minimal
#                   libFuzzer program is linked and run instead), then two
#                   tests of test_install (man, bash-completion).  The point of running
#                   tests here is that `make deps` installs every program and
#                   library they need (the issue that made this check:
#                   netavark without iptables); the suite's own logic runs
#                   in full on the CI machine already (`make test`, `make
#                   test SANITIZE=1`), so here it is the unit tests (cmocka),
#                   libFuzzer and the sanitizer runtimes, and the
#                   integration files that drive the programs make deps
#                   installs beyond the compiler, plus `dpkg-checkbuilddeps`
#                   (make deb's build dependencies) and the lint tools.  What
#                   `.ci/run` runs (tests/fresh/ci.sh).
#   none            stop after `make demo` (SLUICE_FRESH_QUICK=1 too).
# In the root no test may skip for a reason a missing package can cause:
# every SKIP must name a kernel or machine feature (fresh_skip_ok), else the
# check fails (netavark missing shows as "podman cannot create networks").
#
# `make demo` and the tests run in a network namespace of their own (only lo:
# lib.sh fresh_in_root_offline), so what podman's netavark and iptables do
# there never changes the host's network.  They start sandboxes whose cgroups and pins are the
# host's: they run under the host's suite lock (fresh_lock, at most
# $SLUICE_FRESH_LOCK_WAIT s, default 600); when it stays busy they are left
# out, the last line says so and the exit status is 77.  Do not run
# check-fresh under that lock.
set -euo pipefail

cd "$(dirname "$0")/../.."
. tests/fresh/lib.sh
fresh_what=check-fresh
[ "$(id -u)" = 0 ] || { echo "check-fresh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check-fresh: debootstrap missing (apt-get install debootstrap)" >&2; exit 2; }
git rev-parse --verify -q HEAD >/dev/null || { echo "check-fresh: not a git checkout with a HEAD" >&2; exit 2; }
tests=${SLUICE_FRESH_TESTS:-full}
[ "${SLUICE_FRESH_QUICK:-}" = 1 ] && tests=none
case $tests in full | ci | none) ;; *) echo "check-fresh: SLUICE_FRESH_TESTS=$tests: full, ci or none" >&2; exit 2 ;; esac
mirror=$(fresh_mirror) || { echo "check-fresh: no Debian mirror in /etc/apt/sources.list*; set SLUICE_MIRROR" >&2; exit 2; }
if ! err=$(fresh_mirror_reachable "$mirror" 2>&1); then
	echo "check-fresh: FAILED: the Debian mirror $mirror cannot be reached ($err); set SLUICE_MIRROR to one that can" >&2
	exit 1
fi
fresh_private_ns "$0" "$@"

# The integration files of the ci form: each drives programs `make deps`
# installs that the build does not need (the package names in brackets).
FRESH_CI_TESTS="tests/integration/test_containers.py \
tests/integration/test_daemon.py \
tests/integration/test_containerd.py \
tests/integration/test_kubernetes.py \
tests/integration/test_unit.py \
tests/integration/test_tls_h2.py \
tests/integration/test_users.py"
# test_containers: podman, runc, netavark, aardvark-dns, busybox-static
# test_daemon: podman networks (netavark, iptables), socat, curl
# test_containerd: containerd, ctr; test_kubernetes: kubectl (kubernetes-client)
# test_unit: systemd-analyze (systemd), sd_notify (libsystemd)
# test_tls_h2: curl over HTTP/2, python3-h2, python3-httpx, openssl
# test_users: useradd, runuser, busybox-static
# and of test_install (the rest of it, make install into a DESTDIR, is
# minutes and needs nothing make deps adds) the two tests that need man-db,
# groff and bash-completion:
FRESH_CI_PICKED="tests/integration/test_install.py -k man_pages_render -k bash_completion"

ci_tests=${SLUICE_FRESH_CI_TESTS:-$FRESH_CI_TESTS}

# A SKIP in the root is fine only when it names a kernel or machine feature
# (the host has the same kernel and skips it too); anything else is what a
# missing package looks like.
fresh_skip_ok() {
	grep -qE 'cgroup v1|controller|kernel|Landlock|x86-64|RLIMIT|io_uring|SLUICE_TEST_UPLOAD|run it after the other' <<< "$1"
}

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
# on a signal, exit: the EXIT trap cleans up, once
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

in_root() { fresh_in_root "$root" "$1"; }
# what starts sandboxes and containers: in a network namespace of its own
offline() { fresh_in_root_offline "$root" "$1"; }
quiet() { "$@" >> "$log" 2>&1 || { tail -n 30 "$log"; return 1; }; }

t_start=$(date +%s)
echo "check-fresh: root $root, mirror $mirror, tests: $tests"
: > "$log"
if [ -n "${SLUICE_FRESH_BASE:-}" ]; then
	fresh_step "copy the debootstrapped root $SLUICE_FRESH_BASE" fresh_populate "$mirror"
else
	fresh_step "debootstrap bookworm (minbase)" quiet fresh_populate "$mirror"
fi
mkdir -p "$root/src"
git archive HEAD | tar -x -C "$root/src"
fresh_mount_root

# the one thing the README asks for before its commands: make itself (a
# minimal Debian has no make; `make deps` installs everything else)
fresh_step "apt-get install make" quiet in_root "apt-get update -q && apt-get install -y -q --no-install-recommends make"
fresh_step "make deps && make" quiet in_root "make deps && make"

# the README's second command, narrowed or not (above); its SKIP lines judged
run_tests() {
	local out=$root.tests rc=0 line bad=0
	case $tests in
	full) offline "make test" > "$out" 2>&1 || rc=$? ;;
	ci)
		offline "make test INTEGRATION_TESTS='$ci_tests' FUZZ_BINS=" > "$out" 2>&1 || rc=$?
		offline "SLUICE_BUILD=/src/build python3 tests/integration/run.py $FRESH_CI_PICKED" >> "$out" 2>&1 || rc=1
		# libFuzzer and the sanitizer runtimes (libclang-rt-14-dev) with the
		# fuzz targets' flags: linked and run (a fuzz target of the tree
		# compiles the whole code base, minutes on a loaded machine)
		in_root "printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; return (int)(n & 0); }\n' |
			clang -fsanitize=fuzzer,address,undefined -x c - -o /tmp/fuzz-link && /tmp/fuzz-link -runs=10 && echo fuzz-link: ok" \
			>> "$out" 2>&1 || { echo "fuzz-link: FAILED" >> "$out"; rc=1; }
		# make deb's build dependencies (debian/control) and the lint tools
		in_root "dpkg-checkbuilddeps && command -v clang-tidy cppcheck lintian debootstrap" >> "$out" 2>&1 ||
			{ echo "dpkg-checkbuilddeps or a lint tool failed" >> "$out"; rc=1; }
		;;
	esac
	cat "$out" >> "$log"
	grep -E '^(unit: |[0-9]+ passed, |PASS |== test_|fuzz-link: )' "$out" || true
	while IFS= read -r line; do
		if fresh_skip_ok "$line"; then
			echo "$line (a kernel or machine feature: fine)"
		else
			echo "$line: a SKIP in the fresh root that a missing package can cause"
			bad=1
		fi
	done < <(grep -E '^SKIP ' "$out")
	if [ $rc != 0 ]; then
		grep -E '^FAIL ' "$out" || true
		tail -n 40 "$out"
	fi
	rm -f "$out"
	[ $rc = 0 ] && [ $bad = 0 ]
}

if [ "$tests" = none ]; then
	fresh_step "make demo" quiet offline "make demo"
	echo "check-fresh: SLUICE_FRESH_TESTS=none: make test left out"
	echo "check-fresh: passed in $(($(date +%s) - t_start)) s"
elif fresh_lock; then
	fresh_step "make demo" quiet offline "make demo"
	fresh_step "make test ($tests)" run_tests
	fresh_unlock
	echo "check-fresh: passed in $(($(date +%s) - t_start)) s"
else
	echo "check-fresh: NOT RUN: make demo and make test (they start sandboxes; the suite lock stayed busy)"
	echo "check-fresh: passed up to make deps && make in $(($(date +%s) - t_start)) s, WITHOUT make demo and make test"
	exit 77
fi

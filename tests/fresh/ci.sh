#!/usr/bin/env bash
# make check-fresh-ci: what .ci/run runs on a fresh Debian 12 (both checks
# of tests/fresh/ on one debootstrap):
#   - debootstrap a minbase bookworm root once into a directory of its own
#     under /var/tmp, while `make deb` builds the package on the host (CPU
#     against network and disk);
#   - check-fresh.sh on a copy of it, SLUICE_FRESH_TESTS=ci (the README's
#     commands; check-fresh.sh says why the test command is narrowed there);
#   - check-deb.sh (through tests/fresh/test_deb_root.py: the suite's
#     summary line) on another copy;
#   - both copies share one apt download cache, so check-deb fetches nothing
#     check-fresh fetched.
# Everything (the base, the cache, the package: on a tmpfs when there is
# room) is removed at the end, also on failure.  What starts sandboxes runs
# under the host's suite lock (lib.sh fresh_lock); when it stays busy that
# part is left out and the last line says so (exit 0: the part that ran
# passed; CI machines run nothing else that takes the lock).  A Debian
# mirror that cannot be reached fails the run (CI machines reach the
# package registries).  Needs root.  Prints how long each step took.
set -euo pipefail

cd "$(dirname "$0")/../.."
. tests/fresh/lib.sh
fresh_what=check-fresh-ci
[ "$(id -u)" = 0 ] || { echo "check-fresh-ci: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check-fresh-ci: debootstrap missing (apt-get install debootstrap)" >&2; exit 2; }
mirror=$(fresh_mirror) || { echo "check-fresh-ci: no Debian mirror in /etc/apt/sources.list*; set SLUICE_MIRROR" >&2; exit 2; }
if ! err=$(fresh_mirror_reachable "$mirror" 2>&1); then
	echo "check-fresh-ci: FAILED: the Debian mirror $mirror cannot be reached ($err); set SLUICE_MIRROR to one that can" >&2
	exit 1
fi

fresh_private_ns "$0" "$@"

# the base, the apt cache and the package: in memory when there is room
# (fresh_use_tmpfs), removed at the end
fresh_make_dir /var/tmp/sluice-fresh-ci
dir=$fresh_dir
debpid=
cleanup() {
	local rc=$?
	set +e
	if [ -n "$debpid" ]; then kill -- "-$debpid" 2>/dev/null; wait "$debpid" 2>/dev/null; fi
	for ((i = ${#fresh_mounted[@]} - 1; i >= 0; i--)); do umount -R "${fresh_mounted[i]}" || umount -R -l "${fresh_mounted[i]}"; done
	if grep -q " $dir" /proc/self/mounts; then
		echo "check-fresh-ci: mounts left under $dir, not removing it" >&2
		rc=1
	else
		rm -rf --one-file-system "$dir"
	fi
	exit $rc
}
# on a signal, exit: the EXIT trap cleans up, once
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t_start=$(date +%s)
echo "check-fresh-ci: in $dir, mirror $mirror"
# the package, built as `make check-deb` builds it, beside the debootstrap
# (a process group of its own: a failure or a signal ends all of it)
setsid make --no-print-directory deb OUTPUT="$dir/out" > "$dir/deb.log" 2>&1 &
debpid=$!
quiet() { "$@" > "$dir/step.log" 2>&1 || { tail -n 30 "$dir/step.log"; return 1; }; }
fresh_step "debootstrap bookworm (minbase), make deb beside it" quiet fresh_debootstrap "$dir/base" "$mirror"
mkdir -p "$dir/archives"
mv "$dir/base/var/cache/apt/archives/"*.deb "$dir/archives/" 2>/dev/null || true

export SLUICE_FRESH_BASE=$dir/base SLUICE_FRESH_APT_CACHE=$dir/archives
incomplete=
rc=0
SLUICE_FRESH_TESTS=ci bash tests/fresh/check-fresh.sh || rc=$?
case $rc in
0) ;;
77) incomplete="make demo and make test in the root" ;;
*) exit "$rc" ;;
esac

t0=$(date +%s)
if ! wait "$debpid"; then
	debpid=
	tail -n 40 "$dir/deb.log"
	echo "check-fresh-ci: make deb FAILED"
	exit 1
fi
debpid=
echo "== check-fresh-ci: make deb: waited $(($(date +%s) - t0)) s more for it"
deb=$(ls "$dir"/out/deb/sluice_*.deb)
SLUICE_DEB=$deb SLUICE_BUILD=${SLUICE_BUILD:-$PWD/build} python3 tests/integration/run.py tests/fresh/test_deb_root.py |
	tee "$dir/deb-root.log"
if grep -q '^SKIP .*the suite lock stayed busy' "$dir/deb-root.log"; then
	incomplete="${incomplete:+$incomplete, }check-deb's sluice run"
elif ! grep -q '^1 passed, 0 failed, 0 skipped$' "$dir/deb-root.log"; then
	echo "check-fresh-ci: check-deb did not pass"
	exit 1
fi
if [ -n "$incomplete" ]; then
	echo "check-fresh-ci: passed in $(($(date +%s) - t_start)) s, but WITHOUT $incomplete: they start sandboxes and the host's suite lock stayed busy"
else
	echo "check-fresh-ci: passed in $(($(date +%s) - t_start)) s"
fi

#!/usr/bin/env bash
# bench/run.sh - `make bench`: install the tools the baselines need, build
# the bench clients, run bench/bench.py (every scenario, baselines
# interleaved), print the table, write build/bench/results.json.
#
#   sudo make bench                          # everything (under 15 minutes on 2 cores)
#   sudo bash bench/run.sh --only 1,2 --quick  # a subset, tiny sizes
#
# Needs root: BPF programs, cgroups, network namespaces.  All traffic stays
# on loopback and inside network namespaces the bench creates; everything it
# creates is removed at exit, also on failure (bench/benchlib.py, and the
# EXIT trap below as a second line of defence).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=build/bench
STATE="$OUT/cleanup.state"
START=$(date +%s)
# the whole run, installs included, must end within 15 minutes
export BENCH_DEADLINE=$((START + 14 * 60))

if [ "$(id -u)" != 0 ]; then
	echo "make bench needs root (BPF programs, cgroups, network namespaces)" >&2
	exit 2
fi

# Fallback cleanup: whatever bench.py registered and did not remove (it was
# killed, say).  Every line of the state file is "KIND WHAT".
cleanup() {
	local rc=$?
	if [ -f "$STATE" ]; then
		echo "bench: cleaning up after an unclean exit ($STATE)" >&2
		while read -r kind what; do
			case "$kind" in
			pid) kill -TERM -- "-$what" 2>/dev/null || kill -TERM "$what" 2>/dev/null || true ;;
			esac
		done <"$STATE"
		sleep 0.5
		tac "$STATE" | while read -r kind what; do
			case "$kind" in
			sandbox)
				cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
				if [ -n "$cg2" ] && [ -d "$cg2/sluice/$what" ]; then
					echo 1 >"$cg2/sluice/$what/cgroup.kill" 2>/dev/null || true
					sleep 0.2
					rmdir "$cg2/sluice/$what" 2>/dev/null || true
				fi
				rm -rf "/sys/fs/bpf/sluice/$what"
				rmdir /sys/fs/bpf/sluice 2>/dev/null || true ;;
			cgroup)
				if [ -d "$what" ]; then
					echo 1 >"$what/cgroup.kill" 2>/dev/null || true
					sleep 0.2
					find "$what" -depth -type d -exec rmdir {} \; 2>/dev/null || true
				fi ;;
			netns) ip netns del "$what" 2>/dev/null || true ;;
			etcnetns) case "$what" in /etc/netns/slb*) rm -rf "$what" ;; esac ;;
			sysctl) sysctl -qw "$what" 2>/dev/null || true ;;
			tmp) case "$what" in /tmp/sluice-bench-*) rm -rf "$what" ;; esac ;;
			esac
		done
		rm -f "$STATE"
	fi
	exit "$rc"
}
trap cleanup EXIT

# --- tools ------------------------------------------------------------------
# Debian packages of the baselines and load generators; linux-perf only if
# it installs (it is used for software-clock profiles, never required).
# squid-openssl is squid built with OpenSSL (ssl_bump, scenario 8); it
# replaces Debian's GnuTLS squid, which cannot intercept TLS.
PKGS="wrk hyperfine tinyproxy squid-openssl nftables dnsmasq-base sslsplit mitmproxy"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "bench: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	timeout 300 apt-get update -q >/dev/null || echo "bench: apt-get update failed; trying the install anyway" >&2
	# tinyproxy's and squid's packages start system services; keep them
	# from starting (the bench runs its own instances, in its namespaces).
	# An existing policy-rc.d is left exactly as it is.
	made_policy_rc=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy_rc=1
	fi
	timeout 600 apt-get install -y -q --no-install-recommends $missing >/dev/null ||
		echo "bench: could not install all of:$missing (scenarios that need them will say skipped)" >&2
	[ $made_policy_rc = 0 ] || rm -f /usr/sbin/policy-rc.d
fi
if ! command -v perf >/dev/null 2>&1; then
	timeout 300 apt-get install -y -q --no-install-recommends linux-perf >/dev/null 2>&1 ||
		echo "bench: linux-perf not available; loader profile skipped" >&2
fi

# --- bench clients (not part of `make all`) ------------------------------------
mkdir -p "$OUT"
CC=${CC:-gcc}
BENCH_CFLAGS="-O2 -g -Wall -Wextra -D_GNU_SOURCE"
$CC $BENCH_CFLAGS -o "$OUT/connect_bench" bench/connect_bench.c
[ ! -f bench/netbench.c ] || $CC $BENCH_CFLAGS -o "$OUT/netbench" bench/netbench.c
$CC $BENCH_CFLAGS -o "$OUT/tlsbench" bench/tlsbench.c -lssl -lcrypto -lpthread

python3 bench/bench.py "$@"

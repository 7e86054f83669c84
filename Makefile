# sluice - one top-level Makefile (libbpf-bootstrap style).
#   make deps     install every Debian package the build, tests and demo need
#   make          build build/sluice, build/sluice-proxy, build/sluice-resolver
#   make test     unit tests (cmocka), short fuzz runs, kernel integration tests (root)
#   make demo     the main job on the built-in test world (root)
#   make fuzz     longer fuzz runs (FUZZ_SECONDS per target)
#   make lint     clang-tidy and cppcheck, warnings as errors
#   make vmlinux  regenerate vmlinux/$(ARCH)/vmlinux.h from the running kernel
#   make install  install into $(DESTDIR)$(PREFIX) (PREFIX=/usr/local); make uninstall
#   make deb      the Debian package in $(OUTPUT)/deb (dpkg-buildpackage, lintian)
#   make check-fresh  the README's commands on a debootstrapped Debian 12 (slow)
#   make check-deb    the .deb installed, run and purged on a debootstrapped Debian 12
#   make check-fresh-ci  both on one debootstrap, the test command narrowed (what .ci/run runs)
# Options: V=1 (show commands), SANITIZE=1 (ASan+UBSan user space, built in
# build-san/ so that it never mixes with build/; `make test SANITIZE=1` runs
# the whole suite on it and fails on any sanitizer report).

ifeq ($(SANITIZE),1)
OUTPUT   ?= build-san
else
OUTPUT   ?= build
endif
CLANG    ?= clang
CC       ?= gcc
BPFTOOL  ?= bpftool
PYTHON   ?= python3
ARCH     := $(shell uname -m | sed 's/x86_64/x86/' | sed 's/aarch64/arm64/')

DEBIAN_PACKAGES := build-essential pkg-config clang llvm libclang-rt-14-dev libbpf-dev bpftool libelf-dev zlib1g-dev \
	libcmocka-dev libyaml-dev libidn2-dev libssl-dev libpsl-dev publicsuffix libjson-c-dev \
	libevent-dev libhttp-parser-dev libnghttp2-dev libldns-dev liburing-dev libseccomp-dev \
	iproute2 curl socat openssl bind9-dnsutils python3 python3-h2 python3-httpx python3-websockets python3-requests python3-pip git nodejs wget jq busybox-static procps psmisc util-linux podman runc netavark aardvark-dns iptables containerd \
	libsystemd-dev cppcheck clang-tidy scdoc man-db groff-base bash-completion \
	dpkg-dev debhelper lintian debootstrap systemd openssh-client

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS  ?= -g -O2
CFLAGS  += -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-format-truncation \
	   -fno-strict-aliasing -fstack-protector-strong -D_FORTIFY_SOURCE=2
LDFLAGS ?=
ifeq ($(SANITIZE),1)
# -fno-sanitize-recover: undefined behaviour aborts like a memory error does
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -U_FORTIFY_SOURCE
LDFLAGS += -fsanitize=address,undefined
endif
INCLUDES := -I$(OUTPUT) -Ibpf -Iuserspace/lib
# Each binary links what its code calls.  LIBS: what userspace/lib (libsluice.a)
# calls, in every binary (libbpf, libyaml, libidn2, libpsl, libcrypto, json-c).
# The loader adds libevent (the daemon's loop, metrics), http-parser (suggest's
# url.full), libsystemd (sd_notify) and libseccomp (loader/seccomp_baseline.c);
# the proxy libssl, libevent, http-parser and libnghttp2; the resolver libevent and ldns.
# Unit tests and fuzzers link every module: ALL_LIBS.
LIBS          := -lbpf -lelf -lz -lyaml -lidn2 -lpsl -lcrypto -ljson-c
LOADER_LIBS   := $(LIBS) -levent -lhttp_parser -lsystemd -lseccomp
PROXY_LIBS    := -lssl $(LIBS) -levent -lhttp_parser -lnghttp2
RESOLVER_LIBS := $(LIBS) -levent -lldns
ALL_LIBS      := -lssl $(LIBS) -levent -lhttp_parser -lnghttp2 -lldns -lsystemd -lseccomp

BPF_SRCS      := $(wildcard bpf/*.bpf.c)
BPF_OBJS      := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS         := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

LIB_SRCS      := $(wildcard userspace/lib/*.c)
LIB_OBJS      := $(patsubst %.c,$(OUTPUT)/%.o,$(LIB_SRCS))
# loader/suggest/: `sluice policy suggest`, one file per step (suggest/internal.h)
LOADER_SRCS   := $(filter-out loader/main.c,$(wildcard loader/*.c)) $(wildcard loader/suggest/*.c)
LOADER_OBJS   := $(patsubst %.c,$(OUTPUT)/%.o,$(LOADER_SRCS))
PROXY_SRCS    := $(filter-out userspace/proxy/main.c,$(wildcard userspace/proxy/*.c))
PROXY_OBJS    := $(patsubst %.c,$(OUTPUT)/%.o,$(PROXY_SRCS))
RESOLVER_SRCS := $(filter-out userspace/resolver/main.c,$(wildcard userspace/resolver/*.c))
RESOLVER_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(RESOLVER_SRCS))

LIBSLUICE     := $(OUTPUT)/libsluice.a
LIBLOADER     := $(OUTPUT)/libsluice-loader.a
LIBPROXY      := $(OUTPUT)/libsluice-proxy.a
LIBRESOLVER   := $(OUTPUT)/libsluice-resolver.a

BINS := $(OUTPUT)/sluice
ifneq ($(wildcard userspace/proxy/main.c),)
BINS += $(OUTPUT)/sluice-proxy
endif
ifneq ($(wildcard userspace/resolver/main.c),)
BINS += $(OUTPUT)/sluice-resolver
endif

UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/unit/%,$(UNIT_SRCS))
TOOL_SRCS  := $(wildcard tests/tools/*.c)
TOOL_BINS  := $(patsubst tests/tools/%.c,$(OUTPUT)/tests/tools/%,$(TOOL_SRCS))

# --- install layout (FHS) -------------------------------------------------
# The helpers' directory is compiled into the loader (SLUICE_LIBEXECDIR): it
# looks there first, then beside its own binary (the build tree).
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
LIBEXECDIR  ?= $(PREFIX)/libexec
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
HELPERDIR   := $(LIBEXECDIR)/sluice

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all progs deps install uninstall deb check-fresh check-deb check-fresh-ci FORCE test unit integration fuzz fuzz-smoke demo lint clean vmlinux bench

# man pages: scdoc sources in man/, roff in $(OUTPUT)/man/
MAN_SRCS  := $(wildcard man/*.scd)
MAN_PAGES := $(patsubst man/%.scd,$(OUTPUT)/man/%,$(MAN_SRCS))

all: $(BINS) $(TOOL_BINS) $(MAN_PAGES)

# what a package ships (no test tools): debian/rules builds this
progs: $(BINS) $(MAN_PAGES)

$(OUTPUT)/man/%: man/%.scd
	$(call msg,SCDOC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)scdoc < $< > $@

deps:
	DEBIAN_FRONTEND=noninteractive apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(DEBIAN_PACKAGES)
	@# kubectl, for the offline check of deploy/kubernetes/ (tests/integration/test_kubernetes.py):
	@# Debian's kubernetes-client, unless a kubectl is installed already (both ship /usr/bin/kubectl)
	command -v kubectl >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends kubernetes-client

# --- BPF ---------------------------------------------------------------
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Wno-unused-function \
	      -I$(OUTPUT) -Ivmlinux/$(ARCH) -Ibpf

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c bpf/*.h vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o | $(OUTPUT)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

# --- user space --------------------------------------------------------
$(OUTPUT):
	$(Q)mkdir -p $@

$(OUTPUT)/%.o: %.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(INCLUDES) -MMD -MP -c $< -o $@

# An object that includes a skeleton waits for that one only (libbpf-bootstrap
# style); the .d files keep it rebuilt when the skeleton changes.  A new
# `#include "X.skel.h"` needs its line here.
$(OUTPUT)/loader/sandbox.o: $(OUTPUT)/sluice.skel.h
$(OUTPUT)/loader/destroy.o: $(OUTPUT)/sluice_destroy.skel.h
$(OUTPUT)/loader/ktunnel.o: $(OUTPUT)/sluice_tunnel.skel.h

# children.c is rebuilt when the helpers' directory changes (PREFIX=...)
$(OUTPUT)/helperdir.stamp: FORCE | $(OUTPUT)
	$(Q)echo '$(HELPERDIR)' | cmp -s - $@ || echo '$(HELPERDIR)' > $@
$(OUTPUT)/loader/children.o: $(OUTPUT)/helperdir.stamp
$(OUTPUT)/loader/children.o: CFLAGS += -DSLUICE_LIBEXECDIR='"$(HELPERDIR)"'
FORCE:

-include $(shell find $(OUTPUT) -name '*.d' 2>/dev/null)

$(LIBSLUICE): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBLOADER): $(LOADER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBPROXY): $(PROXY_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBRESOLVER): $(RESOLVER_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/sluice: $(OUTPUT)/loader/main.o $(LIBLOADER) $(LIBSLUICE)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LOADER_LIBS) -o $@

$(OUTPUT)/sluice-proxy: $(OUTPUT)/userspace/proxy/main.o $(LIBPROXY) $(LIBSLUICE)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(PROXY_LIBS) -o $@

$(OUTPUT)/sluice-resolver: $(OUTPUT)/userspace/resolver/main.o $(LIBRESOLVER) $(LIBSLUICE)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(RESOLVER_LIBS) -o $@

# --- tests -------------------------------------------------------------
# Each tests/unit/test_<module>.c links against every module library; a
# module's syscall mocks live in tests/unit/mock_<module>.c (-Wl,--wrap).
UNIT_MOCKS := $(wildcard tests/unit/mock_*.c)
$(OUTPUT)/tests/unit/%: tests/unit/%.c $(UNIT_MOCKS) $(LIBLOADER) $(LIBPROXY) $(LIBRESOLVER) $(LIBSLUICE)
	$(call msg,CC-TEST,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) -Iloader -Iuserspace/proxy -Iuserspace/resolver $(LDFLAGS) \
		$< $(UNIT_MOCKS) $(LIBLOADER) $(LIBPROXY) $(LIBRESOLVER) $(LIBSLUICE) $(ALL_LIBS) -lcmocka \
		$(shell cat tests/unit/$*.wrap 2>/dev/null) -o $@

$(OUTPUT)/tests/tools/%: tests/tools/%.c | $(OUTPUT)
	$(call msg,CC-TOOL,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(INCLUDES) $(LDFLAGS) $< -o $@ -luring -lpthread

# Under SANITIZE=1 every ASan/LSan report (of any process: the loader, the
# proxy, the resolver, a unit test) goes to a file in $(SAN_LOGS) instead of
# stderr (tests read stderr), and the target fails if there is one.  UBSan
# (gcc's runtime ignores log_path) reports on stderr and aborts the process
# (-fno-sanitize-recover), which fails the test that ran it.
SAN_LOGS := $(abspath $(OUTPUT))/sanitizer-logs
ifeq ($(SANITIZE),1)
SAN_ENV   := ASAN_OPTIONS=log_path=$(SAN_LOGS)/asan:detect_leaks=1:abort_on_error=0 \
	     UBSAN_OPTIONS=log_path=$(SAN_LOGS)/ubsan:print_stacktrace=1:halt_on_error=1 \
	     LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp):print_suppressions=0
SAN_RESET  = rm -rf $(SAN_LOGS) && mkdir -p $(SAN_LOGS)
SAN_CHECK  = if [ -n "$$(ls -A $(SAN_LOGS) 2>/dev/null)" ]; then \
		echo "sanitizer reports:"; head -n 60 $(SAN_LOGS)/*; exit 1; fi
else
SAN_ENV   :=
SAN_RESET  = true
SAN_CHECK  = true
endif

unit: $(UNIT_BINS)
	@$(SAN_RESET); set -e; pass=0; fail=0; for t in $(UNIT_BINS); do \
		echo "== $$t"; if $(SAN_ENV) $$t; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; done; \
	echo "unit: $$pass passed, $$fail failed"; [ $$fail -eq 0 ]; $(SAN_CHECK)

# The kernel integration tests, the attack suite (tests/attacks) and the
# fault suite (tests/faults, docs/reliability.md), on the binaries of
# $(OUTPUT) (SLUICE_BUILD).
INTEGRATION_TESTS := $(wildcard tests/integration/test_*.py) $(wildcard tests/attacks/test_*.py) \
		     $(wildcard tests/faults/test_*.py)
integration: all
	@$(SAN_RESET)
	$(SAN_ENV) SLUICE_BUILD=$(abspath $(OUTPUT)) $(PYTHON) tests/integration/run.py $(INTEGRATION_TESTS)
	@$(SAN_CHECK)

test: all unit fuzz-smoke integration

# --- fuzzing (clang libFuzzer) -----------------------------------------
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS    := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined $(INCLUDES) -Iloader -Iuserspace/proxy -Iuserspace/resolver
FUZZ_LIBSRCS := $(LIB_SRCS) $(LOADER_SRCS) $(PROXY_SRCS) $(RESOLVER_SRCS)
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 10

$(OUTPUT)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIBSRCS) $(SKELS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< $(FUZZ_LIBSRCS) $(ALL_LIBS) -o $@

# A crash, leak or sanitizer report fails the target (the log is kept in
# $(OUTPUT)/fuzz/NAME.log, the input in $(OUTPUT)/fuzz/crash-*); /bin/sh has
# no pipefail, so the output goes to a file rather than through tail.
fuzz-smoke: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p $(OUTPUT)/fuzz/corpus-$$n; \
		echo "== $$n ($(FUZZ_SMOKE_SECONDS)s on tests/fuzz/corpus/$$n)"; \
		if ! $$f -max_total_time=$(FUZZ_SMOKE_SECONDS) -print_final_stats=0 -artifact_prefix=$(OUTPUT)/fuzz/ \
			$(OUTPUT)/fuzz/corpus-$$n tests/fuzz/corpus/$$n > $(OUTPUT)/fuzz/$$n.log 2>&1; then \
			tail -n 40 $(OUTPUT)/fuzz/$$n.log; echo "$$n: FAILED (log: $(OUTPUT)/fuzz/$$n.log)"; exit 1; fi; \
		tail -n 2 $(OUTPUT)/fuzz/$$n.log; done

fuzz: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p $(OUTPUT)/fuzz/corpus-$$n; \
		echo "== $$n ($(FUZZ_SECONDS)s)"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(OUTPUT)/fuzz/ \
			$(OUTPUT)/fuzz/corpus-$$n tests/fuzz/corpus/$$n; done

# --- demo, lint, bench ---------------------------------------------------
demo: all
	$(PYTHON) tests/world/demo.py

# Configuration: .clang-tidy (checks, and why some are off) and
# .cppcheck-suppressions.  clang-tidy sees the sources as clang compiles them
# (-U_FORTIFY_SOURCE: glibc's fortify wrappers confuse the analyzer).
# LINT_SKEL_FILES call a generated skeleton's open_and_load: clang-analyzer 14
# assumes libbpf (a system header) frees nothing, so bpftool's own error path
# (bpf_object__destroy_skeleton) reads as a leak in build/*.skel.h, which
# NOLINT cannot reach; unix.Malloc is off for those files only.
LINT_SRCS := $(LIB_SRCS) $(LOADER_SRCS) loader/main.c $(wildcard userspace/proxy/*.c) $(wildcard userspace/resolver/*.c)
LINT_SKEL_FILES := $(filter loader/destroy.c loader/ktunnel.c loader/sandbox.c,$(LINT_SRCS))
LINT_FLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-U_FORTIFY_SOURCE $(INCLUDES) -Iloader
lint: $(SKELS)
	cppcheck --error-exitcode=1 --enable=warning,portability --inline-suppr --quiet \
		--suppressions-list=.cppcheck-suppressions $(INCLUDES) $(LINT_SRCS)
	clang-tidy --quiet --warnings-as-errors='*' $(filter-out $(LINT_SKEL_FILES),$(LINT_SRCS)) -- $(LINT_FLAGS)
	$(if $(LINT_SKEL_FILES),clang-tidy --quiet --warnings-as-errors='*' --checks=-clang-analyzer-unix.Malloc \
		$(LINT_SKEL_FILES) -- $(LINT_FLAGS))

bench: all
	bash bench/run.sh

# --- install -------------------------------------------------------------
# `make install DESTDIR=/some/root PREFIX=/usr`: DESTDIR must exist and be
# writable (a missing or read-only one is an error before anything is copied).
INSTALL   ?= install
INST_ROOT := $(if $(DESTDIR),$(DESTDIR),/)
EXAMPLE_POLICIES := $(wildcard policies/*.yaml)
install: $(BINS) $(MAN_PAGES)
	@if [ -n "$(DESTDIR)" ] && [ ! -d "$(DESTDIR)" ]; then \
		echo "make install: DESTDIR $(DESTDIR) does not exist (create it first)" >&2; exit 2; fi
	@d="$(DESTDIR)$(PREFIX)"; while [ ! -e "$$d" ]; do d=$$(dirname "$$d"); done; \
	if [ ! -w "$$d" ]; then echo "make install: $$d is not writable (read-only file system or no permission)" >&2; exit 2; fi; \
	if [ ! -w "$(INST_ROOT)" ]; then echo "make install: $(INST_ROOT) is not writable (read-only file system or no permission)" >&2; exit 2; fi
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(HELPERDIR) $(DESTDIR)$(DATADIR)/sluice/policies \
		$(DESTDIR)$(SYSCONFDIR)/sluice/policies $(DESTDIR)$(UNITDIR) $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0755 $(OUTPUT)/sluice $(DESTDIR)$(BINDIR)/sluice
	$(INSTALL) -m 0755 $(OUTPUT)/sluice-proxy $(OUTPUT)/sluice-resolver $(DESTDIR)$(HELPERDIR)/
	$(INSTALL) -m 0644 policies/relays.txt $(DESTDIR)$(DATADIR)/sluice/relays.txt
	$(INSTALL) -m 0644 $(EXAMPLE_POLICIES) $(DESTDIR)$(DATADIR)/sluice/policies/
	sed 's|/usr/local/bin/sluice|$(BINDIR)/sluice|g' packaging/sluice.service > $(DESTDIR)$(UNITDIR)/sluice.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/sluice.service
	$(INSTALL) -m 0644 packaging/sluice.bash-completion $(DESTDIR)$(BASHCOMPDIR)/sluice
	$(if $(MAN_PAGES),for m in $(MAN_PAGES); do s=$${m##*.}; $(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$s && \
		$(INSTALL) -m 0644 $$m $(DESTDIR)$(MANDIR)/man$$s/; done)

# Removes what install copied; /etc/sluice/policies is left when it holds
# an operator's policies.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sluice $(DESTDIR)$(HELPERDIR)/sluice-proxy $(DESTDIR)$(HELPERDIR)/sluice-resolver
	rm -f $(DESTDIR)$(DATADIR)/sluice/relays.txt $(addprefix $(DESTDIR)$(DATADIR)/sluice/,$(EXAMPLE_POLICIES))
	rm -f $(DESTDIR)$(UNITDIR)/sluice.service $(DESTDIR)$(BASHCOMPDIR)/sluice
	$(foreach m,$(MAN_PAGES),rm -f $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m));)
	-rmdir $(DESTDIR)$(HELPERDIR) $(DESTDIR)$(DATADIR)/sluice/policies $(DESTDIR)$(DATADIR)/sluice \
		$(DESTDIR)$(SYSCONFDIR)/sluice/policies $(DESTDIR)$(SYSCONFDIR)/sluice 2>/dev/null

# --- Debian package -------------------------------------------------------
# `make deb`: dpkg-buildpackage -b on a copy of the tracked files (the
# working tree's content) in $(OUTPUT)/deb/, so that nothing is written
# beside the checkout; the .deb and lintian's report end up there.
DEB_DIR := $(OUTPUT)/deb
deb:
	@command -v dpkg-buildpackage >/dev/null || { echo "make deb: dpkg-buildpackage missing (apt-get install dpkg-dev debhelper)" >&2; exit 2; }
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	@# the tracked files of a checkout; from a tarball (git archive), all but build output
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git ls-files -z | tar --null -T - -cf -; \
	else tar --exclude='./build*' --exclude='./debian/sluice' --exclude='./debian/.debhelper' -cf - .; fi | \
		tar -xf - -C $(DEB_DIR)/src
	@# the package's own make must not inherit this one's variables (OUTPUT=...: its clean would remove us)
	cd $(DEB_DIR)/src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u OUTPUT -u PREFIX -u DESTDIR \
		dpkg-buildpackage -b -us -uc > $(abspath $(DEB_DIR))/build.log 2>&1 || \
		{ tail -n 40 $(abspath $(DEB_DIR))/build.log; exit 1; }
	@ls $(DEB_DIR)/sluice_*.deb
	@if command -v lintian >/dev/null; then lintian --fail-on error $(DEB_DIR)/sluice_*.changes | tee $(DEB_DIR)/lintian.log; fi

# --- a fresh machine ------------------------------------------------------
# The README's two commands on a debootstrapped Debian 12 (tests/fresh/):
# slow (debootstrap, make deps, the whole suite); everything is removed after.
check-fresh:
	bash tests/fresh/check-fresh.sh

# check-fresh (SLUICE_FRESH_TESTS=ci) and check-deb on one debootstrap
# (tests/fresh/ci.sh): what .ci/run runs.
check-fresh-ci: all
	SLUICE_BUILD=$(abspath $(OUTPUT)) bash tests/fresh/ci.sh

# The package on a debootstrapped Debian 12 (tests/fresh/check-deb.sh):
# install with its dependencies, layout, binaries, `sluice run`, purge; about
# 2-3 minutes; skipped (said) when the Debian mirror cannot be reached.
check-deb: deb
	SLUICE_DEB=$$(ls $(abspath $(DEB_DIR))/sluice_*.deb) SLUICE_BUILD=$(abspath $(OUTPUT)) \
		$(PYTHON) tests/integration/run.py tests/fresh/test_deb_root.py

clean:
	rm -rf $(OUTPUT)

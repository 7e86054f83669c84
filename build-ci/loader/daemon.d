build-ci/loader/daemon.o: loader/daemon.c loader/daemon.h loader/cgroup.h \
 loader/children.h bpf/sluice.h loader/destroy.h loader/events.h \
 loader/inspect.h userspace/lib/log.h userspace/lib/policy.h \
 loader/run_limits.h loader/sandbox.h loader/policy_maps.h
loader/daemon.h:
loader/cgroup.h:
loader/children.h:
bpf/sluice.h:
loader/destroy.h:
loader/events.h:
loader/inspect.h:
userspace/lib/log.h:
userspace/lib/policy.h:
loader/run_limits.h:
loader/sandbox.h:
loader/policy_maps.h:

build-ci/loader/run.o: loader/run.c loader/run.h loader/cgroup.h \
 loader/children.h bpf/sluice.h loader/events.h loader/run_limits.h \
 userspace/lib/log.h userspace/lib/policy.h loader/policy_maps.h \
 loader/sandbox.h
loader/run.h:
loader/cgroup.h:
loader/children.h:
bpf/sluice.h:
loader/events.h:
loader/run_limits.h:
userspace/lib/log.h:
userspace/lib/policy.h:
loader/policy_maps.h:
loader/sandbox.h:

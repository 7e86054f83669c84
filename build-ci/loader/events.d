build-ci/loader/events.o: loader/events.c loader/events.h bpf/sluice.h \
 userspace/lib/jsonstr.h loader/sandbox.h userspace/lib/policy.h \
 loader/policy_maps.h
loader/events.h:
bpf/sluice.h:
userspace/lib/jsonstr.h:
loader/sandbox.h:
userspace/lib/policy.h:
loader/policy_maps.h:

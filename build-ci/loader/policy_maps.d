build-ci/loader/policy_maps.o: loader/policy_maps.c loader/policy_maps.h \
 bpf/sluice.h userspace/lib/policy.h
loader/policy_maps.h:
bpf/sluice.h:
userspace/lib/policy.h:

build-ci/loader/sandbox.o: loader/sandbox.c loader/sandbox.h bpf/sluice.h \
 userspace/lib/policy.h loader/policy_maps.h build-ci/sluice.skel.h
loader/sandbox.h:
bpf/sluice.h:
userspace/lib/policy.h:
loader/policy_maps.h:
build-ci/sluice.skel.h:

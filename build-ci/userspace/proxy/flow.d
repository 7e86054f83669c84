build-ci/userspace/proxy/flow.o: userspace/proxy/flow.c \
 userspace/proxy/flow.h bpf/sluice.h
userspace/proxy/flow.h:
bpf/sluice.h:

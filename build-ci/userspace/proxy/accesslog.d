build-ci/userspace/proxy/accesslog.o: userspace/proxy/accesslog.c \
 userspace/proxy/accesslog.h bpf/sluice.h userspace/lib/jsonstr.h \
 userspace/proxy/addr.h
userspace/proxy/accesslog.h:
bpf/sluice.h:
userspace/lib/jsonstr.h:
userspace/proxy/addr.h:

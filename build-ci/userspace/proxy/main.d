build-ci/userspace/proxy/main.o: userspace/proxy/main.c \
 userspace/proxy/dnscache.h userspace/proxy/resolve.h \
 userspace/proxy/flow.h bpf/sluice.h userspace/lib/log.h \
 userspace/proxy/proxy.h userspace/proxy/addr.h userspace/lib/policy.h \
 userspace/proxy/request.h userspace/proxy/sni.h userspace/proxy/upool.h
userspace/proxy/dnscache.h:
userspace/proxy/resolve.h:
userspace/proxy/flow.h:
bpf/sluice.h:
userspace/lib/log.h:
userspace/proxy/proxy.h:
userspace/proxy/addr.h:
userspace/lib/policy.h:
userspace/proxy/request.h:
userspace/proxy/sni.h:
userspace/proxy/upool.h:

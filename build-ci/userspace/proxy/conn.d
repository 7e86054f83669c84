build-ci/userspace/proxy/conn.o: userspace/proxy/conn.c \
 userspace/proxy/proxy.h userspace/proxy/addr.h userspace/lib/policy.h \
 userspace/proxy/request.h userspace/proxy/sni.h \
 userspace/proxy/resolve.h bpf/sluice.h userspace/proxy/accesslog.h \
 userspace/proxy/dnscache.h userspace/proxy/flow.h userspace/lib/log.h \
 userspace/proxy/relay.h userspace/proxy/upool.h
userspace/proxy/proxy.h:
userspace/proxy/addr.h:
userspace/lib/policy.h:
userspace/proxy/request.h:
userspace/proxy/sni.h:
userspace/proxy/resolve.h:
bpf/sluice.h:
userspace/proxy/accesslog.h:
userspace/proxy/dnscache.h:
userspace/proxy/flow.h:
userspace/lib/log.h:
userspace/proxy/relay.h:
userspace/proxy/upool.h:

build-ci/userspace/proxy/http.o: userspace/proxy/http.c \
 userspace/proxy/proxy.h userspace/proxy/addr.h userspace/lib/policy.h \
 userspace/proxy/request.h userspace/proxy/sni.h \
 userspace/proxy/resolve.h bpf/sluice.h userspace/proxy/upool.h
userspace/proxy/proxy.h:
userspace/proxy/addr.h:
userspace/lib/policy.h:
userspace/proxy/request.h:
userspace/proxy/sni.h:
userspace/proxy/resolve.h:
bpf/sluice.h:
userspace/proxy/upool.h:

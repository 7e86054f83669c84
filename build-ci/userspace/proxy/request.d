build-ci/userspace/proxy/request.o: userspace/proxy/request.c \
 userspace/proxy/request.h userspace/lib/policy.h userspace/proxy/sni.h \
 userspace/proxy/addr.h
userspace/proxy/request.h:
userspace/lib/policy.h:
userspace/proxy/sni.h:
userspace/proxy/addr.h:

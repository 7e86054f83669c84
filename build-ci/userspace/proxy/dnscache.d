build-ci/userspace/proxy/dnscache.o: userspace/proxy/dnscache.c \
 userspace/proxy/dnscache.h userspace/proxy/resolve.h
userspace/proxy/dnscache.h:
userspace/proxy/resolve.h:

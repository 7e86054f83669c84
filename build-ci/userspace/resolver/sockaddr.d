build-ci/userspace/resolver/sockaddr.o: userspace/resolver/sockaddr.c \
 userspace/resolver/resolver.h userspace/lib/policy.h
userspace/resolver/resolver.h:
userspace/lib/policy.h:

build-ci/userspace/resolver/netrange.o: userspace/resolver/netrange.c \
 userspace/resolver/resolver.h userspace/lib/policy.h
userspace/resolver/resolver.h:
userspace/lib/policy.h:

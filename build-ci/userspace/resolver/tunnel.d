build-ci/userspace/resolver/tunnel.o: userspace/resolver/tunnel.c \
 userspace/resolver/resolver.h userspace/lib/policy.h
userspace/resolver/resolver.h:
userspace/lib/policy.h:

build-ci/userspace/resolver/server.o: userspace/resolver/server.c \
 userspace/resolver/server.h userspace/resolver/resolver.h \
 userspace/lib/policy.h userspace/lib/log.h
userspace/resolver/server.h:
userspace/resolver/resolver.h:
userspace/lib/policy.h:
userspace/lib/log.h:

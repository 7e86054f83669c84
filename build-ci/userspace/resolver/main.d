build-ci/userspace/resolver/main.o: userspace/resolver/main.c \
 userspace/lib/log.h userspace/lib/policy.h userspace/resolver/resolver.h \
 userspace/resolver/server.h
userspace/lib/log.h:
userspace/lib/policy.h:
userspace/resolver/resolver.h:
userspace/resolver/server.h:

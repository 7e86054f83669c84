build-ci/userspace/resolver/decide.o: userspace/resolver/decide.c \
 userspace/resolver/resolver.h userspace/lib/policy.h
userspace/resolver/resolver.h:
userspace/lib/policy.h:

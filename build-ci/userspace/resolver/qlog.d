build-ci/userspace/resolver/qlog.o: userspace/resolver/qlog.c \
 userspace/resolver/resolver.h userspace/lib/policy.h \
 userspace/lib/jsonstr.h
userspace/resolver/resolver.h:
userspace/lib/policy.h:
userspace/lib/jsonstr.h:

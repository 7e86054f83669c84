build-ci/userspace/lib/policy.o: userspace/lib/policy.c \
 userspace/lib/policy_internal.h userspace/lib/policy.h
userspace/lib/policy_internal.h:
userspace/lib/policy.h:

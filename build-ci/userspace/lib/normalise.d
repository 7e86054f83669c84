build-ci/userspace/lib/normalise.o: userspace/lib/normalise.c \
 userspace/lib/policy_internal.h userspace/lib/policy.h
userspace/lib/policy_internal.h:
userspace/lib/policy.h:

build-ci/userspace/lib/digest.o: userspace/lib/digest.c \
 userspace/lib/policy_internal.h userspace/lib/policy.h
userspace/lib/policy_internal.h:
userspace/lib/policy.h:

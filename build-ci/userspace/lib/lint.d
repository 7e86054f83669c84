build-ci/userspace/lib/lint.o: userspace/lib/lint.c \
 userspace/lib/policy_internal.h userspace/lib/policy.h
userspace/lib/policy_internal.h:
userspace/lib/policy.h:

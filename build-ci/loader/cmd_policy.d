build-ci/loader/cmd_policy.o: loader/cmd_policy.c loader/cmd_policy.h \
 loader/cmd_suggest.h userspace/lib/policy.h
loader/cmd_policy.h:
loader/cmd_suggest.h:
userspace/lib/policy.h:

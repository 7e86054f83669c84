build-ci/loader/cmd_suggest.o: loader/cmd_suggest.c loader/cmd_suggest.h \
 userspace/lib/policy.h
loader/cmd_suggest.h:
userspace/lib/policy.h:

build-ci/loader/main.o: loader/main.c loader/cmd_policy.h loader/daemon.h \
 userspace/lib/log.h loader/run.h
loader/cmd_policy.h:
loader/daemon.h:
userspace/lib/log.h:
loader/run.h:

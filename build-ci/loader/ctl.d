build-ci/loader/ctl.o: loader/ctl.c loader/daemon.h loader/cgroup.h \
 loader/inspect.h userspace/lib/log.h
loader/daemon.h:
loader/cgroup.h:
loader/inspect.h:
userspace/lib/log.h:

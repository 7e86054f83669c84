build-ci/loader/cgroup.o: loader/cgroup.c loader/cgroup.h
loader/cgroup.h:

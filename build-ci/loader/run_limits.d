build-ci/loader/run_limits.o: loader/run_limits.c loader/run_limits.h
loader/run_limits.h:

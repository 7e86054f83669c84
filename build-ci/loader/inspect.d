build-ci/loader/inspect.o: loader/inspect.c loader/inspect.h
loader/inspect.h:

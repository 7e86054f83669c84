build-ci/loader/children.o: loader/children.c loader/children.h \
 bpf/sluice.h
loader/children.h:
bpf/sluice.h:

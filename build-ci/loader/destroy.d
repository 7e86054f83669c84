build-ci/loader/destroy.o: loader/destroy.c loader/destroy.h \
 build-ci/sluice_destroy.skel.h
loader/destroy.h:
build-ci/sluice_destroy.skel.h:

build-ci/userspace/lib/jsonstr.o: userspace/lib/jsonstr.c \
 userspace/lib/jsonstr.h
userspace/lib/jsonstr.h:

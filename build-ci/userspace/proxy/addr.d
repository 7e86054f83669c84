build-ci/userspace/proxy/addr.o: userspace/proxy/addr.c \
 userspace/proxy/addr.h
userspace/proxy/addr.h:

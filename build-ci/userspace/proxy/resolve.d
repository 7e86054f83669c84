build-ci/userspace/proxy/resolve.o: userspace/proxy/resolve.c \
 userspace/proxy/resolve.h
userspace/proxy/resolve.h:

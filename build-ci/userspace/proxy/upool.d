build-ci/userspace/proxy/upool.o: userspace/proxy/upool.c \
 userspace/proxy/upool.h
userspace/proxy/upool.h:

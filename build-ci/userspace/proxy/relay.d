build-ci/userspace/proxy/relay.o: userspace/proxy/relay.c \
 userspace/proxy/relay.h
userspace/proxy/relay.h:

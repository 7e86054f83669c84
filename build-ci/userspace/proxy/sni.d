build-ci/userspace/proxy/sni.o: userspace/proxy/sni.c \
 userspace/proxy/sni.h
userspace/proxy/sni.h:

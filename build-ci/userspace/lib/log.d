build-ci/userspace/lib/log.o: userspace/lib/log.c userspace/lib/log.h
userspace/lib/log.h:

#ifndef HEREABOUTS_CSODIUM_SHIM_H
#define HEREABOUTS_CSODIUM_SHIM_H

/* libsodium: Debian's libzmq is built on it (libzmq3-dev depends on libsodium-dev,
   libzmq5 on libsodium23), so every machine that has libzmq has it too. */
#include <sodium.h>

#endif

#ifndef HEREABOUTS_CZEROMQ_SHIM_H
#define HEREABOUTS_CZEROMQ_SHIM_H

#include <zmq.h>

/* Debian's libzmq 4.3.4 header keeps this behind ZMQ_BUILD_DRAFT_API, but the
   library accepts the option: without it a CURVE socket with no ZAP handler admits
   every client instead of refusing them. */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#endif

// zlib, for geo's gzipped gazetteer (Debian: zlib1g-dev).
#include <zlib.h>

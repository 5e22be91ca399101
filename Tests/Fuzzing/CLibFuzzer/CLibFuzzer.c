// Declarations only: the driver itself comes from libFuzzer (see CLibFuzzer.h).
#include "CLibFuzzer.h"

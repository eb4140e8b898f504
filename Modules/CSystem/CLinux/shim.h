#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H

// What the C library has that Swift's Glibc module leaves out.
#include <sys/random.h>

#endif

#ifndef CGNUTLS_SHIM_H
#define CGNUTLS_SHIM_H

/// The HTTP engine tightens MHD's TLS sessions (a client certificate required and verified when a
/// client CA is configured); everything it calls imports directly, so this shim only includes.
#include <gnutls/gnutls.h>

#endif

#ifndef CGNUTLS_SHIM_H
#define CGNUTLS_SHIM_H

/// The BankID simulator tightens MHD's TLS sessions (client certificate required and verified);
/// everything it calls imports directly, so this shim only includes.
#include <gnutls/gnutls.h>

#endif

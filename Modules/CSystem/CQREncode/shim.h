#ifndef CQRENCODE_SHIM_H
#define CQRENCODE_SHIM_H

#include <qrencode.h>

/// Fixes the options BankID's QR codes need in one place: the smallest version that fits,
/// error correction L (BankID's guidance: low), 8-bit mode, case kept. NULL on failure (errno set).
static inline QRcode *cqrencode_encode_low(const char *text) {
    return QRcode_encodeString8bit(text, 0, QR_ECLEVEL_L);
}

#endif

#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/// OPENSSL_free is a macro carrying file and line; Swift cannot call it.
static inline void copenssl_free(void *pointer) { OPENSSL_free(pointer); }

/// BIO_get_mem_data is a macro over BIO_ctrl.
static inline long copenssl_bio_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

/// EVP_PKEY_PUBLIC_KEY is a macro OR-ing two selection bits, which Swift does not import.
static inline int copenssl_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }

/// OSSL_PARAM_BLD keeps parameter *names* by pointer until the OSSL_PARAM array is freed, so they need
/// static storage; Swift imports these string macros only as String copies that die after the call.
static inline const char *copenssl_param_group_name(void) { return OSSL_PKEY_PARAM_GROUP_NAME; }
/// The "pub" (encoded public key) parameter name, with static storage for the same reason.
static inline const char *copenssl_param_public_key(void) { return OSSL_PKEY_PARAM_PUB_KEY; }
/// The RSA modulus parameter name, with static storage for the same reason.
static inline const char *copenssl_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
/// The RSA public exponent parameter name, with static storage for the same reason.
static inline const char *copenssl_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }

/*
 * EC_KEY and ECDSA_verify are deprecated in OpenSSL 3.0 but still its own implementation: the
 * default provider's ECDSA verify ends in this ECDSA_verify, with the same DER strictness check
 * and the same key. The EVP route costs about 55,000 instructions more per key built and
 * verified once (EVP_PKEY_dup and EVP_PKEY_CTX_new_from_pkey each walk OpenSSL's whole name map
 * in 3.0; the digest and signature are fetched by name per verify), a third of it the key alone.
 * Only these two functions touch the deprecated API, with the warnings off for them alone.
 */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/// A new EVP_PKEY holding an EC_KEY on a copy of `group` with the SEC 1 `point`, or NULL when
/// EC_KEY_oct2key refuses the point (off the curve, out of range, bad encoding) or allocation fails.
static inline EVP_PKEY *copenssl_ec_public_key(
    const EC_GROUP *group, const unsigned char *point, size_t length) {
    EC_KEY *key = EC_KEY_new();
    if (key == NULL) return NULL;
    if (EC_KEY_set_group(key, group) != 1 || EC_KEY_oct2key(key, point, length, NULL) != 1) {
        EC_KEY_free(key);
        return NULL;
    }
    EVP_PKEY *pkey = EVP_PKEY_new();
    if (pkey == NULL || EVP_PKEY_assign(pkey, EVP_PKEY_EC, key) != 1) {
        EVP_PKEY_free(pkey);
        EC_KEY_free(key);
        return NULL;
    }
    return pkey;
}

/// ECDSA_verify on the EC_KEY inside a key from copenssl_ec_public_key: 1 valid, 0 invalid, -1 error.
static inline int copenssl_ecdsa_verify_digest(
    EVP_PKEY *pkey, const unsigned char *digest, int digestLength, const unsigned char *signature,
    int signatureLength) {
    /* Not const for ECDSA_verify's sake only: verifying reads the key, as the provider's does. */
    EC_KEY *key = (EC_KEY *)EVP_PKEY_get0_EC_KEY(pkey);
    if (key == NULL) return -1;
    return ECDSA_verify(0, digest, digestLength, signature, signatureLength, key);
}

#pragma GCC diagnostic pop
#pragma clang diagnostic pop

#endif

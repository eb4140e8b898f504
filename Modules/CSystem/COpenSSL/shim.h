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
/// EVP_PKEY_KEY_PARAMETERS is a macro OR-ing two selection bits too.
static inline int copenssl_evp_pkey_key_parameters_selection(void) { return EVP_PKEY_KEY_PARAMETERS; }

/// OSSL_PARAM_BLD keeps parameter *names* by pointer until the OSSL_PARAM array is freed, so they need
/// static storage; Swift imports these string macros only as String copies that die after the call.
static inline const char *copenssl_param_group_name(void) { return OSSL_PKEY_PARAM_GROUP_NAME; }
/// The "pub" (encoded public key) parameter name, with static storage for the same reason.
static inline const char *copenssl_param_public_key(void) { return OSSL_PKEY_PARAM_PUB_KEY; }
/// The RSA modulus parameter name, with static storage for the same reason.
static inline const char *copenssl_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
/// The RSA public exponent parameter name, with static storage for the same reason.
static inline const char *copenssl_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }

#endif

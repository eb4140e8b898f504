#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <microhttpd.h>

/// MHD's default unescaper percent-decodes the path before routing, which turns `%2F` into a
/// segment separator; this identity unescaper keeps path and query raw so Swift decodes per segment.
static inline size_t cmhd_unescape_identity(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    return strlen(text);
}

/// MHD_start_daemon is variadic; this fixes the options Portvakt uses.
/// `address` is a sockaddr_in or sockaddr_in6 (its family decides MHD_USE_IPv6),
/// `thread_pool_size` > 1 gives MHD's internal thread pool, each thread polling its own
/// connections (0 with MHD_USE_THREAD_PER_CONNECTION, which refuses a pool).
/// `per_address_limit` is MHD_OPTION_PER_IP_CONNECTION_LIMIT (MHD accepts, then closes at once, a
/// connection from an address already holding that many); `notify` with `notify_context` sees every
/// connection start and close (MHD_OPTION_NOTIFY_CONNECTION), which the request deadline needs.
/// No MHD_OPTION_LISTENING_ADDRESS_REUSE: set, it adds SO_REUSEPORT, and a second server then binds
/// the same address:port without error and the kernel splits connections between the two. Left
/// out, MHD sets only SO_REUSEADDR (a restart still binds past TIME_WAIT) and a taken port fails
/// with EADDRINUSE.
static inline struct MHD_Daemon *cmhd_start(
    unsigned int flags, const struct sockaddr *address,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    unsigned int thread_pool_size, unsigned int connection_timeout_seconds,
    unsigned int connection_limit, size_t connection_memory_limit,
    unsigned int per_address_limit, MHD_NotifyConnectionCallback notify, void *notify_context)
{
    uint16_t port = 0;
    if (address->sa_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
        port = ntohs(((const struct sockaddr_in6 *)address)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)address)->sin_port);
    }
    return MHD_start_daemon(
        flags, port, NULL, NULL, handler, handler_context,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_context,
        MHD_OPTION_UNESCAPE_CALLBACK, cmhd_unescape_identity, NULL,
        MHD_OPTION_END);
}

/// MHD_get_daemon_info is variadic; returns the port actually bound (useful with port 0).
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// MHD_get_connection_info is variadic; returns the socket peer's address or NULL.
static inline const struct sockaddr *cmhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// MHD_start_daemon is variadic; this is `cmhd_start` serving HTTPS (`flags` gains MHD_USE_TLS).
/// `key_pem` and `cert_pem` are the server's PEM key and certificate; a non-NULL `trust_pem` is the
/// CA client certificates are checked against. `notify` sees each connection before its handshake
/// (where, given a CA, the TLS session is told to require a client certificate) and at its close.
/// MHD keeps the pointers, not copies, but reads them only while starting.
static inline struct MHD_Daemon *cmhd_start_tls(
    unsigned int flags, const struct sockaddr *address,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    unsigned int thread_pool_size, unsigned int connection_timeout_seconds,
    unsigned int connection_limit, size_t connection_memory_limit,
    unsigned int per_address_limit, MHD_NotifyConnectionCallback notify, void *notify_context,
    const char *key_pem, const char *cert_pem, const char *trust_pem)
{
    uint16_t port = 0;
    flags |= MHD_USE_TLS;
    if (address->sa_family == AF_INET6) {
        flags |= MHD_USE_IPv6;
        port = ntohs(((const struct sockaddr_in6 *)address)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)address)->sin_port);
    }
    if (trust_pem == NULL) {
        return MHD_start_daemon(
            flags, port, NULL, NULL, handler, handler_context,
            MHD_OPTION_SOCK_ADDR, address,
            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
            MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit,
            MHD_OPTION_NOTIFY_CONNECTION, notify, notify_context,
            MHD_OPTION_UNESCAPE_CALLBACK, cmhd_unescape_identity, NULL,
            MHD_OPTION_HTTPS_MEM_KEY, key_pem,
            MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
            MHD_OPTION_END);
    }
    return MHD_start_daemon(
        flags, port, NULL, NULL, handler, handler_context,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_UNESCAPE_CALLBACK, cmhd_unescape_identity, NULL,
        MHD_OPTION_HTTPS_MEM_KEY, key_pem,
        MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
        MHD_OPTION_HTTPS_MEM_TRUST, trust_pem,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_context,
        MHD_OPTION_END);
}

/// MHD_get_connection_info is variadic; returns the connection's gnutls_session_t (NULL for plain HTTP).
static inline void *cmhd_tls_session(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return info == NULL ? NULL : info->tls_session;
}

/// MHD_get_connection_info is variadic; returns the connection's socket, or -1.
static inline int cmhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// MHD_get_connection_info is variadic; returns what the connection notification stored in the
/// connection's socket context, or NULL.
static inline void *cmhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

#endif

/*
 * A minimal h2o (Debian's libh2o-evloop 2.2.5) HTTP/1.1 server: the h2o side of
 * Benchmarks/engines.sh, measured against bench-bare-http (libmicrohttpd).
 *
 * Every request is answered 200 with {"status":"alive"} as application/json. h2o's HTTP/1 layer
 * reads the whole request body (Content-Length or chunked) into req->entity before it calls the
 * handler, so the handler discards a body by ignoring it.
 *
 * Threads: each of the N threads has its own evloop, its own h2o_context_t and its own listening
 * socket bound to the same 127.0.0.1 port with SO_REUSEPORT, so the kernel spreads the incoming
 * connections over the threads (no shared accept queue, no lock). The global configuration
 * (hosts, paths, the handler) is built once before the threads start and only read afterwards,
 * which is how h2o's own server shares it.
 *
 * --problem-filter: registers a response filter on the host's fallback path, the path h2o binds
 * the errors it answers itself before any handler runs (h2o_send_error_generic: a bad
 * Content-Length, an unknown Transfer-Encoding, a body past max_request_entity_size). The filter
 * turns such a response into application/problem+json with an extra header, which shows that
 * those answers can carry the application's body and headers. It cannot reach the fixed
 * "400 Bad Request" h2o writes straight to the socket when the request head does not parse (or
 * exceeds H2O_MAX_REQLEN / H2O_MAX_HEADERS). Handled requests (path "/") never pass through it.
 *
 * --echo-headers: the handler names, in x-probe-fields, the request fields h2o hands it (h2o
 * 2.2.5 keeps Content-Length, Transfer-Encoding, Host, Expect and Upgrade out of req->headers),
 * and in x-probe-authority and x-probe-path the host and path it sees.
 *
 * Usage: h2o_probe [--port N] [--threads N] [--problem-filter] [--echo-headers]      (port 0: any free port)
 * Prints "h2o-probe listening on 127.0.0.1:PORT" once every thread listens.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#include <h2o.h>

static h2o_globalconf_t config;
static int echo_headers = 0;
static const char body[] = "{\"status\":\"alive\"}";

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    (void)self;
    req->res.status = 200;
    req->res.reason = "OK";
    req->res.content_length = sizeof(body) - 1; /* else h2o frames the body chunked */
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("application/json"));
    if (echo_headers) {
        /* --echo-headers: which request fields the handler is given, and the host it sees */
        h2o_iovec_t names = h2o_iovec_init(H2O_STRLIT(""));
        for (size_t i = 0; i != req->headers.size; ++i) {
            h2o_iovec_t *name = req->headers.entries[i].name;
            names = h2o_concat(&req->pool, names, names.len ? h2o_iovec_init(H2O_STRLIT(",")) : h2o_iovec_init(H2O_STRLIT("")), *name);
        }
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-probe-fields"), 0, NULL, names.base, names.len);
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-probe-authority"), 0, NULL, req->input.authority.base,
                              req->input.authority.len);
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-probe-path"), 0, NULL, req->input.path.base,
                              req->input.path.len);
    }
    h2o_send_inline(req, body, sizeof(body) - 1);
    return 0;
}

/* The --problem-filter: rewrites an error answered by h2o itself into problem+json. */
struct problem_ostream {
    h2o_ostream_t super;
    h2o_iovec_t body;
};

static void problem_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs, size_t bufcnt, h2o_send_state_t state)
{
    struct problem_ostream *ostream = (void *)self;
    (void)bufs;
    (void)bufcnt; /* h2o's own error text is dropped: the body was replaced in on_setup_ostream */
    if (h2o_send_state_is_in_progress(state)) {
        h2o_ostream_send_next(self, req, NULL, 0, state);
    } else {
        h2o_ostream_send_next(self, req, &ostream->body, 1, state);
    }
}

static void problem_on_setup_ostream(h2o_filter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    (void)self;
    if (req->res.status >= 400) {
        char text[256];
        int len = snprintf(text, sizeof(text), "{\"type\":\"about:blank\",\"status\":%d,\"title\":\"%s\"}", req->res.status,
                           req->res.reason);
        struct problem_ostream *ostream = (void *)h2o_add_ostream(req, sizeof(*ostream), slot);
        ostream->super.do_send = problem_do_send;
        ostream->body = h2o_strdup(&req->pool, text, (size_t)len);
        req->res.content_length = (size_t)len;
        h2o_set_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, H2O_STRLIT("application/problem+json"), 1);
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-probe-filter"), 0, NULL, H2O_STRLIT("fallback"));
        slot = &ostream->super.next;
    }
    h2o_setup_next_ostream(req, slot);
}

struct worker {
    pthread_t thread;
    int fd;
    h2o_context_t ctx;
    h2o_accept_ctx_t accept_ctx;
};

static void on_accept(h2o_socket_t *listener, const char *err)
{
    struct worker *worker = listener->data;
    h2o_socket_t *sock;
    if (err != NULL)
        return;
    while ((sock = h2o_evloop_socket_accept(listener)) != NULL)
        h2o_accept(&worker->accept_ctx, sock);
}

static int listen_on(uint16_t port)
{
    struct sockaddr_in addr;
    int fd, on = 1;
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, SOMAXCONN) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *run_worker(void *arg)
{
    struct worker *worker = arg;
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_context_init(&worker->ctx, loop, &config);
    worker->accept_ctx.ctx = &worker->ctx;
    worker->accept_ctx.hosts = config.hosts;
    h2o_socket_t *listener = h2o_evloop_socket_create(loop, worker->fd, H2O_SOCKET_FLAG_DONT_READ);
    listener->data = worker;
    h2o_socket_read_start(listener, on_accept);
    while (h2o_evloop_run(loop, INT32_MAX) == 0)
        ;
    return NULL;
}

int main(int argc, char **argv)
{
    int port = 8091, threads = 2, problem_filter = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
            port = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--problem-filter") == 0)
            problem_filter = 1;
        else if (strcmp(argv[i], "--echo-headers") == 0)
            echo_headers = 1;
        else {
            fprintf(stderr, "usage: h2o_probe [--port N] [--threads N] [--problem-filter] [--echo-headers]\n");
            return 2;
        }
    }
    if (threads < 1)
        threads = 1;
    signal(SIGPIPE, SIG_IGN);

    h2o_config_init(&config);
    h2o_hostconf_t *host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(path, sizeof(*handler));
    handler->on_req = on_req;
    if (problem_filter)
        h2o_create_filter(&host->fallback_path, sizeof(h2o_filter_t))->on_setup_ostream = problem_on_setup_ostream;

    struct worker *workers = calloc((size_t)threads, sizeof(*workers));
    uint16_t bound = (uint16_t)port;
    for (int i = 0; i < threads; ++i) {
        if ((workers[i].fd = listen_on(bound)) == -1) {
            fprintf(stderr, "could not listen on 127.0.0.1:%u: %s\n", bound, strerror(errno));
            return 1;
        }
        if (i == 0) { /* port 0: the others bind to the port the first one got */
            struct sockaddr_in addr;
            socklen_t len = sizeof(addr);
            getsockname(workers[0].fd, (struct sockaddr *)&addr, &len);
            bound = ntohs(addr.sin_port);
        }
    }
    for (int i = 0; i < threads; ++i)
        pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]);
    printf("h2o-probe listening on 127.0.0.1:%u\n", bound);
    fflush(stdout);
    for (int i = 0; i < threads; ++i)
        pthread_join(workers[i].thread, NULL);
    return 0;
}

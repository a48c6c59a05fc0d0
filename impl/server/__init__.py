"""The threaded shell around impl/core: acceptor, network threads, request queue, I/O threads,
response queues.

A request's path, file by file (docs/semantics.md "Network layer"; docs/architecture.md):

    acceptor.py        Acceptor: accepts a socket, hands it to a network thread (round-robin)
    network_thread.py  NetworkThread (selector; owns the Connection): reads one size-prefixed
                       frame (<= socket_request_max_bytes, else the connection closes), decodes it
                       with impl/protocol/wire (undecodable / unknown API or version: close that
                       connection only; ApiVersions at an unknown version: UNSUPPORTED_VERSION
                       with a v0 body), MUTES the connection, and puts it on
    request_queue.py   the ONE bounded RequestQueue (queued_max_requests; a full queue blocks the
                       network thread: backpressure)
    io_threads.py      IoThread: under the single core lock, impl/core.Broker.handle(request,
                       respond) (appends check CRCs, impl/protocol/crc.py, and records; acks=all
                       and long-poll fetches wait in purgatory and are answered later from
                       whichever thread completes them, or from the ticker on expiry)
    response_queue.py  respond() encodes the core's answer (every response is encoded there:
                       wire.encode_response_parts) and puts the frame on the owning network
                       thread's ResponseQueue; the NetworkThread writes it, then unmutes
                       (acks=0: unmutes without writing), and only then reads the connection's
                       next request: per-connection ordering, responses leave in request order.
    server.py          KafkaServer: wires the above around one Broker and its lock; the ticker
                       (purgatory expiry, due checkpoints).
    local_cluster.py   LocalCluster: a controller and N broker processes (tests, benchmarks,
                       `kafkaref cluster`).

Bounds (ServerConfig): request queue size, request size, max connections, idle time; each
connection holds at most one request in the broker, so response queues are bounded by the
number of connections. Single broker: server/single.py; in a cluster: server/clustered.py
(control channel to the controller + replica fetchers). Entry points: `kafkaref broker`,
`kafkaref cluster`.

Fetch responses are zero-copy: the core reads records as file ranges (a storage Log's
read_slice) and answers with a FetchAnswer of values; respond() encodes it
(impl/protocol/fetch_response.py) into parts, the records fields being those ranges, written
with os.sendfile() between the encoded bytes. Produce records are not copied either: views of
the frame buffer, which the network thread lends to the request until its response is written
(NetworkThread._lend / _take_back).

Not done: no message.max.bytes check beyond socket_request_max_bytes; no TLS/SASL; no fetch
sessions (every fetch is a full fetch; session id 0); no quotas or throttling.
"""

"""The threaded shell around impl/core: acceptor, network threads, request queue, I/O threads,
response queues.

The path of a request through these files is told once, in docs/architecture.md ("The path of
a produce request", "The path of a fetch request"); docs/semantics.md "Network layer" has the
rules it follows. The files:

    acceptor.py        Acceptor: accepts a socket, hands it to a network thread (round-robin)
    network_thread.py  NetworkThread: reads, decodes and mutes; writes responses, then unmutes
    request_queue.py   the ONE bounded RequestQueue between network and I/O threads
    io_threads.py      IoThread: runs a request against the core under the single core lock
    response_queue.py  respond() encodes the core's answer (wire.encode_response_parts) onto the owning
                       network thread's ResponseQueue (per-connection ordering)
    server.py          KafkaServer: wires the above around one Broker and its lock; the ticker
    local_cluster.py   LocalCluster: a controller and N broker processes (tests, benchmarks,
                       `kafkaref cluster`)

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

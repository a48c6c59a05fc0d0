"""The threaded shell around impl/core: acceptor, network threads, request queue, I/O threads."""

"""Kafka wire formats, by file:

    records/            record batch v2: layout and header, checks, decoding, encoding (each fast
                        path next to its naive twin)
    crc.py              the CRC-32C of a batch: what it covers and the one check of it (append,
                        read and recovery all use it)
    varint.py           the zigzag varints inside record batches
    compression.py      the batch codecs (gzip, snappy, lz4, zstd) in Kafka's byte formats
    wire.py             request/response framing over kio: headers, bodies, supported versions
    messages.py         kio message objects of any version built from plain dicts
    produce_request.py  Produce request bodies decoded by hand, records left in the frame
    fetch_response.py   Fetch responses encoded straight from the broker's answers
    replica_fetch.py    Fetch v12 as a replica fetcher speaks it (request and response)
    flexible.py         the flexible encodings (compact lengths, tagged fields) the hand codecs
                        read
"""
